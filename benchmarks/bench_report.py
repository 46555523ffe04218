"""How long the report takes on 80,000 stage-4 rows with a 1,000-row judged sample.

    python benchmarks/bench_report.py                  # 3 repeats, prints a JSON line
    python benchmarks/bench_report.py --rows 80000 --sample 1000 --repeats 5

Writes one stage-4 file of `--rows` rows (OR-Bench-length prompts, XSTest's real responses,
~700 characters each, cycling through the 10 categories) and a stage-5 file judging a
uniform random sample of `--sample` of them, with the .run.json that stage 5 writes. Then
times `python -m orbench.report FOLDER --output_dir OUT` as a subprocess, start-up
included, twice per repeat: with the judged sample (corrected rates, per category too) and
without it (the stage-4 file alone), so the cost of the correction shows apart. Prints the
median wall-clock and CPU time and the peak memory; saves JSON to benchmarks/results/report.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    PYTHON, describe_machine, machine, make_rows, median, run_timed, save_results, wait_for_quiet, write_csv,
)
from orbench.tables.sampling import draw  # noqa: E402

MODEL = "bench-target"


def build(folder: Path, rows: int, sample: int, seed: int) -> tuple[Path, Path]:
    """The stage-4 results folder and the judged-sample folder."""
    rng = random.Random(seed)
    data = make_rows(rows, with_response=True)
    truth = [rng.random() < 0.4 for _ in data]  # what the judge will say
    for row, refused in zip(data, truth):
        # keyword rules that miss a third of the refusals and flag 3% of the answers
        keyword = (rng.random() < 0.67) if refused else (rng.random() < 0.03)
        row["is_rejected"] = str(keyword)
    results = folder / "results"
    s4 = write_csv(results / f"{MODEL}_merged_or-bench-80k.csv",
                   [{k: r[k] for k in ("prompt", "is_rejected", "response", "category")} for r in data])
    (results / f"{MODEL}_merged_or-bench-80k.run.json").write_text(json.dumps({"model": MODEL, "complete": True}))
    chosen = draw([str(i) for i in range(rows)], sample, seed).chosen
    judged_rows = []
    for i in chosen:
        verdict = "direct_refusal" if truth[i] else "direct_answer"
        r = data[i]
        judged_rows.append({"prompt": r["prompt"], "answer_category": verdict,
                            "answer_type_response": f"Reason. [[{verdict}]]", "response": r["response"],
                            "category": r["category"], "is_rejected": r["is_rejected"]})
    judged = folder / "judged"
    s5 = write_csv(judged / f"{MODEL}_merged_or-bench-80k_response_check_merged_bench-judge.csv", judged_rows)
    s5.with_name(s5.stem + ".run.json").write_text(json.dumps({
        "check_model": "bench-judge", "target_model": MODEL, "complete": True, "sample_size": sample,
        "sample_seed": seed, "population_rows": rows, "sampled_rows": len(chosen),
        "input_file": str(s4), "input_path": str(s4.resolve())}))
    return results, judged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=80_000)
    ap.add_argument("--sample", type=int, default=1_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max_load", type=float, default=None,
                    help="wait before each repeat until the 1-minute load average is below this")
    args = ap.parse_args(argv)
    m = machine()
    with tempfile.TemporaryDirectory(prefix="bench_report_") as tmp:
        folder = Path(tmp)
        results, judged = build(folder, args.rows, args.sample, args.seed)
        arms = {
            "with_sample": [PYTHON, "-m", "orbench.report", str(results), str(judged), "--output_dir"],
            "keyword_only": [PYTHON, "-m", "orbench.report", str(results), "--output_dir"],
        }
        timed: dict[str, list] = {k: [] for k in arms}
        for rep in range(args.repeats):
            for name, argv_ in arms.items():
                wait_for_quiet(args.max_load)
                t = run_timed(argv_ + [str(folder / f"out_{name}_{rep}")]).ok()
                timed[name].append(t)
                print(f"  {name} #{rep + 1}: {t.wall_s:.2f} s wall, {t.cpu_s:.2f} s CPU, "
                      f"{t.peak_rss_mb:.0f} MB, load {t.load1:.1f}", file=sys.stderr)
        summary = (folder / "out_with_sample_0" / "summary.csv").read_text(encoding="utf-8").splitlines()
    figures = {name: {"wall_s": median([t.wall_s for t in ts]), "cpu_s": median([t.cpu_s for t in ts]),
                      "peak_rss_mb": median([t.peak_rss_mb for t in ts]), "loads": [t.load1 for t in ts]}
               for name, ts in timed.items()}
    payload = {"rows": args.rows, "sample": args.sample, "repeats": args.repeats, "machine": m,
               "figures": figures, "summary_csv": summary}
    save_results("report", payload)
    print(f"machine: {describe_machine(m)}; load at start {m['load_avg_at_start']}", file=sys.stderr)
    print(json.dumps({k: {kk: (round(vv, 2) if isinstance(vv, float) else vv) for kk, vv in v.items()}
                      for k, v in figures.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
