"""The retry policy's budget: 429s wait as told and do not use up attempts; other transient
errors do; the time budget bounds everything."""

from __future__ import annotations

import asyncio

import pytest

from orbench.engine.llm import CallFailed, LLMClient
from orbench.engine.registry import Endpoint
from orbench.engine.retry import RetryPolicy
from orbench.testing.fake_openai import Hang, Reply, Status


def _client(server, policy: RetryPolicy) -> LLMClient:
    endpoint = Endpoint(name="fake", model="fake-model", base_urls=(server.base_url,), family="generic",
                        api_key_env="", api_key="k")
    return LLMClient(endpoint, concurrency=1, timeout=5, cache=None, policy=policy)


async def _ask(client: LLMClient):
    try:
        return await client.complete([{"role": "user", "content": "hi"}], temperature=0, max_tokens=5)
    finally:
        await client.aclose()


def test_rate_limits_do_not_use_up_attempts(fake_server):
    # Ten 429s in a row, then an answer: more 429s than attempts, and still the row completes.
    fake_server.enqueue(*[Status(429, retry_after=0.01) for _ in range(10)], Reply("done"))
    result = asyncio.run(_ask(_client(fake_server, RetryPolicy(attempts=3, backoff_base=0))))
    assert result.text == "done"
    assert [r.status for r in fake_server.requests] == [429] * 10 + [200]


def test_server_errors_use_up_attempts(fake_server):
    fake_server.enqueue(*[Status(500) for _ in range(5)], Reply("too late"))
    with pytest.raises(CallFailed, match="3 failed attempts"):
        asyncio.run(_ask(_client(fake_server, RetryPolicy(attempts=3, backoff_base=0))))
    assert [r.status for r in fake_server.requests] == [500, 500, 500]


def test_time_budget_bounds_endless_rate_limits(fake_server):
    fake_server.enqueue(*[Status(429, retry_after=0.05) for _ in range(200)])
    with pytest.raises(CallFailed, match="HTTP 429"):
        asyncio.run(_ask(_client(fake_server, RetryPolicy(attempts=3, backoff_base=0, max_seconds=0.3))))
    assert 1 < len(fake_server.requests) < 200


def test_time_budget_counts_the_first_attempt(fake_server):
    # The first attempt runs before tenacity's loop (LLMClient.send): its time still counts.
    fake_server.enqueue(Hang(), Reply("too late"))
    endpoint = Endpoint(name="fake", model="fake-model", base_urls=(fake_server.base_url,), family="generic",
                        api_key_env="", api_key="k")
    client = LLMClient(endpoint, concurrency=1, timeout=0.5, cache=None,
                       policy=RetryPolicy(attempts=3, backoff_base=0, max_seconds=0.4))
    with pytest.raises(CallFailed, match="timed out"):
        asyncio.run(_ask(client))
    assert len(fake_server.requests) == 1
