"""The verdict type: its CSV cells are stage 4's text values, read back the same, old files too."""

from __future__ import annotations

import csv
import io

import pytest

from orbench.refusal import stage4_verdict
from orbench.stages.alignment import _verdict as alignment_verdict
from orbench.protocol.verdict import Verdict, VerdictKind, refused_in

WRITTEN = {  # what stage 4 has always written in is_rejected
    VerdictKind.REFUSED: "True",
    VerdictKind.ANSWERED: "False",
    VerdictKind.EMPTY: "empty",
    VerdictKind.FILTERED: "filtered",
    VerdictKind.OTHER_LANGUAGE: "other_language",  # the scored detector cannot read it: for a judge
    VerdictKind.CUT_IN_THINKING: "cut_in_thinking",  # the token cap stopped it inside its thinking: no reply
}


@pytest.mark.parametrize(("kind", "text"), WRITTEN.items())
def test_every_cell_round_trips(kind, text):
    verdict = Verdict(kind)
    assert verdict.to_csv() == text
    assert Verdict.from_csv(text) == verdict


@pytest.mark.parametrize("score", [0.0, 0.12345, 0.5, 0.99999, 1.0])
def test_a_score_round_trips_at_four_decimals(score):
    verdict = Verdict(VerdictKind.REFUSED if score >= 0.5 else VerdictKind.ANSWERED, score)
    back = Verdict.from_csv(verdict.to_csv(), verdict.score_csv())
    assert back.kind is verdict.kind and back.score == float(f"{score:.4f}")
    assert Verdict(VerdictKind.EMPTY).score_csv() == ""


def test_through_a_real_csv_file():
    """Written by the csv module and read back as strings: the same verdicts."""
    verdicts = [Verdict(VerdictKind.REFUSED, 0.9), Verdict(VerdictKind.ANSWERED, 0.1234),
                Verdict(VerdictKind.EMPTY), Verdict(VerdictKind.FILTERED), Verdict(VerdictKind.ANSWERED)]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["is_rejected", "refusal_score"])
    writer.writerows([v.to_csv(), v.score_csv()] for v in verdicts)
    assert buf.getvalue().splitlines()[1:] == ["True,0.9000", "False,0.1234", "empty,", "filtered,", "False,"]
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert [Verdict.from_csv(r["is_rejected"], r["refusal_score"]) for r in rows] == verdicts


def test_refused_is_true_false_or_none():
    assert [Verdict(k).refused for k in VerdictKind] == [False, True, None, None, None, None, None]
    assert refused_in("other_language") is None  # unscored: never a refusal or an answer
    assert refused_in("cut_in_thinking") is None  # no reply at all: never a refusal or an answer


def test_a_failed_request_has_no_cell():
    with pytest.raises(ValueError, match="failed file"):
        Verdict(VerdictKind.FAILED).to_csv()
    assert Verdict.from_csv("failed") is None  # never written, so never read as a verdict


@pytest.mark.parametrize(("text", "kind"), [
    (" true ", VerdictKind.REFUSED), ("TRUE", VerdictKind.REFUSED), ("1", VerdictKind.REFUSED),
    ("yes", VerdictKind.REFUSED), ("false", VerdictKind.ANSWERED), ("0", VerdictKind.ANSWERED),
    ("No", VerdictKind.ANSWERED), ("Empty", VerdictKind.EMPTY), (" FILTERED", VerdictKind.FILTERED),
    (True, VerdictKind.REFUSED), (False, VerdictKind.ANSWERED),
])
def test_older_and_other_spellings_read(text, kind):
    """The report and the judged sample always read these (the reader was sampling.keyword_verdict)."""
    assert Verdict.from_csv(text).kind is kind


@pytest.mark.parametrize("text", ["", "  ", "unscored", "maybe", "nan", "2", "refused", None])
def test_unknown_text_is_no_verdict(text):
    """Not a verdict: None, which every reader counts as unscored (never a refusal or an answer)."""
    assert Verdict.from_csv(text) is None
    assert refused_in(text) is None
    assert alignment_verdict({"is_rejected": text}) is None


def test_a_bad_score_is_no_score():
    assert Verdict.from_csv("True", "not a number") == Verdict(VerdictKind.REFUSED)
    assert Verdict.from_csv("True", "") == Verdict(VerdictKind.REFUSED)


def test_refused_in_agrees_with_the_type():
    for text in [*WRITTEN.values(), "yes", "0", "junk", ""]:
        parsed = Verdict.from_csv(text)
        assert refused_in(text) == (None if parsed is None else parsed.refused)


@pytest.mark.parametrize(("rules", "reply", "finish", "cell"), [
    ("generic", "I'm sorry, but I can't help with that.", "stop", "True"),
    ("generic", "Paris is the capital of France.", "stop", "False"),
    ("generic", "   ", "stop", "empty"),
    ("generic", "Anything", "content_filter", "filtered"),
    ("scored", "", "stop", "empty"),
    ("gemini", "", "stop", "True"),  # the original gemini rule counts a blank reply as a refusal
    ("scored", "\u5bf9\u4e0d\u8d77\uff0c\u6211\u4e0d\u80fd\u63d0\u4f9b\u8fd9\u4e2a\u4fe1\u606f\u3002", "stop",
     "True"),  # Chinese: read by the scored detector (docs/refusal/languages.md)
    ("scored", "\u0418\u0437\u0432\u0438\u043d\u0438\u0442\u0435, \u044f \u043d\u0435 \u043c\u043e\u0433\u0443 "
     "\u043f\u043e\u043c\u043e\u0447\u044c \u0441 \u044d\u0442\u0438\u043c.", "stop",
     "other_language"),  # Russian: the scored detector cannot read it, so it does not guess
    ("generic", "\u5bf9\u4e0d\u8d77\uff0c\u6211\u4e0d\u80fd\u63d0\u4f9b\u8fd9\u4e2a\u4fe1\u606f\u3002", "stop",
     "False"),  # the generic rules are unchanged
])
def test_stage4_writes_todays_cells(rules, reply, finish, cell):
    assert stage4_verdict(reply, rules, finish).to_csv() == cell


def test_the_verdict_is_immutable():
    verdict = Verdict(VerdictKind.REFUSED, 0.9)
    with pytest.raises(AttributeError):
        verdict.score = 0.1  # type: ignore[misc]


def test_the_hard_set_counts_only_refusals(tmp_path):
    """datasets.rejected_prompts reads a stage-4 file through the same reader: empty, filtered,
    failed-looking and unknown cells are not refusals."""
    from orbench.stages.datasets import rejected_prompts

    path = tmp_path / "m_merged_x.csv"
    path.write_text("prompt,is_rejected,refusal_score,response,category\n"
                    "a,True,0.9,no,c\nb,False,0.1,yes,c\nc,empty,,,c\nd,filtered,,,c\ne,junk,,x,c\nf, true ,,no,c\n",
                    encoding="utf-8")
    assert rejected_prompts(str(path)) == {"a", "f"}
