"""How fast the refusal checkers are: seconds to classify 80,000 responses.

    python benchmarks/bench_refusal.py
    python benchmarks/bench_refusal.py --checkers scored,scored-batch,generic
    python benchmarks/bench_refusal.py --input results.csv --column response --count 80000

By default the responses are XSTest's 2,250 human-labelled completions
(../shared/data/xstest/model_completions, beside the repository), repeated in
order until there are `--count` of them. They mix long answers and refusals
from five models, about half of each, which is harder than a typical stage-4
run, where most responses are answers. `--input` times any CSV instead.

Each checker runs over the whole list `--repeat` times; the best and the median
wall-clock time and the best CPU time of the process are printed, with the
machine and its load average. On a busy machine the CPU time is the steadier
figure: it leaves out the time other processes held the cores.

`scored` is the default detector called one response at a time
(`orbench.refusal.detect`), without the prompt; `scored-prompt` the same with
each response's prompt, as stage 4 calls it (the input's `prompt` column);
`scored-batch` is `detect_batch` over the whole list. All must give the same
detections as one call at a time (checked before timing). For `scored`
the time is also split into its steps: reading the response (its structure and
the words of its opening), the weighted sum, and the calibration.

    python benchmarks/bench_refusal.py --checkers scored --parts

`--parts` also times, one by one over the same responses, the parts of the
scored detector's work that any detector reading the same things must do: the
text as read, its sentence ends, the three pattern passes (declining clause,
cues, pivot), the words of the opening and their weights. What `scored` takes
beyond their sum is the rest: the sentences' roles, the features, the calls.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orbench.refusal import FAMILIES, GENERIC, SCORED, classify, detect, detect_batch  # noqa: E402
from orbench.refusal import structure  # noqa: E402
from orbench.refusal.features import _SPLIT_TABLE, _TOKEN_CHARS, MAX_TOKENS, PAIR_TOKENS, has_text, read  # noqa: E402
from orbench.refusal.grammar import grammar  # noqa: E402
from orbench.refusal.language import READ  # noqa: E402
from orbench.refusal.scorer import default_model  # noqa: E402
from orbench.refusal.sentences import _ends, normalise  # noqa: E402

SCORED_BATCH = "scored-batch"
SCORED_PROMPT = "scored-prompt"
CHECKERS = (*FAMILIES, SCORED_PROMPT, SCORED_BATCH)
# The floor: 80,000 responses in at most 10 s of CPU on one core for the scored detector (3 s
# before it read further where an opening leaves the decision open, and read Korean, Chinese
# and Japanese: the accuracy that buys is worth the time).
TARGETS_S = {GENERIC: 1.0, SCORED: 10.0, SCORED_PROMPT: 10.0, SCORED_BATCH: 10.0}

POOL = Path(os.environ.get("ORBENCH_POOL_DIR") or ROOT.parent / "shared" / "data")
DEFAULT_INPUT = POOL / "xstest" / "model_completions"


def load_responses(source: Path, column: str | None) -> tuple[list[str], list[str]]:
    """The responses, and their prompts ("" where the input has no `prompt` column)."""
    files = sorted(source.glob("*.csv")) if source.is_dir() else [source]
    if not files:
        raise SystemExit(f"error: no CSV files at {source}")
    responses: list[str] = []
    prompts: list[str] = []
    for path in files:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        name = column or next((c for c in ("completion", "response") if c in frame.columns), None)
        if name is None or name not in frame.columns:
            raise SystemExit(f"error: {path} has no response column; use --column")
        responses.extend(frame[name].tolist())
        prompts.extend(frame["prompt"].tolist() if "prompt" in frame.columns else [""] * len(frame))
    return responses, prompts


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _runner(family: str):
    if family == SCORED:
        return lambda responses, prompts: [detect(r) for r in responses]
    if family == SCORED_PROMPT:
        return lambda responses, prompts: [detect(r, prompt=p) for r, p in zip(responses, prompts)]
    if family == SCORED_BATCH:
        return lambda responses, prompts: detect_batch(responses)
    return lambda responses, prompts: [classify(r, family) for r in responses]


def time_checker(responses: list[str], prompts: list[str], family: str, repeat: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU seconds of each run over all responses."""
    run = _runner(family)
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        run(responses, prompts)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def scored_steps(responses: list[str], repeat: int) -> dict[str, float]:
    """Best seconds of each step of the scored detector over all responses."""
    model = default_model()
    best = {"read": 1e9, "sum": 1e9, "calibrate": 1e9}
    for _ in range(repeat):
        start = time.perf_counter()
        readings = [read(r) for r in responses]
        t1 = time.perf_counter()
        logits = [model.logit(x) for x in readings]
        t2 = time.perf_counter()
        [model.calibrate(z) for z in logits]
        t3 = time.perf_counter()
        for name, seconds in (("read", t1 - start), ("sum", t2 - t1), ("calibrate", t3 - t2)):
            best[name] = min(best[name], seconds)
    return best


