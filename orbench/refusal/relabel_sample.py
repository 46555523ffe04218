"""Which responses were given to readers in the second reading round, and the packets they read.

    python -m orbench.refusal.relabel_sample --pool_dir ../shared/data --out /tmp/packets

The round reads three sets that the pool did not label (relabels/SOURCE.md, "Round 2"):

* `orbench_en`: the four models' replies to OR-Bench-80K prompts
  (`orbench-responses/en_80k_four_models.csv`). Per model: every reply whose refusal score
  (the detector shipped before the round, read with its prompt) is at least 0.2 (the doubt
  band 0.2-0.8 and the few replies above it), and a uniform sample of the rest, so that each
  model has at least `EN_PER_MODEL` rows and at least `EN_MIN_LOW` below 0.2;
* `donotanswer`, the authors' actions 1 (rebuts the premise) and 4 (cannot, for lack of
  ability or knowledge), which the pool leaves `ambiguous`: `DNA_PER_CLASS` of each per model;
* `orbench_ko`: four Korean models' replies to the Korean OR-Bench-Hard-1K
  (`orbench-responses/ko_hard1k_four_models.csv`): every reply the source's LLM judge called a
  deflection, and `KO_PER_CLASS` of its compliances and of its refusals per model. The judge's
  label chooses rows; it is never shown to a reader.

A seeded 10% of each set is read a second time by another reader. The packets show a row's
id, prompt and response only (no model, no score, no label), in a seeded order. The manifest
ties each id to its source row. Selection uses scores and the judge's labels; the labels
themselves come only from reading.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from orbench.errors import UserError, run_command

from .relabels import response_hash
from .pool import pool_dir

SEED = 20261126
EN_FILE = "orbench-responses/en_80k_four_models.csv"
KO_FILE = "orbench-responses/ko_hard1k_four_models.csv"
DNA_FILE = "donotanswer/donotanswer.csv"
EN_PER_MODEL, EN_MIN_LOW, DOUBT_FROM = 300, 40, 0.2
DNA_PER_CLASS = 85
KO_PER_CLASS = 55
SECOND_SHARE = 0.10
PACKETS = {"orbench_en": 4, "donotanswer": 5, "orbench_ko": 6}
KO_SHOWN_CHARS = 4000
PREFIX = {"orbench_en": "en", "donotanswer": "dn", "orbench_ko": "ko"}


def _scores(frame: pd.DataFrame) -> np.ndarray:
    from .verdicts import detect_batch

    verdicts = detect_batch(frame["response"].fillna("").tolist(), prompts=frame["prompt"].tolist())
    return np.array([np.nan if v.score is None else v.score for v in verdicts])


def sample_en(folder: Path, rng: np.random.Generator) -> pd.DataFrame:
    frame = pd.read_csv(folder / EN_FILE, dtype=str, keep_default_na=False)
    frame["score"] = _scores(frame)
    picked = []
    for model, group in frame.groupby("model", sort=True):
        high = group[group["score"] >= DOUBT_FROM]
        low = group[~(group["score"] >= DOUBT_FROM)]
        n_low = min(len(low), max(EN_MIN_LOW, EN_PER_MODEL - len(high)))
        chosen = low.iloc[np.sort(rng.choice(len(low), n_low, replace=False))]
        picked.append(high.assign(stratum="score>=0.2"))
        picked.append(chosen.assign(stratum="score<0.2 sample"))
    out = pd.concat(picked)
    return pd.DataFrame({"set": "orbench_en", "source": "orbench_en", "model": out["model"],
                         "key": out["prompt_id"], "prompt": out["prompt"], "response": out["response"],
                         "stratum": out["stratum"], "score": out["score"].round(4)})


def sample_dna(folder: Path, rng: np.random.Generator) -> pd.DataFrame:
    frame = pd.read_csv(folder / DNA_FILE, dtype=str, keep_default_na=False)
    picked = []
    for (model, action), group in frame[frame["action"].isin(["1", "4"])].groupby(["model", "action"], sort=True):
        picked.append(group.iloc[np.sort(rng.choice(len(group), DNA_PER_CLASS, replace=False))])
    out = pd.concat(picked)
    return pd.DataFrame({"set": "donotanswer", "source": "donotanswer", "model": out["model"],
                         "key": out["question_id"], "prompt": out["question"], "response": out["response"],
                         "stratum": "action " + out["action"], "score": np.nan})


def sample_ko(folder: Path, rng: np.random.Generator) -> pd.DataFrame:
    frame = pd.read_csv(folder / KO_FILE, dtype=str, keep_default_na=False)
    frame["row"] = np.arange(len(frame)).astype(str)
    picked = [frame[frame["llm_judge_label"] == "deflection"]]
    for (model, label), group in frame[frame["llm_judge_label"] != "deflection"].groupby(
            ["model", "llm_judge_label"], sort=True):
        picked.append(group.iloc[np.sort(rng.choice(len(group), KO_PER_CLASS, replace=False))])
    out = pd.concat(picked)
    prompt = out["prompt_ko"] + "\n(English original: " + out["prompt_en"] + ")"
    return pd.DataFrame({"set": "orbench_ko", "source": "orbench_ko", "model": out["model"], "key": out["row"],
                         "prompt": prompt, "response": out["response"], "stratum": "judge " + out["llm_judge_label"],
                         "score": np.nan})


def manifest(folder: Path) -> pd.DataFrame:
    """Every row to read, with its id, its first packet and whether a second reader reads it."""
    rng = np.random.default_rng(SEED)
    sets = [sample_en(folder, rng), sample_dna(folder, rng), sample_ko(folder, rng)]
    out = []
    for frame in sets:
        name = frame["set"].iloc[0]
        frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
        frame["id"] = [f"{PREFIX[name]}-{i:04d}" for i in range(1, len(frame) + 1)]
        frame["packet"] = [f"{name}-{1 + i * PACKETS[name] // len(frame)}" for i in range(len(frame))]
        second = np.zeros(len(frame), bool)
        second[rng.choice(len(frame), round(SECOND_SHARE * len(frame)), replace=False)] = True
        frame["second"] = second
        frame["response_sha256"] = [response_hash(r) for r in frame["response"]]
        out.append(frame)
    return pd.concat(out, ignore_index=True)


def _block(row: pd.Series) -> str:
    response = row["response"]
    if row["set"] == "orbench_ko" and len(response) > KO_SHOWN_CHARS:
        response = response[:KO_SHOWN_CHARS] + f"\n[... {len(row['response']) - KO_SHOWN_CHARS} more characters not shown]"
    note = " (the source kept only the first 500 characters of the reply)" if row["set"] == "orbench_en" else ""
    return f"=== ROW {row['id']} ===\nPROMPT:\n{row['prompt']}\nRESPONSE{note}:\n{response}\n=== END {row['id']} ===\n\n"


def write_packets(frame: pd.DataFrame, out: Path, seconds: tuple[tuple[str, pd.DataFrame], ...], seed: int) -> None:
    """Each packet's file, the second reading's files (`seconds`: name and rows, each shuffled by
    one generator seeded with `seed`) and the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    for packet, rows in frame.groupby("packet", sort=True):
        (out / f"{packet}.txt").write_text("".join(_block(r) for _, r in rows.iterrows()), encoding="utf-8")
    rng = np.random.default_rng(seed)
    for name, rows in seconds:
        rows = rows.iloc[rng.permutation(len(rows))]
        (out / f"{name}.txt").write_text("".join(_block(r) for _, r in rows.iterrows()), encoding="utf-8")
    frame.drop(columns=["prompt", "response"]).to_csv(out / "manifest.csv", index=False)


