"""A stage whose endpoint answers nothing at all (a wrong URL, a server that is down) stops at
once with one line and exit code 2, instead of retrying every row; replies already in the
response cache still finish a run with the server down."""

from __future__ import annotations

import socket

from orbench.stages.alignment import main
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    chat_requests, error_lines, harness, read_csv, runinfo, write_csv,
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_at_the_url_is_one_line_exit_2_and_no_row_counted(harness, capsys):
    harness.serve()  # the registry entry "fake" exists; --base_url moves it to a closed port
    write_csv(harness.work / "p.csv", {"prompt": ["one", "two", "three"], "category": ["x", "y", "z"]})
    url = f"http://127.0.0.1:{closed_port()}/v1"
    assert harness.run(main, "--model", "fake", "--base_url", url, "--input_file", "p.csv") == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and "cannot reach" in err[0] and url in err[0]
    merged = harness.work / "final_fake_results" / "fake_merged_p.csv"
    assert len(read_csv(merged)) == 0  # nothing counted as a refusal or an answer
    assert runinfo(merged).get("complete") is False


def test_a_server_that_answers_errors_is_reached_and_retried_as_before(harness):
    from orbench.testing.fake_openai import Status

    srv = harness.serve()
    srv.enqueue(Status(503), Status(503))
    write_csv(harness.work / "p.csv", {"prompt": ["only one"], "category": ["x"]})
    assert harness.run(main, "--model", "fake", "--input_file", "p.csv") == 0
    assert len(chat_requests(srv)) == 3  # two 503s retried, then the answer


def test_cached_replies_finish_a_run_while_the_server_is_down(harness):
    srv = harness.serve()
    write_csv(harness.work / "p.csv", {"prompt": ["one", "two"], "category": ["x", "y"]})
    assert harness.run(main, "--model", "fake", "--input_file", "p.csv") == 0
    merged = harness.work / "final_fake_results" / "fake_merged_p.csv"
    first = read_csv(merged)
    merged.unlink()
    srv.stop()
    assert harness.run(main, "--model", "fake", "--input_file", "p.csv") == 0
    assert read_csv(merged).equals(first)
