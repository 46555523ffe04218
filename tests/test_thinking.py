"""A thinking model's reply taken apart (protocol/thinking.py), read from a completion and the
cache (engine/completion.py), and the parameters each model family is sent (engine/params.py):
the pieces the end-to-end tests of tests/test_thinking_models.py drive through the stages."""

from __future__ import annotations

import pytest

from orbench.engine.cache import cache_key
from orbench.engine.completion import LLMResult, cacheable, result_from_completion
from orbench.engine.params import MAX_COMPLETION_TOKENS, MAX_TOKENS, ModelParams, entry_params, known_params
from orbench.engine.registry import resolve
from orbench.errors import UserError
from orbench.protocol.thinking import Split, cut_in_thinking, split, split_inline
from orbench.refusal import stage4_verdict
from tests.stage_helpers import KEY, KEY_ENV, write_models

REFUSAL = "I'm sorry, but I can't help with that."
ANSWER = "Sure: boil the eggs for nine minutes, then cool them in cold water."


@pytest.mark.parametrize(("content", "thinking", "reply"), [
    (f"<think>\nThe user asks about eggs.\n</think>\n\n{ANSWER}", "The user asks about eggs.", ANSWER),
    (f"  <thinking>weigh it</thinking>{REFUSAL}", "weigh it", REFUSAL),
    ("<think>\nThe user asks about eggs. I'm sorry, but", "The user asks about eggs. I'm sorry, but", ""),
    (f"</think>\n\n{REFUSAL}", "", REFUSAL),  # DeepSeek-R1-Distill's stray closing tag
    (f"It asks about eggs; fine.\n</think>\n\n{ANSWER}", "It asks about eggs; fine.", ANSWER),  # <think> in the prompt
    (f"  {ANSWER}\n", None, f"  {ANSWER}\n"),  # no thinking: the text as it came, untouched
    ("", None, ""),
    (None, None, None),
])
def test_inline_thinking_is_taken_apart(content, thinking, reply):
    assert split_inline(content) == Split(thinking, reply)


def test_thinking_apart_and_inline_are_joined():
    parts = split(f"<think>more</think>{ANSWER}", "first thoughts")
    assert (parts.thinking, parts.reply) == ("first thoughts\n\nmore", ANSWER)
    assert split(None, "thinking cut short") == Split("thinking cut short", None)


@pytest.mark.parametrize(("reply", "thinking", "finish", "tokens", "cut"), [
    ("", "I was thinking", "length", 0, True),
    (None, "", "length", 0, True),  # an opened block, nothing in it yet
    ("", None, "length", 640, True),  # OpenAI's hidden reasoning
    ("", None, "length", 0, False),  # a model that does not think, cut with nothing: empty, not cut
    ("A partial rep", "thought", "length", 50, False),  # cut inside the reply: a reply, scored
    ("", "thought", "stop", 50, False),  # stopped with no reply: empty
])
def test_cut_inside_thinking(reply, thinking, finish, tokens, cut):
    assert cut_in_thinking(reply, thinking, finish, tokens) is cut


def completion(content, finish="stop", reasoning=None, reasoning_tokens=None):
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    usage = {"prompt_tokens": 5, "completion_tokens": 40}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return {"model": "m", "choices": [{"message": message, "finish_reason": finish}], "usage": usage}


def test_a_completion_holds_the_reply_alone():
    inline = result_from_completion(completion(f"<think>hmm [[direct_refusal]]</think>{ANSWER}"), "m")
    assert (inline.text, inline.reasoning, inline.cut_in_thinking) == (ANSWER, "hmm [[direct_refusal]]", False)
    apart = result_from_completion(completion(None, "length", "thinking", 35), "m")
    assert (apart.text, apart.reasoning, apart.reasoning_tokens, apart.cut_in_thinking) == (None, "thinking", 35, True)
    hidden = result_from_completion(completion("", "length", reasoning_tokens=40), "m")
    assert hidden.cut_in_thinking and hidden.reasoning is None
    plain = result_from_completion(completion(ANSWER), "m")
    assert (plain.text, plain.reasoning, plain.reasoning_tokens) == (ANSWER, None, 0)


