"""What the report says about models that think, read from the stage-4 files and their records:

- replies cut inside their thinking (stage 4's `cut_in_thinking`): counted apart per model and
  set, never in a rate (they are unscored), and named with the fix, a larger --max_tokens;
- models sent other parameters than the protocol's temperature 0 / max_tokens 1000 (the record's
  `sent`: the cap as max_completion_tokens, no temperature, a reasoning effort): their rates
  are the model's as it answers, which the paper did not measure (docs/reproducing_the_paper.md).
"""

from __future__ import annotations

from typing import Any, Sequence

from orbench.protocol.constants import COL_IS_REJECTED
from orbench.protocol.verdict import Verdict, VerdictKind
from orbench.report.advice import SHORT, Advice
from orbench.report.common import ResultFile
from orbench.report.rows import Frames, frame_of

CUT_CELL = Verdict(VerdictKind.CUT_IN_THINKING).to_csv()
PROTOCOL = "temperature 0 / max_tokens 1000"


def _stage4(files: Sequence[ResultFile]) -> list[ResultFile]:
    return [f for f in files if f.stage == 4 and f.kind != "failed"]


def cut_counts(files: Sequence[ResultFile], frames: Frames | None = None) -> dict[tuple[str, str], tuple[int, int]]:
    """(model, set) -> (replies cut inside their thinking, rows) in the stage-4 files."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for f in _stage4(files):
        frame = frame_of(f.path, frames)
        if COL_IS_REJECTED not in frame.columns:
            continue
        cut = int((frame[COL_IS_REJECTED].str.strip().str.lower() == CUT_CELL).sum())
        before = out.get((f.model, f.dataset), (0, 0))
        out[(f.model, f.dataset)] = (before[0] + cut, before[1] + len(frame))
    return out


def _cap(files: Sequence[ResultFile], model: str) -> Any:
    caps = {f.record.extra.get("max_tokens") for f in _stage4(files) if f.model == model and f.record is not None}
    caps.discard(None)
    return ", ".join(str(c) for c in sorted(caps)) if caps else "?"


def _cut_advice(files: Sequence[ResultFile], frames: Frames | None) -> Advice | None:
    parts = [f"{model} on {SHORT.get(ds, ds)}: {cut} of {rows} (max_tokens {_cap(files, model)})"
             for (model, ds), (cut, rows) in cut_counts(files, frames).items() if cut]
    if not parts:
        return None
    return Advice("cut_in_thinking", "Replies cut inside their thinking: the token cap stopped them before any reply "
                                     "(is_rejected = cut_in_thinking). They are unscored, in no rate: neither refusals "
                                     "nor answers. Run stage 4 again with a larger --max_tokens (e.g. 8000; orbench "
                                     "eval --max_tokens) into a new output to score them. " + "; ".join(parts) + ".")


def _described(info: Any) -> str | None:
    """What a record's `sent` entry says was sent, when it is not the protocol's; else None."""
    if not isinstance(info, dict):
        return None
    cap_field = "max_completion_tokens" if "max_completion_tokens" in info else "max_tokens"
    parts = []
    if cap_field != "max_tokens":
        parts.append(f"{cap_field} {info.get(cap_field)}")
    if "temperature" in info and info["temperature"] is None:
        parts.append("no temperature (the model's default, 1)")
    if info.get("reasoning_effort"):
        parts.append(f"reasoning_effort {info['reasoning_effort']}")
    return ", ".join(parts) or None


def _settings_advice(files: Sequence[ResultFile]) -> Advice | None:
    said: dict[str, str] = {}
    for f in _stage4(files):
        sent = f.record.extra.get("sent") if f.record is not None else None
        for info in (sent or {}).values() if isinstance(sent, dict) else ():
            text = _described(info)
            if text and f.model not in said:
                said[f.model] = text
    if not said:
        return None
    return Advice("not_protocol_settings", "Sent other parameters than the protocol's " + PROTOCOL + ", as the "
                                           "model takes them or as asked: " + "; ".join(f"{m}: {t}" for m, t in said.items())
                                           + ". Their rates are the model's as it answers; the paper measured no "
                                           "such model (docs/reproducing_the_paper.md).")


def thinking_advice(files: Sequence[ResultFile], frames: Frames | None = None) -> list[Advice]:
    """The report's lines about models that think (none for a run of models that do not)."""
    return [a for a in (_cut_advice(files, frames), _settings_advice(files)) if a is not None]


__all__ = ["cut_counts", "thinking_advice"]
