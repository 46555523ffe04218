"""Test helpers: the fake OpenAI server and the fake Hub. They import nothing of orbench, so any test may use them.

The main export is :class:`FakeOpenAIServer` (in :mod:`orbench.testing.fake_openai`),
a small asyncio HTTP server on 127.0.0.1 that speaks enough of the OpenAI
chat-completions protocol for the official ``openai`` SDK to talk to it, with
scriptable faults.

Names are re-exported lazily so that ``python -m orbench.testing.fake_openai``
does not import the module twice.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ContentFilter",
    "EmptyChoices",
    "FakeOpenAIServer",
    "Hang",
    "Malformed",
    "NullContent",
    "Reply",
    "ReasoningAPI",
    "RequestRecord",
    "Status",
    "ThinkingModel",
    "echo_responder",
    "reasoning_api",
    "resolve_responder",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("orbench.testing.fake_openai"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
