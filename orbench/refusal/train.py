"""Train the scored detector from the development pool.

    python -m orbench.refusal.train                        # writes orbench/refusal/weights.json
    python -m orbench.refusal.train --pool_dir ../shared/data --output /tmp/weights.json

What is fitted, all with numpy and nothing random:
1. the vocabulary: word features seen in at least `min_count` training responses;
2. the weights: L2-regularised logistic regression (refusal = 1) by L-BFGS,
   with light regularisation on the rules' findings and stronger on words, so
   that words correct the rules rather than replace them;
3. the strength of the word regularisation, from a small grid, and the
   calibration (a two-parameter logistic fit of the labels on the logits),
   both on out-of-part logits: each part of the pool scored by weights
   trained without it. So the score is calibrated for models and sources the
   weights have not seen, which is how it is used.

There is no random step (no shuffling, no random start: each fit starts from
zero or from the previous candidate's weights, in a fixed order), so there is
no seed to fix: two runs on the same pool write the same bytes (a test checks
this). scikit-learn is not used.
Rows labelled `ambiguous` and blank responses are never trained on.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from orbench.cli import run_cli
from orbench.errors import UserError

from .features import feature_keys, has_text, read
from .pool import AMBIGUOUS, DEFAULT_CONFIG, REFUSAL, PoolRow, load_pool
from .scorer import WEIGHTS_FILE, Model


# Candidate strengths of the word features' regularisation. Which one is used
# is chosen by leave-one-part-out within the training data (see `train`).
L2_WORDS_GRID: tuple[float, ...] = (3e-3, 1e-2, 3e-2)


@dataclass(frozen=True)
class TrainConfig:
    l2_words: tuple[float, ...] = L2_WORDS_GRID  # per word feature, on the mean log-loss
    l2_rules: float = 1e-4  # per rule / shape feature
    min_count: int = 3  # a word feature must occur in this many training responses
    max_iter: int = 1000
    tolerance: float = 1e-7  # stop when no gradient component is larger


@dataclass(frozen=True)
class Example:
    """A labelled, non-blank response, read once."""

    part: str
    keys: tuple[str, ...]
    refusal: bool


def examples(rows: Sequence[PoolRow]) -> list[Example]:
    """The rows a model may learn from or be scored on: clear labels, some text."""
    return [
        Example(r.part, tuple(feature_keys(read(r.response))), r.gold == REFUSAL)
        for r in rows
        if r.gold != AMBIGUOUS and has_text(r.response)
    ]


# --------------------------------------------------------------------------
# Logistic regression
# --------------------------------------------------------------------------


def _is_rule_key(key: str) -> bool:
    return ":" in key


def _design(exs: Sequence[Example], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows, cols, vals = [], [], []
    for i, ex in enumerate(exs):
        for key, count in sorted(Counter(ex.keys).items()):
            j = vocab.get(key)
            if j is not None:
                rows.append(i)
                cols.append(j)
                vals.append(float(count))
    return np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64), np.asarray(vals)


def lbfgs(fun, x0: np.ndarray, max_iter: int, tolerance: float, memory: int = 10) -> np.ndarray:
    """Minimise a smooth convex function given as fun(x) -> (value, gradient)."""
    x = x0.copy()
    f, g = fun(x)
    steps: list[tuple[np.ndarray, np.ndarray, float]] = []
    for _ in range(max_iter):
        if float(np.abs(g).max()) < tolerance:
            break
        q = g.copy()
        alphas = []
        for s, y, rho in reversed(steps):
            a = rho * float(s @ q)
            q -= a * y
            alphas.append(a)
        if steps:
            s, y, _ = steps[-1]
            q *= float(s @ y) / float(y @ y)
        else:
            q /= max(1.0, float(np.abs(g).max()))
        for (s, y, rho), a in zip(steps, reversed(alphas)):
            q += s * (a - rho * float(y @ q))
        direction = -q
        slope = float(g @ direction)
        if slope >= 0:  # not a descent direction: restart from the gradient
            steps.clear()
            direction, slope = -g, -float(g @ g)
        step = 1.0
        while True:  # backtracking until the Armijo condition holds
            x_new = x + step * direction
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * step * slope or step < 1e-12:
                break
            step *= 0.5
        s, y = x_new - x, g_new - g
        sy = float(s @ y)
        if sy > 1e-12:
            steps.append((s, y, 1.0 / sy))
            if len(steps) > memory:
                steps.pop(0)
        if f - f_new <= 1e-12 * max(1.0, abs(f)):
            x, f, g = x_new, f_new, g_new
            break
        x, f, g = x_new, f_new, g_new
    return x


def fit_logistic(
    exs: Sequence[Example], config: TrainConfig, l2_words: float, start: Model | None = None
) -> tuple[float, dict[str, float]]:
    """Bias and weights by feature name. `start` (weights of a related fit)
    only shortens the search: the optimum is the same."""
    seen: Counter[str] = Counter()
    for ex in exs:
        seen.update(set(ex.keys))
    names = sorted(k for k, n in seen.items() if _is_rule_key(k) or n >= config.min_count)
    vocab = {name: j for j, name in enumerate(names)}
    rows, cols, vals = _design(exs, vocab)
    n, d = len(exs), len(names)
    y = np.array([1.0 if ex.refusal else 0.0 for ex in exs])
    l2 = np.array([config.l2_rules if _is_rule_key(k) else l2_words for k in names])

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        z = np.bincount(rows, weights=vals * w[cols], minlength=n) + b
        loss = float(np.mean(np.logaddexp(0.0, z) - y * z)) + 0.5 * float(l2 @ (w * w))
        r = (0.5 * (1.0 + np.tanh(0.5 * z)) - y) / n  # sigmoid(z) - y, per row
        grad_w = np.bincount(cols, weights=vals * r[rows], minlength=d) + l2 * w
        return loss, np.append(grad_w, r.sum())

    theta = np.zeros(d + 1)
    if start is not None:
        theta[:-1] = [start.weights.get(name, 0.0) for name in names]
        theta[-1] = start.bias
    theta = lbfgs(objective, theta, config.max_iter, config.tolerance)
    return float(theta[-1]), {name: float(w) for name, w in zip(names, theta[:-1])}


def fit_calibration(logits: np.ndarray, refusal: np.ndarray) -> tuple[float, float]:
    """Scale and shift of a logistic fit of the labels on the logits (Platt scaling)."""
    y = refusal.astype(float)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] * logits + theta[1]
        r = (0.5 * (1.0 + np.tanh(0.5 * z)) - y) / len(y)
        loss = float(np.mean(np.logaddexp(0.0, z) - y * z))
        return loss, np.array([float(r @ logits), float(r.sum())])

    scale, shift = lbfgs(objective, np.array([1.0, 0.0]), 200, 1e-9)
    return float(scale), float(shift)


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------


def _raw_model(exs: Sequence[Example], config: TrainConfig, l2_words: float, start: Model | None = None) -> Model:
    bias, weights = fit_logistic(exs, config, l2_words, start)
    return Model(bias, weights)


def logit_of_keys(model: Model, keys: Sequence[str]) -> float:
    return model.bias + sum(model.weights.get(k, 0.0) for k in keys)


def out_of_part_logits(exs: Sequence[Example], config: TrainConfig, l2_words: float, start: Model) -> np.ndarray:
    """Each part's logits from weights trained on the other parts."""
    logits = np.zeros(len(exs))
    for part in dict.fromkeys(ex.part for ex in exs):
        model = _raw_model([ex for ex in exs if ex.part != part], config, l2_words, start)
        for i, ex in enumerate(exs):
            if ex.part == part:
                logits[i] = logit_of_keys(model, ex.keys)
    return logits


