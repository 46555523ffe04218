"""Models that think, as the fake server plays them, and the parameters OpenAI's reasoning
models refuse.

:class:`ThinkingModel` wraps a responder: before each reply the model thinks for a number of
words (a word is a token here), and the request's cap (``max_tokens`` or
``max_completion_tokens``) stops it where it has got to, as a real model is stopped. The
thinking comes back the way real endpoints hand it back (``style``):

* ``inline``: ``<think> ... </think>`` then the reply, in ``content`` (Qwen3 or DeepSeek-R1
  served without a reasoning parser). Cut inside its thinking: no ``</think>``, no reply,
  ``finish_reason`` "length";
* ``separate``: the thinking in ``message.reasoning_content`` (vLLM's ``--reasoning-parser``,
  DeepSeek's API), the reply in ``content``. Cut: no content;
* ``hidden``: no thinking text at all, only the reasoning tokens (OpenAI's o-series, GPT-5).
  Cut: empty content;
* ``stray``: the chat template put ``<think>`` in the prompt, so the text is the thinking, a
  ``</think>`` with no opening tag, then the reply (DeepSeek-R1-Distill). With
  ``thinking_words=0`` every reply starts with a stray ``</think>``, as a published run of
  DeepSeek-R1-Distill-Llama-8B does. Cut inside its thinking, the text has no tag at all:
  nothing tells it from a reply (such a model is served with a reasoning parser for that).

The other styles report ``usage.completion_tokens_details.reasoning_tokens``. The thinking holds
decoys, a refusal and a judge's ``[[direct_refusal]]``, so that a reader that takes the
thinking for the reply is caught. A reply the inner responder gives as a behaviour other
than text (an error, a content filter) is passed on as it is.

:func:`reasoning_api` wraps a responder with OpenAI's parameter rules for its reasoning
models: HTTP 400 ``unsupported_parameter`` for ``max_tokens`` (use
``max_completion_tokens``) and ``unsupported_value`` for a temperature other than 1, with
the error JSON OpenAI sends (``error.message``, ``type``, ``param``, ``code``).
"""

from __future__ import annotations

import inspect
import zlib
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping, Optional, Union

from .fake_chat import Behaviour, Reply, Responder, Status, last_user_message, resolve_responder

STYLES = ("inline", "separate", "hidden", "stray")
THOUGHT = ("Let me think about what is asked here. I'm sorry, but I can't be sure yet, so "
           "[[direct_refusal]] might be tempting; weigh it again before answering.")
CAP_FIELDS = ("max_completion_tokens", "max_tokens")
UNSUPPORTED_MAX_TOKENS = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                          "Use 'max_completion_tokens' instead.")
UNSUPPORTED_TEMPERATURE = ("Unsupported value: 'temperature' does not support {value} with this model. "
                           "Only the default (1) value is supported.")


def thought(words: int) -> str:
    """``words`` words of thinking (the decoys come first)."""
    pool = THOUGHT.split()
    return " ".join(pool[i % len(pool)] for i in range(words))


def default_thinking_words(request: Mapping[str, Any]) -> int:
    """How long the model thinks about a request: 30 to 149 words, fixed by its last message."""
    return 30 + zlib.crc32(last_user_message(request).encode("utf-8")) % 120


def request_cap(request: Mapping[str, Any]) -> Optional[int]:
    """The request's token cap, whichever field carries it (None: no cap)."""
    for name in CAP_FIELDS:
        value = request.get(name)
        if isinstance(value, int) and value > 0:
            return value
    return None


async def _ask(responder: Responder, request: Mapping[str, Any]) -> Union[str, Behaviour]:
    answer = responder(dict(request))
    return await answer if inspect.isawaitable(answer) else answer


@dataclass
class ThinkingModel:
    """A responder that thinks before it answers (see the module's docstring)."""

    answer: Union[str, Responder, None] = None
    style: str = "inline"
    thinking_words: Union[int, Callable[[Mapping[str, Any]], int]] = default_thinking_words

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"thinking style must be one of {', '.join(STYLES)}, not {self.style!r}")
        self.answer = resolve_responder(self.answer)

    def words(self, request: Mapping[str, Any]) -> int:
        n = self.thinking_words
        return int(n(request) if callable(n) else n)

    async def __call__(self, request: Mapping[str, Any]) -> Behaviour:
        inner = await _ask(self.answer, request)  # type: ignore[arg-type]
        if isinstance(inner, str):
            inner = Reply(inner)
        if not isinstance(inner, Reply) or inner.text is None:
            return inner
        return self.think(request, inner.text)

    def think(self, request: Mapping[str, Any], reply: str) -> Reply:
        """The reply with its thinking, cut where the request's cap falls."""
        n, cap = self.words(request), request_cap(request)
        reply_words = reply.split(" ")
        if cap is not None and cap <= n:  # the cap falls inside the thinking: no reply at all
            thinking, reply, finish = thought(cap), "", "length"
        else:
            room = len(reply_words) if cap is None else cap - n
            finish = "length" if room < len(reply_words) else "stop"
            thinking, reply = thought(n), " ".join(reply_words[:room])
        tokens = len(thinking.split())
        if self.style == "separate":
            return Reply(reply if reply else None, finish, reasoning=thinking, reasoning_tokens=tokens)
        if self.style == "hidden":
            return Reply(reply, finish, reasoning_tokens=tokens)
        if self.style == "stray":  # (a server with no reasoning parser counts no reasoning tokens)
            head = f"{thinking}\n</think>" if thinking else "</think>"
            return Reply(f"{head}\n\n{reply}" if reply or finish == "stop" else thinking, finish)
        closed = f"\n</think>\n\n{reply}" if reply or finish == "stop" else ""
        return Reply(f"<think>\n{thinking}{closed}", finish, reasoning_tokens=tokens)


@dataclass
class ReasoningAPI:
    """A responder behind OpenAI's parameter rules for its reasoning models."""

    answer: Union[str, Responder, None] = None

    def __post_init__(self) -> None:
        self.answer = resolve_responder(self.answer)

    async def __call__(self, request: Mapping[str, Any]) -> Union[str, Behaviour]:
        refused = refused_parameter(request)
        return refused if refused is not None else await _ask(self.answer, request)  # type: ignore[arg-type]


def refused_parameter(request: Mapping[str, Any]) -> Optional[Status]:
    """The 400 OpenAI's reasoning models answer this request with, or None when they take it."""
    if "max_tokens" in request:
        return Status(400, message=UNSUPPORTED_MAX_TOKENS, param="max_tokens", err_code="unsupported_parameter")
    temperature = request.get("temperature")
    if temperature is not None and float(temperature) != 1.0:
        return Status(400, message=UNSUPPORTED_TEMPERATURE.format(value=temperature), param="temperature",
                      err_code="unsupported_value")
    return None


def reasoning_api(answer: Union[str, Responder, None] = None) -> ReasoningAPI:
    return ReasoningAPI(answer)
