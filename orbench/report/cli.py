"""The command line: python -m orbench.report / orbench-report."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from orbench.report.common import DATASETS, ReportError

# build, correction and write (pandas, numpy, matplotlib) are imported in main(), after the
# arguments are read: --help and a usage error answer at once.



PROG = "python -m orbench.report"


def _parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Tables, figures and one HTML page from stage-4/stage-5 result CSVs.")
    p.add_argument("inputs", nargs="*", help="result CSV files, Inspect .eval logs, or folders holding them")
    p.add_argument("--output_dir", required=True, help="folder to write the report into")
    for ds in DATASETS:
        p.add_argument(f"--{ds}", nargs="+", action="extend", default=[], metavar="FILE",
                       help=f"result files or folders that belong to the {ds} set")
    p.add_argument("--dataset", action="append", default=[], metavar="FILE=DATASET",
                   help="set the dataset of a file (path, file name or glob); repeatable")
    p.add_argument("--prefer", choices=("judge", "keyword"), default=None,
                   help="override whose verdicts count when both exist for a model and dataset. "
                        "Default: decided by the files: a judge's verdicts and corrected rates count "
                        "unless its stage-5 audit (in the .run.json) says it failed, then the keyword "
                        "rates do. The page says when this option was used")
    p.add_argument("--judge", default=None,
                   help="the check model to use when several judged the same results")
    p.add_argument("--x", choices=("hard", "safe"), default=None,
                   help="the over-refusal set on the x axis (default: hard when there are hard-set "
                        "results, else safe)")
    p.add_argument("--compare_paper", action="store_true",
                   help="add the paper's published numbers as a grey series")
    p.add_argument("--sample_of", action="append", default=[], metavar="JUDGED=STAGE4",
                   help="a stage-5 file that judged a random sample of a stage-4 file, for "
                        "files whose .run.json does not say so; both are read; repeatable")
    p.add_argument("--examples_per_set", type=int, default=500, metavar="N",
                   help="rows each examples view of report.html embeds per model and set, "
                        "drawn at random (default: 500; 0: no examples)")
    p.add_argument("--examples_seed", type=int, default=0, metavar="S",
                   help="the seed of that random draw (default: 0)")
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    args = _parser(prog).parse_args(argv)
    from orbench.report.build import build_report
    from orbench.report.correction import planning_lines
    from orbench.report.write import write_report

    try:
        overrides: dict[str, str] = {}
        for item in args.dataset:
            key, sep, ds = item.rpartition("=")
            if not sep or not key:
                raise ReportError(f"--dataset wants FILE=DATASET, got {item!r}")
            overrides[key] = ds.strip().lower()
        inputs = list(args.inputs)
        for ds in DATASETS:
            for item in getattr(args, ds):
                overrides[item] = ds
                inputs.append(item)
        samples: dict[str, str] = {}
        for item in args.sample_of:
            judged, sep, stage4 = item.partition("=")
            if not sep or not judged or not stage4:
                raise ReportError(f"--sample_of wants JUDGED.csv=STAGE4.csv, got {item!r}")
            samples[judged] = stage4
            inputs.append(judged)
        report = build_report(inputs, overrides, prefer=args.prefer, judge=args.judge,
                              x=args.x, compare_paper=args.compare_paper, samples=samples,
                              examples_per_set=args.examples_per_set,
                              examples_seed=args.examples_seed)
        written = write_report(report, args.output_dir)
    except ReportError as exc:
        print(f"orbench.report: error: {exc}", file=sys.stderr)
        return 2
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in report.warnings:
        print(f"WARNING: {line}", file=sys.stderr)
    for line in planning_lines(report.corrections):
        print(f"corrected: {line}")
    print(f"{len(report.summary)} model(s); report written to {written['html']}")
    return 0

