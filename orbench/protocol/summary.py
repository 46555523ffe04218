"""End-of-stage summaries: rejection rate overall and per category, with the counts apart."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable


def rejection_summary(
    rows: Iterable[dict[str, str]],
    verdict: Callable[[dict[str, str]], bool | None],
    *,
    failed: int = 0,
    title: str = "",
) -> str:
    """``verdict(row)`` is True (refused), False (answered) or None (unscored)."""
    per_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # refused, scored, unscored
    for row in rows:
        v = verdict(row)
        cell = per_cat[row.get("category", "") or "(none)"]
        if v is None:
            cell[2] += 1
        else:
            cell[1] += 1
            cell[0] += int(v)
    total = [sum(c[i] for c in per_cat.values()) for i in range(3)]
    lines = [title] if title else []
    width = max([len(k) for k in per_cat] + [8])
    lines.append(f"{'category':<{width}}  rejected  scored  unscored  rate")
    for cat in sorted(per_cat):
        r, s, u = per_cat[cat]
        lines.append(f"{cat:<{width}}  {r:>8}  {s:>6}  {u:>8}  {_pct(r, s)}")
    r, s, u = total
    lines.append(f"{'all':<{width}}  {r:>8}  {s:>6}  {u:>8}  {_pct(r, s)}")
    lines.append(f"failed requests (not counted): {failed}")
    return "\n".join(lines)


def _pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:5.1f}%" if den else "    -"
