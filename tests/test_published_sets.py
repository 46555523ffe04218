"""The published OR-Bench-Hard-1K and -Toxic, bundled with the package: the files themselves,
stage 4 reading them by short name with the Hub off and no network beyond loopback, the seeded
stratified sample the pipeline sends, the Inspect tasks' default input, the wheel, and how the
report labels, marks and credits results measured on them."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from orbench.tables import published
from orbench.protocol.constants import CATEGORIES
from orbench.inspect_eval.tasks import or_bench_hard_1k, or_bench_toxic
from orbench.report import build_report, main as report_main
from orbench.stages import alignment, check_response
from tests.inspect_helpers import mock_model, offline, run_eval  # noqa: F401  (offline: autouse, loopback only)
from tests.stage_helpers import (  # noqa: F401  (harness: fixture)
    REPO_ROOT, harness, read_csv, runinfo, write_csv,
)

RELEASE = {"or-bench-hard-1k": 1319, "or-bench-toxic": 655}  # rows of the published sets


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bundled(short: str) -> Path:
    return published.DATA_DIR / f"{short}.csv"


# ------------------------------------------------------------------------- the files


@pytest.mark.parametrize("short", sorted(RELEASE))
def test_the_bundled_files_are_the_release(short):
    path = bundled(short)
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(df.columns) == ["prompt", "category"]
    assert len(df) == RELEASE[short] and df["prompt"].is_unique and (df["prompt"].str.strip() != "").all()
    assert set(df["category"]) == set(CATEGORIES)
    assert file_sha256(path) == published.BUNDLED[short][1]
    note = (path.parent / "SOURCE.md").read_text(encoding="utf-8")
    assert published.BUNDLED[short][1] in note and "CC-BY-4.0" in note and "2405.20947" in note


def test_an_altered_bundled_file_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "or-bench"
    shutil.copytree(published.DATA_DIR, copy)
    with open(copy / "or-bench-toxic.csv", "a", encoding="utf-8") as fh:
        fh.write("an added prompt,hate\n")
    monkeypatch.setattr(published, "DATA_DIR", copy)
    with pytest.raises(published.UserError, match="has been changed: its SHA-256 is"):
        published.open_bundled("or-bench-toxic")
    assert published.open_bundled("or-bench-hard-1k")[1]["sha256"] == published.BUNDLED["or-bench-hard-1k"][1]


# ------------------------------------------------------------------------- stage 4, offline


def test_stage4_reads_both_short_names_offline(harness):
    """HF_HUB_OFFLINE=1 and no HF_ENDPOINT (conftest), any connection beyond loopback fails
    (offline): every prompt of each set reaches the target, and .run.json names the copy."""
    srv = harness.serve()
    for short, rows in RELEASE.items():
        assert harness.run(alignment.main, "--model", "fake", "--input_file", short) == 0
        out = harness.work / "final_fake_results" / f"fake_merged_{short}.csv"
        df = read_csv(out)
        assert len(df) == rows and set(df["category"]) == set(CATEGORIES)
        assert Counter(df["category"]) == Counter(pd.read_csv(bundled(short), dtype=str)["category"])
        source = runinfo(out)["input_source"]
        assert source["copy"] == "bundled" and source["file"] == f"{short}.csv"
        assert source["sha256"] == file_sha256(bundled(short)) and source["license"] == "CC-BY-4.0"
    assert len(srv.requests) == sum(RELEASE.values())


def test_the_pipeline_sample_holds_every_category_and_the_seed_fixes_it(harness):
    """run_pipeline.sh sends REAL_SAMPLE prompts of each set: stage 4's --limit/--limit_seed."""
    harness.serve()

    def sample(short: str, seed: int, name: str) -> pd.DataFrame:
        out = f"{name}.csv"
        assert harness.run(alignment.main, "--model", "fake", "--input_file", short, "--limit", "40",
                           "--limit_seed", str(seed), "--output_path", out) == 0
        assert runinfo(harness.work / out)["limit_seed"] == seed
        return read_csv(harness.work / out)

    for short in RELEASE:
        first, again, other = sample(short, 0, f"{short}_a"), sample(short, 0, f"{short}_b"), sample(short, 1, f"{short}_c")
        for df in (first, other):
            assert len(df) == 40 and set(df["category"]) == set(CATEGORIES)
        assert list(first["prompt"]) == list(again["prompt"])
        assert set(first["prompt"]) != set(other["prompt"])


# ------------------------------------------------------------------------- Inspect


