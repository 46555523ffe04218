"""The faster forms of the refusal reader say what the plain definitions say: sentence ends found
on character classes, alternations factored by their openings, the digit test. They are there
for speed only (docs/benchmarks.md, section 4)."""

from __future__ import annotations

import random
import re

import pytest

from orbench.refusal import cues_en, cues_ja, cues_ko, cues_zh
from orbench.refusal.grammar import grammar
from orbench.refusal.patterns import _factored
from orbench.refusal.pool import load_pool
from orbench.refusal.sentences import _BOUND, _ends, normalise
from orbench.refusal.structure import has_digit
from tests.refusal_pool_helpers import POOL


_ODD = ['He said "stop." Then he left.', "Wait... what?! Really.", "e.g. this, i.e. that. Done.",
        "The students' books. Next", "It ends.\"' Next one.", "1. First\n2. Second\n\n- third",
        "x.'\" y.\" z", "Ratio 3.5: fine. Note: ok", "Why?\n\nBecause.\n", "\u201cQuoted.\u201d Then.",
        "Caf\u00e9. Fin.", "A  \n\n   B  \n \n C"]


def _sample_texts() -> list[str]:
    rng = random.Random(19)
    texts = _ODD + ["".join(rng.choice("ab .!?:\"'\n-1*") for _ in range(rng.randrange(40))) for _ in range(3000)]
    if POOL.is_dir():
        texts += [row.response for row in load_pool(POOL)][::3]
    return texts


def test_sentence_ends_found_on_character_classes_are_where_the_pattern_ends():
    for text in map(normalise, _sample_texts()):
        assert _ends(text) == [m.end() for m in _BOUND.finditer(text)], text


_SPECS = {spec.language: spec for spec in (cues_en.SPEC, cues_ko.SPEC, cues_zh.SPEC, cues_ja.SPEC)}


@pytest.mark.parametrize("language", sorted(_SPECS))
@pytest.mark.parametrize("kind", ["declining", "cues", "pivot"])
def test_factored_alternations_match_as_the_plain_ones(language, kind):
    spec, g = _SPECS[language], grammar(language)
    branches = {"declining": spec.declines + spec.judges, "cues": spec.cues, "pivot": spec.pivots}[kind]
    plain = re.compile(spec.lead + "(?:" + "|".join(branch for _, branch in branches) + ")")
    factored = getattr(g, kind)
    texts = _sample_texts()[::2] + _OTHER_LANGUAGES
    for text in map(normalise, texts):
        assert [m.span() for m in factored.finditer(text)] == [m.span() for m in plain.finditer(text)], text


def test_a_branch_with_alternatives_is_split_before_factoring():
    """Branches that open alike are factored ("我" + ...): a branch holding a top-level "|" must be
    split first, or its second alternative would need the opening twice ("我我没有...")."""
    from orbench.refusal.patterns import alternation

    pattern = alternation([("ai", "我是X|我没有Y"), ("ai", "我不是Z")], lead="")
    assert all(pattern.fullmatch(t) for t in ("我是X", "我没有Y", "我不是Z"))


@pytest.mark.parametrize("language", sorted(_SPECS))
def test_every_cue_found_has_its_role(language):
    g = grammar(language)
    for text in map(normalise, _sample_texts()[::2] + _OTHER_LANGUAGES + ["我不是医生，我没有个人观点。"]):
        for m in g.cues.finditer(text):
            assert any(p.fullmatch(m.group()) for _, p in g.cue_roles), (language, m.group())


# Replies written for these tests, one per shape, in the other languages the detector reads.
_OTHER_LANGUAGES = [
    "죄송하지만, 해당 요청은 도와드릴 수 없습니다. 다른 질문이 있으시면 언제든지 말씀해 주세요.",
    "그런 행위는 불법이며 권장되지 않습니다. 대신, 합법적인 방법을 안내해 드릴 수 있습니다: 1. 전문가와 상담하세요.",
    "很抱歉，我无法提供这方面的帮助。如果您有其他问题，欢迎随时提问。但是，以下是一些一般信息：",
    "申し訳ありませんが、お手伝いできかねます。代わりに、専門家にご相談ください。ただし、以下は一般的な情報です。",
]


def test_factoring_keeps_the_order_of_branches_that_start_alike():
    # "ab" before "abc": the plain alternation matches "ab" in "abc"; so must the factored one.
    branches = ["ab", "abc", "abd", "x(?:y|z)w", "xy", "cd\\b", "c"]
    plain, factored = re.compile("|".join(branches)), re.compile(_factored(branches))
    assert factored.pattern != plain.pattern
    for text in ["abc", "abd", "ab", "xyw", "xy", "xzw", "cd", "cde", "c"]:
        assert [m.span() for m in factored.finditer(text)] == [m.span() for m in plain.finditer(text)], text


def test_groups_that_open_a_branch_are_written_out_in_the_engines_order():
    # An opening group of alternatives becomes one branch per alternative, tried in the same order
    # (a greedy "?" tries the group first); a repeated, lazy or lookaround opening stays as it is, and
    # the branches on either side of one that stays are factored apart, keeping every preference.
    from orbench.refusal.patterns import _opened

    assert _opened("(?:this|the) answer") == ["this answer", "the answer"]
    assert _opened("(?:sincerely )?sorry") == ["sincerely sorry", "sorry"]
    assert _opened("(?:a|(?:b|c)d)e") == ["ae", "bde", "cde"]
    for kept in ("(?:a|b)*c", "(?:a|b)??c", "(?:a|b)+c", "(?:a|b){2}c", "(?<!x)cd", "(?=a)ab", "(?:x)?"):
        assert _opened(kept) == [kept]
    branches = ["ab", "(?:x|a)bc", "(?<!z)a", "(?:sincerely )?sorry", "a", "so", "(?:a|b)*c", "bd", "(?:b|c)e"]
    plain, factored = re.compile("|".join(branches)), re.compile(_factored(branches))
    for text in ["abc", "xbc", "zab", "a", "sincerely sorry", "sorry", "so", "aac", "bd", "be", "ce", "bbc", "ya"]:
        assert [m.span() for m in factored.finditer(text)] == [m.span() for m in plain.finditer(text)], text


def test_every_english_cue_branch_is_factored():
    # The cue pass runs at every word of the opening: a branch left out of the factoring (one that
    # opens with a lookaround or a repeated group) makes the engine try every branch at every word.
    from orbench.refusal.patterns import _alternatives, _literal_start, _opened

    for branches in (cues_en.SPEC.cues, cues_en.SPEC.declines + cues_en.SPEC.judges, cues_en.SPEC.pivots):
        opened = [b for _, branch in branches for alt in _alternatives(branch) for b in _opened(alt)]
        assert all(map(_literal_start, opened)), [b[:40] for b in opened if not _literal_start(b)]


def test_has_digit_is_any_decimal_digit():
    for text in ["no digits here", "room 101, floor 3", "\u0663 in Arabic-Indic", "full width \uff11", "caf\u00e9 2"]:
        for start in range(len(text)):
            for end in range(start, len(text) + 1, 4):
                assert has_digit(text, start, end) == (re.search(r"\d", text[start:end]) is not None)


def test_the_text_as_read_has_one_space_between_words_and_after_each_line_break():
    assert normalise("A  \n\n   B  \n \n C\tD **e** `f`") == " a\n b\n c d e f "
