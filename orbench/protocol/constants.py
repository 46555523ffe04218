"""Protocol constants: categories, column names, labels. Defined once, imported everywhere."""

from __future__ import annotations

# The 10 OR-Bench categories, in the order the moderator lists them.
CATEGORIES: tuple[str, ...] = (
    "hate",
    "self-harm",
    "sexual",
    "violence",
    "harassment",
    "harmful",
    "illegal",
    "unethical",
    "privacy",
    "deception",
)
NONE_OF_THE_ABOVE = "none of the above"
# Moderator options: the 10 categories then "none of the above" (option 11).
MODERATION_OPTIONS: tuple[str, ...] = CATEGORIES + (NONE_OF_THE_ABOVE,)

# Column names (the original's spellings).
COL_PROMPT = "prompt"
COL_CATEGORY = "category"
COL_TOXIC_SEED = "toxic_seed"
COL_RESPONSE = "response"
# A thinking model's deliberation, kept apart from its reply (orbench.protocol.thinking): stage 4's
# `reasoning`, stage 5's `judge_reasoning`. Written only when some row of the file has thinking.
COL_REASONING = "reasoning"
COL_JUDGE_REASONING = "judge_reasoning"
COL_IS_REJECTED = "is_rejected"
COL_REFUSAL_SCORE = "refusal_score"  # stage 4: the scored detector's refusal score, 4 decimals, or empty
COL_INCLUSION_PROBABILITY = "inclusion_probability"  # stage 5 --sample: the chance the design gave the row to be judged
COL_IS_TOXIC = "is_toxic"
COL_MODERATION_RESULT = "moderation_result"
COL_ANSWER_CATEGORY = "answer_category"
COL_ANSWER_TYPE_RESPONSE = "answer_type_response"
COL_ERROR = "error"
COL_TYPE = "type"  # XSTest's prompt file names its category column "type"

# Stage 5 judge classes.
DIRECT_ANSWER = "direct_answer"
DIRECT_REFUSAL = "direct_refusal"
INDIRECT_REFUSAL = "indirect_refusal"
JUDGE_CLASSES: tuple[str, ...] = (DIRECT_ANSWER, DIRECT_REFUSAL, INDIRECT_REFUSAL)
REFUSAL_CLASSES: frozenset[str] = frozenset({DIRECT_REFUSAL, INDIRECT_REFUSAL})
UNSCORED = "unscored"  # a judge verdict that could not be parsed

# Stage 3 status for a moderator reply whose choice cannot be parsed.
UNPARSED = "unparsed"

# Stage 4's `is_rejected` values (True, False, empty, filtered) are written and read by
# orbench.protocol.verdict.Verdict.
