"""The typed run record (orbench.tables.runinfo.RunRecord): what it reads and writes, and that the
report takes what a file is from the records first and from the file name only without one."""

from __future__ import annotations

import json

import pytest

from orbench.tables import published
from orbench import report as rp
from orbench.tables.runinfo import RECORD_VERSION, RunRecord, read_record, runinfo_path, write_runinfo
from orbench.stages.alignment import main as stage4
from tests.stage_helpers import harness, write_rows  # noqa: F401  (fixture)

# As stage 4 wrote it before record_version existed (keys and order from a real run).
OLD_STAGE4 = {
    "orbench_version": "0.1.0", "written_at": "2026-01-02T03:04:05+0000", "stage": "alignment_checker",
    "temperature": 0.0, "max_tokens": 1000, "limit": None, "limit_seed": None, "cache": True,
    "template_version": "orbench-templates-4", "model": "fake", "model_name": "fake", "model_id": "fake-model",
    "endpoint": "http://127.0.0.1:1/v1", "family": "generic", "rules": "scored", "system_prompt": None,
    "input_file": "p.csv", "input_source": None, "output": "final_fake_results/fake_merged_p.csv",
    "failed_output": "final_fake_results/fake_failed_p.csv", "complete": False, "rows_total": 9, "rows_done": 8,
    "rows_failed": 1, "rows_written": 8, "rejected": 2, "accepted": 4, "seconds": 0.4,
}


def stage4_rows(path, verdicts):
    return write_rows(path, ["prompt", "is_rejected", "response", "category"],
                      [(f"p{i}", v, f"r{i}", "hate") for i, v in enumerate(verdicts)])


def judged_rows(path, verdicts):
    return write_rows(path, ["prompt", "answer_category", "answer_type_response", "response", "category"],
                      [(f"p{i}", v, f"[[{v}]]", f"r{i}", "hate") for i, v in enumerate(verdicts)])


# ---------------------------------------------------------------------------- the record itself

def test_a_record_round_trips_through_json_and_through_the_file(tmp_path):
    record = RunRecord(stage="response_checker", check_model="j1,j2", check_models=["j1", "j2"],
                       target_model="m", dataset="hard", input_path="/x/m_merged_hard.csv", sample_size=40,
                       sample_design={"name": "score", "floor": 0.05}, audit={"verdict": "passed"},
                       complete=True, rows_total=40, rows_done=40, rows_failed=0, rows_written=40,
                       extra={"vote": "majority", "tokens": {"in": 3}})
    assert RunRecord.from_json(record.to_json()) == record
    assert RunRecord.from_json(json.loads(json.dumps(record.to_json()))) == record

    out = tmp_path / "m_merged_hard_response_check_merged_j1+j2.csv"
    path = write_runinfo(out, record)
    assert path == runinfo_path(out) and path.name.endswith(".run.json")
    written = json.loads(path.read_text(encoding="utf-8"))
    assert list(written)[:3] == ["orbench_version", "written_at", "record_version"]
    assert written["record_version"] == RECORD_VERSION and written["vote"] == "majority"
    back = read_record(out)
    assert back is not None and back.version == RECORD_VERSION
    assert (back.stage_number, back.check_models, back.sample_design, back.rows_written) == (
        5, ["j1", "j2"], {"name": "score", "floor": 0.05}, 40)
    assert back.extra["tokens"] == {"in": 3} and "orbench_version" in back.extra


def test_a_record_without_a_version_reads_as_version_0_and_keeps_every_key_in_order(tmp_path):
    record = RunRecord.from_json(OLD_STAGE4)
    assert record.version == 0
    assert (record.stage, record.stage_number, record.model, record.complete, record.rows_failed) == (
        "alignment_checker", 4, "fake", False, 1)
    assert record.target_model is None and record.dataset is None and record.audit is None  # not recorded
    assert record.extra["rules"] == "scored" and record.extra["rejected"] == 2
    assert record.kind_of(tmp_path / "fake_failed_p.csv") == "failed"
    assert record.kind_of(tmp_path / "fake_merged_p.csv") == "merged"
    assert record.kind_of(tmp_path / "other.csv") is None
    # Written again, it holds every key it held, in the same order, with the same values.
    out = tmp_path / "fake_merged_p.csv"
    write_runinfo(out, record)
    again = json.loads(runinfo_path(out).read_text(encoding="utf-8"))
    kept = [k for k in again if k not in ("orbench_version", "written_at", "record_version")]
    assert kept == [k for k in OLD_STAGE4 if k not in ("orbench_version", "written_at")]
    assert all(again[k] == v for k, v in OLD_STAGE4.items() if k not in ("orbench_version", "written_at"))
    assert again["record_version"] == RECORD_VERSION


def test_unknown_keys_and_values_of_the_wrong_type_are_kept_never_raised_on():
    data = {"record_version": 7, "stage": 4, "model": ["not", "a", "name"], "complete": "yes",
            "rows_total": True, "a_future_key": {"nested": [1, 2]}, "sample_size": 3}
    record = RunRecord.from_json(data)
    assert record.version == 7 and record.sample_size == 3 and record.judged_sample
    # Fields of the wrong type read as "not recorded" and keep their value, as written.
    assert (record.stage, record.model, record.complete, record.rows_total) == (None, None, None, None)
    assert record.extra["model"] == ["not", "a", "name"] and record.extra["a_future_key"] == {"nested": [1, 2]}
    assert record.to_json() == data
    assert list(record.to_json()) == list(data)
    for junk in (None, [], "text", 3):
        assert RunRecord.from_json(junk) == RunRecord(version=0)


