"""Why the scored detector scored a response as it did, for a person to read.

    python -m orbench.evaluate_refusal --explain "I'm sorry, but I can't help with that."
    python -m orbench.evaluate_refusal --explain < response.txt      # stdin
    python -m orbench.evaluate_refusal --explain "I can't give legal advice. See a lawyer." --prompt "Can I sue?"

It prints the response's sentences with their roles, the declining clause found
(if any), the pivot after it, what follows it, with a prompt the prompt's words
that the content after the decline uses and the prompt-related terms, and the
terms of the score that weigh most. The response is untrusted text: it is printed on single lines,
without control characters, and never interpreted.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

from orbench.protocol.verdict import VerdictKind

from .features import Reading, feature_keys, has_text, read
from .language import ENGLISH, NAMES, READ, UNSPACED
from .prompt import PREFIX as PROMPT_PREFIX
from .prompt import prompt_words, shared_words
from .scorer import WORDLESS_WEIGHT, Model, default_model
from .structure import CONTENT, FILLER, folded

TERMS = 12  # how many terms of the score to show
_SENTENCES = 12  # how many sentences to show
_WIDTH = 100  # characters of each sentence shown


def printable(text: str, limit: int) -> str:
    """Untrusted text on one line, without control characters, cut at `limit`."""
    flat = "".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text[: limit * 2])
    flat = " ".join(flat.split())
    return flat[:limit] + ("..." if len(flat) > limit else "")


def terms(model: Model, keys: list[str]) -> list[tuple[str, float]]:
    """Each feature's contribution to the log-odds (weight times count), largest first."""
    contributions = [(key, model.weights[key] * n) for key, n in Counter(keys).items() if key in model.weights]
    return sorted(contributions, key=lambda kv: (-abs(kv[1]), kv[0]))


def explain(response: str, model: Model | None = None, prompt: str | None = None) -> str:
    model = model or default_model()
    if not has_text(response):
        return "no text to judge: the response is empty (or only markup); it gets no score"
    reading = read(response, prompt)
    st = reading.structure
    logit = model.logit(reading)
    score = model.score_reading(reading)
    verdict = (VerdictKind.REFUSED if score >= model.threshold else VerdictKind.ANSWERED).value
    scale, shift = (model.scale, model.shift) if reading.prompted else model.alone
    lines = []
    if st.language in READ and st.language != ENGLISH:
        traditional = folded(response, st.language) != response
        lines += [f"read as {NAMES[st.language]} (its own grammar of refusal, the same roles as English"
                  + ("; Traditional characters read, and shown, as Simplified)" if traditional else ")"), ""]
    if reading.foreign:
        lines += ["mostly in a language the detector cannot read: stage 4 leaves it unscored (other_language), "
                  "for a judge to read; the score below is what its English reading would give", ""]
    lines += [f"score {score:.3f}: {verdict} (threshold {model.threshold:.2f}; log-odds {logit:+.2f}, "
              f"calibrated {'with' if reading.prompted else 'without'} the prompt as {scale:.3f} x log-odds "
              f"{shift:+.3f})"]
    main, structure_only = model.log_odds_parts(reading)
    if structure_only is not None:
        lines.append(f"  {NAMES[st.language]} is read without its words: the score mixes two calibrated log-odds, "
                     f"this model's {main:+.2f} ({1 - WORDLESS_WEIGHT:.1f} of it) and the structure-only model's "
                     f"{structure_only:+.2f} ({WORDLESS_WEIGHT:.1f})")
    lines += ["", "sentences (as read, with their roles):"]
    for i, role in enumerate(st.roles[:_SENTENCES]):
        mark = "*" if i == st.decline_at else " "
        item = " (list item)" if st.items[i] else ""
        lines.append(f" {mark}{i + 1:>2d} {role:<9s} {printable(st.sentence(i), _WIDTH)}{item}")
    if len(st.roles) > _SENTENCES:
        lines.append(f"    ... {len(st.roles) - _SENTENCES} more sentences")
    lines.append("")
    if st.decline_at < 0:
        lines.append("declining clause: none found")
    else:
        lines.append(f'declining clause: "{printable(st.span(st.clause), 80)}" ({st.decline_role}, sentence '
                     f"{st.decline_at + 1})")
        pivot = f'{st.pivot}: "{printable(st.span(st.pivot_span), 60)}"' if st.pivot_span != (0, 0) else "none"
        lines.append(f"pivot after it: {pivot}")
    after = [st.roles[i] for i in st.after()]
    where = "after the declining clause" if st.decline_at >= 0 else "in the response"
    others = sorted({r for r in after if r not in (CONTENT, FILLER)})
    lines.append(f"{where}: {after.count(CONTENT)} content sentences "
                 f"({sum(st.items[i] for i in st.after() if st.roles[i] == CONTENT)} list items); "
                 f"other sentences: {', '.join(others) or 'none'}")
    lines += _prompt_lines(model, reading, prompt)
    lines += ["", f"largest terms of the log-odds (bias {model.bias:+.2f}):"]
    shown = terms(model, feature_keys(reading))
    lines += [f"  {value:+7.3f}  {printable(key, 60)}" for key, value in shown[:TERMS]]
    if len(shown) > TERMS:
        rest = sum(v for _, v in shown[TERMS:])
        lines.append(f"  {rest:+7.3f}  ({len(shown) - TERMS} smaller terms)")
    return "\n".join(lines)


def _prompt_lines(model: Model, reading: Reading, prompt: str | None) -> list[str]:
    """What the prompt adds: its content words, those the content after the decline uses, and the terms."""
    if not prompt:
        return ["prompt: none given (the response is scored alone; give it with --prompt)"]
    if reading.structure.language in UNSPACED:
        return [f"prompt: not read ({NAMES[reading.structure.language]} is written without spaces: its words "
                "cannot be matched to the prompt's)"]
    words = prompt_words(prompt)
    shared = shared_words(reading.structure, words)
    lines = [f"prompt: {len(words)} content words; the content {'after the decline' if reading.structure.decline_at >= 0 else 'of the response'} "
             f"uses {len(shared)}: {printable(', '.join(shared), 80) or 'none'}"]
    related = [(k, model.weights.get(k, 0.0)) for k in reading.keys if k.startswith(PROMPT_PREFIX)]
    if not related:
        lines.append("prompt-related terms: none (no content follows that could address the request)")
    else:
        lines.append("prompt-related terms: " + ", ".join(f"{printable(k, 40)} {w:+.3f}" for k, w in related))
    return lines
