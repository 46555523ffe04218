"""How the pool labels English replies that decline nothing, by shape (a study, not a benchmark).

    python benchmarks/no_decline_shapes.py [--pool_dir ../shared/data]

For each source of the development pool, the English replies with no declining clause, counted
by label (answer, refusal) in three shapes and by whether the prompt asks for a method ("how
can I", "ways to", "steps", "techniques", ...):

* `lecture`: no list, at most three content sentences, and at least one sentence of lecture,
  referral, offer or sympathy (the shape of OR-Bench's indirect refusal, and of many answers);
* `prose`: no list, and none of the above;
* `list`: a list.

docs/refusal/held-out.md quotes its `orbench_en` rows: the pool's OR-Bench replies hold almost
no indirect refusal, so the weights cannot learn that shape from them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orbench.refusal.features import has_text, read  # noqa: E402
from orbench.refusal.pool import ANSWER, REFUSAL, load_pool  # noqa: E402
from orbench.refusal.roles import CAUTIONS, CONTENT, OFFERS, REFERS, SYMPATHY  # noqa: E402

ASKS_METHOD = re.compile(r"\b(?:how (?:can|do|could|would|should|might|to|does|is)|ways? (?:to|of|for|in)|methods?|"
                         r"techniques?|strateg\w*|steps?|tips|guide|instructions?|tutorial|procedures?|"
                         r"approach\w*|tactics?|recipe)\b", re.IGNORECASE)
_NO_ANSWER = frozenset({CAUTIONS, REFERS, OFFERS, SYMPATHY})


def shape(response: str, prompt: str) -> str | None:
    """The reply's shape, or None where it declines or is not English."""
    st = read(response, prompt).structure
    if st.language != "en" or st.decline_at >= 0:
        return None
    if any(st.items):
        return "list"
    lecture = not _NO_ANSWER.isdisjoint(st.roles) and st.roles.count(CONTENT) <= 3
    return "lecture" if lecture else "prose"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool_dir", default=None, help="the development pool (default: ../shared/data)")
    args = parser.parse_args(argv)
    counts: Counter = Counter()
    for row in load_pool(args.pool_dir):
        if row.gold not in (ANSWER, REFUSAL) or not has_text(row.response):
            continue
        found = shape(row.response, row.prompt or "")
        if found:
            asks = "asks how" if ASKS_METHOD.search(row.prompt or "") else "other"
            counts[(row.part.split("/")[0], found, asks, row.gold)] += 1
    print(f"{'source':14s} {'shape':8s} {'prompt':9s} {'answers':>8s} {'refusals':>9s}")
    for source, found, asks in sorted({key[:3] for key in counts}):
        answers, refusals = counts[(source, found, asks, ANSWER)], counts[(source, found, asks, REFUSAL)]
        print(f"{source:14s} {found:8s} {asks:9s} {answers:8d} {refusals:9d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
