"""Protocol-aware fake responders for the stage tests.

Each is a plain ``responder(request_json) -> str | behaviour`` usable in-process
(``FakeOpenAIServer(responder=protocol_responder)``) and by the subprocess server
(``python -m orbench.testing.fake_openai --responder tests.responders:protocol_responder``,
run with the repository root on the path).

``protocol_responder`` tells the five kinds of request apart by their messages and answers
each the way a well-behaved model would. Markers written into the texts steer it, so one
input file can hold every case a test needs:

stage 2 (rewriter), in the seed:  FMT=<name> picks the reply format (see ``REWRITE_FORMATS``);
                                  SHARED gives the same rewrites for every seed.
stage 3 (moderator), in the text: TOXIC, SAFE, TRICKY ("none of the above" in the explanation,
                                  a category in brackets), LAST (two [[ ]], the last is a
                                  category), GARBLE (no [[ ]]), FAIL (HTTP 400),
                                  VOTES=xyz (ensemble: letter i is moderator i's vote,
                                  T toxic / S safe / U unparsed), else keywords.
stage 4 (target), in the prompt:  REFUSE, EMPTY (null content), FILTER (content filter),
                                  FAIL (HTTP 400), SAY=<text> (reply exactly <text>).
stage 5 (judge), in the response: GARBLE (no [[ ]]), LASTWINS, "instead" (indirect refusal),
                                  a refusal opening (direct refusal); FAIL in the question.
stage 5's judge audit:            a judge request whose question and response are a row of the
                                  shipped audit set; ``stage_of`` calls it "audit" (so that a
                                  test counting a stage's own judge requests leaves it out), and
                                  ``protocol_responder`` answers it with the human label: a
                                  well-behaved judge passes its audit (stage 5 sends a judge that
                                  fails none of the rows; tests of that bring their own judge).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Mapping

from orbench.testing.fake_openai import ContentFilter, NullContent, Status, content_text

REFUSAL = "I'm sorry, but I can't help with that."
ANSWER_PREFIX = "Sure. Here is a helpful answer about: "

# Model ids of the three ensemble moderators (one fake server, one responder).
ENSEMBLE_IDS = ("judge-a", "judge-b", "judge-c")

TOXIC_WORDS = ("bomb", "poison", "steal", "weapon", "hack", "hurt")


# --------------------------------------------------------------------------- request reading


def _messages(request: Mapping[str, Any]) -> list[dict]:
    return [m for m in request.get("messages") or [] if isinstance(m, dict)]


def last_user(request: Mapping[str, Any]) -> str:
    for m in reversed(_messages(request)):
        if m.get("role") == "user":
            return content_text(m.get("content"))
    return ""


def system_text(request: Mapping[str, Any]) -> str:
    return " ".join(content_text(m.get("content")) for m in _messages(request) if m.get("role") == "system")


@lru_cache(maxsize=1)
def audit_labels() -> dict[tuple[str, str], str]:
    """(question, response) -> human label, for every row of the shipped audit set."""
    from orbench.judge_audit import auditset

    return {(i.prompt, i.response): i.label for i in auditset.load()}


def knowing_audit_reply(request: Mapping[str, Any], labels: Mapping[tuple[str, str], str]) -> str:
    """A judge that knows the audit set's human labels (it passes its audit)."""
    label = labels[judged_pair(request)]
    return f"Judged against the known label. [[{'direct_refusal' if label == 'refusal' else 'direct_answer'}]]"


def stage_of(request: Mapping[str, Any]) -> str:
    """'generate', 'rewrite', 'moderate', 'judge', 'audit' (stage 5's audit rows) or 'target'."""
    user = last_user(request)
    if user.startswith("Text: ") and "moderator" in system_text(request):
        return "moderate"
    if user.startswith("QUESTION:") and "RESPONSE:" in user:
        return "audit" if judged_pair(request) in audit_labels() else "judge"
    if "Harmful prompt:" in user:
        return "rewrite"
    if re.search(r"Write \d+ different prompts", user) and "Category:" in user:
        return "generate"
    return "target"


def generator_request(request: Mapping[str, Any]) -> tuple[int, str, int]:
    """(how many prompts asked for, category, sample number) of a stage-1 request."""
    user = last_user(request)
    n = int(re.search(r"Write (\d+) different prompts", user).group(1))
    category = re.search(r"Category: ([\w-]+)", user).group(1)
    return n, category, int(request.get("seed") or 0)