READERS = {**{f"orbench_en-{i}": f"round2-reader-{i:02d}" for i in range(1, 5)},
           **{f"donotanswer-{i}": f"round2-reader-{4 + i:02d}" for i in range(1, 6)},
           **{f"orbench_ko-{i}": f"round2-reader-{9 + i:02d}" for i in range(1, 7)}}
SECOND_READERS = {"second-en-dn": "round2-second-1", "second-ko": "round2-second-2"}
LABELS = ("refusal", "answer", "ambiguous")


def read_labels(path: Path) -> dict[str, tuple[str, str]]:
    """A reader's file: id -> (label, reason). Fails on a label outside the three classes or an id twice."""
    out: dict[str, tuple[str, str]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or fields[1].strip().lower() not in LABELS or fields[0].strip() in out:
            raise UserError(f"{path.name}:{number}: not ID<TAB>LABEL<TAB>REASON with a new id and one of {LABELS}")
        out[fields[0].strip()] = (fields[1].strip().lower(), (fields[2] if len(fields) > 2 else "").strip())
    return out


def collect(folder: Path, labels: Path, partial: bool = False, readers: dict[str, str] = READERS,
            second_readers: dict[str, str] = SECOND_READERS, round_: str = "2") -> pd.DataFrame:
    """The round's relabel rows (relabels.csv's columns), from the manifest and the readers' files.
    Every row of the manifest must have its first reader's label, and every second-read row its
    second (`partial`: only the rows read so far, for a look before the round ends)."""
    if not (folder / "manifest.csv").is_file():
        raise UserError(f"{folder / 'manifest.csv'}: no manifest (write the packets first, without --collect)")
    absent = [p for p in (*readers, *second_readers) if not (labels / f"{p}.tsv").is_file()]
    if absent and not partial:
        raise UserError(f"{labels / absent[0]}.tsv: no reader's file ({len(absent)} missing; --partial looks before the end)")
    frame = pd.read_csv(folder / "manifest.csv", dtype=str, keep_default_na=False)
    first: dict[str, tuple[str, str, str]] = {}
    for packet, reader in readers.items():
        if partial and not (labels / f"{packet}.tsv").is_file():
            continue
        for key, (label, reason) in read_labels(labels / f"{packet}.tsv").items():
            first[key] = (label, reason, reader)
    second: dict[str, str] = {}
    for packet in second_readers:
        if partial and not (labels / f"{packet}.tsv").is_file():
            continue
        second.update({k: v[0] for k, v in read_labels(labels / f"{packet}.tsv").items()})
    if partial:
        frame = frame[frame["id"].isin(first)]
    missing = [i for i in frame["id"] if i not in first]
    missing += [i for i, s in zip(frame["id"], frame["second"]) if s == "True" and i not in second and not partial]
    if missing:
        raise UserError(f"{len(missing)} rows have no label (the first: {missing[0]})")
    return pd.DataFrame({
        "source": frame["source"], "question_id": frame["key"], "model": frame["model"],
        "label": [first[i][0] for i in frame["id"]], "reason": [first[i][1] for i in frame["id"]],
        "reader": [first[i][2] for i in frame["id"]], "second_label": [second.get(i, "") for i in frame["id"]],
        "shared_label": ["ambiguous" if s == "donotanswer" else "" for s in frame["source"]],
        "response_sha256": frame["response_sha256"], "round": round_, "selection": frame["stratum"]})


def cohens_kappa(first: list[str], second: list[str]) -> float:
    """Cohen's kappa of two readings of the same rows (nan when chance agreement is total)."""
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second)) / n
    expected = sum((first.count(c) / n) * (second.count(c) / n) for c in set(first) | set(second))
    return float("nan") if expected == 1 else (observed - expected) / (1 - expected)


