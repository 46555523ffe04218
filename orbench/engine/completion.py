"""One chat completion as every stage reads it: ``LLMResult``, read from the JSON an endpoint
or a batch result line returns, and whether the response cache keeps it.

A thinking model's deliberation is taken apart from its reply here, once, for every path
(online, batch, the cache): ``text`` is the reply alone, ``reasoning`` the thinking
(orbench.protocol.thinking), so no stage ever reads the thinking as the reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..protocol.thinking import cut_in_thinking, split, split_inline

CONTENT_FILTER = "content_filter"


@dataclass(frozen=True)
class LLMResult:
    text: str | None  # the reply, without the thinking
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int  # reasoning tokens included, as the endpoints count them
    model: str
    cached: bool = False
    reasoning: str | None = None  # the thinking (None: the model showed none)
    reasoning_tokens: int = 0  # usage.completion_tokens_details.reasoning_tokens

    @property
    def is_filtered(self) -> bool:
        return self.finish_reason == CONTENT_FILTER

    @property
    def is_empty(self) -> bool:
        return not (self.text or "").strip()

    @property
    def cut_in_thinking(self) -> bool:
        """The token cap stopped it inside its thinking: no reply at all."""
        return cut_in_thinking(self.text, self.reasoning, self.finish_reason, self.reasoning_tokens)

    def to_cache(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "reasoning": self.reasoning,
            "reasoning_tokens": self.reasoning_tokens,
        }

    @classmethod
    def from_cache(cls, value: dict[str, Any]) -> "LLMResult":
        """A cached reply. One stored before thinking was kept apart has no "reasoning" key and
        its text as the endpoint sent it: it is taken apart now, as a new reply would be."""
        if "reasoning" in value:
            return cls(cached=True, **value)
        parts = split_inline(value.get("text"))
        return cls(cached=True, **{**value, "text": parts.reply, "reasoning": parts.thinking})


class Unreadable(ValueError):
    """A chat completion with no readable reply; the message says what is wrong."""


def _text_field(message: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = message.get(name)
        if isinstance(value, str):
            return value
    return None


def _reasoning_tokens(usage: dict[str, Any]) -> int:
    details = usage.get("completion_tokens_details")
    return int((details.get("reasoning_tokens") if isinstance(details, dict) else 0) or 0)


def result_from_completion(body: Any, default_model: str) -> LLMResult:
    """The LLMResult of a chat-completion JSON object: an online reply (dumped from the
    client's model) or a batch result line's body. Raises Unreadable."""
    if not isinstance(body, dict):
        raise Unreadable("was not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Unreadable("had no choices")
    message = choices[0].get("message") or {}
    message = message if isinstance(message, dict) else {}
    text = message.get("content")
    if text is not None and not isinstance(text, str):
        raise Unreadable("had non-text content")
    parts = split(text, _text_field(message, "reasoning_content", "reasoning"))
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return LLMResult(
        text=parts.reply,
        finish_reason=choices[0].get("finish_reason"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        model=str(body.get("model") or default_model),
        reasoning=parts.thinking,
        reasoning_tokens=_reasoning_tokens(usage),
    )


def cacheable(result: LLMResult) -> bool:
    """Errors never reach the cache; empty and filtered replies are not stored either, so a
    re-run asks again instead of repeating a non-answer.

    A reply cut inside its thinking is stored: it is a real reply the endpoint was paid for,
    not a failure. Asked again with the same settings it is cut again (at temperature 0 the
    same thinking runs into the same cap; sampled, it most likely does too), so a re-run
    would only pay for it twice; the fix is a larger --max_tokens, which is another request
    with a key of its own."""
    if result.is_filtered:
        return False
    return not result.is_empty or result.cut_in_thinking


__all__ = ["CONTENT_FILTER", "LLMResult", "Unreadable", "cacheable", "result_from_completion"]
