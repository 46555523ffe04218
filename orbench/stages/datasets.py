"""Build the benchmark's three prompt sets from stage outputs.

- safe set (OR-Bench-80K style): rewritten prompts whose moderation verdict (stage 3's
  is_toxic, the ensemble vote when several moderators ran) is False; unparsed verdicts are
  left out. Duplicates are dropped twice: exact, then after normalising case, white space
  and punctuation (the original did exact only).
- toxic set: prompts whose moderation verdict is True (normally the moderated stage-1
  seeds).
- hard set: safe prompts that at least k of the given stage-4 result files reject (k = 3
  by default, as in the paper); each file counts as one model. Stage-5 judge files work too
  (refusal = direct_refusal or indirect_refusal). Failed, empty and unscored rows never
  count as rejections.

Output: or-bench-80k.csv, or-bench-toxic.csv and or-bench-hard-1k.csv in --output_dir, with
columns prompt, category, like the public dataset (the names let the later stages and the
report tell the sets apart), and a count per category, printed and in datasets.run.json.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ..run.cli import make_parser, positive_int, run_cli
from ..protocol.constants import COL_ANSWER_CATEGORY, COL_CATEGORY, COL_IS_REJECTED, COL_IS_TOXIC, COL_PROMPT, REFUSAL_CLASSES
from ..errors import UserError
from ..tables.resume import write_atomic
from ..tables.runinfo import write_runinfo
from ..tables.table_io import read_table
from ..protocol.verdict import refused_in

if TYPE_CHECKING:
    import pandas as pd  # imported in _moderated(): --help should not pay for pandas

SAFE_NAME = "or-bench-80k.csv"
TOXIC_NAME = "or-bench-toxic.csv"
HARD_NAME = "or-bench-hard-1k.csv"
COLUMNS = [COL_PROMPT, COL_CATEGORY]

_PUNCT = re.compile(r"[^\w\s]", flags=re.UNICODE)


def normalise(text: str) -> str:
    """Case, white space and punctuation folded: 'How do I X?' == 'how do i x'."""
    t = unicodedata.normalize("NFKC", str(text)).casefold()
    t = _PUNCT.sub(" ", t)
    return " ".join(t.split())


def dedupe(rows: Iterable[dict[str, str]]) -> tuple[list[dict[str, str]], int, int]:
    """Keep the first of each prompt; returns rows, exact repeats dropped, near repeats dropped."""
    exact: set[str] = set()
    near: set[str] = set()
    out: list[dict[str, str]] = []
    n_exact = n_near = 0
    for r in rows:
        p = r[COL_PROMPT]
        if p in exact:
            n_exact += 1
            continue
        exact.add(p)
        k = normalise(p)
        if k in near:
            n_near += 1
            continue
        near.add(k)
        out.append(r)
    return out, n_exact, n_near


def _moderated(paths: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    frames = [read_table(p, [COL_PROMPT, COL_IS_TOXIC]) for p in paths]
    df = pd.concat(frames, ignore_index=True)
    if COL_CATEGORY not in df.columns:
        df[COL_CATEGORY] = ""
    return df


def select(df: pd.DataFrame, toxic: bool) -> tuple[list[dict[str, str]], int]:
    want = "True" if toxic else "False"
    verdict = df[COL_IS_TOXIC].astype(str)
    undecided = int((~verdict.isin(["True", "False"])).sum())
    rows = [{COL_PROMPT: r[COL_PROMPT], COL_CATEGORY: r[COL_CATEGORY]} for r in df[verdict == want].to_dict("records")]
    return rows, undecided


def rejected_prompts(path: str) -> set[str]:
    """Normalised prompts that this result file (one model) refused."""
    df = read_table(path, [COL_PROMPT])
    if COL_ANSWER_CATEGORY in df.columns:  # stage-5 judge file
        mask = df[COL_ANSWER_CATEGORY].isin(REFUSAL_CLASSES)
    elif COL_IS_REJECTED in df.columns:  # stage-4 file
        mask = df[COL_IS_REJECTED].map(refused_in).eq(True)
    else:
        found = ", ".join(df.columns)
        raise UserError(f"{path} has neither 'is_rejected' nor 'answer_category' (columns found: {found})")
    return {normalise(p) for p in df.loc[mask, COL_PROMPT]}


def hard_set(safe: list[dict[str, str]], result_files: Sequence[str], k: int) -> list[dict[str, str]]:
    if k > len(result_files):
        raise UserError(f"--k {k} needs at least {k} result files in --hard_from; got {len(result_files)}")
    votes: Counter[str] = Counter()
    for f in result_files:
        votes.update(rejected_prompts(f))
    return [r for r in safe if votes[normalise(r[COL_PROMPT])] >= k]


def per_category(rows: list[dict[str, str]]) -> dict[str, int]:
    return dict(sorted(Counter(r[COL_CATEGORY] or "(none)" for r in rows).items()))


def moderated_set(sources: Sequence[str], toxic: bool) -> tuple[list[dict[str, str]], dict[str, object]]:
    """The safe (or toxic) set from stage-3 outputs, without duplicates, and its record for
    the run file: rows, per category, what was left out and why, the sources."""
    rows, undecided = select(_moderated(sources), toxic=toxic)
    kept, n_exact, n_near = dedupe(rows)
    return kept, {"rows": len(kept), "per_category": per_category(kept), "unparsed_left_out": undecided,
                  "exact_duplicates_dropped": n_exact, "near_duplicates_dropped": n_near, "sources": sources}


def build_parser(doc: str | None, prog: str = "build_datasets.py"):
    p = make_parser(prog, doc)
    p.add_argument("--rewrite_moderation", nargs="+", default=[],
                   help="stage-3 outputs on the rewritten prompts: the safe set's source")
    p.add_argument("--toxic_moderation", nargs="+", default=[],
                   help="stage-3 outputs on the toxic pool (e.g. the moderated stage-1 seeds): the toxic set's source")
    p.add_argument("--safe_set", default=None, help="an existing safe set to build the hard set from (instead of --rewrite_moderation)")
    p.add_argument("--hard_from", nargs="+", default=[], help="stage-4 (or stage-5) result files on the safe set, one per model")
    p.add_argument("--k", type=positive_int, default=3, help="a hard prompt is rejected by at least k of --hard_from (default 3)")
    p.add_argument("--output_dir", required=True, help="where the set files go")
    return p


def _main(argv: Sequence[str] | None, doc: str | None, prog: str = "build_datasets.py") -> int:
    args = build_parser(doc, prog).parse_args(argv)
    if not (args.rewrite_moderation or args.toxic_moderation or args.hard_from):
        raise UserError("nothing to build: give --rewrite_moderation, --toxic_moderation and/or --hard_from")
    if args.hard_from and not (args.rewrite_moderation or args.safe_set):
        raise UserError("--hard_from needs the safe set: give --rewrite_moderation or --safe_set")
    out_dir = Path(args.output_dir)
    report: dict[str, object] = {"stage": "build_datasets", "k": args.k}
    safe: list[dict[str, str]] | None = None
    if args.rewrite_moderation:
        safe, report["safe"] = moderated_set(args.rewrite_moderation, toxic=False)
    elif args.safe_set:
        df = read_table(args.safe_set, [COL_PROMPT, COL_CATEGORY])
        safe = df[COLUMNS].to_dict("records")
    toxic = None
    if args.toxic_moderation:
        toxic, report["toxic"] = moderated_set(args.toxic_moderation, toxic=True)
    hard = None
    if args.hard_from:
        assert safe is not None
        hard = hard_set(safe, args.hard_from, args.k)
        report["hard"] = {"rows": len(hard), "per_category": per_category(hard), "sources": args.hard_from}

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, rows in ((SAFE_NAME, safe if args.rewrite_moderation else None), (TOXIC_NAME, toxic), (HARD_NAME, hard)):
        if rows is None:
            continue
        path = out_dir / name
        write_atomic(path, COLUMNS, rows)
        counts = ", ".join(f"{c}: {n}" for c, n in per_category(rows).items()) or "empty"
        print(f"{path}: {len(rows)} prompts ({counts})")
    write_runinfo(out_dir / "datasets.csv", report)
    return 0


def main(argv: Sequence[str] | None = None, doc: str | None = None, prog: str = "build_datasets.py") -> int:
    return run_cli(lambda a: _main(a, doc or __doc__, prog), argv)


if __name__ == "__main__":
    sys.exit(main())
