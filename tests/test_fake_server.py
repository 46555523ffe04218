"""Tests for orbench.testing.fake_openai, driven through the official openai SDK."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import http.client
import openai
import pytest

import orbench
from orbench.testing.fake_openai import (
    REFUSAL_TEXT,
    ContentFilter,
    EmptyChoices,
    FakeOpenAIServer,
    Hang,
    Malformed,
    NullContent,
    Reply,
    Status,
    echo_responder,
)

REPO_ROOT = Path(orbench.__file__).resolve().parent.parent
MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "How do I bake a loaf of sourdough bread at home?"},
]


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def raw_request(srv: FakeOpenAIServer, method: str, path: str, body=None, headers=None):
    """Plain stdlib HTTP request; returns (status, lower-cased headers, body bytes)."""
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def make_client(srv: FakeOpenAIServer, api_key: str = "sk-test", timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key=api_key, max_retries=0, timeout=timeout)


@pytest.fixture
def client(server):
    with make_client(server) as c:
        yield c


def chat(client: openai.OpenAI, content: str = MESSAGES[1]["content"], model: str = "test-model", **kw):
    messages = [MESSAGES[0], {"role": "user", "content": content}]
    return client.chat.completions.create(model=model, messages=messages, **kw)


# ---------------------------------------------------------------------------
# Normal replies
# ---------------------------------------------------------------------------


def test_normal_reply_and_usage(server, client):
    completion = chat(client, model="my-model")
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "my-model"
    assert isinstance(completion.created, int)
    assert len(completion.choices) == 1
    choice = completion.choices[0]
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    expected = "Here is an answer about: " + MESSAGES[1]["content"][:60]
    assert choice.message.content == expected
    usage = completion.usage
    prompt_words = len(MESSAGES[0]["content"].split()) + len(MESSAGES[1]["content"].split())
    assert usage.prompt_tokens == prompt_words
    assert usage.completion_tokens == len(expected.split())
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

    [record] = server.requests
    assert record.method == "POST"
    assert record.path == "/v1/chat/completions"
    assert record.status == 200
    assert record.behaviour == "reply" and record.source == "responder"
    assert record.headers["authorization"] == "Bearer sk-test"
    assert record.headers["content-type"].startswith("application/json")
    assert record.model == "my-model"
    assert record.body["messages"][1]["content"] == MESSAGES[1]["content"]
    assert record.reply_text == expected
    assert isinstance(record.time, float)
    assert server.status_counts == {200: 1}


def test_refuse_marker(client):
    assert chat(client, "please REFUSE this").choices[0].message.content == REFUSAL_TEXT


def test_echo_responder_uses_last_user_message():
    request = {
        "messages": [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "an answer"},
            {"role": "user", "content": [{"type": "text", "text": "second question"}]},
        ]
    }
    assert echo_responder(request) == "Here is an answer about: second question"
    assert echo_responder({"messages": []}) == "Here is an answer about: "


def test_replies_are_deterministic_across_servers():
    contents = ["alpha " * 30, "beta question?", "REFUSE me"]
    runs = []
    for _ in range(2):
        with FakeOpenAIServer() as srv, make_client(srv) as c:
            runs.append([(chat(c, x).choices[0].message.content, chat(c, x).usage.total_tokens) for x in contents])
    assert runs[0] == runs[1]


def test_custom_responder_and_bare_path():
    seen = []

    def responder(request):
        seen.append(request["model"])
        return "custom:" + request["messages"][-1]["content"].upper()

    with FakeOpenAIServer(responder) as srv:
        with make_client(srv) as c:
            assert chat(c, "hi").choices[0].message.content == "custom:HI"
        # Path without the /v1 prefix is accepted too.
        status, _, body = raw_request(
            srv, "POST", "/chat/completions", {"model": "x", "messages": [{"role": "user", "content": "yo"}]}
        )
        assert status == 200
        assert json.loads(body)["choices"][0]["message"]["content"] == "custom:YO"
    assert seen == ["test-model", "x"]


def test_responder_may_return_behaviour(client):
    with FakeOpenAIServer(lambda req: Status(503)) as srv, make_client(srv) as c:
        with pytest.raises(openai.InternalServerError) as info:
            chat(c)
        assert info.value.status_code == 503


def test_models_endpoint(client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]


def test_unknown_path_gives_openai_style_404(server):
    status, headers, body = raw_request(server, "GET", "/v1/does-not-exist")
    assert status == 404
    assert headers["content-type"] == "application/json"
    err = json.loads(body)["error"]
    assert set(err) >= {"message", "type", "code"}
    assert server.status_counts == {404: 1}


def test_bad_json_body_gives_400(server):
    status, _, body = raw_request(
        server, "POST", "/v1/chat/completions", b"{not json", {"Content-Type": "application/json"}
    )
    assert status == 400
    assert json.loads(body)["error"]["type"] == "invalid_request_error"


def test_streaming(client):
    stream = chat(client, "stream this please", stream=True, stream_options={"include_usage": True})
    pieces, finish, usage = [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    assert "".join(pieces) == "Here is an answer about: stream this please"
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens == len("".join(pieces).split())


def test_keep_alive_serves_several_requests_on_one_socket(server):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "q"}]}).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        f = sock.makefile("rb")
        for _ in range(3):
            sock.sendall(request)
            status_line = f.readline()
            assert status_line.startswith(b"HTTP/1.1 200")
            headers = {}
            while (line := f.readline()) not in (b"\r\n", b""):
                k, _, v = line.decode().partition(":")
                headers[k.strip().lower()] = v.strip()
            assert headers["connection"] == "keep-alive"
            payload = json.loads(f.read(int(headers["content-length"])))
            assert payload["choices"][0]["message"]["content"] == "Here is an answer about: q"
    assert server.status_counts == {200: 3}


# ---------------------------------------------------------------------------
# Scripted behaviours
# ---------------------------------------------------------------------------


def test_queue_is_fifo_and_one_shot(server, client):
    server.enqueue(Reply("first"), Reply("second", finish_reason="length"), Status(500))
    assert server.pending == 3
    a = chat(client)
    b = chat(client)
    assert a.choices[0].message.content == "first"
    assert (b.choices[0].message.content, b.choices[0].finish_reason) == ("second", "length")
    with pytest.raises(openai.InternalServerError):
        chat(client)
    assert chat(client).choices[0].message.content.startswith("Here is an answer about:")
    assert server.pending == 0
    assert [r.source for r in server.requests] == ["queue", "queue", "queue", "responder"]


def test_429_with_retry_after(server, client):
    server.enqueue(Status(429, retry_after=2))
    with pytest.raises(openai.RateLimitError) as info:
        chat(client)
    err = info.value
    assert err.status_code == 429
    assert err.response.headers["retry-after"] == "2"
    assert err.response.headers["retry-after-ms"] == "2000"
    assert err.code == "rate_limit_exceeded"
    assert err.body["code"] == "rate_limit_exceeded"
    assert server.status_counts == {429: 1}


def test_500(server, client):
    server.enqueue(Status(500, message="boom"))
    with pytest.raises(openai.InternalServerError) as info:
        chat(client)
    assert info.value.status_code == 500
    assert info.value.message.endswith("boom") or "boom" in str(info.value)
    assert "retry-after" not in info.value.response.headers


def test_malformed(server, client):
    server.enqueue(Malformed())
    # The SDK surfaces the broken body as a JSON decode error (or, in some
    # versions, a response-validation error); either way it is not a reply.
    with pytest.raises((ValueError, openai.APIResponseValidationError)):
        chat(client)
    r = server.requests[-1]
    assert (r.status, r.behaviour) == (200, "malformed")
    # The raw body really is not JSON.
    server.enqueue(Malformed)
    status, _, body = raw_request(server, "POST", "/v1/chat/completions", {"model": "m", "messages": []})
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(body)


def test_empty_choices(server, client):
    server.enqueue(EmptyChoices())
    completion = chat(client)
    assert completion.choices == []
    assert completion.object == "chat.completion"


def test_null_content(server, client):
    server.enqueue(NullContent(), NullContent(finish_reason="length"))
    first, second = chat(client), chat(client)
    assert first.choices[0].message.content is None
    assert first.choices[0].finish_reason == "stop"
    assert second.choices[0].finish_reason == "length"


def test_content_filter(server, client):
    server.enqueue(ContentFilter())
    completion = chat(client)
    assert completion.choices[0].finish_reason == "content_filter"
    assert not completion.choices[0].message.content
    assert server.requests[-1].behaviour == "content_filter"


def test_hang_times_out_then_server_keeps_working(server):
    server.enqueue(Hang())
    with make_client(server, timeout=0.5) as c:
        with pytest.raises(openai.APITimeoutError):
            chat(c)
        assert chat(c).choices[0].message.content.startswith("Here is an answer")
    hung = server.requests[0]
    assert hung.status is None and hung.behaviour == "hang"
    assert server.status_counts == {None: 1, 200: 1}


def test_stop_is_prompt_with_hanging_requests():
    srv = FakeOpenAIServer(hang=True).start()
    errors = []

    def call():
        try:
            with make_client(srv, timeout=30) as c:
                chat(c)
        except Exception as exc:  # expected: the server drops the connection
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    assert srv.wait_for_requests(4, timeout=10)
    srv.stop()
    for t in threads:
        t.join(timeout=10)
        assert not t.is_alive()
    assert len(errors) == 4
    assert all(isinstance(e, openai.APIConnectionError) for e in errors)
    assert srv.status_counts == {None: 4}


def test_api_key_check():
    with FakeOpenAIServer(api_key="sk-right") as srv:
        with make_client(srv, api_key="sk-wrong") as bad:
            with pytest.raises(openai.AuthenticationError) as info:
                chat(bad)
        assert info.value.status_code == 401
        assert info.value.code == "invalid_api_key"
        with make_client(srv, api_key="sk-right") as good:
            assert chat(good).choices[0].message.content
        assert srv.status_counts == {401: 1, 200: 1}
        assert srv.requests[0].authorization == "Bearer sk-wrong"


def test_garbage_mode_cycles():
    with FakeOpenAIServer(garbage=True) as srv, make_client(srv) as c:
        with pytest.raises(Exception):
            chat(c)
        assert chat(c).choices == []
        assert chat(c).choices[0].message.content is None
        with pytest.raises(Exception):
            chat(c)
    assert [r.behaviour for r in srv.requests] == ["malformed", "empty_choices", "null_content", "malformed"]


def test_fail_when_contains():
    with FakeOpenAIServer(fail_when_contains="poison", fail_status=400) as srv, make_client(srv) as c:
        with pytest.raises(openai.BadRequestError):
            chat(c, "this is poison")
        assert chat(c, "this is fine").choices[0].message.content


# ---------------------------------------------------------------------------
# Random faults
# ---------------------------------------------------------------------------


def _fault_sequence(seed: int, n: int = 40) -> list:
    out = []
    with FakeOpenAIServer(fault_rates={429: 0.3, 500: 0.1}, retry_after=0.25, seed=seed) as srv:
        with make_client(srv) as c:
            for i in range(n):
                try:
                    chat(c, f"question {i}")
                    out.append(200)
                except openai.RateLimitError as exc:
                    assert exc.response.headers["retry-after"] == "0.25"
                    assert exc.response.headers["retry-after-ms"] == "250"
                    out.append(429)
                except openai.InternalServerError as exc:
                    out.append(exc.status_code)
        assert [r.status for r in srv.requests] == out
        assert all(r.source == ("fault" if r.status != 200 else "responder") for r in srv.requests)
    return out


def test_fault_rates_are_reproducible_with_seed():
    a, b = _fault_sequence(seed=123), _fault_sequence(seed=123)
    assert a == b
    assert {200, 429, 500} <= set(a)
    assert _fault_sequence(seed=124) != a


def test_invalid_fault_rates_rejected():
    with pytest.raises(ValueError):
        FakeOpenAIServer(fault_rates={429: 0.8, 500: 0.5})
    with pytest.raises(ValueError):
        FakeOpenAIServer(fault_rates={200: 0.1})


# ---------------------------------------------------------------------------
# Concurrency, async usage, binding
# ---------------------------------------------------------------------------


def test_async_client_concurrent_requests():
    async def run(srv):
        async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=10) as c:
            coros = [
                c.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{i}"}])
                for i in range(32)
            ]
            return await asyncio.gather(*coros)

    with FakeOpenAIServer(latency=0.05) as srv:
        results = asyncio.run(run(srv))
        assert [r.choices[0].message.content for r in results] == [f"Here is an answer about: q{i}" for i in range(32)]
        assert srv.status_counts == {200: 32}


def test_async_context_manager_on_callers_loop():
    async def run():
        async with FakeOpenAIServer() as srv:
            async with openai.AsyncOpenAI(base_url=srv.base_url, api_key="k", max_retries=0, timeout=5) as c:
                r = await c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            return r.choices[0].message.content

    assert asyncio.run(run()) == "Here is an answer about: x"


def test_binds_loopback_only(server):
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.port > 0
    addresses = server.sockname
    assert addresses and all(addr[0] == "127.0.0.1" for addr in addresses)


def test_in_process_log_file(tmp_path):
    log = tmp_path / "requests.jsonl"
    with FakeOpenAIServer(log_path=log) as srv, make_client(srv) as c:
        chat(c, "logged question")
        srv.enqueue(Status(429, retry_after=1))
        with pytest.raises(openai.RateLimitError):
            chat(c)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["status"] for x in lines] == [200, 429]
    assert lines[0]["messages"][-1]["content"] == "logged question"
    assert lines[0]["authorization"] == "Bearer sk-test"


# ---------------------------------------------------------------------------
# Subprocess mode
# ---------------------------------------------------------------------------


def _spawn(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, int]:
    port_file = tmp_path / f"port-{time.monotonic_ns()}"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbench.testing.fake_openai", "--port", "0", "--port-file", str(port_file), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while not port_file.exists():
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("server did not write its port file")
        time.sleep(0.02)
    return proc, int(port_file.read_text())


def _terminate(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_subprocess_serves_logs_and_exits_on_sigterm(tmp_path):
    log = tmp_path / "log.jsonl"
    proc, port = _spawn(
        tmp_path, "--log", str(log), "--api-key", "sk-sub",
        "--responder", "orbench.testing.fake_openai:echo_responder",
    )
    try:
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-sub", max_retries=0, timeout=5) as c:
            r = c.chat.completions.create(model="sub-model", messages=[{"role": "user", "content": "from a subprocess"}])
            assert r.choices[0].message.content == "Here is an answer about: from a subprocess"
            assert r.model == "sub-model"
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="nope", max_retries=0, timeout=5) as c:
            with pytest.raises(openai.AuthenticationError):
                c.models.list()
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        assert [x["status"] for x in lines] == [200, 401]
        first = lines[0]
        assert first["model"] == "sub-model"
        assert first["messages"] == [{"role": "user", "content": "from a subprocess"}]
        assert first["authorization"] == "Bearer sk-sub"
        assert isinstance(first["time"], float)
    finally:
        rc = _terminate(proc)
    assert rc == 0
    assert b"listening on http://127.0.0.1:" in proc.stdout.read()


def test_subprocess_faults_and_hang_shutdown(tmp_path):
    proc, port = _spawn(tmp_path, "--rate-429", "1.0", "--retry-after", "3", "--latency", "0.01")
    try:
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=0, timeout=5) as c:
            with pytest.raises(openai.RateLimitError) as info:
                c.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            assert info.value.response.headers["retry-after"] == "3"
    finally:
        assert _terminate(proc) == 0

    proc, port = _spawn(tmp_path, "--hang")
    pending = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        body = b'{"model": "m", "messages": []}'
        pending.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        time.sleep(0.2)  # let the request reach the server (no timing assertion)
        assert _terminate(proc) == 0
        try:
            assert pending.recv(100) == b""  # server closed the hung connection
        except ConnectionResetError:
            pass
    finally:
        pending.close()


def test_cli_rejects_bad_responder(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "orbench.testing.fake_openai", "--responder", "no_such_module_xyz:f"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert b"no_such_module_xyz" in proc.stderr