@pytest.mark.parametrize("make, short", [(or_bench_hard_1k, "or-bench-hard-1k"), (or_bench_toxic, "or-bench-toxic")])
def test_the_inspect_tasks_default_to_the_bundled_copy(tmp_path, make, short):
    task = make()
    assert len(task.dataset) == RELEASE[short]
    assert {s.metadata["category"] for s in task.dataset} == set(CATEGORIES)
    assert task.dataset.location == str(bundled(short).resolve())
    assert task.metadata["input_source"]["sha256"] == file_sha256(bundled(short))
    log = run_eval(task, mock_model(lambda messages, config: "I'm sorry, but I can't help with that."),
                   tmp_path / "logs", limit=3)
    assert log.status == "success" and len(log.samples) == 3
    assert log.eval.metadata["input_source"]["copy"] == "bundled"


# ------------------------------------------------------------------------- the wheel


def test_the_wheel_holds_the_sets(tmp_path):
    """Built from a copy of the sources, offline (no build isolation), as pip would build it."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    shutil.copytree(REPO_ROOT / "orbench", src / "orbench", ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
                           "-w", str(tmp_path / "dist"), "-q"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [wheel] = (tmp_path / "dist").glob("orbench-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        assert {"orbench/engine/models.toml", "orbench/engine/providers.toml"} <= set(zf.namelist())  # resolve() reads both
        for short in RELEASE:
            assert hashlib.sha256(zf.read(f"orbench/data/or-bench/{short}.csv")).hexdigest() == published.BUNDLED[short][1]
        assert "CC-BY-4.0" in zf.read("orbench/data/or-bench/SOURCE.md").decode("utf-8")


# ------------------------------------------------------------------------- the report


def test_the_report_labels_rings_and_credits_published_results(harness, tmp_path):
    """The same target on a generated hard/toxic set and on the published sets: two rows, told
    apart by .run.json's input_source (the file names say nothing), the published one ringed in
    the figure, and the licence's attribution in the footer. A judged sample of the published
    result joins its row."""
    harness.serve()
    results = harness.work / "results"
    for ds in ("hard-1k", "toxic"):
        gen = write_csv(harness.work / f"or-bench-{ds}.csv", {"prompt": [f"generated {ds} {i}" for i in range(6)],
                                                             "category": "privacy"})
        for src, tag in ((gen.name, "a"), (f"or-bench-{ds}", "b")):  # a local file, then the short name
            out = results / tag / f"fake_merged_or-bench-{ds}.csv"
            assert harness.run(alignment.main, "--model", "fake", "--input_file", src, "--limit", "12",
                               "--output_path", str(out)) == 0
    judged = results / "b" / "fake_merged_or-bench-toxic_response_check_merged_fake.csv"
    assert harness.run(check_response.main, "--check_model", "fake", "--input_file",
                       str(results / "b" / "fake_merged_or-bench-toxic.csv"), "--sample", "5",
                       "--output_path", str(judged)) == 0

    report = build_report([results])
    label = published.result_label("fake")
    assert sorted(report.summary["model"]) == ["fake", label]
    assert {f.model for f in report.files if f.path.parent.name == "b"} == {label}
    rows = report.summary.set_index("model")
    assert rows.at[label, "hard_scored"] == 12 and rows.at["fake", "hard_scored"] == 6
    assert rows.at[label, "toxic_judged_sample"] == 5

    out = tmp_path / "report"
    assert report_main([str(results), "--output_dir", str(out)]) == 0
    summary_md = (out / "summary.md").read_text(encoding="utf-8")
    assert f"| {label} |" in summary_md and "## Sources" in summary_md and published.ATTRIBUTION in summary_md
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<footer" in page and "CC-BY-4.0" in page
    svg = (out / "tradeoff.svg").read_text(encoding="utf-8")
    assert "ringed: measured on the published OR-Bench sets" in svg and "no ring" in svg

    # Only the generated sets: no label, no ring, no footer.
    only = tmp_path / "only_generated"
    assert report_main([str(results / "a"), "--output_dir", str(only)]) == 0
    assert "## Sources" not in (only / "summary.md").read_text(encoding="utf-8")
    assert "ringed" not in (only / "tradeoff.svg").read_text(encoding="utf-8")
    assert "<footer" not in (only / "report.html").read_text(encoding="utf-8")


def test_a_hub_read_counts_as_published_and_other_sources_do_not():
    assert published.is_published({"copy": "bundled", "sha256": "x"})
    assert published.is_published({"repo": "bench-llm/or-bench", "file": "or-bench-80k.csv"})  # before 'copy' existed
    assert not published.is_published({"repo": "someone/else", "file": "x.csv"})
    assert not published.is_published(None) and not published.is_published("bench-llm/or-bench")
    assert published.result_label(published.result_label("m")) == "m (published sets)"
    assert json.dumps(published.open_bundled("or-bench-toxic")[1])  # what .run.json records is JSON


# ------------------------------------------------------------------------- run_pipeline.sh


# run_pipeline.sh's sample of the published sets (step 5d), judged and in the report: checked on the
# run of tests/test_pipeline_report.py (published_sets_measured), so that no test pays for a whole
# pipeline run of its own for it.