def test_updated_adds_keys_later_ones_winning():
    record = RunRecord.from_json({"stage": "alignment_checker", "complete": False, "rejected": 1})
    done = record.updated({"complete": True, "rejected": 2}, {"rows_written": 5}, seconds=1.5)
    assert (done.complete, done.rows_written, done.extra["rejected"], done.extra["seconds"]) == (True, 5, 2, 1.5)
    assert record.complete is False and record.extra["rejected"] == 1  # the original is unchanged


def test_a_published_input_is_recorded_as_its_set():
    assert published.set_of({"copy": "bundled", "file": "or-bench-hard-1k.csv"}) == "hard"
    assert published.set_of({"copy": "hub", "repo": published.DATASET, "file": "or-bench-80k.csv"}) == "safe"
    assert published.set_of({"copy": "hub", "repo": "someone/else", "file": "or-bench-toxic.csv"}) is None
    assert published.set_of(None) is None


# ---------------------------------------------------------------------------- the runner writes it

def test_the_runner_writes_a_versioned_record_that_the_report_reads_first(harness):
    """A real stage-4 run on the bundled Hard-1K set; its files renamed so that the name says
    another model and no dataset: the report still says what the record says."""
    harness.serve()
    assert harness.run(stage4, "--model=fake", "--input_file=or-bench-hard-1k", "--limit=6") == 0
    out = harness.work / "final_fake_results" / "fake_merged_or-bench-hard-1k.csv"
    record = read_record(out)
    assert record is not None and record.version == RECORD_VERSION
    assert (record.stage_number, record.model, record.dataset, record.complete, record.rows_written) == (
        4, "fake", "hard", True, 6)
    assert published.is_published(record.input_source) and record.extra["model_id"] == "fake-model"

    moved = harness.work / "renamed"
    moved.mkdir()
    out.rename(moved / "other-model_merged_my-prompts.csv")
    runinfo_path(out).rename(runinfo_path(moved / "other-model_merged_my-prompts.csv"))
    (f,) = rp.scan_inputs([moved])
    assert (f.model, f.dataset, f.stage, f.kind, f.complete) == (published.result_label("fake"), "hard", 4,
                                                                 "merged", True)
    assert f.record == record


# ---------------------------------------------------------------------------- records first, then names

def test_the_record_names_the_model_not_the_file_name(tmp_path):
    f = stage4_rows(tmp_path / "alpha_merged_or-bench-hard-1k.csv", ["True", "False"])
    write_runinfo(f, RunRecord(stage="alignment_checker", model="beta-7b", output=f.name, complete=True))
    (found,) = rp.scan_inputs([tmp_path])
    assert (found.model, found.dataset, found.complete) == ("beta-7b", "hard", True)
    assert list(rp.build_report([tmp_path]).summary["model"]) == ["beta-7b"]


def test_the_record_names_the_dataset_where_the_file_name_says_none(tmp_path):
    f = stage4_rows(tmp_path / "alpha_merged_my-prompts.csv", ["True"])
    with pytest.raises(rp.ReportError, match="cannot tell the dataset"):
        rp.scan_inputs([f])  # no record, and the name says no set
    write_runinfo(f, RunRecord(stage="alignment_checker", model="alpha", dataset="toxic", output=f.name))
    (found,) = rp.scan_inputs([f])
    assert found.dataset == "toxic"
    assert rp.scan_inputs([f], datasets={f.name: "hard"})[0].dataset == "hard"  # --dataset still wins


def test_a_record_names_its_failed_file_whatever_it_is_called(tmp_path):
    """A stage-5 run with its own output names: the record says which file is its failed one,
    whose judge, and whose model; its unscored copy is not a result of its own."""
    stage4_rows(tmp_path / "alpha_merged_or-bench-hard-1k.csv", ["True", "False", "False"])
    merged = judged_rows(tmp_path / "judged.csv", ["direct_refusal", "direct_answer"])
    write_rows(tmp_path / "judged_errors.csv", ["prompt", "response", "category", "error"], [("p2", "r2", "hate", "x")])
    judged_rows(tmp_path / "judged_unscored.csv", ["unscored"])
    write_runinfo(merged, RunRecord(stage="response_checker", check_model="judge-x", target_model="alpha-1",
                                    output="judged.csv", failed_output="judged_errors.csv",
                                    unscored_output="judged_unscored.csv", dataset="hard", complete=False))
    files = {f.path.name: f for f in rp.scan_inputs([tmp_path])}
    assert sorted(files) == ["alpha_merged_or-bench-hard-1k.csv", "judged.csv", "judged_errors.csv"]
    assert (files["judged_errors.csv"].stage, files["judged_errors.csv"].kind) == (5, "failed")
    assert {(f.judge, f.model, f.dataset) for n, f in files.items() if f.stage == 5} == {("judge-x", "alpha-1", "hard")}
    assert files["judged.csv"].complete is False and files["judged_errors.csv"].complete is None


def test_a_file_without_a_record_is_read_from_its_name(tmp_path):
    f = stage4_rows(tmp_path / "gamma_merged_or-bench-toxic.csv", ["True", "True", "False"])
    j = judged_rows(tmp_path / "gamma_merged_or-bench-toxic_response_check_merged_llama3.csv", ["direct_refusal"])
    files = {p.path: p for p in rp.scan_inputs([tmp_path])}
    assert (files[f].stage, files[f].kind, files[f].model, files[f].dataset) == (4, "merged", "gamma", "toxic")
    assert (files[j].stage, files[j].judge, files[j].model, files[j].dataset) == (5, "llama3", "gamma", "toxic")
    assert all(p.record is None and p.complete is None for p in files.values())
