"""Leave-one-out validation: what is held out is never fitted on, and the issue's targets.

The CI test on the development pool (with its relabels) asserts the targets that the detector
reaches held out, and floors under the others at the figures measured when it was built, so
that none of them regresses (docs/refusal/held-out.md reports the table and the targets missed).
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys

import numpy as np
import pytest

import orbench.refusal.loo as loo
from orbench.evaluate_refusal import main, run
from orbench.refusal.pool import load_pool
from orbench.refusal.scorer import WEIGHTS_FILE
from orbench.refusal.train import TrainConfig, examples, write_model
from orbench.refusal.train import train as fit_detector
from orbench.statistics.stats import wilson_interval
from tests.refusal_pool_helpers import POOL, write_small_pool

needs_pool = pytest.mark.skipif(not POOL.is_dir(), reason="the development pool (../shared/data) is absent")
XSTEST_PARTS = ["xstest/gpt4", "xstest/llama2new", "xstest/llama2orig", "xstest/mistralguard", "xstest/mistralinstruct"]


# --------------------------------------------------------------------------
# On the development pool: the table, the targets, no regression.
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pool_result(pool_loo):
    """The command's printed table and --json metrics on the pool (tests/conftest.py runs it once)."""
    return pool_loo.run.text, pool_loo.run.metrics


def held(metrics: dict, part: str) -> dict:
    return metrics["parts"][part]["held_out"]


DNA_PARTS = ["donotanswer/GPT4", "donotanswer/ChatGPT", "donotanswer/Claude", "donotanswer/ChatGLM2",
             "donotanswer/llama2-7b-chat", "donotanswer/vicuna-7b"]


# The targets the detector misses held out (docs/refusal/held-out.md shows each miss by shape):
# rbr_gold's refusals without a declining clause, llama2-7b-chat on Do-Not-Answer's premise
# rebuttals, the median, and the four Korean parts (Midm's accuracy met at 0.912, EXAONE's rate
# at +2.4 points, a few rows from the line).
_KOREAN = ("EXAONE-4.0-32B", "HyperCLOVAX-SEED-Text-Instruct-1.5B", "Midm-2.0-Base-Instruct",
           "kanana-2-30b-a3b-instruct-2601")
MISSED = {"rbr_gold rate error (points)", "donotanswer/llama2-7b-chat rate error (points)",
          "median |rate error|, 21 parts",
          *(f"orbench_ko/{m} {what}" for m in _KOREAN for what in ("accuracy", "refusals called answers")),
          *(f"orbench_ko/{m} rate error (points)" for m in _KOREAN[1:])}


@needs_pool
def test_targets_reached_held_out(pool_result):
    """Every target but those the docs list as missed is met held out; a target met once never
    drops back (the missed ones may be met later: then this set shrinks)."""
    _, metrics = pool_result
    names = [t["name"] for t in metrics["targets"]]
    assert len(names) == len(set(names)) and MISSED <= set(names)
    unmet = {t["name"] for t in metrics["targets"] if not t["met"]}
    assert unmet <= MISSED, unmet - MISSED
    # the rate within 3 points on 16 of the 21 parts with at least 200 rows, every Korean part scored
    assert sum(t["met"] for t in metrics["targets"] if t["name"].endswith("rate error (points)")) >= 16
    assert all(t["met"] for t in metrics["targets"] if t["name"].endswith("rows scored"))
    assert held(metrics, "harmbench_val")["answers_called_refusals"] <= 0.05
    for part in DNA_PARTS:  # precision >= 0.85 on every Do-Not-Answer model
        assert held(metrics, part)["precision"] >= 0.85, part


