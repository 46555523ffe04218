"""A sample's reply read as stage 4 reads an endpoint's: the thinking kept apart, a reply cut
inside its thinking told apart (orbench.protocol.thinking). Used by the scorers and the log
reader alike; it reads Inspect's objects by their attributes and imports nothing of inspect_ai.

Inspect already moves a thinking model's ``reasoning_content`` and closed ``<think>`` blocks
into reasoning parts of the message (``ContentReasoning``); an unclosed block (a reply cut
inside its thinking) and a stray ``</think>`` stay in the text, and are taken apart here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orbench.protocol.thinking import LENGTH, cut_in_thinking, split

# Inspect's stop reasons that mean the token cap stopped the reply.
_CAPPED = ("max_tokens", "model_length")


@dataclass(frozen=True)
class SampleReply:
    reply: str
    thinking: str  # "" when the model showed none
    cut: bool  # stopped by the cap inside its thinking: no reply at all
    stop_reason: str | None  # as stage 4 spells it ("length" for the cap)


def _reasoning_parts(output: Any) -> str | None:
    choices = getattr(output, "choices", None)
    content = getattr(choices[0].message, "content", None) if choices else None
    if not isinstance(content, list):
        return None
    parts = [getattr(c, "reasoning", "") or getattr(c, "summary", "") or "" for c in content
             if getattr(c, "type", "") == "reasoning"]
    return "\n\n".join(p for p in parts if p) if parts else None


def sample_reply(output: Any) -> SampleReply:
    """The reply, the thinking and whether it was cut, of an Inspect ``ModelOutput`` (None: no output)."""
    if output is None:
        return SampleReply("", "", False, None)
    stop = str(output.stop_reason) if getattr(output, "choices", None) else None  # (no choice: no reason)
    stop = LENGTH if stop in _CAPPED else stop
    parts = split(output.completion or "", _reasoning_parts(output))
    usage = getattr(output, "usage", None)
    hidden = int(getattr(usage, "reasoning_tokens", 0) or 0)
    cut = cut_in_thinking(parts.reply, parts.thinking, stop, hidden)
    return SampleReply(parts.reply or "", parts.thinking or "", cut, stop)


__all__ = ["SampleReply", "sample_reply"]