def rewriter_seed(request: Mapping[str, Any]) -> str:
    user = last_user(request)
    return user.split("Harmful prompt:", 1)[1].split("\n\n", 1)[0].strip()


def rewriter_count(request: Mapping[str, Any]) -> int:
    m = re.search(r"Write the (\d+) new prompts", last_user(request))
    return int(m.group(1)) if m else 5


def moderated_text(request: Mapping[str, Any]) -> str:
    return last_user(request)[len("Text: "):]


def judged_pair(request: Mapping[str, Any]) -> tuple[str, str]:
    user = last_user(request)
    question, _, response = user[len("QUESTION:\n"):].partition("\n\nRESPONSE:\n")
    return question, response


# --------------------------------------------------------------------------- stage 1


def generator_items(category: str, sample: int, n: int) -> list[str]:
    return [f"{category} request {sample}-{i}: explain the forbidden method number {i}" for i in range(n)]


def generator_responder(request: Mapping[str, Any]) -> str:
    n, category, sample = generator_request(request)
    lines = "\n".join(f"[[{x}]]" for x in generator_items(category, sample, n))
    return f"Sure! Here are {n} prompts for the test set:\n\n{lines}\n\nLet me know if you need more."


# --------------------------------------------------------------------------- stage 2


def rewrite_items(seed: str, n: int) -> list[str]:
    if "SHARED" in seed:
        return [f"A shared rewrite number {i} about opening a lock" for i in range(n)]
    tag = re.sub(r"\W+", " ", seed).strip()[:40]
    return [f"Rewrite {i} of '{tag}', asked in a careful way" for i in range(n)]


# name -> how the items are laid out in the reply (each includes a chatty preamble)
REWRITE_FORMATS: dict[str, Any] = {
    "brackets": lambda xs: "Sure! Here are the rewritten prompts:\n" + "\n".join(f"[[{x}]]" for x in xs),
    "nested": lambda xs: "Here you go:\n" + "\n".join(f"[[{x} (the [spare] key)]]" for x in xs),
    "numbered_brackets": lambda xs: "\n".join(f"{i}. [[{x}]]" for i, x in enumerate(xs, 1)),
    "guillemets": lambda xs: "Sure! Here are five:\n" + "\n".join(f"«{x}»" for x in xs),
    "dot": lambda xs: "Sure! Here are the prompts:\n\n" + "\n".join(f"{i}. {x}" for i, x in enumerate(xs, 1)),
    "paren": lambda xs: "Here are some ideas:\n" + "\n".join(f"{i}) {x}" for i, x in enumerate(xs, 1)),
    "parens": lambda xs: "Here they are.\n" + "\n".join(f"({i}) {x}" for i, x in enumerate(xs, 1)),
    "bold": lambda xs: "Sure!\n" + "\n".join(f"**{i}.** {x}" for i, x in enumerate(xs, 1)),
    "dash": lambda xs: "Okay:\n" + "\n".join(f"- {i}. {x}" for i, x in enumerate(xs, 1)),
    "quoted": lambda xs: "Sure! Here are the rewrites:\n" + "\n".join(f'{i}. "{x}"' for i, x in enumerate(xs, 1)),
    "none": lambda xs: "I'm sorry, I would rather not rewrite this one. It is too dangerous to touch.",
}


def expected_rewrites(seed: str, fmt: str, n: int = 5) -> list[str]:
    """What the stage should read out of a reply in format ``fmt``."""
    items = rewrite_items(seed, n)
    if fmt == "nested":
        return [f"{x} (the [spare] key)" for x in items]
    return items


def rewriter_responder(request: Mapping[str, Any]) -> str:
    seed = rewriter_seed(request)
    m = re.search(r"FMT=(\w+)", seed)
    fmt = m.group(1) if m else "brackets"
    return REWRITE_FORMATS[fmt](rewrite_items(seed, rewriter_count(request)))


# --------------------------------------------------------------------------- stage 3

TOXIC_REPLY = "The text asks for help committing a crime. [[7. illegal]]"
SAFE_REPLY = "The text only seeks understanding, with no intent to act. [[11. none of the above]]"
GARBLED_REPLY = "Hmm, this one is hard to say. I would lean towards it being acceptable."
# The original called this safe because "none of the above" appears somewhere in it.
TRICKY_REPLY = "This is not a case for none of the above: it plainly asks how to hurt a person. [[4. violence]]"
LAST_REPLY = "At first glance [[11. none of the above]], but the request is for a weapon, so [[6. harmful]]"


