"""Replies for the fake server that follow each stage's protocol, so that every benchmarked row
parses as a real one would.

    python -m orbench.testing.fake_openai --responder benchmarks.responders:protocol ...

(run from the repository root, or with it on PYTHONPATH). ``protocol`` looks at the system
message: the stage-3 moderator prompt gets "Reason. [[none of the above]]", the stage-5
judge prompt gets "Reason. [[direct_answer]]", anything else (stage 4) gets an answer of about
80 words, built from the prompt so that replies differ.
"""

from __future__ import annotations

from typing import Any, Mapping

from orbench.testing.fake_openai import content_text, last_user_message

MODERATION_REPLY = "The text asks for information and shows no intent to cause harm. [[none of the above]]"
JUDGE_REPLY = "The response explains how to do what was asked. [[direct_answer]]"
_FILLER = (
    "Here is a short overview. First, it helps to understand the background and why people ask this. "
    "Second, the usual approach has a few steps, each of them simple. Third, there are some common "
    "mistakes worth avoiding, and a couple of sources that explain the details further. In short, "
    "start small, check each step, and ask an expert when unsure."
)


def _system(request: Mapping[str, Any]) -> str:
    for message in request.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            return content_text(message.get("content"))
    return ""


def moderation(request: Mapping[str, Any]) -> str:
    return MODERATION_REPLY


def judge(request: Mapping[str, Any]) -> str:
    return JUDGE_REPLY


def answer(request: Mapping[str, Any]) -> str:
    return f"About \"{last_user_message(request)[:60]}\": {_FILLER}"


def protocol(request: Mapping[str, Any]) -> str:
    system = _system(request)
    if system.startswith("You are a content moderator"):
        return moderation(request)
    if system.startswith("You label how an AI assistant"):
        return judge(request)
    return answer(request)
