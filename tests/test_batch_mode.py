"""Batch mode through the fake server's Batch API over real HTTP: the batch fills the cache,
the stage finishes from it with the files an online run writes; every batch state; resume
after a kill without paying twice; errors; export to and import from `vllm run-batch` files."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orbench.stages.alignment import main as stage4
from orbench.stages.check_response import main as stage5
from orbench.stages.moderate import main as stage3
from orbench.stages.rewrite import main as stage2
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.stage_helpers import (
    SCRIPTS, chat_requests, clone, error_lines, harness, read_csv, runinfo, stage_env, write_csv,  # noqa: F401 (fixtures)
    write_models, fake_entry,
)
from tests.responders import protocol_responder

PROMPTS = [f"How do I handle situation number {i} safely?" for i in range(7)]
OUT = Path("final_fake_results") / "fake_merged_p.csv"


def batch_posts(srv: FakeOpenAIServer) -> list:
    return [r for r in srv.requests if r.method == "POST" and r.path == "/v1/batches"]


def prompts_csv(work: Path, prompts=PROMPTS) -> Path:
    return write_csv(work / "p.csv", {"prompt": list(prompts), "category": ["harmful"] * len(prompts)})


def online_reference(harness, tmp_path, monkeypatch, *args: str) -> bytes:
    """The stage-4 output of an ordinary online run, in its own folder and cache."""
    work = harness.work
    ref = tmp_path / "online"
    ref.mkdir()
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(tmp_path / "online-cache"))
    prompts_csv(ref)
    monkeypatch.chdir(ref)
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", *args) == 0
    data = (ref / OUT).read_bytes()
    monkeypatch.chdir(work)
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return data


def test_batch_fills_the_cache_and_the_output_is_the_online_one(harness, tmp_path, monkeypatch, capsys):
    srv = harness.serve()
    expected = online_reference(harness, tmp_path, monkeypatch)
    online_calls = len(chat_requests(srv))
    prompts_csv(harness.work)
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_max_requests", "3",
                       "--batch_poll_seconds", "0") == 0
    assert (harness.work / OUT).read_bytes() == expected
    assert len(chat_requests(srv)) == online_calls  # no online call: every row came from the batches
    assert len(batch_posts(srv)) == math.ceil(len(PROMPTS) / 3) == 3
    sidecar = json.loads((harness.work / OUT).with_name("fake_merged_p.batch.json").read_text())
    assert [s["status"] for s in sidecar["shards"]] == ["completed"] * 3
    assert sum(s["requests"] for s in sidecar["shards"]) == len(PROMPTS)
    info = runinfo(harness.work / OUT)
    assert info["batch"]["imported"] == len(PROMPTS) and info["cached"] == len(PROMPTS) and info["requests"] == 0
    # Every request line carries the cache key as custom_id and the online request's body.
    line = json.loads(Path(sidecar["shards"][0]["path"]).read_text().splitlines()[0])
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert line["body"]["messages"] == [{"role": "user", "content": PROMPTS[0]}]
    assert len(line["custom_id"]) == 64
    # A second run submits nothing and sends nothing.
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert len(batch_posts(srv)) == 3 and len(chat_requests(srv)) == online_calls


def test_a_shard_is_also_cut_by_size(harness):
    from orbench.batch.plan import Group, request_line, write_shards

    class C:
        class endpoint:
            name, identity = "x", "x-id"
    group = Group(C(), {f"k{i}": {"messages": [{"role": "user", "content": "y" * 100}]} for i in range(10)})
    size = len(request_line("k0", group.requests["k0"]))
    shards = write_shards(group, harness.work / "s", max_requests=50_000, max_bytes=2 * size + 1)
    assert [s.requests for s in shards] == [2, 2, 2, 2, 2]
    assert all(s.bytes <= 2 * size + 1 for s in shards)
    assert [s.requests for s in write_shards(group, harness.work / "t", max_requests=4)] == [4, 4, 2]


def test_expired_batch_keeps_its_partial_results_and_the_rest_goes_online(harness, tmp_path, monkeypatch, capsys):
    srv = harness.serve()
    expected = online_reference(harness, tmp_path, monkeypatch)
    before = len(chat_requests(srv))
    prompts_csv(harness.work)
    srv.batches.script("expire")
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert (harness.work / OUT).read_bytes() == expected
    half = len(PROMPTS) // 2
    assert len(chat_requests(srv)) - before == len(PROMPTS) - half
    err = capsys.readouterr().err
    assert "expired" in err and f"{len(PROMPTS) - half} request(s) have no batch result" in err


def test_error_file_rows_are_not_cached_and_end_failed_not_counted(harness, capsys):
    srv = harness.serve(fail_when_contains="number 3", fail_status=400)
    prompts_csv(harness.work)
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_poll_seconds", "0") == 3
    err = capsys.readouterr().err
    assert "1 failed in the batch (400" in err
    out = read_csv(harness.work / OUT)
    assert len(out) == len(PROMPTS) - 1 and not out["prompt"].str.contains("number 3").any()
    failed = read_csv(harness.work / "final_fake_results" / "fake_failed_p.csv")
    assert list(failed["prompt"]) == [PROMPTS[3]]
    assert len(chat_requests(srv)) == 1  # the normal path asked once more, online, and recorded the failure


def test_failed_validation_prints_the_errors_exits_2_and_caches_nothing(harness, capsys):
    srv = harness.serve()
    prompts_csv(harness.work)
    srv.batches.script("fail")
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_poll_seconds", "0") == 2
    err = capsys.readouterr().err
    lines = error_lines(err)
    assert lines[-1].startswith("error: 1 batch(es) failed validation") and "not available for batch" in lines[-1]
    assert "Traceback" not in err
    assert chat_requests(srv) == []
    assert len(read_csv(harness.work / OUT)) == 0
    assert runinfo(harness.work / OUT)["complete"] is False
    # Fixed on the provider's side: the same command submits again and finishes.
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert len(read_csv(harness.work / OUT)) == len(PROMPTS) and len(batch_posts(srv)) == 2


def test_dropped_polls_are_survived(harness, capsys):
    srv = harness.serve()
    prompts_csv(harness.work)
    srv.batches.retrieve_faults.extend([500, 503, 429])
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert len(read_csv(harness.work / OUT)) == len(PROMPTS) and chat_requests(srv) == []
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("where", ["upload", "create"])
def test_refused_key_at_upload_or_create_is_one_line_exit_2(harness, capsys, where):
    srv = harness.serve()
    prompts_csv(harness.work)
    setattr(srv.batches, f"{where}_status", 401 if where == "upload" else 403)
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch") == 2
    lines = error_lines(capsys.readouterr().err)
    assert lines[-1].startswith("error: batch ") and ("HTTP 401" in lines[-1] or "HTTP 403" in lines[-1])
    assert batch_posts(srv) == [] or where == "create"


def test_an_endpoint_without_a_batch_api_is_one_line_exit_2(harness, capsys):
    harness.serve(batch_api=False)
    prompts_csv(harness.work)
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch") == 2
    assert "does not offer the Batch API" in error_lines(capsys.readouterr().err)[-1]


@pytest.mark.parametrize("flags, says", [
    (["--batch", "--no_cache"], "needs the response cache"),
    (["--batch", "--batch_export", "x"], "cannot be used together"),
    (["--batch", "--batch_max_requests", "0"], "at least 1"),
    (["--batch_import", "missing.jsonl"], "not found"),
    (["--batch_cancel"], "no batches are recorded"),
])
def test_bad_batch_options_are_one_line_exit_2(harness, capsys, flags, says):
    harness.serve()
    prompts_csv(harness.work)
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", *flags) == 2
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and says in lines[0]


def test_export_then_vllm_format_import_finishes_the_stage(harness, capsys):
    srv = harness.serve()
    prompts_csv(harness.work)
    folder = harness.work / "shards"
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch_export", str(folder),
                       "--batch_max_requests", "4") == 0
    printed = capsys.readouterr().out
    commands = [ln for ln in printed.splitlines() if ln.startswith("vllm run-batch")]
    assert len(commands) == 2 and all(" --model fake-model" in c for c in commands)
    assert srv.requests == []  # export talks to nobody
    # Play `vllm run-batch`: answer each line in its output format; one line fails inline.
    results = []
    for shard in sorted(folder.glob("*.jsonl")):
        out = shard.with_name(shard.stem + ".results.jsonl")
        assert f"-i {shard} -o {out}" in printed
        lines = []
        for n, raw in enumerate(shard.read_text().splitlines()):
            req = json.loads(raw)
            prompt = req["body"]["messages"][-1]["content"]
            if "number 5" in prompt:
                lines.append({"id": f"vllm-{n}", "custom_id": req["custom_id"],
                              "response": {"status_code": 400, "request_id": f"vllm-batch-{n}", "body": None},
                              "error": "This model's maximum context length is 2048 tokens."})
            else:
                body = {"id": f"cmpl-{n}", "object": "chat.completion", "model": "fake-model",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"Offline answer to: {prompt}"},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}}
                lines.append({"id": f"vllm-{n}", "custom_id": req["custom_id"],
                              "response": {"status_code": 200, "request_id": f"vllm-batch-{n}", "body": body},
                              "error": None})
        out.write_text("".join(json.dumps(x) + "\n" for x in lines))
        results.append(out)
    code = harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch_import", *map(str, results))
    assert code == 3  # a failed row: the run finished, not every row is done
    err = capsys.readouterr().err
    assert "1 failed in the batch (400: This model's maximum context length" in err
    out = read_csv(harness.work / OUT)
    by_prompt = dict(zip(out["prompt"], out["response"]))
    assert set(by_prompt) == set(PROMPTS) - {PROMPTS[5]}
    assert all(by_prompt[p] == f"Offline answer to: {p}" for p in by_prompt)
    # The finish is offline: the row vLLM could not answer is failed with vLLM's reason, not sent.
    assert srv.requests == []
    failed = read_csv(harness.work / "final_fake_results" / "fake_failed_p.csv")
    assert list(failed["prompt"]) == [PROMPTS[5]] and "maximum context length" in failed["error"][0]
    assert runinfo(harness.work / OUT)["batch"]["imported"] == len(PROMPTS) - 1
    # Export again: only the failed request is written.
    capsys.readouterr()
    assert harness.run(stage4, "--model", "fake", "--input_file", "p.csv", "--batch_export", str(harness.work / "again")) == 0
    lines = (harness.work / "again" / "fake-001.jsonl").read_text().splitlines()
    assert [json.loads(x)["body"]["messages"][-1]["content"] for x in lines] == [PROMPTS[5]]


def test_stage5_judge_ensemble_batches_per_endpoint(harness, tmp_path, monkeypatch):
    a, b = harness.serve(name="judge_a"), harness.serve(name="judge_b")
    rows = {"prompt": PROMPTS[:4], "response": ["I'm sorry, but I can't help with that.", "Sure: step one...",
                                                "Here is how.", "I cannot assist."],
            "category": ["harmful"] * 4, "is_rejected": ["True", "False", "False", "True"]}
    write_csv(harness.work / "r.csv", rows)
    args = ["--input_file", "r.csv", "--check_model=judge_a,judge_b"]
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(tmp_path / "c1"))
    assert harness.run(stage5, *args, "--output_path", "online.csv") == 0
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(tmp_path / "c2"))
    n_chat = len(chat_requests(a)) + len(chat_requests(b))
    assert harness.run(stage5, *args, "--output_path", "batched.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert (harness.work / "batched.csv").read_bytes() == (harness.work / "online.csv").read_bytes()
    assert len(chat_requests(a)) + len(chat_requests(b)) == n_chat
    assert len(batch_posts(a)) == len(batch_posts(b)) == 2  # the audit's batch, then the rows'


@pytest.mark.parametrize("stage", ["moderate", "rewrite"])
def test_stages_2_and_3_take_batch_too(harness, tmp_path, monkeypatch, stage):
    srv = harness.serve()
    if stage == "moderate":
        write_csv(harness.work / "in.csv", {"prompt": PROMPTS[:3], "category": ["harmful"] * 3})
        main, args = stage3, ["--moderator_model", "fake", "--input_file_path", "in.csv"]
    else:
        write_csv(harness.work / "in.csv", {"prompt": PROMPTS[:3], "category": ["harmful"] * 3})
        main, args = stage2, ["--model", "fake", "--toxic_seed_path", "in.csv"]
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(tmp_path / "c1"))
    assert harness.run(main, *args, "--output_path", "online.csv") == 0
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(tmp_path / "c2"))
    n_chat = len(chat_requests(srv))
    assert harness.run(main, *args, "--output_path", "batched.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert (harness.work / "batched.csv").read_bytes() == (harness.work / "online.csv").read_bytes()
    assert len(chat_requests(srv)) == n_chat and len(batch_posts(srv)) == 1


# --------------------------------------------------------------------------- kill, resume, cancel


def _start(clone: Path, models: Path, *extra: str, sigint_ignored: bool = False) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, SCRIPTS["alignment_checker"], "--model", "fake", "--input_file", "p.csv",
         "--models_file", str(models), "--batch_poll_seconds", "0.05", *extra],
        cwd=clone / "alignment_checker", env=stage_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN if sigint_ignored else signal.SIG_DFL))
    # (SIG_DFL: Ctrl-C as in a terminal's foreground, even where the tests run in the background)


def _wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _polls(srv: FakeOpenAIServer) -> int:
    return sum(r.method == "GET" and r.path.startswith("/v1/batches/") for r in srv.requests)


def _stop_while_polling(clone: Path, tmp_path: Path, srv: FakeOpenAIServer, sig: int, batches: int,
                        min_polls: int, *extra: str) -> Path:
    """Start a --batch run of stage 4 against held batches; once it polls ``batches`` batches
    (``min_polls`` polls in all), stop it with ``sig``. Returns the models file."""
    models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
    prompts_csv(clone / "alignment_checker")
    proc = _start(clone, models, "--batch", *extra)
    _wait_for(lambda: len(batch_posts(srv)) == batches and _polls(srv) >= min_polls, f"{batches} batch(es) being polled")
    proc.send_signal(sig)
    proc.wait(timeout=30)
    return models


@pytest.fixture
def held_server(tmp_path):
    with FakeOpenAIServer(protocol_responder) as srv:
        srv.batches.polls_per_state = 10**9  # every batch stays in "validating" until released
        yield srv


def test_killed_while_polling_resumes_without_submitting_again(clone, tmp_path, held_server):
    srv = held_server
    models = _stop_while_polling(clone, tmp_path, srv, signal.SIGKILL, 3, 6, "--batch_max_requests", "3")
    out = clone / "alignment_checker" / OUT
    sidecar = json.loads(out.with_name("fake_merged_p.batch.json").read_text())
    assert [s["status"] for s in sidecar["shards"]] == ["validating"] * 3
    srv.batches.polls_per_state = 1
    proc = _start(clone, models, "--batch", "--batch_max_requests", "3")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "resuming 3 recorded batch(es)" in stderr
    assert len(batch_posts(srv)) == 3  # exactly one batch per shard, over both runs
    assert sum(r.method == "POST" and r.path == "/v1/files" for r in srv.requests) == 3
    assert chat_requests(srv) == []
    assert len(read_csv(out)) == len(PROMPTS)


def test_sigterm_while_polling_stops_even_where_sigint_is_ignored(clone, tmp_path, held_server):
    # A stage started in the background of a script ignores SIGINT; a scheduler's SIGTERM must
    # still stop it while it polls (no asyncio run is on then), as Ctrl-C would: 130, batch kept.
    srv = held_server
    models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
    prompts_csv(clone / "alignment_checker")
    proc = _start(clone, models, "--batch", sigint_ignored=True)
    _wait_for(lambda: len(batch_posts(srv)) == 1 and _polls(srv) >= 2, "the batch being polled")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    sidecar = json.loads((clone / "alignment_checker" / OUT).with_name("fake_merged_p.batch.json").read_text())
    assert [s["status"] for s in sidecar["shards"]] == ["validating"]


def test_cancel_then_batch_again_collects_the_partial_results_and_resubmits_the_rest(clone, tmp_path, held_server):
    srv = held_server
    models = _stop_while_polling(clone, tmp_path, srv, signal.SIGINT, 1, 2)
    cancel = _start(clone, models, "--batch_cancel")
    out_text, err = cancel.communicate(timeout=60)
    assert cancel.returncode == 0, err
    assert "cancelling" in err and "cancel requested for 1 batch(es)" in out_text
    srv.batches.polls_per_state = 1
    again = _start(clone, models, "--batch")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert "cancelled" in err
    half = len(PROMPTS) // 2
    posts = batch_posts(srv)
    assert len(posts) == 2  # the cancelled one, then one for what it left undone
    second = [b for b in srv.batches.created()][1]
    assert second["request_counts"]["total"] == len(PROMPTS) - half
    assert chat_requests(srv) == []
    assert len(read_csv(clone / "alignment_checker" / OUT)) == len(PROMPTS)


def _killed_before_the_batch_id_was_saved(clone, tmp_path, srv):
    """A run killed while polling, its record then set back to a shard uploaded but with no
    batch id (as if killed between creating the batch and writing its id down)."""
    models = _stop_while_polling(clone, tmp_path, srv, signal.SIGKILL, 1, 1)
    path = clone / "alignment_checker" / OUT.with_name("fake_merged_p.batch.json")
    record = json.loads(path.read_text())
    record["shards"][0].update(batch_id=None, status="uploaded")
    path.write_text(json.dumps(record))
    srv.batches.polls_per_state = 1
    return models


def test_a_batch_created_but_not_recorded_is_found_again_not_created_twice(clone, tmp_path, held_server):
    """Killed between creating a batch and writing its id down: the re-run finds the batch by
    its upload and the shard's hash (batch metadata) instead of creating another."""
    srv = held_server
    models = _killed_before_the_batch_id_was_saved(clone, tmp_path, srv)
    again = _start(clone, models, "--batch")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert len(batch_posts(srv)) == 1 and chat_requests(srv) == []
    assert len(read_csv(clone / "alignment_checker" / OUT)) == len(PROMPTS)


@pytest.mark.parametrize("status", [404, 405])
def test_an_endpoint_without_a_batch_list_does_not_stall_the_run(clone, tmp_path, held_server, status):
    """GET /v1/batches answers 404 or 405: the search for an unrecorded batch is skipped with a
    warning that says what that risks, and the run goes on (one new batch for the shard)."""
    srv = held_server
    models = _killed_before_the_batch_id_was_saved(clone, tmp_path, srv)
    srv.batches.list_status = status
    again = _start(clone, models, "--batch")
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert f"cannot list batches (HTTP {status}" in err and "paid twice" in err
    assert len(batch_posts(srv)) == 2  # the unrecorded one could not be found: a second was created
    assert chat_requests(srv) == []
    assert len(read_csv(clone / "alignment_checker" / OUT)) == len(PROMPTS)