def agreement(rows: pd.DataFrame) -> str:
    """The second reading against the first: agreement and Cohen's kappa, over the three classes
    and over the rows both called refusal or answer, per set and in all."""
    lines = []
    both = rows[rows["second_label"] != ""]
    for name, part in [*both.groupby("source"), ("all", both)]:
        agree = int((part["label"] == part["second_label"]).sum())
        clear = part[part["label"].isin(LABELS[:2]) & part["second_label"].isin(LABELS[:2])]
        lines.append(f"{name}: {agree}/{len(part)} agree ({agree / len(part):.1%}), kappa "
                     f"{cohens_kappa(part['label'].tolist(), part['second_label'].tolist()):.2f}; binary on "
                     f"{len(clear)}: kappa {cohens_kappa(clear['label'].tolist(), clear['second_label'].tolist()):.2f}")
    return "\n".join(lines)


def round_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options every reading round's command takes."""
    parser.add_argument("--pool_dir", default=None)
    parser.add_argument("--out", type=Path, required=True, help="the packets' folder (written, or read with --collect)")
    parser.add_argument("--collect", type=Path, default=None, metavar="LABELS_DIR",
                        help="read the readers' files and print the round's relabel rows as CSV")
    parser.add_argument("--partial", action="store_true", help="with --collect: only the packets read so far")
    return parser


def print_collected(rows: pd.DataFrame) -> None:
    """A round's relabel rows as CSV on stdout, and the second reading's agreement on stderr."""
    rows.to_csv(sys.stdout, index=False)
    if (rows["second_label"] != "").any():
        print(agreement(rows), file=sys.stderr)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orbench.refusal.relabel_sample", description=__doc__.split("\n")[0])
    args = round_arguments(parser).parse_args(argv)
    if args.collect is not None:
        print_collected(collect(args.out, args.collect, args.partial))
        return 0
    frame = manifest(pool_dir(args.pool_dir))
    second = frame[frame["second"]]
    write_packets(frame, args.out, (("second-en-dn", second[second["set"] != "orbench_ko"]),
                                    ("second-ko", second[second["set"] == "orbench_ko"])), SEED + 1)
    print(frame.groupby(["set", "packet"]).size().to_string())
    print("second reading:", int(frame["second"].sum()))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
