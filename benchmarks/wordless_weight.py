"""How a reply read without its words is best scored (a study, not a benchmark).

    python benchmarks/wordless_weight.py          # about a minute on two cores

Chinese and Japanese replies are read without word features (the pool has no labelled reply in
either language to weigh their words on), so stage 4 scores them by a mix of the main model's
calibrated log-odds (its structural weights, fitted beside English and Korean words) and the
structure-only model's (fitted on the structure alone): `(1 - w) * main + w * structure_only`.

The pool holds no Chinese or Japanese labels, but it can show what reading without words does
to replies it does label: each part is scored by both models fitted without it (as
`--leave_one_out` does), from its structural features only: English replies lose their words,
Korean ones their endings and their language's own copies of the structural features (read as
a new language would be). For each weight the script prints the log loss and accuracy over the
pool, and for English and Korean apart. docs/refusal/languages.md quotes its figures.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orbench.refusal.features import STRUCTURE_PREFIX, has_text  # noqa: E402
from orbench.refusal.loo import parts  # noqa: E402
from orbench.refusal.pool import AMBIGUOUS, REFUSAL, load_pool  # noqa: E402
from orbench.refusal.scorer import mixed  # noqa: E402
from orbench.refusal.train import Dataset, TrainConfig, example, logit_of_keys, train_rows  # noqa: E402

KOREAN = "orbench_ko/"
# what a Korean reply has that a reply in a language with no labelled replies lacks (`features.language_keys`)
_KOREAN_OWN = (STRUCTURE_PREFIX + "ko:", STRUCTURE_PREFIX + "lang:ko")


def wordless(keys: tuple[str, ...]) -> list[str]:
    """The structural features a reply has when read as a language without labelled replies."""
    return [k for k in keys if k.startswith(STRUCTURE_PREFIX) and not k.startswith(_KOREAN_OWN)]


def held_out_log_odds() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per labelled pool reply, held out: the main and the structure-only model's calibrated
    log-odds from its structural features, its label and whether it is Korean."""
    rows = load_pool()
    pairs = [(r, example(r)) for r in rows if r.gold != AMBIGUOUS and has_text(r.response)]
    pairs = [(r, ex) for r, ex in pairs if not ex.foreign]
    data = Dataset([ex for _, ex in pairs])
    config = TrainConfig()
    plain_config = replace(config, words=False)
    main, plain, label, korean = [], [], [], []
    for part in parts(list(rows)):
        fit_rows = np.flatnonzero(data.parts != part)
        m, p = train_rows(data, fit_rows, config)[0], train_rows(data, fit_rows, plain_config)[0]
        for r, ex in pairs:
            if r.part == part:
                keys = wordless(ex.keys)
                main.append(m.calibrated(logit_of_keys(m, keys), True))
                plain.append(p.calibrated(logit_of_keys(p, keys), True))
                label.append(r.gold == REFUSAL)
                korean.append(r.part.startswith(KOREAN))
        print(f"  fitted without {part}", file=sys.stderr, flush=True)
    return np.array(main), np.array(plain), np.array(label), np.array(korean)


def main() -> None:
    x, s, y, korean = held_out_log_odds()
    print(f"{len(y)} labelled replies ({korean.sum()} Korean), each held out, read without its words")
    print("weight  log loss  accuracy  English  Korean")
    for w in np.round(np.arange(0.0, 1.01, 0.1), 1):
        z = mixed(x, s, w)
        right = (z >= 0) == y
        loss = float(np.mean(np.logaddexp(0.0, z) - y * z))
        print(f"{w:6.1f}  {loss:8.4f}  {right.mean():8.4f}  {right[~korean].mean():7.4f}  {right[korean].mean():6.4f}")


if __name__ == "__main__":
    main()