def row_log_loss(scores: np.ndarray, refusal: np.ndarray) -> np.ndarray:
    p = np.clip(scores, 1e-12, 1 - 1e-12)
    return -np.where(refusal, np.log(p), np.log(1 - p))


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def train(exs: Sequence[Example], config: TrainConfig = TrainConfig()) -> Model:
    """Weights from all of `exs`, with the word regularisation and the
    calibration chosen on out-of-part logits.

    For each candidate strength (weakest first), each part is scored by
    weights trained on the other parts and a calibration is fitted to those
    logits. The candidate kept is the strongest whose calibrated log-loss is
    within one standard error of the lowest (the usual "one-standard-error
    rule": the CV minimum flatters the candidate that fits the validation
    noise, and a simpler model within the noise generalises at least as well).
    The standard error is that of the per-response difference from the best.
    With a single part there is nothing to hold out: the first candidate is
    used, uncalibrated."""
    parts = list(dict.fromkeys(ex.part for ex in exs))
    refusal = np.array([ex.refusal for ex in exs])
    candidates: list[tuple[float, Model, np.ndarray]] = []  # (l2, calibrated model, per-row loss)
    start: Model | None = None
    for l2_words in sorted(config.l2_words):
        model = _raw_model(exs, config, l2_words, start)
        start = model
        if len(parts) < 2:
            candidates.append((l2_words, model, np.zeros(1)))
            break
        logits = out_of_part_logits(exs, config, l2_words, model)
        model.scale, model.shift = fit_calibration(logits, refusal)
        candidates.append((l2_words, model, row_log_loss(sigmoid(model.scale * logits + model.shift), refusal)))
    best = min(candidates, key=lambda c: float(c[2].mean()))
    l2_words, model, _ = best
    for l2, cand, losses in candidates:  # strongest last: keep the last one within the noise
        diff = losses - best[2]
        if float(diff.mean()) <= float(diff.std()) / np.sqrt(len(diff)):
            l2_words, model = l2, cand
    counts = Counter((ex.part, ex.refusal) for ex in exs)
    model.training = {
        "config": {**asdict(config), "l2_words": sorted(config.l2_words)},
        "l2_words_chosen": l2_words,
        "out_of_part_log_loss": {repr(l2): round(float(losses.mean()), 5) for l2, _, losses in candidates},
        "features": len(model.weights),
        "parts": {p: {"refusals": counts[(p, True)], "answers": counts[(p, False)]} for p in parts},
    }
    return model


