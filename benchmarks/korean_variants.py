"""The Korean parts held out under variants of the scored detector's training (a study, not a benchmark).

    python benchmarks/korean_variants.py                  # as shipped
    python benchmarks/korean_variants.py --variant no_endings
    python benchmarks/korean_variants.py --variant endings_l2 --factor 3

Each Korean part of the pool is scored by a detector fitted on every other part (English and the
other Korean models), as `--leave_one_out` does for it, under one variant:

* `shipped`: the training as it ships;
* `no_endings`: without the Korean word endings ("~습니다");
* `no_korean_copies`: without the Korean copies of the structural features ("s:ko:...");
* `structure_only`: no word features at all;
* `endings_l2`, `copies_l2`: the endings' or the Korean copies' regularisation times `--factor`
  (done by dividing those features' values by the factor's square root, which is the same fit);
* `mixed`: scored as Chinese and Japanese are, `(1 - w) * main + w * structure_only` on the
  calibrated log-odds, with `w` given as `--factor` (between 0 and 1).

docs/refusal/languages.md quotes its figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orbench.refusal.features import ENDING, FIRST, STRUCTURE_PREFIX  # noqa: E402
from orbench.refusal.metrics import Confusion  # noqa: E402
from orbench.refusal.pool import load_pool  # noqa: E402
from orbench.refusal.scorer import DEFAULT_THRESHOLD as THRESHOLD  # noqa: E402
from orbench.refusal.scorer import mixed  # noqa: E402
from orbench.refusal.train import Dataset, TrainConfig, examples, sigmoid, train_rows  # noqa: E402

VARIANTS = ("shipped", "no_endings", "no_korean_copies", "structure_only", "endings_l2", "copies_l2", "mixed")
KOREAN = "orbench_ko/"


def _is_ending(key: str) -> bool:
    return key.lstrip(FIRST).startswith(ENDING)


def _is_copy(key: str) -> bool:
    return key.startswith(STRUCTURE_PREFIX + "ko:")


def _dropped(variant: str):
    return {"no_endings": _is_ending, "no_korean_copies": _is_copy}.get(variant)


def _held_out_scores(data: Dataset, part: str, config: TrainConfig, share: float | None) -> np.ndarray:
    """The part's scores by a fit on every other part; with `share`, mixed with the structure-only
    fit's calibrated log-odds as stage 4 mixes them for Chinese and Japanese."""
    train, rows = np.flatnonzero(data.parts != part), np.flatnonzero(data.parts == part)
    model, fit = train_rows(data, train, config)
    z = model.scale * fit.logits(data, rows) + model.shift
    if share is not None:
        plain, plain_fit = train_rows(data, train, dataclasses.replace(config, words=False))
        z = mixed(z, plain.scale * plain_fit.logits(data, rows) + plain.shift, share)
    return sigmoid(z)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="shipped")
    parser.add_argument("--factor", type=float, default=1.0, help="for endings_l2 and copies_l2; the share w for mixed")
    parser.add_argument("--pool_dir", default=None)
    args = parser.parse_args(argv)
    drop = _dropped(args.variant)
    exs = examples(load_pool(args.pool_dir))  # clear labels, some text, a language the detector reads
    if drop is not None:
        exs = [dataclasses.replace(ex, keys=tuple(k for k in ex.keys if not drop(k))) for ex in exs]
    data = Dataset(exs)
    if args.variant in ("endings_l2", "copies_l2"):
        which = data.endings if args.variant == "endings_l2" else np.array([_is_copy(n) for n in data.names])
        scale = np.where(which, 1.0 / np.sqrt(args.factor), 1.0)
        data.x = data.x.multiply(scale).tocsr()  # a feature's values / sqrt(k): its L2 penalty x k
    config = TrainConfig(words=args.variant != "structure_only")
    print(f"variant: {args.variant}" + (f" x {args.factor:g}" if args.variant.endswith("_l2") else "")
          + (f", share {args.factor:g}" if args.variant == "mixed" else ""))
    for part in sorted(p for p in set(data.parts.tolist()) if p.startswith(KOREAN)):
        rows = np.flatnonzero(data.parts == part)
        scores = _held_out_scores(data, part, config, args.factor if args.variant == "mixed" else None)
        c = Confusion()
        for gold, score in zip(data.y[rows] > 0.5, scores):
            c.add(bool(gold), bool(score >= THRESHOLD))
        print(f"  {part[len(KOREAN):]:36s} n={c.n:4d}  accuracy {c.accuracy:.3f}  refusals called answers "
              f"{1 - c.recall:.1%}  answers called refusals {c.answers_called_refusals:.1%}  "
              f"rate error {c.rate_error:+.1f} points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