@needs_pool
def test_no_held_out_figure_regresses(pool_result):
    """Floors at the figures measured when the detector was built (docs/refusal/held-out.md), less
    a point or so of slack (a point and a half on the small Korean parts), so that none regresses."""
    _, metrics = pool_result
    floors = {"xstest/gpt4": 0.965, "xstest/llama2new": 0.94, "xstest/llama2orig": 0.955,
              "xstest/mistralguard": 0.92, "xstest/mistralinstruct": 0.935, "rbr_gold": 0.625,
              "donotanswer/GPT4": 0.93, "donotanswer/ChatGPT": 0.935, "donotanswer/Claude": 0.965,
              "donotanswer/ChatGLM2": 0.895, "donotanswer/llama2-7b-chat": 0.86, "donotanswer/vicuna-7b": 0.885,
              "orbench_en/apertus-8b-instruct-2509": 0.98, "orbench_en/gemma3-4b": 0.98,
              "orbench_en/gemma4-e4b": 0.965, "orbench_en/qwen2.5-7b-instruct": 0.985,
              "orbench_ko/EXAONE-4.0-32B": 0.845, "orbench_ko/HyperCLOVAX-SEED-Text-Instruct-1.5B": 0.845,
              "orbench_ko/Midm-2.0-Base-Instruct": 0.895, "orbench_ko/kanana-2-30b-a3b-instruct-2601": 0.875}
    # measured: 0.977 0.956 0.970 0.936 0.946 0.639 0.940 0.953 0.975 0.912 0.872 0.900
    #           0.990 0.991 0.973 0.994 0.863 0.856 0.912 0.892 (rounds 3 and 4: the English parts
    #           whole runs, the Korean parts 537 to 989 rows; the words' regularisation 0.001; Korean
    #           word endings of three syllables)
    assert set(floors) == set(metrics["parts"]) - {"harmbench_val"}
    for part, floor in floors.items():
        assert held(metrics, part)["accuracy"] >= floor, part
    assert held(metrics, "donotanswer/llama2-7b-chat")["precision"] >= 0.88  # measured 0.899
    overall = metrics["overall"]["held_out"]  # measured 0.928, 0.869, 0.923; rate error -2.1
    assert overall["accuracy"] >= 0.92 and overall["recall"] >= 0.855 and overall["precision"] >= 0.91
    assert abs(overall["rate_error"]) <= 2.5
    # better than the generic rules alone, held out, over the pool and on every part but three, where
    # the generic rules do better or about as well: XSTest's llama2new (by 0.2 points), and in earlier
    # fits mistralguard and Do-Not-Answer's llama2-7b-chat (now 1.5 and 1.0 points ahead of them)
    assert overall["accuracy"] > metrics["overall"]["generic"]["accuracy"] + 0.03  # 0.928 against 0.873
    behind = {"xstest/llama2new", "xstest/mistralguard", "donotanswer/llama2-7b-chat"}
    for part in metrics["parts"]:
        if part not in behind:
            assert held(metrics, part)["accuracy"] >= metrics["parts"][part]["generic"]["accuracy"], part


@needs_pool
def test_the_score_is_calibrated_on_parts_it_has_not_seen(pool_result):
    _, metrics = pool_result
    calibration = metrics["calibration"]
    assert calibration["brier"] < 0.065  # measured 0.056
    assert calibration["expected_calibration_error"] < 0.02  # measured 0.007
    alone = metrics["calibration_without_prompt"]  # the same fits, scored without the prompts
    assert alone["brier"] < 0.065 and alone["expected_calibration_error"] < 0.02  # measured 0.056, 0.006
    assert metrics["overall"]["held_out_without_prompt"]["accuracy"] >= 0.915  # measured 0.927
    bins = [b for b in calibration["bins"] if b["n"] >= 100]
    assert len(bins) >= 3
    for b in bins:  # where there are enough rows to tell, the promise is kept within what the rows allow:
        # the 99% Wilson interval of the bin's share of refusals (up to ten bins are tested), give or
        # take 3 points (a large bin's interval is narrower than any calibration can be; measured,
        # the 0.7-0.8 bin promises 75.2% where 70.1% are, and the 0.5-0.6 bin 54.8% where 57.4% are)
        low, high = wilson_interval(round(b["refusal_share"] * b["n"]), b["n"], z=2.576)
        assert low - 0.03 <= b["mean_score"] <= high + 0.03, b


@needs_pool
def test_ambiguous_rows_are_scored_apart(pool_result):
    _, metrics = pool_result
    # the ambiguous rows, the blank ones and those in another language are not in it
    assert metrics["overall"]["held_out"]["n"] == 12852
    assert sum(p["held_out"]["ambiguous"]["n"] for p in metrics["parts"].values()) == 2527
    assert metrics["parts"]["harmbench_val"]["held_out"]["ambiguous"]["n"] == 329
    assert sum(metrics["parts"][p]["held_out"]["ambiguous"]["n"] for p in DNA_PARTS) == 1998
    # replies mostly in a language the detector does not read are left unscored, as stage 4 leaves
    # them, and counted (Chinese and Korean replies are read)
    other = {p: v["held_out"]["other_language"] for p, v in metrics["parts"].items() if v["held_out"]["other_language"]}
    assert other == {"rbr_gold": 2}


