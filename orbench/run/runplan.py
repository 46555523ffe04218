"""A run's plan, printed before any model call: requests per stage and model, the max_tokens
of each, and upper bounds on the tokens they can use.

Tokens out are at most requests x max_tokens (the reply cap). Tokens in are bounded by the
UTF-8 bytes of the messages plus a margin per message for the chat template's role markers:
every tokenizer in use (byte-level BPE, SentencePiece) gives at least one byte per token.
Where a message's text is not known yet (a judge reading replies still to come), its bound
uses the reply cap of the step that writes it, at MAX_BYTES_PER_TOKEN bytes per token.
Replies already in the response cache are not sent again, so these are upper bounds.

A thinking model's thinking counts against its cap (max_tokens or max_completion_tokens: every
endpoint counts reasoning tokens as completion tokens), so the bound on tokens out holds for
it too. Where a model is sent other parameters than the protocol's (the cap as
max_completion_tokens, no temperature, a reasoning effort), the plan says what is sent; where
a model that thinks runs with the protocol's 1,000 tokens, it warns that replies may be cut
inside their thinking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

MESSAGE_MARGIN = 8  # tokens a chat template adds around one message (role markers), generously
MAX_BYTES_PER_TOKEN = 8  # for replies not written yet: long tokens of English text stay under it
PROTOCOL_MAX_TOKENS = 1000  # the protocol's reply cap: little room for a model that thinks first


STAGE_LABELS = {"toxic_prompt_generator": "stage 1", "rewritter": "stage 2", "moderator": "stage 3",
                "alignment_checker": "stage 4", "response_checker": "stage 5"}


def stage_label(stage: str) -> str:
    return STAGE_LABELS.get(stage, stage)


@dataclass(frozen=True)
class PlanLine:
    """One stage's requests to one model."""

    stage: str
    model: str
    where: str
    requests: int
    max_tokens: int
    tokens_in: int
    note: str = ""
    sent: str = ""  # what is sent, when it is not the protocol's (engine/params.py's describe)
    thinks: bool = False  # the model thinks before it answers

    @property
    def tokens_out(self) -> int:
        return self.requests * self.max_tokens

    def warnings(self) -> list[str]:
        """What the plan says about this model's parameters (nothing for the protocol's)."""
        out = [f"{self.stage} {self.model}: sent {self.sent}, not the protocol's temperature 0 / "
               f"max_tokens {PROTOCOL_MAX_TOKENS}"] if self.sent else []
        if self.thinks and self.max_tokens <= PROTOCOL_MAX_TOKENS:
            out.append(f"warning: {self.model} thinks before it answers, and its thinking counts against "
                       f"max_tokens {self.max_tokens}: replies may be cut inside their thinking (no reply, "
                       f"unscored as cut_in_thinking). A larger --max_tokens (e.g. 8000) gives them room")
        return out


def message_tokens(messages: Iterable[dict[str, str]]) -> int:
    """An upper bound on the tokens of these messages."""
    return sum(len(str(m.get("content", "")).encode("utf-8")) + MESSAGE_MARGIN for m in messages)


def text_tokens(text: str) -> int:
    return len(text.encode("utf-8")) + MESSAGE_MARGIN


def endpoint_text(endpoint) -> str:
    """Provider and base URL of an endpoint, for the plan (never its key)."""
    where = "embedded llama.cpp server" if endpoint.is_embedded else " ".join(endpoint.base_urls)
    return f"{endpoint.provider} {where}".strip()


def lines_for_requests(stage: str, clients: Sequence, names: Sequence[str], requests: Iterable, *,
                       repeat: int = 1, note: str = "") -> list[PlanLine]:
    """Plan lines for a stage's ChatRequests, one per model; ``repeat`` bounds re-asks."""
    count = [0] * len(clients)
    tokens = [0] * len(clients)
    caps = [0] * len(clients)
    first: list = [None] * len(clients)
    for r in requests:
        count[r.model] += 1
        tokens[r.model] += message_tokens(r.messages)
        caps[r.model] = max(caps[r.model], r.max_tokens)
        first[r.model] = first[r.model] or r
    return [PlanLine(stage, names[i], endpoint_text(c.endpoint), count[i] * repeat, caps[i], tokens[i] * repeat, note,
                     *sent_text(c.params, first[i].temperature, caps[i], first[i].reasoning_effort))
            for i, c in enumerate(clients) if count[i]]


def sent_text(params, temperature: float, max_tokens: int, reasoning_effort: str | None) -> tuple[str, bool]:
    """(what is sent, when it is not the protocol's; whether the model thinks): PlanLine's
    ``sent`` and ``thinks`` for a model's engine/params.py ModelParams."""
    protocol = params.is_protocols(temperature, reasoning_effort)
    return ("" if protocol else params.describe(temperature, max_tokens, reasoning_effort)), params.thinks


def _n(x: int) -> str:
    return f"{x:,}"


def format_plan(lines: Sequence[PlanLine], title: str = "plan") -> str:
    """The plan as a small table, with the totals."""
    if not lines:
        return f"{title}: nothing to send"
    head = ("step", "model", "endpoint", "requests", "max_tokens", "tokens out <=", "tokens in <=")
    body = [(ln.stage, ln.model, ln.where, _n(ln.requests), str(ln.max_tokens), _n(ln.tokens_out), _n(ln.tokens_in))
            for ln in lines]
    body.append(("total", "", "", _n(sum(ln.requests for ln in lines)), "",
                 _n(sum(ln.tokens_out for ln in lines)), _n(sum(ln.tokens_in for ln in lines))))
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    out = [f"{title}: at most these requests (replies already in the response cache are not sent again); "
           f"tokens out <= requests x max_tokens; tokens in from the texts' bytes, a reply not written yet "
           f"counted at {MAX_BYTES_PER_TOKEN} bytes a token:"]
    for row in [head, *body]:
        cells = [c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    out += [f"  {ln.stage} {ln.model}: {ln.note}" for ln in lines if ln.note]
    out += [f"  {w}" for w in _warnings(lines)]
    return "\n".join(out)


def _warnings(lines: Sequence[PlanLine]) -> list[str]:
    """Each line's warnings, each said once (a model on two sets is warned about once)."""
    return list(dict.fromkeys(w for ln in lines for w in ln.warnings()))


def one_line(lines: Sequence[PlanLine]) -> str:
    """A stage's plan on one line per model (the stage scripts print it before their calls),
    then what a model is sent when it is not the protocol's, and the warnings."""
    return "\n".join([
        f"plan: {ln.stage} {ln.model} at {ln.where}: at most {_n(ln.requests)} requests, "
        + (f"sent {ln.sent}" if ln.sent else f"max_tokens {ln.max_tokens}")
        + f"; at most {_n(ln.tokens_out)} tokens out{' (thinking included)' if ln.thinks else ''} and "
          f"{_n(ln.tokens_in)} in"
        + (f" ({ln.note})" if ln.note else "")
        for ln in lines] + [w for w in _warnings(lines) if w.startswith("warning:")])
