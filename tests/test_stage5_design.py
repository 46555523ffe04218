"""Stage 5: --design score (rows drawn by the detector's doubt, each with its inclusion
probability) and --target_halfwidth (a pilot, then one extension), over the fake server."""

from __future__ import annotations

import math

import pytest

from orbench.statistics import planning
from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.statistics.design import score_probabilities
from orbench.stages.check_response import main
from orbench.testing.fake_openai import Status
from tests.responders import judged_pair, passes_audit
from tests.stage_helpers import chat_requests, error_lines, harness, read_csv, runinfo, write_csv  # noqa: F401

SCORES = (0.01, 0.2, 0.55, 0.97)  # strata 0, 3, 5, 9


def stage4(path, n, scores=SCORES, refusal_every=3):
    """n stage-4 rows with a verdict and a score; every `refusal_every`-th one refuses."""
    rows = []
    for i in range(n):
        refuse = i % refusal_every == 0
        rows.append({"prompt": f"question {i}", "is_rejected": "True" if refuse else "False",
                     "refusal_score": f"{scores[i % len(scores)]:.4f}",
                     "response": f"No, I won't do {i}." if refuse else f"Here is answer {i}.",
                     "category": "hate"})
    return write_csv(path, rows)


def judge_by_text(request):
    _, response = judged_pair(request)
    return "Reason. [[direct_refusal]]" if response.startswith("No,") else "Reason. [[direct_answer]]"


def probabilities(path):
    df = read_csv(path)
    return dict(zip(df["prompt"], map(float, df["inclusion_probability"])))


def test_score_design_writes_each_rows_probability_and_the_design(harness):
    srv = harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 400)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=80", "--design=score",
                       "--seed=2") == 0
    df = read_csv(out)
    assert list(df.columns)[-2:] == ["refusal_score", "inclusion_probability"]
    assert 55 <= len(df) <= 105 and len(chat_requests(srv, "judge")) == len(df)
    pi = probabilities(out)
    by_score = {s: {round(pi[p], 10) for p, sc in zip(df["prompt"], df["refusal_score"]) if float(sc) == s}
                for s in SCORES}
    assert all(len(v) == 1 for v in by_score.values())  # one probability per stratum
    # By hand: weight = floor 0.5 + 2 sqrt(m (1 - m)) at the stratum's middle m.
    weight = {s: 0.5 + 2 * math.sqrt(m * (1 - m)) for s, m in zip(SCORES, (0.015, 0.275, 0.575, 0.985))}
    first = {s: next(iter(v)) for s, v in by_score.items()}
    assert first[0.55] / first[0.01] == pytest.approx(weight[0.55] / weight[0.01], rel=1e-6)
    assert first[0.2] / first[0.97] == pytest.approx(weight[0.2] / weight[0.97], rel=1e-6)
    # The probabilities over all 400 rows add up to the size asked for.
    assert sum(first[s] for s in SCORES) * 100 == pytest.approx(80)
    info = runinfo(out)
    design = info["sample_design"]
    assert design["name"] == "score" and design["floor"] == 0.5 and design["seed"] == 2
    assert design["expected_rows"] == pytest.approx(80) and design["population"] == 400
    assert info["sample_size"] == 80 and info["sampled_rows"] == len(df) and info["complete"] is True


def test_score_design_repeats_and_a_larger_sample_keeps_its_rows_with_new_probabilities(harness):
    srv = harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 300)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    args = ("--check_model=fake", "--input_file=m_merged_x.csv", "--design=score", "--seed=7", "--no_cache")
    assert harness.run(main, *args, "--sample=40") == 0
    small = probabilities(out)
    assert harness.run(main, *args, "--sample=120") == 0
    big = probabilities(out)
    assert set(small) < set(big)
    assert len(chat_requests(srv, "judge")) == len(big)  # the small sample's rows were not judged again
    assert all(big[p] > small[p] for p in small)  # every kept row now carries the larger design's pi
    expected = score_probabilities([SCORES[i % 4] for i in range(300)], 120)[0]
    assert all(big[f"question {i}"] == pytest.approx(expected[i], rel=1e-6) for i in range(300) if f"question {i}" in big)
    fresh = harness.work / "fresh"
    fresh.mkdir()
    assert harness.run(main, *args, "--sample=120", f"--output_path={fresh / 'o.csv'}") == 0
    assert probabilities(fresh / "o.csv") == big


def test_a_resumed_score_sample_ends_like_an_uninterrupted_run(harness):
    down = {"on": True}

    def flaky(request):
        question, _ = judged_pair(request)
        if down["on"] and question.endswith(("2", "5")):
            return Status(400, message="judge down for this one")
        return judge_by_text(request)

    harness.serve(passes_audit(flaky))
    stage4(harness.work / "m_merged_x.csv", 200)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    args = ("--check_model=fake", "--input_file=m_merged_x.csv", "--design=score", "--sample=60", "--seed=3")
    assert harness.run(main, *args) == EXIT_ROWS_FAILED
    assert runinfo(out)["complete"] is False
    down["on"] = False
    assert harness.run(main, *args) == 0
    fresh = harness.work / "fresh"
    fresh.mkdir()
    assert harness.run(main, *args, f"--output_path={fresh / 'o.csv'}") == 0
    assert read_csv(out).equals(read_csv(fresh / "o.csv"))