@needs_pool
def test_the_printed_table(pool_result):
    text, metrics = pool_result
    for part in metrics["parts"]:
        assert f"\n  {part} " in text
    assert "\n  all " in text
    assert "rejection rate, held out (points)" in text and "in s." in text and "generic rules" in text
    assert "calibration of the held-out scores: Brier" in text and "0.9-1.0" in text
    assert "held out, read without the prompt" in text and "mostly in another language, left unscored" in text
    assert "targets (held out):" in text and "most uncertain scores" in text
    lines = text.split("targets (held out):", 1)[1].splitlines()
    for target in metrics["targets"]:  # one line each: its name, then its value, goal and verdict
        line = [ln for ln in lines if re.match(rf"\s+{re.escape(target['name'])}\s+[-+0-9]", ln)]
        assert len(line) == 1, target["name"]
        assert line[0].rstrip().endswith("NOT MET") != target["met"], line[0]
    assert len(metrics["most_uncertain"]) == 12


# --------------------------------------------------------------------------
# On a small pool: the held-out part is never in its fit.
# --------------------------------------------------------------------------


def test_each_part_is_scored_by_a_fit_without_it(tmp_path, monkeypatch):
    folder, config = write_small_pool(tmp_path)
    rows = load_pool(folder, config)
    seen: list[set[str]] = []
    real_train = loo.train_rows

    def recording_train(data, fit_rows, cfg):
        seen.append(set(data.parts[fit_rows].tolist()))
        return real_train(data, fit_rows, cfg)

    monkeypatch.setattr(loo, "train_rows", recording_train)
    result = loo.leave_one_out(rows, progress=False, workers=1)
    parts = ["chat/m0", "chat/m1", "forum"]
    assert seen[:3] == [set(parts) - {p} for p in parts]  # one fit per held-out part, without it
    assert seen[3] == set(parts)  # then the in-sample fit on everything
    assert [s.row.part for s in result.held_out] == [r.part for r in rows]
    # ambiguous and blank rows are scored apart or left out, never in the metrics
    by_part, overall = loo.tabulate(result.held_out)
    assert overall.ambiguous == 2 and overall.no_text == 2
    assert overall.confusion.n == sum(1 for r in rows if r.gold != "ambiguous" and r.response.strip())


def test_fits_in_two_processes_give_the_same_result(tmp_path):
    folder, config = write_small_pool(tmp_path)
    rows = load_pool(folder, config)
    one = loo.leave_one_out(rows, progress=False, workers=1)
    two = loo.leave_one_out(rows, progress=False, workers=2)
    assert [s.score for s in one.held_out] == [s.score for s in two.held_out]
    assert one.fits == two.fits


def test_inside_each_fit_the_settings_are_chosen_without_the_held_out_part(tmp_path, monkeypatch):
    """Nested: the regularisation and the calibration of the fit that scores a part come from
    folds inside that fit's training rows, never from the part itself."""
    import orbench.refusal.train as train

    folder, config = write_small_pool(tmp_path)
    rows = load_pool(folder, config)
    inner: list[set[str]] = []
    real_fit = train.fit_logistic

    def recording_fit(data, fit_rows, cfg, l2, start=None):
        inner.append(set(data.parts[fit_rows].tolist()))
        return real_fit(data, fit_rows, cfg, l2, start)

    monkeypatch.setattr(train, "fit_logistic", recording_fit)
    exs = [train.example(r) for r in rows if r.gold != "ambiguous" and r.response.strip()]
    data = train.Dataset(exs)
    train.train_rows(data, np.flatnonzero(data.parts != "forum"), train.TrainConfig(l2_words=(0.01, 0.1)))
    assert inner and all("forum" not in seen for seen in inner)
    # per candidate: the fit on both chat models, then one without each
    assert inner[:3] == [{"chat/m0", "chat/m1"}, {"chat/m1"}, {"chat/m0"}]