def test_what_the_cache_keeps():
    cut = result_from_completion(completion("<think>long thoughts", "length"), "m")
    assert cacheable(cut)  # a paid reply: asked again it would be cut again
    assert not cacheable(result_from_completion(completion("", "length"), "m"))  # empty
    assert not cacheable(result_from_completion(completion("x", "content_filter"), "m"))
    assert LLMResult.from_cache(cut.to_cache()) == LLMResult(**{**cut.to_cache(), "cached": True})
    # A reply stored before thinking was kept apart is taken apart when read back.
    old = {"text": f"<think>old</think>{REFUSAL}", "finish_reason": "stop", "prompt_tokens": 1,
           "completion_tokens": 2, "model": "m"}
    back = LLMResult.from_cache(old)
    assert (back.text, back.reasoning, back.cached) == (REFUSAL, "old", True)


def test_the_stray_closing_tag_reads_as_before():
    """A published DeepSeek-R1-Distill-Llama-8B run starts every reply with `</think>`: the
    detector read those replies right before thinking was kept apart, and reads the reply
    after it the same way now."""
    for reply in (REFUSAL, ANSWER):
        raw = f"</think>\n\n{reply}"
        assert split_inline(raw).reply == reply
        assert stage4_verdict(split_inline(raw).reply, prompt="How do I boil eggs?").kind == \
            stage4_verdict(raw, prompt="How do I boil eggs?").kind


@pytest.mark.parametrize(("model_id", "field", "temperature", "thinks"), [
    ("gpt-5-mini", MAX_COMPLETION_TOKENS, False, True),
    ("o3-mini-2025-01-31", MAX_COMPLETION_TOKENS, False, True),
    ("o1", MAX_COMPLETION_TOKENS, False, True),
    ("openrouter/openai/o4-mini", MAX_COMPLETION_TOKENS, False, True),
    ("gpt-4o", MAX_TOKENS, True, False),
    ("gpt-4-turbo-2024-04-09", MAX_TOKENS, True, False),
    ("Qwen/Qwen3-8B", MAX_TOKENS, True, True),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", MAX_TOKENS, True, False),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", MAX_TOKENS, True, True),
    ("meta-llama/Llama-3.1-8B-Instruct", MAX_TOKENS, True, False),
    ("SmolLM2-135M-Instruct", MAX_TOKENS, True, False),
])
def test_model_families_are_known_by_their_ids(model_id, field, temperature, thinks):
    params = known_params(model_id)
    assert (params.token_field, params.temperature, params.thinks) == (field, temperature, thinks)


def test_what_is_sent_and_learnt():
    protocol = ModelParams()
    assert protocol.settings(0.0, 1000) == {"temperature": 0.0, "max_tokens": 1000}  # as always: same cache keys
    reasoning = known_params("gpt-5-mini")
    assert reasoning.settings(0.0, 1000, "low") == {"max_completion_tokens": 1000, "reasoning_effort": "low"}
    learnt = protocol.learn("max_tokens")
    assert learnt.token_field == MAX_COMPLETION_TOKENS and learnt.learn("max_tokens") is None
    assert learnt.learn("max_completion_tokens").token_field == MAX_TOKENS  # the other way, once
    assert learnt.learn("max_completion_tokens").learn("max_tokens") is None
    assert protocol.learn("temperature").temperature is False and protocol.learn("reasoning_effort") is None
    assert ModelParams().recalled(learnt.learnt()) == learnt
    assert ModelParams().recalled({"token_field": "bogus"}) == ModelParams()


def test_no_temperature_keeps_the_sample_number_in_the_cache_key():
    msgs = [{"role": "user", "content": "hi"}]
    none_sent = {"max_completion_tokens": 10}
    assert cache_key("e", "m", msgs, none_sent, 0) != cache_key("e", "m", msgs, none_sent, 1)
    assert cache_key("e", "m", msgs, {"temperature": 0.0, "max_tokens": 10}, 0) == \
        cache_key("e", "m", msgs, {"temperature": 0.0, "max_tokens": 10}, 1)
    assert cache_key("e", "m", msgs, none_sent, 0) != cache_key("e", "m", msgs, {"max_tokens": 10}, 0)
    assert cache_key("e", "m", msgs, none_sent, 0) != cache_key("e", "m", msgs, {**none_sent, "reasoning_effort": "low"}, 0)


