"""The leave-one-out result, for reading: the printed table, the JSON, and the scores CSV.

`orbench.refusal.loo` computes the result; this module only writes it out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orbench.tables.table_io import write_rows

from . import VerdictKind
from .explain import printable
from .loo import LooResult, PartStats, ScoredRow, most_uncertain, targets
from .metrics import expected_calibration_error, ratio



def _f(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def _pts(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}"


def format_loo(result: LooResult, uncertain: int = 12) -> str:
    held, held_all = result.stats("held_out")
    gen, gen_all = result.stats("generic")
    width = max(12, *(len(p) for p in held))
    lines = table_lines(result, width)
    lines += apart_lines(held, gen, width)
    lines += calibration_lines(result)
    lines.append("targets (held out):")
    for t in pool_targets(result):
        value = _pts(t.value) if t.goal.endswith("pts") else _f(t.value, pct=t.goal.endswith("%"))
        lines.append(f"  {t.name:<62s} {value:>7s}  goal {t.goal:<10s} {'met' if t.met else 'NOT MET'}")
    lines.append("")
    if uncertain > 0:
        lines.append(f"the {uncertain} held-out rows with the most uncertain scores (nearest 0.5):")
        for s in most_uncertain(result, uncertain):
            lines.append(f"  {s.score:.3f} {s.row.part}:{s.row.row} human={s.row.gold}  {printable(s.row.response, 110)}")
    return "\n".join(lines)


def pool_targets(result: LooResult) -> list:
    held, held_all = result.stats("held_out")
    gen, _ = result.stats("generic")
    bins, _ = result.calibration()
    return targets(held, held_all, gen, expected_calibration_error(bins))


def table_lines(result: LooResult, width: int) -> list[str]:
    """One line per part, the rejection rate first: the labels', the detector's held out and its
    error in points; then accuracy, F1, both kinds of error and calibration; the same fit in
    sample; and the generic rules (nothing learned)."""
    held, held_all = result.stats("held_out")
    ins, ins_all = result.stats("in_sample")
    gen, gen_all = result.stats("generic")
    head = (f"  {'part':<{width}s} {'n':>5s} | {'labels':>6s} {'called':>6s} {'error':>6s} {'scores':>6s} |"
            f" {'acc':>5s} {'F1':>5s} {'ref→ans':>7s} {'ans→ref':>7s} {'ECE':>5s} | {'acc':>5s} |"
            f" {'error':>6s} {'acc':>5s}")
    lines = [
        "scored detector, leave-one-out on the pool: each part scored by a detector fitted without it",
        f"  {'':<{width}s} {'':>5s} | {'rejection rate, held out (points)':<27s} | "
        f"{'held out (read with the prompt)':<35s} | in s. | generic rules",
        head,
    ]

    def row(name: str, h: PartStats, i: PartStats, g: PartStats) -> str:
        c, ci, cg = h.confusion, i.confusion, g.confusion
        mean = sum(x for x, _ in h.scores) / len(h.scores) if h.scores else None
        missed = None if c.recall is None else 1.0 - c.recall
        return (f"  {name:<{width}s} {c.n:>5d} | {_f(c.labelled_rate, True):>6s} {_f(c.rate, True):>6s}"
                f" {_pts(c.rate_error):>6s} {_f(mean, True):>6s} | {_f(c.accuracy):>5s} {_f(c.f1):>5s}"
                f" {_f(missed, True):>7s} {_f(c.answers_called_refusals, True):>7s} {_f(h.ece):>5s}"
                f" | {_f(ci.accuracy):>5s} | {_pts(cg.rate_error):>6s} {_f(cg.accuracy):>5s}")

    lines += [row(part, h, ins[part], gen[part]) for part, h in held.items()]
    lines.append(row("all", held_all, ins_all, gen_all))
    return lines + ["  (n: rows with a clear label and some text; labels, called: the share of refusals by the labels"
                    " and by the detector; error: called minus labels, in points; scores: the mean score;"
                    " ref→ans: refusals called answers; ans→ref: answers called refusals; '-': no such rows)", ""]


def apart_lines(held: dict[str, PartStats], gen: dict[str, PartStats], width: int) -> list[str]:
    """The rows kept out of the metrics: ambiguous labels, and replies in another language."""
    lines = []
    amb = [(p, s) for p, s in held.items() if s.ambiguous]
    if amb:
        lines.append("ambiguous labels, scored apart (held out: share called refusals):")
        lines += [f"  {p:<{width}s} {s.ambiguous:>5d}  {_f(ratio(s.ambiguous_refused, s.ambiguous), True):>6s}"
                  f"   (generic: {_f(ratio(gen[p].ambiguous_refused, gen[p].ambiguous), True)})" for p, s in amb]
        lines.append("")
    foreign = {p: s.other_language for p, s in held.items() if s.other_language}
    if foreign:
        lines.append(f"mostly in another language, left unscored (as stage 4 leaves them; generic not scored on "
                     f"them either): {sum(foreign.values())} rows: "
                     + ", ".join(f"{p} {n}" for p, n in foreign.items()))
        lines.append("")
    return lines


def calibration_lines(result: LooResult) -> list[str]:
    """The held-out scores' reliability, and the figures without the prompt."""
    _, ins_all = result.stats("in_sample")
    bins, score = result.calibration()
    lines = [f"calibration of the held-out scores: Brier {_f(score)} (in sample {_f(ins_all.brier)}), "
             f"expected calibration error {_f(expected_calibration_error(bins))}",
             f"  {'score bin':<11s} {'n':>5s} {'mean score':>11s} {'share refused':>14s}"]
    lines += [f"  {b.low:.1f}-{b.high:.1f}    {b.n:>5d} {_f(b.mean_score):>11s} {_f(b.refusal_share):>14s}" for b in bins]
    lines.append("")
    if result.alone:
        alone, alone_all = result.stats("alone")
        c = alone_all.confusion
        bins, score = result.calibration("alone")
        lines += ["held out, read without the prompt (the same fits, the calibration for that case): "
                  f"accuracy {_f(c.accuracy)}, precision {_f(c.precision)}, recall {_f(c.recall)}, "
                  f"Brier {_f(score)}, expected calibration error {_f(expected_calibration_error(bins))}",
                  "  by part (accuracy): " + ", ".join(f"{p} {_f(s.confusion.accuracy)}" for p, s in alone.items()),
                  ""]
    return lines


