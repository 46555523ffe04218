"""The reading rounds' collector (orbench.refusal.relabel_more --collect): a reader's mistake or a
missing file is one line and exit code 2, and a whole round comes back as relabel rows."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

from orbench.refusal.relabel_more import READERS, SECOND_READERS, main

HEADER = ["set", "source", "model", "key", "stratum", "score", "id", "packet", "second", "response_sha256"]


def _round(tmp_path, first_line: str):
    packets, labels = tmp_path / "packets", tmp_path / "labels"
    packets.mkdir()
    labels.mkdir()
    with (packets / "manifest.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(HEADER)
        writer.writerow(["orbench_ko", "orbench_ko", "m", "7", "refusal / above 0.8", "", "k4-0001", "orbench_ko4-1",
                         "True", "0123456789abcdef"])
    for name in (*READERS["ko4"], *SECOND_READERS["ko4"]):
        (labels / f"{name}.tsv").write_text("", encoding="utf-8")
    (labels / "orbench_ko4-1.tsv").write_text(first_line, encoding="utf-8")
    (labels / "second-ko4.tsv").write_text("k4-0001\trefusal\tdeclines\n", encoding="utf-8")
    return packets, labels


def _collect(packets, labels, subprocess_: bool = False):
    """The collector on a round, in this process (or as the command): its exit code, stdout, stderr."""
    args = ["--set", "ko4", "--out", str(packets), "--collect", str(labels)]
    if subprocess_:
        done = subprocess.run([sys.executable, "-m", "orbench.refusal.relabel_more", *args], capture_output=True, text=True)
        return done.returncode, done.stdout, done.stderr
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_a_round_is_collected_into_relabel_rows(tmp_path):
    code, out, err = _collect(*_round(tmp_path, "k4-0001\tRefusal\tonly a lecture\n"))
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["question_id"], r["model"], r["label"], r["second_label"], r["reader"], r["round"]) for r in rows] == [
        ("7", "m", "refusal", "refusal", "round4-reader-01", "4")]
    assert "1/1 agree" in err


def test_a_bad_label_a_missing_file_or_no_manifest_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "gap").mkdir()
    bad = _round(tmp_path / "bad", "k4-0001\tmaybe\tnot sure\n")
    gap = _round(tmp_path / "gap", "k4-0001\trefusal\tx\n")
    (gap[1] / "orbench_ko4-12.tsv").unlink()
    for (out, folder), message, as_command in [(bad, "orbench_ko4-1.tsv:1: not ID<TAB>LABEL", False),
                                               (gap, "orbench_ko4-12.tsv: no reader's file", False),
                                               ((tmp_path / "nowhere", bad[1]), "no manifest", True)]:
        code, _, err = _collect(out, folder, as_command)
        assert code == 2 and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1 and message in err, err
