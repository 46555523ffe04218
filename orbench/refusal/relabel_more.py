"""Which replies were given to readers in the third and fourth reading rounds, and their packets.

    python -m orbench.refusal.relabel_more --set ko4 --pool_dir ../shared/data --out /tmp/packets
    python -m orbench.refusal.relabel_more --set ko4 --out /tmp/packets --collect LABELS_DIR

Each set reads rows no earlier round read (relabels/SOURCE.md, "Round 3" and "Round 4"):

* `en3`: `orbench_en` (`orbench-responses/en_80k_four_models.csv`): every reply round 2 did
  not read, so that each of the four models' runs is read whole. No score chooses.
* `ko3`: `orbench_ko` (`orbench-responses/ko_hard1k_four_models.csv`). Per model, from the
  replies round 2 did not read: `DOUBT` chosen uniformly among those whose refusal score lies in
  the doubt band (0.2 to 0.8), and `TAILS` from each side of it. The score is the detector's at
  commit 32f91d2 (the one shipped before the round), read with the Korean prompt; it chooses rows
  and is never shown to a reader. Each reply's band under that detector is kept in
  `relabels/ko_strata.csv` (the detector has changed since, so this set's manifest comes back
  only from that commit's code and weights).
* `ko4`: `orbench_ko` again, by the cells of `ko_strata.csv` (the source judge's class crossed
  with that band): every reply not read before, except in the cells of the judge's compliances
  scored below 0.2 (about 900 easy replies per model), of which `EASY` per model.

A seeded 10% of each set is read a second time, blind, by another reader. Packets show a row's id,
its prompt (a Korean prompt with its English original) and the reply: no model, score or label.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from orbench.errors import run_command

from .pool import pool_dir
from .relabel_sample import EN_FILE, KO_FILE, collect, print_collected, round_arguments, write_packets
from .relabels import response_hash

SEED = 20261127
DOUBT, TAILS, BAND = 100, 25, (0.2, 0.8)
EASY = 50
SECOND_SHARE = 0.10
PACKETS = {"ko3": 6, "en3": 8, "ko4": 12}
ROUND = {"ko3": "3", "en3": "3", "ko4": "4"}
RELABELS = Path(__file__).parent / "relabels" / "relabels.csv"
STRATA = Path(__file__).parent / "relabels" / "ko_strata.csv"
READERS = {"ko3": {f"orbench_ko3-{i}": f"round3-reader-{i:02d}" for i in range(1, 7)},
           "en3": {f"orbench_en3-{i}": f"round3-reader-{6 + i:02d}" for i in range(1, 9)},
           "ko4": {f"orbench_ko4-{i}": f"round4-reader-{i:02d}" for i in range(1, 13)}}
SECOND_READERS = {"ko3": {"second-ko3": "round3-second-1"}, "en3": {"second-en3": "round3-second-2"},
                  "ko4": {"second-ko4": "round4-second-1"}}


def _unread(folder: Path, source: str, file: str, key: str, before: tuple[str, ...] = ("2",)) -> pd.DataFrame:
    frame = pd.read_csv(folder / file, dtype=str, keep_default_na=False)
    frame["row"] = np.arange(len(frame)).astype(str)
    read = pd.read_csv(RELABELS, dtype=str, keep_default_na=False)
    read = read[(read["source"] == source) & read["round"].isin(before)]  # read before this round
    read = set(zip(read["question_id"], read["model"]))
    return frame[[(r, m) not in read for r, m in zip(frame[key], frame["model"])]]


def _scores(frame: pd.DataFrame) -> np.ndarray:
    from .verdicts import detect_batch

    verdicts = detect_batch(frame["response"].tolist(), prompts=frame["prompt_ko"].tolist())
    return np.array([np.nan if v.score is None else v.score for v in verdicts])


def _take(group: pd.DataFrame, n: int, rng: np.random.Generator, stratum: str) -> pd.DataFrame:
    chosen = group.iloc[np.sort(rng.choice(len(group), min(n, len(group)), replace=False))]
    return chosen.assign(stratum=stratum)


def manifest_ko(folder: Path) -> pd.DataFrame:
    """Every Korean row to read, with its id, its packet and whether a second reader reads it."""
    rng = np.random.default_rng(SEED)
    frame = _unread(folder, "orbench_ko", KO_FILE, "row")
    frame = frame.assign(score=_scores(frame))
    low, high = BAND
    picked = []
    for _, group in frame.groupby("model", sort=True):
        picked.append(_take(group[(group["score"] >= low) & (group["score"] <= high)], DOUBT, rng, "score 0.2-0.8"))
        picked.append(_take(group[group["score"] > high], TAILS, rng, "score>0.8"))
        picked.append(_take(group[group["score"] < low], TAILS, rng, "score<0.2"))
    return _packed(_korean(pd.concat(picked), rng), "ko3", rng)


def _korean(out: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    out = out.iloc[rng.permutation(len(out))].reset_index(drop=True)
    return pd.DataFrame({
        "set": "orbench_ko", "source": "orbench_ko", "model": out["model"], "key": out["row"],
        "prompt": out["prompt_ko"] + "\n(English original: " + out["prompt_en"] + ")",
        "response": out["response"], "stratum": out["stratum"], "score": out["score"].round(4)})


def manifest_ko4(folder: Path) -> pd.DataFrame:
    """Round 4's Korean rows: every unread reply but in the easy cells, `EASY` of those per model."""
    rng = np.random.default_rng(SEED + 4)
    frame = _unread(folder, "orbench_ko", KO_FILE, "row", before=("2", "3"))
    strata = pd.read_csv(STRATA, dtype=str, keep_default_na=False)
    frame = frame.merge(strata, on=["row", "model"], how="left", validate="one_to_one")
    frame["stratum"] = frame["judge"] + " / " + frame["band"]
    frame["score"] = np.nan
    easy = (frame["judge"] == "compliance") & (frame["band"] == "below 0.2")
    picked = [frame[~easy]]
    for _, group in frame[easy].groupby("model", sort=True):
        picked.append(_take(group, EASY, rng, group["stratum"].iloc[0] + " (sample)"))
    return _packed(_korean(pd.concat(picked), rng), "ko4", rng)


