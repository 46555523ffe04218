"""Helpers for the Inspect tests: mockllm models whose replies are chosen by prompt, an eval
run in-process into a temp log folder, and a guard that fails any test reaching past loopback.

The guard matters: without usage figures on its outputs, mockllm counts tokens with tiktoken,
which downloads its tables on first use. On a machine with a network that would pass unseen."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput, ModelUsage, get_model

MOCK = "mockllm/model"
FILTER = "<content filter>"  # a reply stopped by the provider's content filter, with no text


class TargetDown(Exception):
    """What a mock target raises for a prompt whose call should fail."""


def mock_output(text: str, stop_reason: str = "stop") -> ModelOutput:
    out = ModelOutput.from_content(MOCK, text, stop_reason=stop_reason)
    out.usage = ModelUsage(input_tokens=10, output_tokens=max(1, len(text) // 4), total_tokens=20)
    return out


def user_text(messages: list[ChatMessage]) -> str:
    return [m for m in messages if m.role == "user"][-1].text


def mock_model(reply: Callable[[list[ChatMessage], GenerateConfig], Any],
               calls: list | None = None) -> Model:
    """A mockllm model: ``reply(messages, config)`` gives a text, FILTER or an exception."""

    def generate(messages, tools, tool_choice, config):
        if calls is not None:
            calls.append((list(messages), config))
        answer = reply(messages, config)
        if isinstance(answer, BaseException):
            raise answer
        if answer == FILTER:
            return mock_output("", "content_filter")
        return mock_output(answer)

    return get_model(MOCK, custom_outputs=generate, memoize=False)


def target(replies: Mapping[str, Any], calls: list | None = None) -> Model:
    """A mock target answering each prompt (its last user message) from ``replies``."""
    return mock_model(lambda messages, config: replies[user_text(messages)], calls)


def run_eval(task, model: Model, log_dir: Path, **kwargs) -> EvalLog:
    logs = inspect_eval(task, model=model, log_dir=str(log_dir), display="none", **kwargs)
    assert len(logs) == 1
    return logs[0]


_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fail on any connection or name lookup beyond loopback, and keep Inspect's own data
    (traces, buffers) in the test's temp folder."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self, address):
        if isinstance(address, tuple) and address[0] not in _LOOPBACK:
            raise OSError(f"test tried to reach the network: {address!r}")
        return real_connect(self, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in _LOOPBACK and host is not None:
            raise OSError(f"test tried to look up {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "inspect-logs"))
