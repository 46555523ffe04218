"""Refusal detection for stage 4: decide whether a model response refuses. May import tables, engine, protocol and the root.

Three kinds of checker live in this package.

* The **family rules** of the original OR-Bench code, one per model family
  (``gpt-3.5``, ``gpt-4``, ``claude``, ``gemini``, ``mistral``, ``llama``,
  ``qwen``), kept with their quirks: `families`.
* The **generic** rules, ours, reading the opening of a response for the act
  of refusing: `generic` (its patterns in `generic_rules`).
* The **scored** detector, stage 4's default: it reads the response's
  structure (`structure`: its sentences, a declining clause found by a small
  grammar, the pivot after it, and whether content follows) and the words of
  its opening, and a small logistic model weighs them (`features`, `scorer`,
  trained by `train` on the development pool of `pool`; `explain` shows why).
  It gives a verdict and a calibrated refusal score in [0, 1]:
  `detect(text, finish_reason, prompt=...)`. The prompt is optional: with it,
  the detector also weighs whether what follows a decline addresses the
  request (`prompt`). A response mostly in a language it cannot read
  (`language`) gets no score: OTHER_LANGUAGE, for a judge to read.

`python -m orbench.evaluate_refusal` (`command`; `labelled` reads the labelled
files, `evaluate` scores a checker on them, `evaluation` prints and writes the
result; `loo`) measures them all against human labels, with `--leave_one_out`
on the pool.

Empty responses and content-filter stops are neither refusals nor answers: they
get their own verdicts and are reported apart. The exception is the original
gemini rule, which counted an empty or blocked response as a refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbench.lazy import lazy_exports
from orbench.protocol.verdict import Verdict, VerdictKind

from .content_filter import FILTER_FINISH_REASONS, is_filtered
from .names import DEFAULT_RULES, FAMILIES, GENERIC, SCORED

if TYPE_CHECKING:
    from .features import has_text
    from .generic import generic_refuses
    from .scorer import Model, default_model, score_batch
    from .verdicts import classify, detect, detect_batch, family_for_model, run_settings, stage4_verdict

__all__ = [
    "DEFAULT_RULES",
    "FAMILIES",
    "FILTER_FINISH_REASONS",
    "GENERIC",
    "SCORED",
    "Verdict",
    "VerdictKind",
    "classify",
    "detect",
    "detect_batch",
    "family_for_model",
    "run_settings",
    "stage4_verdict",
]

# The checkers are loaded on first use, not here: importing them compiles the detector's
# patterns (about 0.1 s), which a command's --help and the light names above do not need
# (orbench/lazy.py).
__getattr__, __dir__ = lazy_exports(__name__, globals(), {
    "verdicts": ("classify", "detect", "detect_batch", "family_for_model", "run_settings", "stage4_verdict"),
    "features": ("has_text",),
    "generic": ("generic_refuses",),
    "scorer": ("Model", "default_model", "score_batch"),
})