def _best(run, items: list, repeat: int) -> float:
    best = 1e9
    for _ in range(repeat):
        start = time.process_time()
        for item in items:
            run(item)
        best = min(best, time.process_time() - start)
    return best


def reading_parts(responses: list[str], repeat: int) -> dict[str, float]:
    """Best CPU seconds of each part of the scored detector's reading, alone, over all responses."""
    model = default_model()
    readings = {r: read(r) for r in set(responses) if has_text(r)}  # (inputs only; the timing runs over all)
    found = [readings[r] for r in responses if r in readings]
    texts = [x.structure.text for x in found]
    grammars = [grammar(x.structure.language if x.structure.language in READ else "en") for x in found]
    ends = [x.structure.clause[1] for x in found]
    declines = [(g, x.structure.text, x.structure.clause[1]) for g, x in zip(grammars, found)
                if x.structure.decline_at >= 0]
    tokens = [x.tokens for x in found]
    words, pairs, zeros = model._words.get, model._pairs.get, [0.0] * MAX_TOKENS
    parts = {
        "text as read": (normalise, [r for r in responses if r in readings]),
        "sentence ends": (_ends, texts),
        "declining-clause pass": (lambda x: x[0].declining.search(x[1], 0, structure._DECLINE_CHARS),
                                  list(zip(grammars, texts))),
        "cue pass": (lambda x: list(x[0].cues.finditer(x[1], 0, x[2] + structure._CUE_CHARS)),
                     list(zip(grammars, texts, ends))),
        "pivot pass": (lambda x: x[0].pivot.search(x[1], x[2] - 1, x[2] + structure._CUE_CHARS), declines),
        "words of the opening": (lambda t: t[:_TOKEN_CHARS].encode().translate(_SPLIT_TABLE).split(None, MAX_TOKENS),
                                 texts),
        "their weights": (lambda t: (sum(map(words, t, zeros)), sum(map(pairs, zip(t, t[1:PAIR_TOKENS]), zeros))),
                          tokens),
    }
    return {name: _best(run, items, repeat) for name, (run, items) in parts.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT, help="a CSV file or a folder of them")
    parser.add_argument("--column", default=None, help="response column (default: completion, else response)")
    parser.add_argument("--count", type=int, default=80_000, help="number of responses to classify")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per checker")
    parser.add_argument("--checkers", default=",".join(CHECKERS), help="comma-separated checkers to time")
    parser.add_argument("--parts", action="store_true", help="also time the parts of the scored detector's reading")
    args = parser.parse_args(argv)

    if not args.input.exists():
        raise SystemExit(f"error: {args.input} not found; pass --input")
    checkers = args.checkers.split(",")
    unknown = [c for c in checkers if c not in CHECKERS]
    if unknown:
        raise SystemExit(f"error: unknown checker(s) {', '.join(unknown)}; choose from {', '.join(CHECKERS)}")
    base, base_prompts = load_responses(args.input, args.column)
    repeat = args.count // len(base) + 1
    responses, prompts = (base * repeat)[: args.count], (base_prompts * repeat)[: args.count]
    if {SCORED, SCORED_PROMPT, SCORED_BATCH} & set(checkers):
        default_model()  # load the weights before timing
        if detect_batch(base) != [detect(r) for r in base]:
            raise SystemExit("error: detect_batch and detect disagree")
        if detect_batch(base, prompts=base_prompts) != [detect(r, prompt=p) for r, p in zip(base, base_prompts)]:
            raise SystemExit("error: detect_batch and detect disagree with prompts")

    print(f"machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.machine()}")
    print(f"python {platform.python_version()}; one process, one thread")
    print(f"responses: {len(responses):,} ({len(base):,} distinct from {args.input})")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'checker':12s} {'best s':>8s} {'median s':>9s} {'best cpu s':>11s} {'us/response':>12s}")
    for family in checkers:
        wall, cpu = time_checker(responses, prompts, family, args.repeat)
        best = min(wall)
        print(
            f"{family:12s} {best:8.3f} {statistics.median(wall):9.3f} {min(cpu):11.3f}"
            f" {best / len(responses) * 1e6:12.1f}"
        )
    if SCORED in checkers:
        steps = scored_steps(responses, args.repeat)
        print("scored, by step (best s): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
    if args.parts:
        parts = reading_parts(responses, args.repeat)
        print("parts of the reading, each alone (best cpu s): " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
              + f"; sum {sum(parts.values()):.3f}")
    for name, target in TARGETS_S.items():
        if name in checkers:
            print(f"target for {name}: at most {target:g} s for 80,000 responses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
