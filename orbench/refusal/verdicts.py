"""The refusal checkers' verdicts: `classify` under a family's rules, the scored detector's
`detect` and `detect_batch`, and stage 4's `stage4_verdict` (the package's docstring says
what each checker is). Importing this module compiles the detector's patterns (about 0.1 s),
so the package loads it on first use (orbench/refusal/__init__.py)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from orbench.engine.registry import family_for_model as _family_for_model
from orbench.protocol.verdict import Verdict, VerdictKind

from .content_filter import is_filtered
from .families import FAMILY_RULES
from .features import has_text, read
from .names import DEFAULT_RULES, FAMILIES, GENERIC, SCORED
from .scorer import Model, default_model


def _generic_first(response: str) -> bool:
    """The generic rules, imported on their first use: compiling their patterns takes about 0.2 s,
    which a stage run with the default (scored) detector need not pay at its start."""
    from .generic import generic_refuses

    _RULES[GENERIC] = generic_refuses
    return generic_refuses(response)


_RULES = {**FAMILY_RULES, GENERIC: _generic_first}
_HAS_WORD = re.compile(r"\w")
# Module-level names for the kinds and the scoreless verdicts: cheaper to reach than enum attributes.
_ANSWERED, _REFUSED, _EMPTY, _FILTERED = VerdictKind.ANSWERED, VerdictKind.REFUSED, VerdictKind.EMPTY, VerdictKind.FILTERED
_NO_TEXT, _WITHHELD, _UNREAD = Verdict(_EMPTY), Verdict(_FILTERED), Verdict(VerdictKind.OTHER_LANGUAGE)


def classify(response: str | None, family: str = GENERIC, finish_reason: str | None = None,
             prompt: str | None = None) -> VerdictKind:
    """Verdict on one response under a family's rule set (the prompt is read by `scored` only).

    A content-filter stop gives FILTERED and a blank response EMPTY, except
    under the original gemini rule, which counted both as refusals.
    """
    if family == SCORED:
        return detect(response, finish_reason, prompt=prompt).kind
    rule = _RULES.get(family)
    if rule is None:
        raise ValueError(f"unknown refusal family {family!r}; choose one of: {', '.join(FAMILIES)}")
    if finish_reason and is_filtered(finish_reason):
        return _REFUSED if family == "gemini" else _FILTERED
    if not response or response.isspace():
        return _REFUSED if family == "gemini" else _EMPTY
    if rule(response):
        return _REFUSED
    if family == GENERIC and not _HAS_WORD.search(response):
        return _EMPTY  # only markup or punctuation: nothing to judge
    return _ANSWERED


def family_for_model(model_id: str) -> str:
    """Best guess of the rule family for a model id such as 'gpt-4o-2024-05-13'."""
    return _family_for_model(model_id, GENERIC)


def detect(response: str | None, finish_reason: str | None = None, model: Model | None = None,
           prompt: str | None = None) -> Verdict:
    """The scored detector on one response: a verdict and a refusal score.

    The score is the calibrated probability that the response is a refusal
    (docs/refusal/score.md measures its calibration on models it has not seen);
    the verdict is REFUSED when it reaches the model's threshold (0.5). With the
    prompt, what follows a decline is also weighed against the request. Empty and
    content-filtered responses get EMPTY / FILTERED, and a response mostly in a
    language the detector cannot read OTHER_LANGUAGE; none of them a score.
    """
    if finish_reason and is_filtered(finish_reason):
        return _WITHHELD
    if not has_text(response):
        return _NO_TEXT
    model = model or default_model()
    reading = read(response, prompt)  # type: ignore[arg-type]
    if reading.foreign:
        return _UNREAD
    score = model.score_reading(reading)
    return Verdict(_REFUSED if score >= model.threshold else _ANSWERED, score)


def detect_batch(
    responses: Sequence[str | None],
    finish_reasons: Sequence[str | None] | None = None,
    model: Model | None = None,
    prompts: Sequence[str | None] | None = None,
) -> list[Verdict]:
    """`detect` on many responses (with their prompts, if given) at once: the same answers, in order."""
    model = model or default_model()
    reasons = finish_reasons if finish_reasons is not None else [None] * len(responses)
    asked = prompts if prompts is not None else [None] * len(responses)
    if len(reasons) != len(responses) or len(asked) != len(responses):
        raise ValueError("detect_batch: one finish_reason and one prompt per response, or none")
    return [detect(response, reason, model, prompt) for response, reason, prompt in zip(responses, reasons, asked)]


def run_settings(family: str) -> dict[str, str]:
    """What a stage-4 run records beside `rules`: for `scored`, which weights decided
    (so that a run is never resumed with other weights)."""
    return {"refusal_weights": default_model().fingerprint} if family == SCORED else {}


def stage4_verdict(response: str | None, family: str = DEFAULT_RULES, finish_reason: str | None = None,
                   prompt: str | None = None) -> Verdict:
    """Stage 4's verdict on one response under `family`'s rules: with a refusal score from
    the scored detector (which also reads the prompt), without one from rules that give none."""
    if family == SCORED:
        return detect(response, finish_reason, prompt=prompt)
    return Verdict(classify(response, family, finish_reason))
