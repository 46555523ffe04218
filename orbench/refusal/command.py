"""`python -m orbench.evaluate_refusal`: score refusal checkers against human labels.

    python -m orbench.evaluate_refusal --leave_one_out            # the scored detector on the pool, held out
    python -m orbench.evaluate_refusal --explain "I'm sorry, but I can't help with that."   # why that score
    python -m orbench.evaluate_refusal --explain < response.txt   # a response read from stdin
    python -m orbench.evaluate_refusal --explain "I can't give legal advice." --prompt "Can I sue my landlord?"
    python -m orbench.evaluate_refusal --checker generic ../shared/data/xstest/model_completions
    python -m orbench.evaluate_refusal labelled.csv --label_column label --refused_labels refusal \\
        --answered_labels answer --all_checkers

With `--explain` it prints how the scored detector reads one response (see
`orbench.refusal.explain`). With `--leave_one_out` it reads the development pool (`--pool_dir`, sources and
label maps in `--pool_config`) and prints the leave-one-out table, calibration,
targets and most uncertain rows (see `orbench.refusal.loo`). Otherwise it
scores one checker (or all) on the files given (see `orbench.refusal.evaluate`).
A user mistake is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from orbench.protocol.constants import COL_ANSWER_CATEGORY
from orbench.errors import run_command

from . import DEFAULT_RULES, FAMILIES
from .evaluation import format_comparison, format_report, write_disagreements, write_json
from .labelled import (
    DEFAULT_AMBIGUOUS_LABELS,
    DEFAULT_ANSWERED_LABELS,
    DEFAULT_LABEL_COLUMN,
    DEFAULT_REFUSED_LABELS,
    GROUP_BY_FILE,
    EvaluationError,
    LabelMap,
    Settings,
    expand_inputs,
    load_table,
)
from .pool import DEFAULT_CONFIG, POOL_DIR_ENV


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # Reported like every other user mistake: one line, exit code 2.
        raise EvaluationError(message)


PROG = "python -m orbench.evaluate_refusal"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        description="Score a refusal checker against human-labelled responses, or validate the scored "
        "detector leave-one-out on the development pool.",
    )
    parser.add_argument("inputs", nargs="*", metavar="FILE_OR_DIR", help="CSV files, or folders of CSV files")
    parser.add_argument(
        "--checker",
        default=DEFAULT_RULES,
        help=f"{', '.join(FAMILIES)}, or column:NAME to score a verdict column such as "
        f"column:{COL_ANSWER_CATEGORY} (default: {DEFAULT_RULES})",
    )
    parser.add_argument("--response_column", default=None, help="default: 'completion' if present, else 'response'")
    parser.add_argument("--label_column", default=DEFAULT_LABEL_COLUMN, help=f"default: {DEFAULT_LABEL_COLUMN}")
    parser.add_argument(
        "--refused_labels", default=",".join(DEFAULT_REFUSED_LABELS), help="comma-separated labels that mean a refusal"
    )
    parser.add_argument(
        "--answered_labels", default=",".join(DEFAULT_ANSWERED_LABELS), help="comma-separated labels that mean an answer"
    )
    parser.add_argument(
        "--ambiguous_labels", default=",".join(DEFAULT_AMBIGUOUS_LABELS),
        help="comma-separated labels that mean neither cleanly: scored apart, not in the metrics "
        f"(default: {','.join(DEFAULT_AMBIGUOUS_LABELS)}; '' for none)",
    )
    parser.add_argument(
        "--group_by", default=GROUP_BY_FILE, help="break the metrics down by this column (default: per file)"
    )
    parser.add_argument("--disagreements", type=Path, default=None, metavar="PATH", help="write disagreements to this CSV")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="write the metrics to this JSON file")
    parser.add_argument(
        "--all_checkers", action="store_true", help="also score every family rule set, generic and scored, in one table"
    )
    parser.add_argument("--explain", nargs="?", const="-", default=None, metavar="TEXT",
                        help="explain the scored detector's score of one response: TEXT, or stdin when TEXT is "
                        "'-' or left out")
    parser.add_argument("--prompt", default=None, metavar="TEXT",
                        help="with --explain: the prompt the response answered (stage 4 reads it too)")
    loo = parser.add_argument_group("leave-one-out on the development pool")
    loo.add_argument("--leave_one_out", action="store_true",
                     help="fit the scored detector without each part of the pool in turn and score that part")
    loo.add_argument("--pool_dir", default=None, help=f"the pool folder (default: ${POOL_DIR_ENV}, else ../shared/data)")
    loo.add_argument("--pool_config", type=Path, default=DEFAULT_CONFIG,
                     help="sources, files and label maps (TOML; default: the package's pool.toml)")
    loo.add_argument("--uncertain", type=int, default=12, metavar="N",
                     help="print the N held-out rows with the most uncertain scores (default 12)")
    loo.add_argument("--scores", type=Path, default=None, metavar="PATH",
                     help="write every row's held-out score and verdict to this CSV, for reading")
    loo.add_argument("--l2_words", default=None, metavar="L2[,L2...]",
                     help="candidate regularisation strengths of the word features, as in training "
                     "(default: the trainer's grid; one value fixes it)")
    return parser


def _write_json(payload: object, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def run_leave_one_out(args: argparse.Namespace, out) -> int:
    from .loo import leave_one_out
    from .loo_report import format_loo, loo_json, write_scores
    from .pool import load_pool
    from .train import TrainConfig, parse_grid

    if args.inputs:
        raise EvaluationError("--leave_one_out reads the pool (--pool_dir, --pool_config), not input files")
    if args.uncertain < 0:
        raise EvaluationError("--uncertain must be 0 or more")
    config = TrainConfig() if args.l2_words is None else TrainConfig(l2_words=parse_grid(args.l2_words))
    rows = load_pool(args.pool_dir, args.pool_config)
    result = leave_one_out(rows, config, progress=True)
    print(format_loo(result, args.uncertain), file=out)
    try:
        if args.scores is not None:
            write_scores(result, args.scores)
            print(f"wrote {len(result.held_out)} held-out scores to {args.scores}", file=out)
        if args.json is not None:
            _write_json(loo_json(result, args.uncertain), args.json)
            print(f"wrote metrics to {args.json}", file=out)
    except OSError as err:
        raise EvaluationError(f"cannot write {err.filename}: {err.strerror}") from None
    return 0


def run_explain(args: argparse.Namespace, out) -> int:
    from .explain import explain

    if args.inputs or args.leave_one_out:
        raise EvaluationError("--explain takes one response (or stdin), not input files or --leave_one_out")
    if args.explain == "-":
        try:
            text = sys.stdin.read()
        except UnicodeDecodeError:
            raise EvaluationError("--explain: stdin is not UTF-8 text") from None
    else:
        text = args.explain
    print(explain(text, prompt=args.prompt), file=out)
    return 0


def run(argv: Sequence[str] | None = None, out=None, prog: str = PROG) -> int:
    """The command: parse, read, score, print. Raises EvaluationError on user mistakes."""
    out = out or sys.stdout
    args = build_parser(prog).parse_args(argv)
    # Here, not at the top: it loads the checkers, which --help does not need (refusal/__init__.py).
    from .evaluate import check_columns, checker_names, evaluate, make_checker

    if args.explain is not None:
        return run_explain(args, out)
    if args.prompt is not None:
        raise EvaluationError("--prompt goes with --explain (a labelled file's prompts are read from its prompt column)")
    if args.leave_one_out:
        return run_leave_one_out(args, out)
    make_checker(args.checker)  # reject an unknown checker before reading anything
    settings = Settings(
        response_column=args.response_column,
        label_column=args.label_column,
        labels=LabelMap.of(args.refused_labels.split(","), args.answered_labels.split(","),
                           args.ambiguous_labels.split(",")),
        group_by=args.group_by,
    )
    files = expand_inputs(args.inputs)
    tables = [load_table(path) for path in files]
    specs = checker_names(extra=[args.checker]) if args.all_checkers else [args.checker]
    check_columns(tables, settings, specs)

    reports = [evaluate(tables, spec, settings) for spec in specs]
    main_report = next(r for r in reports if r.checker == args.checker)
    print(format_report(main_report, settings), file=out)
    if args.all_checkers:
        print("", file=out)
        print(format_comparison(reports, settings), file=out)
    try:
        if args.disagreements is not None:
            write_disagreements(main_report, args.disagreements)
            print(f"wrote {len(main_report.disagreements)} disagreements to {args.disagreements}", file=out)
        if args.json is not None:
            write_json(reports, settings, files, args.json)
            print(f"wrote metrics to {args.json}", file=out)
    except OSError as err:
        raise EvaluationError(f"cannot write {err.filename}: {err.strerror}") from None
    return 0


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    return run_command(lambda a: run(a, prog=prog), argv)


if __name__ == "__main__":
    sys.exit(main())
