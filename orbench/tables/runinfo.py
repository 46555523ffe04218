"""The run record: the small JSON file written beside each output, saying what the output is.

Named ``{output path without .csv}.run.json``. It never holds API keys. ``RunRecord`` is its
typed form: the fields a reader needs to know what a result file is (the stage, the model or
the judge, the set, the input read, the judged sample and its design, the judge's audit, the
row counts) and, in ``extra``, every other key a stage records (settings, counters, tokens),
kept as written. ``record_version`` is the schema's version; a record without one (written
before it existed) reads as version 0, a missing field as None, an unknown key into ``extra``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .. import __version__
from . import published
from ..errors import UserError

if TYPE_CHECKING:
    from ..engine.llm import LLMClient

RECORD_VERSION = 1
VERSION_KEY = "record_version"
STAMP_KEYS = ("orbench_version", "written_at")  # stamped anew by every write

# The stages' names in a record -> the stage's number.
STAGE_NUMBERS = {"toxic_prompt_generator": 1, "rewritter": 2, "moderator": 3, "alignment_checker": 4,
                 "response_checker": 5}


@dataclass
class RunRecord:
    """What one output file is. Every field but ``version`` may be None (not recorded)."""

    version: int = RECORD_VERSION  # written as "record_version"
    stage: str | None = None  # "alignment_checker", "response_checker", ... (STAGE_NUMBERS)
    model: str | None = None  # stages 1, 2 and 4: the model asked (stage 4: the target)
    target_model: str | None = None  # stage 5: the model whose replies were judged
    check_model: str | None = None  # stage 5: the judge, as given (an ensemble: "a,b,c")
    check_models: list | None = None  # stage 5, an ensemble: its judges
    dataset: str | None = None  # "safe", "hard" or "toxic" when the input was a published set
    input_file: str | None = None  # the input as given (a file or a set's short name)
    input_path: str | None = None  # stage 5: the file read, resolved (a judged sample's stage-4 file)
    input_source: dict | None = None  # a published or Hub input: the copy read (orbench.tables.published)
    output: str | None = None
    failed_output: str | None = None
    unscored_output: str | None = None  # stage 5: the copy of its unscored rows
    sample_size: int | None = None  # stage 5 --sample: the output is a judged sample of input_path
    sample_design: dict | None = None  # its design (orbench.statistics.design.Design.as_info)
    audit: dict | None = None  # stage 5: the judge's audit (orbench.judge_audit)
    judge_skipped: dict | None = None  # stage 5: its rows were not sent, the audit said no (judge_audit.gate)
    complete: bool | None = None
    rows_total: int | None = None
    rows_done: int | None = None
    rows_failed: int | None = None
    rows_written: int | None = None
    extra: dict = field(default_factory=dict)  # every other key, as written
    keys: tuple = field(default=(), compare=False, repr=False)  # the keys in their written order

    @classmethod
    def from_json(cls, data: Any) -> "RunRecord":
        """The record of a parsed .run.json, of any version; never raises. A value of the wrong
        type leaves its field None and is kept, as written, in ``extra``."""
        if not isinstance(data, Mapping):
            return cls(version=0)
        version = data.get(VERSION_KEY)
        typed: dict[str, Any] = {"version": version if _is(version, int) else 0}
        extra: dict[str, Any] = {}
        for key, value in data.items():
            if key == VERSION_KEY:
                continue
            if key in _FIELD_TYPES and (value is None or _is(value, _FIELD_TYPES[key])):
                typed[key] = value
            else:
                extra[key] = value
        return cls(**typed, extra=extra, keys=tuple(str(k) for k in data))

    def to_json(self) -> dict[str, Any]:
        """The record as written: ``record_version``, the keys in the order read, then new
        ones. A field never set (None, and not among the keys read) is left out."""
        values = {name: getattr(self, name) for name in _FIELD_TYPES}
        out: dict[str, Any] = {VERSION_KEY: self.version}
        for key in dict.fromkeys((*self.keys, *values, *self.extra)):
            value = values.get(key)
            if key == VERSION_KEY:
                continue
            if value is not None or (key in values and key in self.keys and key not in self.extra):
                out[key] = value
            elif key in self.extra:
                out[key] = self.extra[key]
        return out

    def updated(self, *parts: Mapping[str, Any], **values: Any) -> "RunRecord":
        """A copy with more keys (fields or extra ones), later ones winning: what
        ``{**record, **part, ..., **values}`` would be, as a record."""
        merged = self.to_json()
        for part in (*parts, values):
            merged.update(part)
        return RunRecord.from_json(merged)

    @property
    def stage_number(self) -> int | None:
        return STAGE_NUMBERS.get(self.stage or "")

    @property
    def judged_sample(self) -> bool:
        """Whether the output is a judged sample (stage 5 --sample): a sample_size is recorded."""
        return self.sample_size is not None or self.extra.get("sample_size") is not None

    def kind_of(self, path: Path) -> str | None:
        """"merged", "failed" or "unscored" when this record names the file at path as that
        output (by name, in the record's folder); None when it does not name it."""
        for kind, named in (("merged", self.output), ("failed", self.failed_output),
                            ("unscored", self.unscored_output)):
            if named and Path(named).name == path.name:
                return kind
        return None


_KINDS = {"str": str, "int": int, "bool": bool, "dict": dict, "list": list}
# field -> the JSON type of its value (from the annotations above: "str | None" -> str)
_FIELD_TYPES: dict[str, type] = {f.name: _KINDS[str(f.type).split(" |")[0]]
                                 for f in fields(RunRecord) if f.name not in ("version", "extra", "keys")}


def _is(value: Any, kind: type) -> bool:
    """isinstance, where a bool is not an int."""
    return isinstance(value, kind) and not (isinstance(value, bool) and kind is int)


def runinfo_path(output: str | os.PathLike) -> Path:
    p = Path(output)
    base = p.name[: -len(p.suffix)] if p.suffix else p.name
    return p.with_name(base + ".run.json")


def write_runinfo(output: str | os.PathLike, record: RunRecord | Mapping[str, Any]) -> Path:
    """Write the record of an output (atomically), stamped with the version of orbench, the
    time and the current ``record_version``."""
    path = runinfo_path(output)
    body = (record if isinstance(record, RunRecord) else RunRecord.from_json(record)).to_json()
    for key in (*STAMP_KEYS, VERSION_KEY):
        body.pop(key, None)
    payload = {"orbench_version": __version__, "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               VERSION_KEY: RECORD_VERSION, **body}
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_runinfo(output: str | os.PathLike) -> dict[str, Any] | None:
    """The record beside an output as written (a dict), or None when there is none or it is
    not JSON."""
    try:
        data = json.loads(runinfo_path(output).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_record(output: str | os.PathLike) -> RunRecord | None:
    """The typed record beside an output, or None when there is none or it is unreadable."""
    data = read_runinfo(output)
    return None if data is None else RunRecord.from_json(data)


# Settings that change what a row holds. Resuming into an output written with other values
# would mix two experiments in one file, so that is refused.
RESUME_KEYS = (
    "stage", "model_id", "endpoint", "moderator_ids", "endpoints", "temperature", "max_tokens",
    "reasoning_effort", "system_prompt", "rules", "refusal_weights", "template_version", "column", "num_rewrites",
)


def check_same_settings(output: Path, record: RunRecord) -> None:
    """Refuse to resume into an output written with other settings (one line, exit 2)."""
    if not (output.exists() and output.stat().st_size > 0):
        return
    before = read_runinfo(output)
    if not before:
        return
    info = record.to_json()
    changed = [k for k in RESUME_KEYS if k in info and k in before and before[k] != info[k]]
    if changed:
        what = ", ".join(f"{k} {before[k]!r} -> {info[k]!r}" for k in changed)
        raise UserError(
            f"{output} was written with other settings ({what}); resuming would mix them. "
            f"Choose another --output_path (or --name), or move the old file away"
        )


def stage_record(stage: str, args: Any, *parts: Mapping[str, Any]) -> RunRecord:
    """A run's record before its rows: the settings every stage records, then the stage's own
    fields (parts, later ones winning), and the published set its input is, when it is one."""
    info: dict[str, Any] = base_info(stage, args)
    for part in parts:
        info.update(part)
    dataset = published.set_of(info.get("input_source"))
    if dataset is not None:
        info.setdefault("dataset", dataset)
    return RunRecord.from_json(info)


def base_info(stage: str, args: Any, **extra: Any) -> dict[str, Any]:
    """The settings every stage records."""
    from ..protocol.prompts import TEMPLATE_VERSION

    return {
        "stage": stage,
        "temperature": getattr(args, "temperature", None),
        "max_tokens": getattr(args, "max_tokens", None),
        "reasoning_effort": getattr(args, "reasoning_effort", None),
        "limit": getattr(args, "limit", None),
        "limit_seed": getattr(args, "limit_seed", None) if getattr(args, "limit", None) else None,
        "cache": not getattr(args, "no_cache", False),
        "template_version": TEMPLATE_VERSION,
        **extra,
    }


def endpoint_info(client: "LLMClient") -> dict[str, Any]:
    e = client.endpoint
    return {"model_name": e.name, "model_id": e.model, "provider": e.provider, "endpoint": e.identity,
            "family": e.family}


def client_info(clients: "Sequence[LLMClient]", since: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The clients' counts (requests, cached, failed, tokens: completion_tokens includes the
    reasoning_tokens a thinking model spent); ``since``: minus an earlier client_info of the
    same clients (what was spent before, e.g. stage 5's audit)."""
    info = {
        "requests": sum(c.stats.requests for c in clients),
        "cached": sum(c.stats.cached for c in clients),
        "failed_requests": sum(c.stats.failed for c in clients),
        "prompt_tokens": sum(c.stats.prompt_tokens for c in clients),
        "completion_tokens": sum(c.stats.completion_tokens for c in clients),
        "reasoning_tokens": sum(c.stats.reasoning_tokens for c in clients),
        "param_refusals": sum(c.stats.param_refusals for c in clients),
    }
    return {k: v - (since or {}).get(k, 0) for k, v in info.items()}


def sent_info(clients: "Sequence[LLMClient]", names: Sequence[str], args: Any) -> dict[str, Any]:
    """What each model was sent, by its name as given (``sent``): the cap's field and value, the
    temperature (None: none was sent, the model's default), the reasoning effort, whether it
    thinks and where that came from (engine/params.py). Read at the end of a run: what a 400
    taught the client is in it."""
    temperature, max_tokens = getattr(args, "temperature", 0.0), getattr(args, "max_tokens", 0)
    effort = getattr(args, "reasoning_effort", None)
    return {"sent": {n: c.sent(temperature, max_tokens, effort) for n, c in zip(names, clients)}}
