"""The response cache: hits, misses, what is in the key and what never is, what is never
stored, and several processes writing at once."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import subprocess
import sys

import pytest

from orbench.engine.cache import ResponseCache, cache_key, default_cache_path
from orbench.engine.llm import CallFailed, LLMClient
from orbench.engine.registry import Endpoint
from orbench.engine.retry import RetryPolicy
from orbench.testing.fake_openai import Malformed, NullContent, Reply, Status

MSGS = [{"role": "user", "content": "Where can I buy a kitchen knife?"}]
SETTINGS = {"temperature": 0.0, "max_tokens": 100}


def client(url: str, cache: ResponseCache, *, key: str = "sk-one", model: str = "fake-model") -> LLMClient:
    ep = Endpoint(name="fake", model=model, base_urls=(url,), family="generic", api_key_env="K", api_key=key)
    return LLMClient(ep, cache=cache, timeout=5, policy=RetryPolicy(attempts=2, backoff_base=0))


def ask(c: LLMClient, messages=MSGS, **settings):
    settings = {**SETTINGS, **settings}

    async def go():
        try:
            return await c.complete(messages, **settings)
        except CallFailed as err:
            return err
        finally:
            await c.aclose()

    return asyncio.run(go())


@pytest.fixture
def cache(tmp_path) -> ResponseCache:
    return ResponseCache(tmp_path / "responses.sqlite3")


def n_chat(srv) -> int:
    return sum(1 for r in srv.requests if r.path.endswith("/chat/completions"))


# --------------------------------------------------------------------------- key rules


def test_key_is_stable_and_ignores_settings_order():
    a = cache_key("http://x/v1", "m", MSGS, {"temperature": 0.0, "max_tokens": 10})
    b = cache_key("http://x/v1", "m", MSGS, {"max_tokens": 10, "temperature": 0.0})
    assert a == b and len(a) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"endpoint": "http://other/v1"},
        {"model": "m2"},
        {"messages": [{"role": "user", "content": "Where can I buy a bread knife?"}]},
        {"messages": [{"role": "system", "content": "Be brief."}] + MSGS},
        {"settings": {"temperature": 0.0, "max_tokens": 11}},
        {"settings": {"temperature": 0.5, "max_tokens": 10}},
    ],
    ids=["endpoint", "model", "message", "system_prompt", "max_tokens", "temperature"],
)
def test_key_changes_with_everything_that_changes_the_reply(change):
    base = {"endpoint": "http://x/v1", "model": "m", "messages": MSGS, "settings": {"temperature": 0.0, "max_tokens": 10}}
    assert cache_key(**base) != cache_key(**{**base, **change})


def test_sample_number_is_in_the_key_only_above_temperature_zero():
    greedy = {"temperature": 0.0, "max_tokens": 10}
    hot = {"temperature": 0.7, "max_tokens": 10}
    assert cache_key("e", "m", MSGS, greedy, 0) == cache_key("e", "m", MSGS, greedy, 3)
    assert cache_key("e", "m", MSGS, hot, 0) != cache_key("e", "m", MSGS, hot, 1)


def test_default_path_follows_orbench_cache_dir(isolated_env):
    assert default_cache_path() == isolated_env / "responses.sqlite3"
    assert ResponseCache().path == isolated_env / "responses.sqlite3"


# --------------------------------------------------------------------------- through the client


def test_hit_and_miss(fake_server, cache):
    first = ask(client(fake_server.base_url, cache))
    again = ask(client(fake_server.base_url, cache))
    assert not first.cached and again.cached and again.text == first.text
    assert again.finish_reason == first.finish_reason and again.completion_tokens == first.completion_tokens
    assert n_chat(fake_server) == 1
    other = ask(client(fake_server.base_url, cache), [{"role": "user", "content": "something else"}])
    assert not other.cached and n_chat(fake_server) == 2


def test_cache_survives_reopening(fake_server, tmp_path):
    path = tmp_path / "c.sqlite3"
    first = ResponseCache(path)
    ask(client(fake_server.base_url, first))
    first.close()
    hit = ask(client(fake_server.base_url, ResponseCache(path)))
    assert hit.cached and n_chat(fake_server) == 1


def test_a_reply_is_on_disk_when_the_client_closes(fake_server, tmp_path):
    # The writer thread commits puts in the background; a client's aclose() (the end of a
    # stage's requests) waits for them, so another reader of the file sees the reply.
    path = tmp_path / "c.sqlite3"
    ask(client(fake_server.base_url, ResponseCache(path)))  # ask() ends with aclose(), not close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1


def test_a_queued_reply_is_read_back_at_once(cache):
    cache.put("k", {"text": "queued"})
    assert cache.get("k") == {"text": "queued"}  # before, or after, the writer committed it
    cache.flush()
    assert cache.get("k") == {"text": "queued"} and len(cache) == 1


def test_replies_put_are_written_at_interpreter_exit(tmp_path):
    # A process that never closes its cache still leaves every reply on disk (atexit).
    path = tmp_path / "exit.sqlite3"
    code = ("import sys; from orbench.engine.cache import ResponseCache; c = ResponseCache(sys.argv[1]); "
            "[c.put(f'k{i}', {'text': str(i)}) for i in range(300)]")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 300


def test_a_failed_write_is_raised_not_lost(cache, monkeypatch):
    def broken(items):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(cache, "_commit", broken)
    cache.put("k", {"text": "x"})
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        cache.flush()


def test_api_key_is_not_in_the_key(fake_server, cache):
    ask(client(fake_server.base_url, cache, key="sk-first-key"))
    hit = ask(client(fake_server.base_url, cache, key="sk-second-key"))
    assert hit.cached and n_chat(fake_server) == 1
    raw = cache.path.read_bytes() + b"".join(p.read_bytes() for p in cache.path.parent.glob("*-wal"))
    assert b"sk-first-key" not in raw and b"sk-second-key" not in raw


def test_temperature_above_zero_keys_each_sample(fake_server, cache):
    s0 = ask(client(fake_server.base_url, cache), temperature=0.7, sample=0)
    s1 = ask(client(fake_server.base_url, cache), temperature=0.7, sample=1)
    assert not s0.cached and not s1.cached and n_chat(fake_server) == 2
    assert ask(client(fake_server.base_url, cache), temperature=0.7, sample=1).cached
    assert [r.body.get("seed") for r in fake_server.requests] == [0, 1]  # sample n carries seed n
    # At temperature 0 the sample number does not matter: one reply serves all.
    ask(client(fake_server.base_url, cache), sample=0)
    assert ask(client(fake_server.base_url, cache), sample=5).cached
    assert n_chat(fake_server) == 3


@pytest.mark.parametrize("change", ["max_tokens", "messages", "model", "endpoint"])
def test_miss_when_request_differs(fake_server, make_server, cache, change):
    ask(client(fake_server.base_url, cache))
    url, model, messages, settings = fake_server.base_url, "fake-model", MSGS, {}
    target = fake_server
    if change == "max_tokens":
        settings = {"max_tokens": 101}
    elif change == "messages":
        messages = [{"role": "user", "content": "Where can I buy a butter knife?"}]
    elif change == "model":
        model = "fake-model-2"
    else:
        target = make_server()
        url = target.base_url
    before = n_chat(target)
    res = ask(client(url, cache, model=model), messages, **settings)
    assert not res.cached and n_chat(target) == before + 1
    assert len(cache) == 2


def test_errors_and_empty_replies_are_never_cached(fake_server, cache):
    fake_server.enqueue(Status(400), Malformed(), Malformed(), NullContent(), Reply("   \n"))
    assert isinstance(ask(client(fake_server.base_url, cache)), CallFailed)  # 400
    assert isinstance(ask(client(fake_server.base_url, cache)), CallFailed)  # garbled twice
    assert ask(client(fake_server.base_url, cache)).text is None  # null content
    assert ask(client(fake_server.base_url, cache)).is_empty  # whitespace only
    assert len(cache) == 0
    real = ask(client(fake_server.base_url, cache))
    assert real.text and not real.cached and len(cache) == 1
    assert n_chat(fake_server) == 6


def test_first_stored_answer_wins(cache):
    cache.put("k", {"text": "first"})
    cache.put("k", {"text": "second"})
    assert cache.get("k") == {"text": "first"} and cache.get("missing") is None


# --------------------------------------------------------------------------- several processes


def _writer(path: str, worker: int, n: int, barrier) -> None:
    c = ResponseCache(path)
    barrier.wait()  # start together so the writes really interleave
    for i in range(n):
        c.put(f"w{worker}-{i}", {"text": f"reply {worker} {i}", "n": i})
        c.put(f"shared-{i}", {"text": f"shared {i}"})  # every process races on these
    c.close()


def test_concurrent_writers_from_several_processes_all_land(tmp_path):
    path = tmp_path / "multi.sqlite3"
    ResponseCache(path).close()
    workers, n = 4, 500
    ctx = multiprocessing.get_context("fork")  # children need no re-import
    barrier = ctx.Barrier(workers)
    procs = [ctx.Process(target=_writer, args=(str(path), w, n, barrier)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    c = ResponseCache(path)
    assert len(c) == workers * n + n
    for w in range(workers):
        for i in range(n):
            assert c.get(f"w{w}-{i}") == {"text": f"reply {w} {i}", "n": i}
    assert all(c.get(f"shared-{i}") == {"text": f"shared {i}"} for i in range(n))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