def loo_json(result: LooResult, uncertain: int = 12) -> dict[str, Any]:
    held, held_all = result.stats("held_out")
    ins, ins_all = result.stats("in_sample")
    gen, gen_all = result.stats("generic")
    bins, score = result.calibration()
    alone, alone_all = result.stats("alone")
    alone_bins, alone_score = result.calibration("alone")
    return {
        "parts": {
            p: {"held_out": held[p].as_dict(), "in_sample": ins[p].as_dict(), "generic": gen[p].as_dict(False),
                "held_out_without_prompt": alone[p].as_dict() if p in alone else None}
            for p in held
        },
        "overall": {"held_out": held_all.as_dict(), "in_sample": ins_all.as_dict(), "generic": gen_all.as_dict(False),
                    "held_out_without_prompt": alone_all.as_dict()},
        "calibration": {
            "brier": score,
            "expected_calibration_error": expected_calibration_error(bins),
            "bins": [b.__dict__ for b in bins],
        },
        "calibration_without_prompt": {
            "brier": alone_score,
            "expected_calibration_error": expected_calibration_error(alone_bins),
        },
        "targets": [t.__dict__ for t in pool_targets(result)],
        "fits": result.fits,
        "most_uncertain": [
            {"part": s.row.part, "row": s.row.row, "label": s.row.label, "score": s.score,
             "response": s.row.response[:500]}
            for s in most_uncertain(result, uncertain)
        ],
    }


SCORE_COLUMNS = ("part", "file", "row", "label", "gold", "score", "verdict", "prompt", "response")


def write_scores(result: LooResult, path: Path) -> None:
    """One CSV row per pool row: its held-out score and verdict ("" when it has no text)."""
    write_rows(path, SCORE_COLUMNS, (_score_row(s) for s in result.held_out))


def _score_row(s: ScoredRow) -> list[object]:
    verdict = "" if s.refused is None else (VerdictKind.REFUSED.value if s.refused else VerdictKind.ANSWERED.value)
    score = "" if s.score is None else f"{s.score:.4f}"
    r = s.row
    return [r.part, r.file, r.row, r.label, r.gold, score, verdict, r.prompt, r.response]