def test_score_design_needs_stage_4_scores(harness, capsys):
    harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 30)
    df = read_csv(harness.work / "m_merged_x.csv")
    df.loc[3, "refusal_score"] = ""
    df.to_csv(harness.work / "m_merged_y.csv", index=False)
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_y.csv", "--sample=10", "--design=score") == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "--design score needs stage 4's 'refusal_score'" in lines[0] and "1 of 30" in lines[0]
    assert not (harness.work / "m_merged_y_response_check_merged_fake.csv").exists()


@pytest.mark.parametrize("flags", [("--design=score",), ("--target_halfwidth=3",)])
def test_design_and_target_need_a_sample(harness, capsys, flags):
    harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 10)
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", *flags) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "need --sample" in lines[0]


def test_bad_target_is_a_usage_error(harness, capsys):
    harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 10)
    with pytest.raises(SystemExit) as stop:
        harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", "--sample=5", "--target_halfwidth=-1")
    assert stop.value.code == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "expected a number > 0" in lines[0]


# ------------------------------------------------------------------ two rounds


def rounds_args(target, maximum=600):
    return ("--check_model=fake", "--input_file=m_merged_x.csv", f"--sample={maximum}", "--seed=4",
            f"--target_halfwidth={target}", "--no_cache")


def test_rounds_grow_once_to_the_pilots_plan_and_record_it(harness, capsys):
    srv = harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 1000, scores=(0.5,), refusal_every=2)  # a score that ranks nothing
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert harness.run(main, *rounds_args(7)) == 0
    info = runinfo(out)
    pilot, final = info["rounds"]
    assert pilot["sample_size"] == 100 and pilot["halfwidth_pts"] > 7
    assert final["sample_size"] == math.ceil(pilot["calls_for_target"] * 1.25) < 600
    assert info["stopped"] == "target reached" and final["halfwidth_pts"] <= 7
    assert info["sample_size"] == final["sample_size"] and info["complete"] is True
    assert len(chat_requests(srv, "judge")) == final["sample_size"]  # the pilot's rows were not judged again
    printed = capsys.readouterr().out
    assert "round 1: 100 rows judged" in printed and "target reached" in printed
    # The file holds exactly the uniform sample of the final size (the same seed).
    fresh = harness.work / "fresh"
    fresh.mkdir()
    assert harness.run(main, "--check_model=fake", "--input_file=m_merged_x.csv", f"--sample={final['sample_size']}",
                       "--seed=4", f"--output_path={fresh / 'o.csv'}") == 0
    assert read_csv(out).equals(read_csv(fresh / "o.csv"))


def test_rounds_stop_at_max_and_say_so(harness, capsys):
    harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 1000, scores=(0.5,), refusal_every=2)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert harness.run(main, *rounds_args(1, maximum=300)) == 0
    info = runinfo(out)
    assert [r["sample_size"] for r in info["rounds"]] == [100, 300]
    assert info["stopped"] == "stopped at --sample 300 before the target"
    assert "stopped at --sample 300 before the target" in capsys.readouterr().out


def test_rounds_end_at_the_pilot_when_it_reaches_the_target(harness):
    srv = harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 1000)  # scores that separate the judge's classes
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    assert harness.run(main, *rounds_args(15)) == 0
    info = runinfo(out)
    assert len(info["rounds"]) == 1 and info["stopped"] == "target reached"
    assert len(read_csv(out)) == 100 == len(chat_requests(srv, "judge"))


def test_a_run_killed_between_rounds_resumes_without_paying_twice(harness, monkeypatch):
    srv = harness.serve(passes_audit(judge_by_text))
    stage4(harness.work / "m_merged_x.csv", 1000, scores=(0.5,), refusal_every=2)
    out = harness.work / "m_merged_x_response_check_merged_fake.csv"
    real = planning.extension_size

    def interrupted(*a, **k):  # Ctrl-C right after the pilot was judged and written
        raise KeyboardInterrupt

    monkeypatch.setattr(planning, "extension_size", interrupted)
    assert harness.run(main, *rounds_args(7)) == 130
    assert runinfo(out)["complete"] is False and len(read_csv(out)) == 100
    monkeypatch.setattr(planning, "extension_size", real)
    assert harness.run(main, *rounds_args(7)) == 0
    final = runinfo(out)["rounds"][-1]["sample_size"]
    asked = [judged_pair(r.body)[0] for r in chat_requests(srv, "judge")]
    assert len(asked) == len(set(asked)) == final  # each row judged once over both runs


def test_rounds_with_nothing_to_sample_end_cleanly(harness, capsys):
    harness.serve(passes_audit(judge_by_text))
    write_csv(harness.work / "m_merged_x.csv", [{"prompt": "q", "is_rejected": "empty", "refusal_score": "",
                                                  "response": "", "category": "hate"}])
    assert harness.run(main, *rounds_args(3)) == 0
    info = runinfo(harness.work / "m_merged_x_response_check_merged_fake.csv")
    assert info["sampled_rows"] == 0 and info["stopped"].startswith("stopped at --sample 600")
    assert "nothing to sample" in capsys.readouterr().err