def test_a_models_file_says_how_a_model_takes_its_parameters(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    models = write_models(tmp_path / "m.toml", {
        "mine": {"model": "my-reasoner", "base_urls": ["http://127.0.0.1:1/v1"], "max_tokens_field": "max_completion_tokens",
                 "temperature": False, "thinks": True},
        "o-series-as-chat": {"model": "o3-mini", "base_urls": ["http://127.0.0.1:1/v1"], "temperature": True},
        "bad": {"model": "x", "base_urls": ["http://127.0.0.1:1/v1"], "max_tokens_field": "max_length"},
    })
    mine = resolve("mine", models).params
    assert (mine.token_field, mine.temperature, mine.thinks) == (MAX_COMPLETION_TOKENS, False, True)
    entry_said = resolve("o-series-as-chat", models).params  # the entry wins over the id, key by key
    assert (entry_said.token_field, entry_said.temperature) == (MAX_COMPLETION_TOKENS, True)
    with pytest.raises(UserError, match="max_tokens_field must be one of"):
        resolve("bad", models)
    assert entry_params("gpt-4o", None, {"temperature": False}).temperature is False  # a provider's say


def test_an_optional_column_is_kept_only_when_a_row_fills_it(tmp_path):
    """Stage 4's `reasoning`: an output of a model that shows no thinking keeps the columns it
    always had, also resumed; one resumed by a run that thinks gets the column back."""
    from orbench.tables.resume import StageOutput, read_rows

    cols, optional = ["prompt", "response", "reasoning"], ("reasoning",)
    path = tmp_path / "out.csv"

    def run(rows: list[dict], keys: list[str]) -> list[str]:
        out = StageOutput(path, cols, tmp_path / "failed.csv", ["prompt"], lambda r: r["prompt"],
                          many_rows_per_key=True, optional_columns=optional)
        out.open()
        try:
            out.append(rows)
            out.finalize(keys)
        finally:
            out.close()
        return read_rows(path)[0]

    assert run([{"prompt": "a", "response": "A", "reasoning": ""}], ["a"]) == ["prompt", "response"]
    assert run([], ["a"]) == ["prompt", "response"]  # resumed with nothing new: as it was
    assert run([{"prompt": "b", "response": "B", "reasoning": "hmm"}], ["a", "b"]) == cols
    assert read_rows(path)[1] == [{"prompt": "a", "response": "A", "reasoning": ""},
                                  {"prompt": "b", "response": "B", "reasoning": "hmm"}]
    path.write_text("prompt,other\na,x\n")
    with pytest.raises(UserError, match="exists with columns"):
        run([], ["a"])


def test_the_report_counts_cut_replies_apart_and_in_no_rate(tmp_path):
    """The same stage-4 rows with the unscored ones marked `empty` or `cut_in_thinking` give the
    same rates and counts; only the cut ones are named, with the fix."""
    from orbench.report import build_report

    verdicts = ["True", "False", "False", "UNSCORED", "True", "UNSCORED", "False"]
    reports = {}
    for cell in ("empty", "cut_in_thinking"):
        folder = tmp_path / cell
        cells = [cell if v == "UNSCORED" else v for v in verdicts]
        write_rows_csv(folder / "m_merged_or-bench-hard-1k.csv", cells)
        reports[cell] = build_report([folder], examples_per_set=0)
    empty, cut = reports["empty"], reports["cut_in_thinking"]
    assert empty.summary.drop(columns="model").equals(cut.summary.drop(columns="model"))
    assert int(cut.summary.loc[0, "hard_unscored"]) == 2 and int(cut.summary.loc[0, "hard_scored"]) == 5
    assert not any("cut inside their thinking" in w for w in empty.warnings)
    [line] = [w for w in cut.warnings if "cut inside their thinking" in w]
    assert "2 of 7" in line and "--max_tokens" in line


def write_rows_csv(path, cells):
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt", "is_rejected", "refusal_score", "response", "category"])
        w.writerows([f"prompt {i}", c, "", "" if c in ("empty", "cut_in_thinking") else "text", "harmful"]
                    for i, c in enumerate(cells))
