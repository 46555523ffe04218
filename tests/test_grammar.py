"""Grammar-constrained decoding: sent only to endpoints that declare it, and the grammars hold
the embedded model to formats our parsers read."""

from __future__ import annotations

import asyncio

import pytest

from orbench.protocol.constants import JUDGE_CLASSES, MODERATION_OPTIONS
from orbench.engine.llm import LLMClient
from orbench.protocol.parsing import judge_verdict, moderation_choice, prompt_list
from orbench.protocol.prompts import judge_grammar, moderator_grammar, prompt_list_grammar
from orbench.engine.registry import Endpoint


def _ask(server, defaults: dict, grammar: str | None) -> dict:
    endpoint = Endpoint(name="fake", model="fake-model", base_urls=(server.base_url,), family="generic",
                        api_key_env="", api_key="k", defaults=defaults)
    client = LLMClient(endpoint, concurrency=1, timeout=5, cache=None)

    async def go():
        try:
            await client.complete([{"role": "user", "content": "hi"}], temperature=0, max_tokens=5, grammar=grammar)
        finally:
            await client.aclose()

    asyncio.run(go())
    return server.requests[-1].body


@pytest.mark.parametrize("declared,expected", [(True, True), (False, False)])
def test_grammar_goes_only_to_endpoints_that_declare_it(fake_server, declared, expected):
    body = _ask(fake_server, {"grammar": declared}, moderator_grammar())
    assert ("grammar" in body) is expected
    if expected:
        assert body["grammar"] == moderator_grammar()


def test_no_grammar_field_without_a_grammar(fake_server):
    assert "grammar" not in _ask(fake_server, {"grammar": True}, None)


def test_grammar_is_part_of_the_cache_key():
    endpoint = Endpoint(name="x", model="m", base_urls=("http://127.0.0.1:1/v1",), family="generic", api_key_env="")
    client = LLMClient(endpoint, cache=None)
    msgs = [{"role": "user", "content": "hi"}]
    base = {"temperature": 0.0, "max_tokens": 5}
    assert client.key_for(msgs, base, 0) != client.key_for(msgs, {**base, "grammar": judge_grammar()}, 0)


def test_every_choice_the_grammars_allow_is_read_by_the_parsers():
    # The choices a grammar allows, written out as a model bound by it would, parse back.
    for option in MODERATION_OPTIONS:
        assert f'"{option}"' in moderator_grammar()
        assert moderation_choice(f"Some reason. [[{option}]]") == option
    for verdict in JUDGE_CLASSES:
        assert f'"{verdict}"' in judge_grammar()
        assert judge_verdict(f"Some reason. [[{verdict}]]") == verdict
    assert "{4}" in prompt_list_grammar(5) and "{" not in prompt_list_grammar(1).split("\n")[0]
    assert prompt_list("[[first prompt here]]\n[[second prompt here]]") == ["first prompt here", "second prompt here"]


def test_the_judges_reason_leaves_room_for_the_verdict():
    # max_tokens 150 and more: the usual reason of up to 400 characters; fewer tokens, a shorter
    # reason, so that " [[verdict]]" is never cut off (the demo's judge runs at 40 tokens).
    assert judge_grammar(150) == judge_grammar(1000) == judge_grammar()
    assert "{1,84}" in judge_grammar(40) and "{1,20}" in judge_grammar(5)
    assert judge_grammar(40) != judge_grammar()