def manifest_en(folder: Path) -> pd.DataFrame:
    """Every English row not read before, with its id, its packet and its second reading."""
    rng = np.random.default_rng(SEED + 2)
    out = _unread(folder, "orbench_en", EN_FILE, "prompt_id")
    out = out.iloc[rng.permutation(len(out))].reset_index(drop=True)
    frame = pd.DataFrame({"set": "orbench_en", "source": "orbench_en", "model": out["model"], "key": out["prompt_id"],
                          "prompt": out["prompt"], "response": out["response"], "stratum": "not read in round 2",
                          "score": np.nan})
    return _packed(frame, "en3", rng)


def _packed(frame: pd.DataFrame, name: str, rng: np.random.Generator) -> pd.DataFrame:
    n = len(frame)
    second = np.zeros(n, bool)
    second[rng.choice(n, round(SECOND_SHARE * n), replace=False)] = True
    return frame.assign(id=[f"{name[0]}{name[-1]}-{i:04d}" for i in range(1, n + 1)],
                        packet=[f"orbench_{name}-{1 + i * PACKETS[name] // n}" for i in range(n)], second=second,
                        response_sha256=[response_hash(r) for r in frame["response"]])


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orbench.refusal.relabel_more", description=__doc__.split("\n")[0])
    parser.add_argument("--set", choices=tuple(PACKETS), required=True, help="the set to read")
    args = round_arguments(parser).parse_args(argv)
    if args.collect is not None:
        print_collected(collect(args.out, args.collect, args.partial, READERS[args.set], SECOND_READERS[args.set],
                                ROUND[args.set]))
        return 0
    frame = {"ko3": manifest_ko, "en3": manifest_en, "ko4": manifest_ko4}[args.set](pool_dir(args.pool_dir))
    write_packets(frame, args.out, ((f"second-{args.set}", frame[frame["second"]]),), SEED + 1)
    print(frame.groupby(["packet", "model"]).size().to_string())
    print("second reading:", int(frame["second"].sum()))
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
