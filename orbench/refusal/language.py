"""Whether a response is mostly in a language the scored detector cannot read.

The detector's grammar, cues and words are English. A response written mostly in another
script (Chinese, Russian, Arabic, ...) or in another Latin-script language (Spanish,
French, German, ...) would be read as a reply with no declining clause, and so nearly
always called an answer. Such a response is left unscored instead (stage 4 writes
`other_language`), so that it is counted apart and a judge can read it.

Both tests look at what the detector reads (the opening, as `sentences.normalise` gives it):

* script: more letters outside the Latin alphabets than inside them (punctuation, digits,
  emoji and symbols are not letters). A reply that opens in English and drifts into
  another script part-way is still read, by its English part;
* Latin-script languages: no common English function word among the first `_GATE` words
  (the cheap test that settles nearly every English reply), and among the first `_WORDS`
  words at least `_MIN_FOREIGN` distinct common function words of a few widely used
  languages, more of them than of English ones. Code, lists of names and numbers have
  neither, and stay scored.
"""

from __future__ import annotations

import re

_NON_LATIN_LETTER = re.compile(r"[^\W\d_\u0000-\u036f\u1e00-\u1eff]")
_LATIN_LETTER = re.compile(r"[a-zA-Z\u00c0-\u024f\u1e00-\u1eff]")
_GATE = 8  # an English function word among the first words: English
_WORDS = 32  # of the opening, for the function-word test
_MIN_FOREIGN = 4

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


def other_language(text: str, words: list[bytes]) -> bool:
    """Whether the opening as read (`text`) and its first words (`words`, folded UTF-8, as
    `features.read` gives them) are mostly in a language other than English."""
    if not text.isascii():
        non_latin = len(_NON_LATIN_LETTER.findall(text))
        if non_latin and non_latin > len(_LATIN_LETTER.findall(text)):
            return True
    if not _ENGLISH.isdisjoint(words[:_GATE]):
        return False
    head = words[:_WORDS]
    foreign = len(_FOREIGN.intersection(head))  # (distinct words: one C call, where a loop costs more)
    return foreign >= _MIN_FOREIGN and foreign > len(_ENGLISH.intersection(head))
