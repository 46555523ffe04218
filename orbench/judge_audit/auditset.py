"""The shipped audit set: human-labelled responses a judge's verdicts are checked against.

`orbench/data/judge_audit.csv` (built by `python -m orbench.judge_audit.build`; sources,
licences and the meaning of the labels in `orbench/data/JUDGE_AUDIT_SOURCE.md`). Each row is
a question, a model's response and a human label, `refusal` or `answer` in OR-Bench's sense.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import io
from dataclasses import dataclass
from functools import lru_cache

from orbench.errors import UserError

REFUSAL = "refusal"
ANSWER = "answer"
LABELS = (REFUSAL, ANSWER)
AUDIT_FILE = "judge_audit.csv"
COLUMNS = ["audit_id", "label", "rank", "style", "source", "source_model", "source_id", "source_label",
           "prompt", "response"]
DEFAULT_AUDIT = 100  # rows judged per audit: half refusals, half answers


@dataclass(frozen=True)
class AuditItem:
    audit_id: str  # source:model:id, unique
    label: str  # refusal | answer (human)
    rank: int  # order within its label: the audit of N rows takes ranks 1..N/2 of each
    style: str
    prompt: str
    response: str

    @property
    def is_refusal(self) -> bool:
        return self.label == REFUSAL


def _raw() -> bytes:
    return (importlib.resources.files("orbench") / "data" / AUDIT_FILE).read_bytes()


def digest() -> str:
    """SHA-256 of the shipped file, recorded with every audit (which version was judged)."""
    return hashlib.sha256(_raw()).hexdigest()


@lru_cache(maxsize=1)
def load() -> tuple[AuditItem, ...]:
    import pandas as pd  # here, not at the top: stage 5's --help imports this module

    frame = pd.read_csv(io.BytesIO(_raw()), dtype=str, keep_default_na=False)
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing or not set(frame["label"]) <= set(LABELS):
        raise RuntimeError(f"{AUDIT_FILE} is damaged: missing {missing} or labels {sorted(set(frame['label']))}")
    return tuple(AuditItem(audit_id=r["audit_id"], label=r["label"], rank=int(r["rank"]), style=r["style"],
                           prompt=r["prompt"], response=r["response"]) for r in frame.to_dict("records"))


def subset(size: int) -> list[AuditItem]:
    """The fixed, balanced audit of `size` rows: ranks 1..ceil(size/2) of the refusals and
    1..floor(size/2) of the answers. The same size gives the same rows every time, and a
    larger one keeps the smaller one's rows."""
    items = load()
    by_label = {lab: sorted((i for i in items if i.label == lab), key=lambda i: i.rank) for lab in LABELS}
    total = sum(len(v) for v in by_label.values())
    if size > total:
        raise UserError(f"--audit {size}: the audit set holds {total} rows; give at most {total} (0 turns it off)")
    want = {REFUSAL: (size + 1) // 2, ANSWER: size // 2}
    chosen = [i for lab in LABELS for i in by_label[lab][:want[lab]]]
    return sorted(chosen, key=lambda i: (i.rank, i.label != REFUSAL))