def write_model(model: Model, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(model.to_json(), encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m orbench.refusal.train",
        description="Train the scored refusal detector on the development pool and write its weights (JSON).",
    )
    parser.add_argument("--pool_dir", default=None, help="the pool folder (default: $ORBENCH_POOL_DIR, else ../shared/data)")
    parser.add_argument("--pool_config", type=Path, default=DEFAULT_CONFIG, help="sources and label maps (TOML)")
    parser.add_argument("--output", type=Path, default=WEIGHTS_FILE, help=f"default: the package's {WEIGHTS_FILE.name}")
    parser.add_argument("--l2_words", default=",".join(map(str, L2_WORDS_GRID)),
                        help="candidate word regularisation strengths, comma-separated (one: no choice)")
    parser.add_argument("--l2_rules", type=float, default=TrainConfig.l2_rules)
    parser.add_argument("--min_count", type=int, default=TrainConfig.min_count)
    return parser


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        grid = tuple(float(v) for v in args.l2_words.split(","))
    except ValueError:
        raise UserError(f"--l2_words must be numbers separated by commas, not {args.l2_words!r}") from None
    config = TrainConfig(l2_words=grid, l2_rules=args.l2_rules, min_count=args.min_count)
    exs = examples(load_pool(args.pool_dir, args.pool_config))
    model = train(exs, config)
    write_model(model, args.output)
    print(f"trained on {len(exs)} responses; {len(model.weights)} features; "
          f"calibration scale {model.scale:.3f}, shift {model.shift:.3f}; wrote {args.output}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
