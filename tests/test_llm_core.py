"""The one model-call interface against a real HTTP server: every error class, retries,
timeouts, fail-fast, and what reaches the cache. Backoff is zero (conftest); Retry-After waits
are small and checked by the order of request arrivals, never by wall-clock time."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.engine.cache import ResponseCache
from orbench.errors import FatalEndpointError
from orbench.engine.llm import CallFailed, LLMClient
from orbench.engine.registry import Endpoint
from orbench.engine.retry import EndpointError, RetryPolicy
from orbench.tables.resume import read_rows
from orbench.engine.jobs import Job, Outcome, run_jobs
from orbench.tables.resume import StageOutput
from orbench.stages import alignment
from orbench.testing import fake_openai
from orbench.testing.fake_openai import (
    ContentFilter,
    EmptyChoices,
    FakeOpenAIServer,
    Hang,
    Malformed,
    NullContent,
    Reply,
    Status,
)

from tests.conftest import KEY_ENV, STAGE4

MSGS = [{"role": "user", "content": "How do I kill a python process?"}]
ATTEMPTS = 3


def endpoint(*urls: str, key: str = "sk-test-key", name: str = "fake") -> Endpoint:
    return Endpoint(name=name, model="fake-model", base_urls=tuple(urls), family="generic",
                    api_key_env=KEY_ENV, api_key=key)


def client_for(srv_or_url, *, timeout: float = 5.0, cache: ResponseCache | None = None,
               policy: RetryPolicy | None = None, concurrency: int = 4) -> LLMClient:
    url = srv_or_url.base_url if isinstance(srv_or_url, FakeOpenAIServer) else srv_or_url
    return LLMClient(endpoint(url), timeout=timeout, cache=cache, concurrency=concurrency,
                     policy=policy or RetryPolicy(attempts=ATTEMPTS, backoff_base=0))


def call(client: LLMClient, messages=MSGS, **kw):
    """One complete() call in a fresh event loop; returns the result or the exception."""

    async def go():
        try:
            return await client.complete(messages, temperature=kw.pop("temperature", 0.0),
                                         max_tokens=kw.pop("max_tokens", 50), **kw)
        except (CallFailed, EndpointError) as err:
            return err
        finally:
            await client.aclose()

    return asyncio.run(go())


def chat_requests(srv: FakeOpenAIServer):
    return [r for r in srv.requests if r.path.endswith("/chat/completions")]


# --------------------------------------------------------------------------- success


def test_reply_comes_back_as_llmresult(fake_server):
    fake_server.enqueue(Reply("Use kill -9 with the process id."))
    res = call(client_for(fake_server))
    assert res.text == "Use kill -9 with the process id."
    assert res.finish_reason == "stop"
    assert res.model == "fake-model"
    assert res.completion_tokens > 0 and not res.cached
    (req,) = chat_requests(fake_server)
    assert req.messages == MSGS
    assert req.body["temperature"] == 0.0 and req.body["max_tokens"] == 50
    assert req.authorization == "Bearer sk-test-key"


# --------------------------------------------------------------------------- transient errors


def test_429_waits_what_retry_after_asks_then_retries(fake_server):
    fake_server.enqueue(Status(429, retry_after=0.2), Reply("ok"))
    res = call(client_for(fake_server))
    assert res.text == "ok"
    first, second = chat_requests(fake_server)
    assert first.status == 429 and second.status == 200
    # Ordering, not speed: the retry arrived no sooner than the server asked.
    assert second.time - first.time >= 0.2


@pytest.mark.parametrize("code", [500, 502, 503, 408])
def test_server_errors_are_retried(fake_server, code):
    fake_server.enqueue(Status(code), Reply("ok"))
    res = call(client_for(fake_server))
    assert res.text == "ok"
    assert [r.status for r in chat_requests(fake_server)] == [code, 200]


def test_500_every_time_fails_the_row_after_all_attempts(fake_server):
    fake_server.enqueue(*[Status(500)] * ATTEMPTS, Reply("never reached"))
    err = call(client_for(fake_server))
    assert isinstance(err, CallFailed)
    assert "HTTP 500" in str(err) and "gave up" in str(err)
    assert len(chat_requests(fake_server)) == ATTEMPTS


def test_timeout_is_retried(fake_server):
    fake_server.enqueue(Hang(), Reply("after the hang"))
    res = call(client_for(fake_server, timeout=0.3))
    assert res.text == "after the hang"
    assert [r.behaviour for r in chat_requests(fake_server)] == ["hang", "reply"]


def test_timeout_every_time_fails_with_a_timeout_message(fake_server):
    fake_server.hang = True
    err = call(client_for(fake_server, timeout=0.2))
    assert isinstance(err, CallFailed)
    assert "timed out" in str(err)
    assert len(chat_requests(fake_server)) == ATTEMPTS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_retried_and_succeeds_once_the_server_is_up():
    port = _free_port()
    started: list[FakeOpenAIServer] = []

    class StartServerOnFirstWait(RetryPolicy):
        def wait(self, state):  # called after the first refused connection
            if not started:
                started.append(FakeOpenAIServer(port=port).start())
            return 0.0

    try:
        res = call(client_for(f"http://127.0.0.1:{port}/v1", policy=StartServerOnFirstWait(attempts=ATTEMPTS)))
        assert started, "the first attempt should have been refused"
        assert res.text and res.text.startswith(fake_openai.ECHO_PREFIX)
        assert len(chat_requests(started[0])) == 1
    finally:
        for s in started:
            s.stop()


def test_connection_refused_every_time_fails_the_row():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    waits: list[int] = []

    class Counting(RetryPolicy):
        def wait(self, state):
            waits.append(state.attempt_number)
            return 0.0

    err = call(client_for(url, policy=Counting(attempts=ATTEMPTS)))
    assert isinstance(err, CallFailed)
    assert "could not connect" in str(err) and url in str(err)
    assert max(waits) == ATTEMPTS  # the last failed attempt was number ATTEMPTS: retried, then gave up


@pytest.mark.parametrize("garbage", [Malformed(), EmptyChoices()], ids=["malformed_json", "empty_choices"])
def test_garbled_reply_is_retried(fake_server, garbage):
    fake_server.enqueue(garbage, Reply("fine now"))
    res = call(client_for(fake_server))
    assert res.text == "fine now"
    assert len(chat_requests(fake_server)) == 2


@pytest.mark.parametrize("garbage", [Malformed(), EmptyChoices()], ids=["malformed_json", "empty_choices"])
def test_garbled_reply_every_time_fails_the_row(fake_server, garbage):
    fake_server.enqueue(*[garbage] * ATTEMPTS, Reply("never reached"))
    err = call(client_for(fake_server))
    assert isinstance(err, CallFailed)
    assert len(chat_requests(fake_server)) == ATTEMPTS


# --------------------------------------------------------------------------- permanent errors


@pytest.mark.parametrize("code", [400, 422])
def test_bad_request_fails_the_row_at_once(fake_server, code):
    fake_server.enqueue(Status(code, message="context length exceeded"), Reply("never reached"))
    err = call(client_for(fake_server))
    assert isinstance(err, CallFailed)
    assert str(code) in str(err) and "context length exceeded" in str(err)
    assert len(chat_requests(fake_server)) == 1


@pytest.mark.parametrize("code", [401, 403, 404])
def test_auth_and_not_found_stop_with_model_and_endpoint_named(fake_server, code):
    fake_server.enqueue(Status(code), Reply("never reached"))
    err = call(client_for(fake_server))
    assert isinstance(err, EndpointError)
    msg = str(err)
    assert "'fake'" in msg and "fake-model" in msg and fake_server.base_url in msg and str(code) in msg
    assert "\n" not in msg
    assert len(chat_requests(fake_server)) == 1


@pytest.fixture
def quota_429(monkeypatch):
    """Make the fake server's 429 look like OpenAI's exhausted-quota reply."""
    monkeypatch.setitem(fake_openai._ERROR_DEFAULTS, 429,
                        ("insufficient_quota", "insufficient_quota", "You exceeded your current quota."))


def test_insufficient_quota_429_fails_at_once(fake_server, quota_429):
    fake_server.enqueue(Status(429, retry_after=0.01), Reply("never reached"))
    err = call(client_for(fake_server))
    assert isinstance(err, EndpointError)
    assert "quota" in str(err)
    assert len(chat_requests(fake_server)) == 1


# --------------------------------------------------------------------------- non-answers


def test_null_content_is_an_empty_result_not_cached(fake_server, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    fake_server.enqueue(NullContent(), NullContent())
    first = call(client_for(fake_server, cache=cache))
    assert not isinstance(first, Exception)
    assert first.text is None and first.is_empty and not first.is_filtered
    second = call(client_for(fake_server, cache=cache))
    assert not second.cached
    assert len(chat_requests(fake_server)) == 2 and len(cache) == 0


def test_content_filter_is_filtered_not_cached(fake_server, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    fake_server.enqueue(ContentFilter(content="partial"), ContentFilter())
    first = call(client_for(fake_server, cache=cache))
    assert first.is_filtered and first.text == "partial"
    second = call(client_for(fake_server, cache=cache))
    assert second.is_filtered and not second.cached
    assert len(chat_requests(fake_server)) == 2 and len(cache) == 0


def test_good_reply_is_cached_and_served_from_cache(fake_server, tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite3")
    fake_server.enqueue(Reply("stored"))
    call(client_for(fake_server, cache=cache))
    hit = call(client_for(fake_server, cache=cache))
    assert hit.cached and hit.text == "stored"
    assert len(chat_requests(fake_server)) == 1


# --------------------------------------------------------------------------- runner stops on EndpointError


def test_runner_stops_the_whole_run_on_endpoint_error(fake_server, tmp_path):
    fake_server.api_key = "the-right-key"  # our client sends another: every request is a 401
    client = client_for(fake_server, concurrency=2)
    out = tmp_path / "x_merged_y.csv"
    output = StageOutput(out, ["prompt", "response"], tmp_path / "x_failed_y.csv", ["prompt", "error"],
                         lambda r: r["prompt"])
    jobs = [Job(key=f"p{i}.0", index=i, row={"prompt": f"p{i}"}) for i in range(30)]

    async def handler(job):
        res = await client.complete([{"role": "user", "content": job.row["prompt"]}], temperature=0, max_tokens=5)
        return Outcome(rows=[{"prompt": job.row["prompt"], "response": res.text}])

    async def go():
        try:
            return await run_jobs(jobs, handler, output, output.open(), clients=[client],
                                  failed_row=lambda j, e: {"prompt": j.row["prompt"], "error": e}, desc="t")
        finally:
            await client.aclose()
            output.close()

    with pytest.raises(FatalEndpointError) as info:
        asyncio.run(go())
    assert "401" in str(info.value)
    assert 1 <= len(chat_requests(fake_server)) <= 2  # at most one per worker, no retries


# --------------------------------------------------------------------------- stage-4 CLI


def _progress_free_lines(stderr: str) -> list[str]:
    """stderr lines without tqdm's progress frames (redrawn with \\r on one line)."""
    lines = []
    for line in stderr.splitlines():
        frames = [f for f in line.split("\r") if f.strip()]
        if frames and all(f.startswith("stage 4 ") and "|" in f for f in frames):
            continue
        lines.append(line)
    return [l for l in lines if l.strip()]


