"""Chat completions as the fake server gives them: behaviours, responders, and the replies.

A *behaviour* says what one chat request gets back: a normal :class:`Reply`, an HTTP error
(:class:`Status`), no answer at all (:class:`Hang`) or one of the broken 200s a real server
can send. A *responder* turns a request body into a behaviour (or plain text, meaning a
reply). :class:`ChatReplies` renders a behaviour as the HTTP answer, JSON or server-sent
events, with word counts standing in for token usage.
"""

from __future__ import annotations

import importlib
import itertools
import json
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, Mapping, Optional, Union

from .fake_http import Outcome, status_outcome

DEFAULT_MODEL = "fake-model"
REFUSE_MARKER = "REFUSE"
REFUSAL_TEXT = "I'm sorry, but I can't help with that."
ECHO_PREFIX = "Here is an answer about: "
ECHO_CHARS = 60


# --------------------------------------------------------------------------
# Behaviours
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A normal 200 completion with the given text.

    ``latency`` (seconds), when not None, replaces the server-wide latency for
    this one response. ``reasoning``, when not None, is sent apart in
    ``message.reasoning_content``, as vLLM's reasoning parser and DeepSeek's API
    do; ``reasoning_tokens`` (default: its words) goes in
    ``usage.completion_tokens_details`` (OpenAI's hidden reasoning: set it alone).
    """

    text: Optional[str]
    finish_reason: str = "stop"
    latency: Optional[float] = None
    reasoning: Optional[str] = None
    reasoning_tokens: Optional[int] = None


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style JSON error body.

    ``retry_after`` (seconds) adds ``Retry-After`` and ``retry-after-ms``
    headers. ``message`` overrides the default error message; ``param`` and
    ``err_code`` fill the body's ``error.param`` and ``error.code``.
    """

    code: int
    retry_after: Optional[float] = None
    message: Optional[str] = None
    param: Optional[str] = None
    err_code: Optional[str] = None


@dataclass(frozen=True)
class Hang:
    """Never answer; hold the connection until the client or server closes it."""


@dataclass(frozen=True)
class Malformed:
    """200 with a body that is not valid JSON."""


@dataclass(frozen=True)
class EmptyChoices:
    """200 with valid JSON whose ``choices`` list is empty."""


@dataclass(frozen=True)
class NullContent:
    """200 whose single choice has ``message.content == null``."""

    finish_reason: str = "stop"


@dataclass(frozen=True)
class ContentFilter:
    """200 with ``finish_reason == "content_filter"`` and null (or given) content."""

    content: Optional[str] = None


Behaviour = Union[Reply, Status, Hang, Malformed, EmptyChoices, NullContent, ContentFilter]
BEHAVIOUR_TYPES = (Reply, Status, Hang, Malformed, EmptyChoices, NullContent, ContentFilter)

Responder = Callable[[Dict[str, Any]], Union[str, Behaviour, Awaitable[Union[str, Behaviour]]]]

BEHAVIOUR_NAMES = {
    Reply: "reply",
    Status: "status",
    Hang: "hang",
    Malformed: "malformed",
    EmptyChoices: "empty_choices",
    NullContent: "null_content",
    ContentFilter: "content_filter",
}


def coerce_behaviour(item: Any) -> Behaviour:
    """A behaviour from an instance, a behaviour class (``Hang``) or plain text (a reply)."""
    if isinstance(item, type) and item in BEHAVIOUR_TYPES:
        item = item()  # allow enqueue(Hang) as shorthand for enqueue(Hang())
    if isinstance(item, str):
        item = Reply(item)
    if not isinstance(item, BEHAVIOUR_TYPES):
        raise TypeError(f"not a fake-server behaviour: {item!r}")
    if isinstance(item, Status) and not 100 <= int(item.code) <= 599:
        raise ValueError(f"bad HTTP status code: {item.code!r}")
    return item


# --------------------------------------------------------------------------
# Responders
# --------------------------------------------------------------------------


def content_text(content: Any) -> str:
    """Flatten an OpenAI message ``content`` (string or list of parts) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
        return " ".join(pieces)
    return str(content)


def last_user_message(request: Mapping[str, Any]) -> str:
    """Text of the last ``role == "user"`` message, or "" if there is none."""
    messages = request.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def echo_responder(request: Mapping[str, Any]) -> str:
    """Default responder: a deterministic reply derived from the last user message.

    Messages containing ``"REFUSE"`` get a canned refusal.
    """
    text = last_user_message(request)
    if REFUSE_MARKER in text:
        return REFUSAL_TEXT
    return ECHO_PREFIX + text[:ECHO_CHARS]


def refuse_responder(request: Mapping[str, Any]) -> str:
    """Always refuses."""
    return REFUSAL_TEXT


BUILTIN_RESPONDERS: Dict[str, Responder] = {
    "echo": echo_responder,
    "refuse": refuse_responder,
}


def resolve_responder(spec: Union[str, Responder, None]) -> Responder:
    """Turn ``None``, a builtin name ("echo", "refuse") or "pkg.mod:attr" into a callable."""
    if spec is None:
        return echo_responder
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"responder must be a callable or a string, got {spec!r}")
    if spec in BUILTIN_RESPONDERS:
        return BUILTIN_RESPONDERS[spec]
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(
            f"responder {spec!r}: expected a builtin name {sorted(BUILTIN_RESPONDERS)} "
            "or 'module.path:callable'"
        )
    obj: Any = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    if not callable(obj):
        raise TypeError(f"responder {spec!r} is not callable")
    return obj


# --------------------------------------------------------------------------
# Replies
# --------------------------------------------------------------------------


def _word_count(text: Optional[str]) -> int:
    return len(text.split()) if text else 0


def _reasoning_tokens(reply: Optional[Reply]) -> int:
    """The tokens a reply's thinking took: as given, else its words."""
    if reply is None:
        return 0
    if reply.reasoning_tokens is not None:
        return int(reply.reasoning_tokens)
    return _word_count(reply.reasoning)


_BROKEN_JSON = (b'{"id": "chatcmpl-broken", "object": "chat.completion", '
                b'"choices": [{"index": 0, "message": {"role": "assi')
_BROKEN_SSE = b'data: {"id": "chatcmpl-broken", "choices": [{"delta": \n\n'


class ChatReplies:
    """Renders behaviours as chat-completion answers, numbering the completions it makes."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def outcome(self, behaviour: Behaviour, source: str, request: Mapping[str, Any]) -> Outcome:
        name = BEHAVIOUR_NAMES[type(behaviour)]
        if isinstance(behaviour, Status):
            return status_outcome(behaviour.code, source, behaviour.message, err_code=behaviour.err_code,
                                  retry_after=behaviour.retry_after, param=behaviour.param)
        if isinstance(behaviour, Hang):
            return Outcome(None, name, source)
        stream = request.get("stream") is True
        if isinstance(behaviour, Malformed):
            if stream:
                return Outcome(200, name, source, body=_BROKEN_SSE, content_type="text/event-stream")
            return Outcome(200, name, source, body=_BROKEN_JSON)

        content: Optional[str]
        thought: Optional[Reply] = behaviour if isinstance(behaviour, Reply) else None
        if isinstance(behaviour, Reply):
            content, finish, latency = behaviour.text, behaviour.finish_reason, behaviour.latency
        elif isinstance(behaviour, NullContent):
            content, finish, latency = None, behaviour.finish_reason, None
        elif isinstance(behaviour, ContentFilter):
            content, finish, latency = behaviour.content, "content_filter", None
        else:  # EmptyChoices
            content, finish, latency = None, None, None
        with_choices = not isinstance(behaviour, EmptyChoices)

        completion = self.completion(request, content, finish, with_choices, thought)
        if stream:
            return Outcome(200, name, source, body=sse_body(completion, request), content_type="text/event-stream",
                           reply_text=content, latency=latency, finish_reason=finish)
        return Outcome(200, name, source, body=json.dumps(completion).encode(),
                       reply_text=content, latency=latency, finish_reason=finish)

    def completion(
        self, request: Mapping[str, Any], content: Optional[str], finish: Optional[str], with_choices: bool,
        thought: Optional[Reply] = None,
    ) -> Dict[str, Any]:
        """A ``chat.completion`` object: ``n`` equal choices, usage counted in words (a reply's
        thinking included, as endpoints count it)."""
        n = request.get("n")
        n = n if isinstance(n, int) and 1 <= n <= 128 else 1
        prompt_tokens = sum(
            _word_count(content_text(m.get("content"))) for m in request.get("messages") or [] if isinstance(m, dict)
        )
        reasoning = thought.reasoning if thought is not None else None
        thinking_tokens = _reasoning_tokens(thought)
        completion_tokens = (_word_count(content) + thinking_tokens) * n if with_choices else 0
        message: Dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        choices = []
        if with_choices:
            for i in range(n):
                choices.append({"index": i, "message": dict(message), "logprobs": None, "finish_reason": finish})
        model = request.get("model")
        return {
            "id": f"chatcmpl-fake{next(self._ids):08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) and model else DEFAULT_MODEL,
            "system_fingerprint": "fp_orbench_fake",
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                **({"completion_tokens_details": {"reasoning_tokens": thinking_tokens * n}} if thought is not None
                   and (reasoning is not None or thought.reasoning_tokens is not None) else {}),
            },
        }


def sse_body(completion: Dict[str, Any], request: Mapping[str, Any]) -> bytes:
    """Render a completion as ``chat.completion.chunk`` server-sent events."""
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    events = []

    def emit(choices: list, **extra: Any) -> None:
        events.append("data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n")

    if not completion["choices"]:
        emit([])
    for choice in completion["choices"]:
        i, content = choice["index"], choice["message"]["content"]
        emit([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}])
        if choice["message"].get("reasoning_content"):
            emit([{"index": i, "delta": {"reasoning_content": choice["message"]["reasoning_content"]},
                   "logprobs": None, "finish_reason": None}])
        if content:
            words = content.split(" ")
            for j in range(0, len(words), 8):
                piece = " ".join(words[j:j + 8]) + (" " if j + 8 < len(words) else "")
                emit([{"index": i, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}])
        emit([{"index": i, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}])
    options = request.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        emit([], usage=completion["usage"])
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()
