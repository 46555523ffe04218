"""Did a stage yield anything the next step can use? Checked between the steps of
`orbench eval` and run_pipeline.sh, so that no step runs on an empty input.

    python -m orbench.tables.usable KIND STEP MODEL FILE...

KIND: seeds (stage 1: any prompt), moderation (stage 3: any row decided toxic or safe),
results (stage 4: any reply scored; replies cut inside their thinking are not, and the reason
says a larger --max_tokens gives them room), judged (stage 5: any readable verdict, or no row sent
because the judge failed its audit). Prints nothing
and exits 0 when the files hold something usable; else one line naming the step, the model
and the reason, and exit code 3 (a stage that finished without a usable row).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Callable, Sequence

from ..protocol.constants import COL_ANSWER_CATEGORY, COL_IS_REJECTED, COL_IS_TOXIC, JUDGE_CLASSES

EXIT_NOTHING_USABLE = 3
DECIDED = ("True", "False")


def _rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(sys.maxsize)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        return []


def _record(path: Path) -> dict:
    try:
        data = json.loads(path.with_name(path.stem + ".run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _seeds_reason(paths: Sequence[Path], rows: list[dict[str, str]]) -> str | None:
    if rows:
        return None
    calls = failed = unparsed = 0
    for p in paths:
        rec = _record(p)
        calls += int(rec.get("calls") or 0)
        failed += int(rec.get("failed_calls") or 0)
        unparsed += int(rec.get("unparsed_replies") or 0)
    if failed and not calls:
        return f"no seed: all {failed} request(s) failed (see the stage's error above)"
    if calls:
        return f"no seed: none of the {calls} replies held a prompt in [[ ]] ({unparsed} unreadable)"
    return "no seed was written"


def _column_reason(column: str, good: Callable[[str], bool], what: str) -> Callable[..., str | None]:
    def reason(paths: Sequence[Path], rows: list[dict[str, str]]) -> str | None:
        if any(good(r.get(column, "")) for r in rows):
            return None
        if not rows:
            return "no row was written"
        values = sorted({r.get(column, "") for r in rows})
        return f"none of the {len(rows)} rows {what} ({column}: {', '.join(values[:4])})"
    return reason


_verdict_reason = _column_reason(COL_ANSWER_CATEGORY, lambda v: v in JUDGE_CLASSES, "has a readable verdict")


def _judged_reason(paths: Sequence[Path], rows: list[dict[str, str]]) -> str | None:
    # A judge that failed its audit was sent no row on purpose: nothing to stop for.
    if all(_record(p).get("judge_skipped") for p in paths):
        return None
    return _verdict_reason(paths, rows)


_scored_reason = _column_reason(COL_IS_REJECTED, lambda v: v in DECIDED, "has a scored reply")
CUT = "cut_in_thinking"  # orbench.protocol.verdict's cell for a reply cut inside its thinking


def _results_reason(paths: Sequence[Path], rows: list[dict[str, str]]) -> str | None:
    reason = _scored_reason(paths, rows)
    if reason is None or not any(r.get(COL_IS_REJECTED) == CUT for r in rows):
        return reason
    cut = sum(r.get(COL_IS_REJECTED) == CUT for r in rows)
    return (f"{reason}; {cut} were cut inside their thinking before any reply: the model needs a larger "
            f"--max_tokens (docs/models_that_think.md)")


KINDS: dict[str, Callable[..., str | None]] = {
    "seeds": _seeds_reason,
    "moderation": _column_reason(COL_IS_TOXIC, lambda v: v in DECIDED, "was decided toxic or safe"),
    "results": _results_reason,
    "judged": _judged_reason,
}


def why_unusable(kind: str, paths: Sequence[str | Path]) -> str | None:
    """None when the files hold something usable; else the reason, in a few words."""
    files = [Path(p) for p in paths]
    rows = [r for p in files for r in _rows(p)]
    return KINDS[kind](files, rows)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[0] not in KINDS:
        print(f"usage: python -m orbench.tables.usable {{{','.join(KINDS)}}} STEP MODEL FILE...", file=sys.stderr)
        return 2
    kind, step, model, files = args[0], args[1], args[2], args[3:]
    reason = why_unusable(kind, files)
    if reason is None:
        return 0
    print(f"stopped at {step} ({model}): {reason}; the next step would have nothing to work on", file=sys.stderr)
    return EXIT_NOTHING_USABLE


if __name__ == "__main__":
    sys.exit(main())