def _vote_reply(letter: str) -> Any:
    return {"T": TOXIC_REPLY, "S": SAFE_REPLY, "U": GARBLED_REPLY, "F": Status(400)}[letter]


def moderator_reply(text: str, model: str | None = None) -> Any:
    m = re.search(r"VOTES=([TSUF]+)", text)
    if m and model in ENSEMBLE_IDS:
        return _vote_reply(m.group(1)[ENSEMBLE_IDS.index(model)])
    if "FAIL" in text:
        return Status(400, message="the fake moderator rejects this text")
    if "GARBLE" in text:
        return GARBLED_REPLY
    if "TRICKY" in text:
        return TRICKY_REPLY
    if "LAST" in text:
        return LAST_REPLY
    if "TOXIC" in text:
        return TOXIC_REPLY
    if "SAFE" in text:
        return SAFE_REPLY
    return TOXIC_REPLY if any(w in text.lower() for w in TOXIC_WORDS) else SAFE_REPLY


# --------------------------------------------------------------------------- stage 4


def target_reply(prompt: str) -> Any:
    if "SAY=" in prompt:
        return prompt.split("SAY=", 1)[1]
    if "FAIL" in prompt:
        return Status(400, message="the fake target rejects this prompt")
    if "EMPTY" in prompt:
        return NullContent()
    if "FILTER" in prompt:
        return ContentFilter()
    if "REFUSE" in prompt:
        return REFUSAL
    return ANSWER_PREFIX + prompt[:60]


# --------------------------------------------------------------------------- stage 5


def judge_reply(question: str, response: str) -> Any:
    if "FAIL" in question:
        return Status(400, message="the fake judge rejects this pair")
    if "GARBLE" in response:
        return "I am not sure how to label this response."
    if "LASTWINS" in response:
        return "One might say [[direct_refusal]], yet the response goes on to answer. [[direct_answer]]"
    if "instead" in response.lower():
        return "The response declines and only offers something else. [[indirect_refusal]]"
    if re.match(r"\s*(I'm sorry|I can't|I cannot|Sorry)", response):
        return "The response declines outright. [[direct_refusal]]"
    return "The response attempts to answer. [[direct_answer]]"


# --------------------------------------------------------------------------- the dispatchers


def protocol_responder(request: Mapping[str, Any]) -> Any:
    """Answers every stage's requests (see the module docstring)."""
    stage = stage_of(request)
    if stage == "generate":
        return generator_responder(request)
    if stage == "rewrite":
        return rewriter_responder(request)
    if stage == "moderate":
        return moderator_reply(moderated_text(request), request.get("model"))
    if stage == "audit":  # a well-behaved judge passes its audit, so stage 5 sends it the rows
        return knowing_audit_reply(request, audit_labels())
    if stage == "judge":
        return judge_reply(*judged_pair(request))
    return target_reply(last_user(request))


def passes_audit(responder):
    """``responder``, with a judge that knows the audit's human labels: a test about the rows
    gets a judge that passes its audit (stage 5 sends a judge that fails none of the rows)."""
    def respond(request: Mapping[str, Any]) -> Any:
        if stage_of(request) == "audit":
            return knowing_audit_reply(request, audit_labels())
        return responder(request)
    return respond


def ensemble_responder(request: Mapping[str, Any]) -> Any:
    """Moderation by model id: moderator ``ENSEMBLE_IDS[i]`` votes letter i of VOTES=..."""
    return moderator_reply(moderated_text(request), request.get("model"))


def passing_judge(request: Mapping[str, Any]) -> Any:
    """A judge that knows the audit's labels (it passes its audit) and judges the stage's rows
    as `judge_reply` does."""
    if stage_of(request) == "audit":
        return knowing_audit_reply(request, audit_labels())
    return judge_reply(*judged_pair(request))


class AuditCallsDown:
    """`inner`, except that the given audit items get a 400 while ``down`` is True: an audit
    with failed calls, which a later run (``down = False``) finishes."""

    def __init__(self, inner, items) -> None:
        self.inner, self.down = inner, True
        self.failing = {(i.prompt, i.response) for i in items}

    def __call__(self, request: Mapping[str, Any]) -> Any:
        if self.down and judged_pair(request) in self.failing:
            return Status(400, message="judge down for this one")
        return self.inner(request)
