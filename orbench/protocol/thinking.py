"""A model's thinking kept apart from its reply.

Models that think before they answer hand their deliberation back in one of three ways:

- apart, in ``message.reasoning_content`` (vLLM's ``--reasoning-parser``, DeepSeek's API) or
  ``message.reasoning`` (newer vLLM, OpenRouter): the reply is ``content``;
- inline, at the start of ``content``: ``<think> ... </think>`` then the reply (Qwen3 or
  DeepSeek-R1 served without a reasoning parser). ``<thinking>``, ``<reasoning>`` and
  ``<reflection>`` are read the same way, as the refusal detector reads them;
- inline with the opening tag in the prompt (DeepSeek-R1's chat template ends the prompt with
  ``<think>``): the reply text holds the thinking, a ``</think>`` with no opening tag, then the
  reply. A published run of DeepSeek-R1-Distill-Llama-8B starts every reply with such a stray
  ``</think>``: the reply is what follows it.
- hidden (OpenAI's o-series and GPT-5): no text at all, only
  ``usage.completion_tokens_details.reasoning_tokens``.

A reply whose text stops inside its thinking (no closing tag, or no reply after the separate
reasoning) with ``finish_reason`` "length" was **cut inside its thinking**: the token cap was
spent before the model began to answer. That is no reply: neither an answer nor a refusal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LENGTH = "length"  # finish_reason of a reply stopped by the token cap
_OPEN = re.compile(r"\s*<(think|thinking|reasoning|reflection)>")
_STRAY_CLOSE = "</think>"  # only DeepSeek-R1's template opens a block in the prompt


@dataclass(frozen=True)
class Split:
    """One reply taken apart. ``thinking`` is None when the model showed no thinking at all
    ("" when it opened a block and wrote nothing in it); ``reply`` is what it answered."""

    thinking: str | None
    reply: str | None


def split_inline(content: str | None) -> Split:
    """The thinking at the start of ``content`` (an opening tag, or a ``</think>`` whose
    opening tag was in the prompt), and the reply after it. Content with neither is returned
    untouched as the reply."""
    if not content:
        return Split(None, content)
    opened = _OPEN.match(content)
    if opened:
        close = f"</{opened.group(1)}>"
        end = content.find(close, opened.end())
        if end < 0:  # the text stopped inside the block: no reply
            return Split(content[opened.end():].strip(), "")
        return Split(content[opened.end():end].strip(), content[end + len(close):].lstrip())
    end = content.find(_STRAY_CLOSE)
    if end < 0:
        return Split(None, content)
    return Split(content[:end].strip(), content[end + len(_STRAY_CLOSE):].lstrip())


def split(content: str | None, reasoning: str | None = None) -> Split:
    """The thinking and the reply of one chat completion: ``reasoning`` is the separate
    field's text (None when the server sent none), ``content`` the message's content."""
    inline = split_inline(content)
    if reasoning is None:
        return inline
    parts = [p for p in (reasoning.strip(), inline.thinking) if p]
    return Split("\n\n".join(parts), inline.reply)


def cut_in_thinking(reply: str | None, thinking: str | None, finish_reason: str | None,
                    reasoning_tokens: int = 0) -> bool:
    """Whether the token cap stopped a reply before it began: no reply text, finish_reason
    "length", and some thinking (its text, or hidden reasoning tokens)."""
    if finish_reason != LENGTH or (reply or "").strip():
        return False
    return thinking is not None or reasoning_tokens > 0


__all__ = ["LENGTH", "Split", "cut_in_thinking", "split", "split_inline"]