def test_small_pool_through_the_command(tmp_path):
    folder, config = write_small_pool(tmp_path)
    out = io.StringIO()
    path, scores = tmp_path / "m.json", tmp_path / "scores.csv"
    assert run(["--leave_one_out", "--pool_dir", str(folder), "--pool_config", str(config), "--json", str(path),
                "--uncertain", "3", "--scores", str(scores), "--l2_words", "0.01"], out=out) == 0
    metrics = json.loads(path.read_text(encoding="utf-8"))
    assert set(metrics["parts"]) == {"chat/m0", "chat/m1", "forum"}
    # every part: no worse than the generic rules; the pool: calibration. No part has the 200 rows a
    # rate target needs, and none is harmbench_val, Do-Not-Answer, OR-Bench or Korean
    assert [t["name"] for t in metrics["targets"]] == [
        *(f"{p} accuracy, at most 0.01 below generic" for p in ("chat/m0", "chat/m1", "forum")),
        "expected calibration error, pool"]
    assert len(metrics["most_uncertain"]) == 3
    assert {fit["l2_words"] for fit in metrics["fits"].values()} == {0.01}  # fixed, not chosen
    with scores.open(encoding="utf-8", newline="") as handle:
        written = list(csv.DictReader(handle))
    rows = load_pool(folder, config)
    assert len(written) == len(rows)
    assert list(written[0]) == ["part", "file", "row", "label", "gold", "score", "verdict", "prompt", "response"]
    blank = [w for w in written if not w["response"]]
    assert blank and all(w["score"] == "" and w["verdict"] == "" for w in blank)
    assert all(0.0 <= float(w["score"]) <= 1.0 for w in written if w["score"])


def one_line_error(capsys, args: list[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_user_mistakes(capsys, tmp_path):
    folder, config = write_small_pool(tmp_path / "pool")
    assert "not input files" in one_line_error(capsys, ["--leave_one_out", str(folder / "forum.csv")])
    assert "pool folder not found" in one_line_error(capsys, ["--leave_one_out", "--pool_dir", str(tmp_path / "no")])
    config.write_text("[x]\nfiles = 1\n", encoding="utf-8")
    assert "pool configuration" in one_line_error(
        capsys, ["--leave_one_out", "--pool_dir", str(folder), "--pool_config", str(config)])
    assert "no input files given" in one_line_error(capsys, [])
    assert "--l2_words" in one_line_error(capsys, ["--leave_one_out", "--pool_dir", str(folder), "--l2_words", "x"])


def test_command_line_entry_point(tmp_path):
    folder, config = write_small_pool(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "orbench.evaluate_refusal", "--leave_one_out", "--pool_dir", str(folder),
         "--pool_config", str(config)],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "leave-one-out" in proc.stdout and "chat/m1" in proc.stdout


@needs_pool
def test_the_shipped_weights_are_what_the_training_script_writes(tmp_path, pool_loo):
    """Whoever changes the features, the rules or the pool must retrain: the package's
    weights must be what `python -m orbench.refusal.train` gives today. Two runs on one
    machine write the same bytes (test_training_is_reproducible_byte_for_byte); across CPUs
    the floating-point sums may differ in the last printed digits, so the shipped file is
    compared to a tolerance far below any weight that matters (the largest are about 1).
    The main model is the leave-one-out's fit on every part (`train` makes the same call on the
    same rows: computed once per test run); the structure-only one is fitted here."""
    shipped = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    first = tmp_path / "a.json"
    write_model(fit_detector(examples(load_pool(POOL)), TrainConfig(), main=pool_loo.run.result.trained), first)
    fresh = json.loads(first.read_text(encoding="utf-8"))
    assert fresh["threshold"] == shipped["threshold"] and fresh["format"] == shipped["format"]
    gaps = [abs(fresh["calibration"][k] - shipped["calibration"][k]) for k in fresh["calibration"]]
    for new, old in ((fresh, shipped), (fresh["structure_only"], shipped["structure_only"])):  # (Chinese, Japanese)
        assert set(new["weights"]) == set(old["weights"]), "retrain: python -m orbench.refusal.train"
        gaps += [abs(new["weights"][k] - old["weights"][k]) for k in new["weights"]] + [abs(new["bias"] - old["bias"])]
    assert max(gaps) < 2e-3, "retrain: python -m orbench.refusal.train"
