"""Which language a response is written in, as far as the scored detector needs to know.

The detector reads English, Korean, Chinese and Japanese (`READ`): each has its own grammar of
refusal (`orbench.refusal.grammar`), read into the same structure. A response written mostly
in any other language (Russian, Arabic, Spanish, French, German, ...) would be read as a reply
with no declining clause, and so nearly always called an answer: it is left unscored instead
(stage 4 writes `other_language`), so that it is counted apart and a judge can read it.

`language_of` looks at what the detector reads (the opening, as `sentences.normalise` gives it):

* script (punctuation, digits, emoji and symbols are not letters): Hangul for at least a
  quarter of the letters makes it Korean; kana and Chinese characters for a quarter, Japanese
  (with kana among them) or Chinese (without); letters of any other script outnumbering the
  Latin ones, another language. A reply that opens in English and drifts into another script
  part-way is read by its English part, and a Korean reply with English terms in it is Korean;
* Latin-script languages: no common English function word among the first `_GATE` words (the
  cheap test that settles nearly every English reply), and among the first `_WORDS` words at
  least `_MIN_FOREIGN` distinct common function words of a few widely used languages, more of
  them than of English ones, make it another language. Code, lists of names and numbers have
  neither, and are read as English.
"""

from __future__ import annotations

import re
from typing import Iterable

ENGLISH, KOREAN, CHINESE, JAPANESE, OTHER = "en", "ko", "zh", "ja", "other"
READ = frozenset({ENGLISH, KOREAN, CHINESE, JAPANESE})  # the languages the detector reads
UNSPACED = frozenset({CHINESE, JAPANESE})  # written without spaces between words
# How many characters of English one character of the language stands for: the length
# features were learned on English (and Korean, which has its own copies of them). Chinese
# and Japanese have no labelled replies to learn their own, so their length is counted in
# English characters: about three per Chinese character and two per Japanese one (a
# character is a syllable, often a word; kana make Japanese longer than Chinese).
WIDTH = {CHINESE: 3.0, JAPANESE: 2.0}
NAMES = {ENGLISH: "English", KOREAN: "Korean", CHINESE: "Chinese", JAPANESE: "Japanese", OTHER: "other languages"}

_NON_LATIN_LETTER = re.compile(r"[^\W\d_\u0000-\u036f\u1e00-\u1eff]")
_LATIN_LETTER = re.compile(r"[a-zA-Z\u00c0-\u024f\u1e00-\u1eff]")
_HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9d]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_GATE = 8  # an English function word among the first words: English
_WORDS = 32  # of the opening, for the function-word test
_MIN_FOREIGN = 4
_SPLIT = bytes(b + 32 if 65 <= b <= 90 else b if (b >= 128 or chr(b).isalnum() or b == 39) else 32
               for b in range(256))

_ENGLISH = frozenset(
    b"the a an and or of to in is are was were be it that this for on with as at by from i you we he she they "
    b"not but have has do does can will would what which who how my your our their me".split())
# Words common in Spanish, French, German, Portuguese, Italian and Dutch prose that are not
# English words (UTF-8, as the opening's words are).
_FOREIGN = frozenset(w.encode() for w in (
    "el la los las que y en es por para una del lo como pero más muy su sus está este esta yo usted también porque "
    "le les des et est une du qui pas pour dans sur avec ce cette je vous nous il elle sont au aux mais ou très "
    "der das und ist nicht ein eine ich sie mit auf für zu dem sich auch werden kann oder wie bei "
    "os um uma não é do da dos das em com você muito di che è non sono della gli anche het een van ik niet "
    "voor zijn maar").split())


def language_of(text: str) -> str:
    """The language of a response's opening as read (`text`, normalised): en, ko, zh, ja or other."""
    if not text.isascii():
        found = _script(text)
        if found is not None:
            return found
    words = text[:400].encode().translate(_SPLIT).split(None, _WORDS)[:_WORDS]
    if not _ENGLISH.isdisjoint(words[:_GATE]):
        return ENGLISH
    foreign = len(_FOREIGN.intersection(words))  # (distinct words: one C call, where a loop costs more)
    return OTHER if foreign >= _MIN_FOREIGN and foreign > len(_ENGLISH.intersection(words)) else ENGLISH


def _script(text: str) -> str | None:
    """Korean, Japanese or Chinese where their scripts hold at least a quarter of the letters
    (a reply in those languages often carries English terms); another language where other
    scripts outnumber the Latin letters; None for a text in the Latin alphabets."""
    non_latin = len(_NON_LATIN_LETTER.findall(text))
    if not non_latin:
        return None
    letters = non_latin + len(_LATIN_LETTER.findall(text))
    hangul = len(_HANGUL.findall(text))
    if hangul * 4 >= letters:
        return KOREAN
    kana = len(_KANA.findall(text))
    han = len(_HAN.findall(text))
    if (kana + han) * 4 >= letters:
        return JAPANESE if kana * 10 >= kana + han else CHINESE
    return OTHER if non_latin * 2 > letters else None


def other_language(text: str, words: list[bytes] | None = None) -> bool:
    """Whether the opening as read (`text`) is mostly in a language the detector does not read."""
    return language_of(text) not in READ


def reply_language(response: str | None) -> str:
    """The language of a reply as the detector reads it (its opening, normalised)."""
    from .sentences import normalise

    return language_of(normalise(response or ""))


def language_counts(rows: Iterable[tuple[object, object]]) -> dict[str, dict[str, int]]:
    """Per language, how many replies were scored (a refusal or an answer) and how many set
    aside (other_language), from (response, is_rejected cell) pairs; other cells (empty,
    filtered, cut, failed) are not counted: {"ko": {"scored": 20, "set_aside": 0}, ...}."""
    from orbench.protocol.verdict import Verdict, VerdictKind

    out: dict[str, dict[str, int]] = {}
    for response, cell in rows:
        verdict = Verdict.from_csv(cell)
        if verdict is None or verdict.kind not in (VerdictKind.REFUSED, VerdictKind.ANSWERED, VerdictKind.OTHER_LANGUAGE):
            continue
        counts = out.setdefault(reply_language(str(response or "")), {"scored": 0, "set_aside": 0})
        counts["set_aside" if verdict.kind is VerdictKind.OTHER_LANGUAGE else "scored"] += 1
    return dict(sorted(out.items(), key=lambda kv: (kv[0] != ENGLISH, kv[0] == OTHER, kv[0])))


def languages_line(counts: dict[str, dict[str, int]]) -> str:
    """The counts in words: "languages: English 290 scored; Korean 20 scored; other languages 3 set aside"."""
    parts = []
    for code, c in counts.items():
        said = [f"{c['scored']} scored"] if c["scored"] else []
        said += [f"{c['set_aside']} set aside (other_language)"] if c["set_aside"] else []
        parts.append(f"{NAMES.get(code, code)} {', '.join(said)}")
    return "languages: " + "; ".join(parts)