def test_cli_fails_fast_on_401(fake_server, write_models, write_prompts, run_stage, stage4_args, tmp_path):
    fake_server.api_key = "the-right-key"
    models = write_models(fake_server)
    prompts = write_prompts([f"question number {i}" for i in range(40)])
    concurrency = 3
    proc = run_stage(STAGE4, *stage4_args(models, prompts, concurrency=concurrency),
                     env={KEY_ENV: "a-wrong-key"}, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = _progress_free_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "401" in lines[0]
    assert "'fake'" in lines[0] and fake_server.base_url in lines[0]
    reqs = chat_requests(fake_server)
    assert 1 <= len(reqs) <= concurrency
    prompts_sent = [r.messages[-1]["content"] for r in reqs]
    assert len(set(prompts_sent)) == len(prompts_sent)  # nothing was retried


@pytest.mark.parametrize("code", [403, 404])
def test_cli_stops_with_one_line_on_403_404(fake_server, write_models, write_prompts, stage4_args, capsys, monkeypatch,
                                           tmp_path, code):
    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.chdir(tmp_path)
    fake_server.fail_when_contains, fake_server.fail_status = "q", code  # every prompt has a q
    models = write_models(fake_server)
    prompts = write_prompts([f"q{i}" for i in range(10)])
    rc = alignment.main(stage4_args(models, prompts, concurrency=2))
    err = capsys.readouterr().err
    assert rc == 2
    lines = _progress_free_lines(err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(code) in lines[0]
    assert fake_server.base_url in lines[0]
    assert len(chat_requests(fake_server)) <= 2


def test_cli_insufficient_quota_stops_the_run(fake_server, write_models, write_prompts, stage4_args, capsys,
                                              monkeypatch, tmp_path, quota_429):
    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.chdir(tmp_path)
    fake_server.fail_when_contains, fake_server.fail_status = "q", 429
    models = write_models(fake_server)
    prompts = write_prompts([f"q{i}" for i in range(10)])
    rc = alignment.main(stage4_args(models, prompts, concurrency=2))
    err = capsys.readouterr().err
    assert rc == 2 and "quota" in err and "Traceback" not in err
    assert len(chat_requests(fake_server)) <= 2


def test_cli_400_fails_only_that_row(fake_server, write_models, write_prompts, stage4_args, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.chdir(tmp_path)
    fake_server.fail_when_contains = "BAD"
    models = write_models(fake_server)
    prompts = write_prompts(["good one", "a BAD one", "good two"])
    out = tmp_path / "out" / "fake_merged_prompts.csv"
    assert alignment.main(stage4_args(models, prompts, out)) == EXIT_ROWS_FAILED  # finished, one row failed
    _, rows = read_rows(out)
    assert [r["prompt"] for r in rows] == ["good one", "good two"]
    _, failed = read_rows(tmp_path / "out" / "fake_failed_prompts.csv")
    assert [r["prompt"] for r in failed] == ["a BAD one"] and "400" in failed[0]["error"]
    assert sum(1 for r in chat_requests(fake_server) if "BAD" in r.messages[-1]["content"]) == 1


def test_cli_run_against_hanging_server_ends_with_row_failed(fake_server, write_models, write_prompts, run_stage,
                                                           stage4_args, tmp_path):
    fake_server.hang = True
    models = write_models(fake_server)
    prompts = write_prompts(["will this ever come back?"])
    out = tmp_path / "out" / "fake_merged_prompts.csv"
    proc = run_stage(STAGE4, *stage4_args(models, prompts, out, timeout=0.2, concurrency=1),
                     env={KEY_ENV: "k"}, timeout=90)  # the bound only guards the suite
    assert proc.returncode == EXIT_ROWS_FAILED, proc.stderr
    _, rows = read_rows(out)
    assert rows == []
    _, failed = read_rows(tmp_path / "out" / "fake_failed_prompts.csv")
    assert [r["prompt"] for r in failed] == ["will this ever come back?"]
    assert "timed out" in failed[0]["error"]
    info = json.loads((tmp_path / "out" / "fake_merged_prompts.run.json").read_text())
    assert info["rows_failed"] == 1 and info["complete"] is False
    assert len(chat_requests(fake_server)) == RetryPolicy().attempts  # timeouts were retried
