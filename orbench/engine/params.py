"""How a model takes its limits and sampling: the parameters each request is sent with.

The protocol asks for temperature 0 and max_tokens 1000. Most endpoints take them as they are;
OpenAI's reasoning models (the o-series, GPT-5) take the cap as ``max_completion_tokens`` and
no temperature but their default, 1, and refuse any other with HTTP 400. Where the settings
come from, first found wins:

1. the model's entry in a models file (or a provider in providers.toml):
   ``max_tokens_field = "max_completion_tokens"``, ``temperature = false`` (the model takes
   none: none is sent), ``thinks = true`` (it thinks before it answers);
2. the model id: OpenAI's o1/o3/o4 and gpt-5 names are known without configuration
   (``known_params``); a few open thinking models are known to think;
3. the protocol's: ``max_tokens``, temperature sent.

An endpoint that still answers 400 naming one of these parameters teaches the client once
(``ModelParams.learn``): the other cap field, or no temperature; the request is sent again
that way and the run goes on, with a warning naming the setting that says so from the start.
``--reasoning_effort`` is sent as ``reasoning_effort`` when given, never by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

MAX_TOKENS = "max_tokens"
MAX_COMPLETION_TOKENS = "max_completion_tokens"
TOKEN_FIELDS = (MAX_TOKENS, MAX_COMPLETION_TOKENS)
TEMPERATURE = "temperature"
REASONING_EFFORT = "reasoning_effort"
DEFAULT_TEMPERATURE = 1.0  # what a model that takes no temperature samples at
PROTOCOL = "protocol"  # ModelParams.source: nothing said otherwise
KNOWN_OPENAI = "known: an OpenAI reasoning model"
KNOWN_THINKER = "known: a thinking model"
ENTRY = "the model's entry"
LEARNED = "learned from the endpoint's HTTP 400"

# OpenAI's reasoning models, by the last part of the model id: max_completion_tokens, no temperature.
_OPENAI_REASONING = re.compile(r"^(?:o[1-9](?:-|$)|gpt-5)")
# Open models that think before they answer (they take max_tokens and a temperature).
_THINKERS = re.compile(r"deepseek-r1|deepseek-reasoner|r1-distill|qwq|qwen3(?!.*instruct-2507)|gpt-oss|magistral"
                       r"|-reasoning|-thinking|gemini-2\.5")


@dataclass(frozen=True)
class ModelParams:
    """How one model takes the reply cap and the temperature, and whether it thinks."""

    token_field: str = MAX_TOKENS
    temperature: bool = True  # False: the model takes only its default; none is sent
    thinks: bool = False
    source: str = PROTOCOL
    tried: frozenset = field(default_factory=frozenset)  # the parameters already learned from a 400

    def settings(self, temperature: float, max_tokens: int, reasoning_effort: str | None = None) -> dict[str, Any]:
        """The request's parameters (the body's keys besides model and messages)."""
        out: dict[str, Any] = {TEMPERATURE: float(temperature)} if self.temperature else {}
        out[self.token_field] = int(max_tokens)
        if reasoning_effort:
            out[REASONING_EFFORT] = reasoning_effort
        return out

    def learn(self, param: str) -> "ModelParams | None":
        """These parameters less the one a 400 named, or None when there is nothing else to try
        (it is not one of ours to change, or was changed once already)."""
        if param in self.tried:
            return None
        if param == self.token_field:
            other = MAX_COMPLETION_TOKENS if param == MAX_TOKENS else MAX_TOKENS
            return replace(self, token_field=other, source=LEARNED, tried=self.tried | {param})
        if param == TEMPERATURE and self.temperature:
            return replace(self, temperature=False, source=LEARNED, tried=self.tried | {param})
        return None

    def describe(self, temperature: float, max_tokens: int, reasoning_effort: str | None = None) -> str:
        """What is sent, in words: 'max_completion_tokens 1000, no temperature (its default, 1)'."""
        temp = f"temperature {float(temperature):g}" if self.temperature else (
            f"no temperature (the model's default, {DEFAULT_TEMPERATURE:g})")
        effort = f", reasoning_effort {reasoning_effort}" if reasoning_effort else ""
        return f"{self.token_field} {int(max_tokens)}, {temp}{effort}"

    def info(self, temperature: float, max_tokens: int, reasoning_effort: str | None = None) -> dict[str, Any]:
        """What the run record says was sent to this model (temperature None: none was sent)."""
        return {self.token_field: int(max_tokens), TEMPERATURE: float(temperature) if self.temperature else None,
                REASONING_EFFORT: reasoning_effort, "thinks": self.thinks, "from": self.source}

    def learnt(self) -> dict[str, Any] | None:
        """What a 400 taught, to remember for the next run (None: nothing was learnt)."""
        if not self.tried:
            return None
        return {"token_field": self.token_field, "temperature": self.temperature, "tried": sorted(self.tried)}

    def recalled(self, value: Any) -> "ModelParams":
        """These parameters with what an earlier run learnt (``learnt()``'s value) put back."""
        try:
            field_, temperature, tried = value["token_field"], value["temperature"], value["tried"]
        except (TypeError, KeyError):
            return self
        if field_ not in TOKEN_FIELDS or not isinstance(temperature, bool) or not isinstance(tried, list):
            return self
        return replace(self, token_field=field_, temperature=temperature, source=LEARNED,
                       tried=frozenset(str(t) for t in tried))

    def is_protocols(self, temperature: float, reasoning_effort: str | None = None) -> bool:
        """Whether a request goes out as the protocol spells it (the cap as max_tokens, the
        temperature asked for, no reasoning effort)."""
        return self.token_field == MAX_TOKENS and self.temperature and not reasoning_effort


def _model_part(model_id: str) -> str:
    return model_id.lower().rsplit("/", 1)[-1]


def known_params(model_id: str) -> ModelParams:
    """What the model id alone says (rule 2 above)."""
    name = _model_part(model_id)
    if _OPENAI_REASONING.search(name):
        return ModelParams(MAX_COMPLETION_TOKENS, temperature=False, thinks=True, source=KNOWN_OPENAI)
    if _THINKERS.search(name):
        return ModelParams(thinks=True, source=KNOWN_THINKER)
    return ModelParams()


ENTRY_KEYS = ("max_tokens_field", "temperature", "thinks")


def entry_params(model_id: str, *entries: Mapping[str, Any] | None) -> ModelParams:
    """The model's parameters: the first entry (a models-file entry, then its provider's) that
    says each of them, else what the model id says. Raises ValueError on a bad value."""
    params = known_params(model_id)
    said: dict[str, Any] = {}
    for entry in entries:
        for key in ENTRY_KEYS:
            if entry and key in entry and key not in said:
                said[key] = entry[key]
    if not said:
        return params
    field_ = said.get("max_tokens_field", params.token_field)
    if field_ not in TOKEN_FIELDS:
        raise ValueError(f"max_tokens_field must be one of {', '.join(TOKEN_FIELDS)}, not {field_!r}")
    for key in ("temperature", "thinks"):
        if key in said and not isinstance(said[key], bool):
            raise ValueError(f"{key} must be true or false, not {said[key]!r}")
    return ModelParams(field_, said.get("temperature", params.temperature), said.get("thinks", params.thinks),
                       ENTRY)


def fix_for(param: str) -> str:
    """The setting that says, from the start, what a 400 about ``param`` taught."""
    if param in TOKEN_FIELDS:
        other = MAX_COMPLETION_TOKENS if param == MAX_TOKENS else MAX_TOKENS
        return f'max_tokens_field = "{other}" in the model\'s entry of a --models_file'
    if param == TEMPERATURE:
        return "temperature = false in the model's entry of a --models_file"
    if param == REASONING_EFFORT:
        return "drop --reasoning_effort (or give a value the model takes)"
    if param == "seed":
        return "send_seed = false in the [NAME.defaults] of the model's entry of a --models_file"
    return f"a models-file entry for this model that does not send '{param}' (docs/models_that_think.md)"


__all__ = ["DEFAULT_TEMPERATURE", "ENTRY_KEYS", "MAX_COMPLETION_TOKENS", "MAX_TOKENS", "ModelParams",
           "REASONING_EFFORT", "TEMPERATURE", "TOKEN_FIELDS", "entry_params", "fix_for", "known_params"]
