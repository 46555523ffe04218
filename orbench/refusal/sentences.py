"""A response as the structural reader sees it, and where its sentences are.

`normalise` rebuilds the opening of a response as " word word ... ": folded to
ASCII where it has an ASCII form, lower-cased, markup deleted, one space between
words, every line break followed by one space, quoted words blanked. Every word
then starts with a space, which is what the patterns of
`orbench.refusal.structure` start with.

`sentences` says where each sentence starts and ends: after . ! ? or : (with any
closing quotes) before a space, or at a line break; a list marker ("1. ") and a
lead-in ending in a colon ("Note:") do not end one. `list_items` says which
sentences open a list item.

Speed: the text is folded and spaced on UTF-8 bytes (`bytes.translate`,
`bytes.replace`), and the sentence ends of an ASCII text are found on a copy of
it where each character is replaced by its class, so that the regular
expression engine looks for one byte instead of testing every character
against a set (see `_ends`).
"""

from __future__ import annotations

import re
from operator import sub

MAX_CHARS = 480  # how much of a response is read for its structure (600 before: as accurate held out, slower)
FURTHER_CHARS = 1500  # how far a response is read when its opening leaves the decision open (`structure.parse`)

# Typographic variants to ASCII (only when the text is not ASCII already).
_UNICODE_FOLD = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"',
                               "\u00a0": " ", "\u2014": " - ", "\u2013": " - ", "\u2022": "-"})
# On UTF-8 bytes, in one pass: ASCII letters lower-cased, tabs to spaces, markup deleted
# (deleting, not spacing, so that words stay one space apart).
# Markup is first turned into stars, which one `bytes.replace` then deletes (faster than
# `bytes.translate` with bytes to delete).
_MARKUP_BYTES = b"*_`#()[]\r"
_BYTE_TABLE = bytes(42 if b in _MARKUP_BYTES else b + 32 if 65 <= b <= 90 else 32 if b == 9 else b for b in range(256))
_SPACES = re.compile(rb"  +")
_SPACES_BEFORE_BREAK = re.compile(rb" +\n")
_BREAKS = re.compile(rb"\n[\n ]*")  # line breaks, blank lines and the indentation after them
_QUOTED = re.compile(r'"[^"\n]{1,300}"')
_THINK = re.compile(r"\s*<(think|thinking|reasoning|reflection)>")

# Where a sentence ends: . ! ? : or a line break (with any more of them and closing quotes),
# before a space or a line break.
_BOUND = re.compile(r"[.!?:\n][.!?:\"'\n]*(?=[ \n])|[\u3002\uff01\uff1f][\u3002\uff01\uff1f\"'\u300d\u300f\uff09)]*\n?")
# (the second branch: Chinese and Japanese end a sentence with a full stop, an exclamation or a
# question mark of their own, with no space after it; a line break after it ends the same sentence,
# so that the next line, a list item's, opens where a line does)
# The same on the classes of a normalised ASCII text: 1 for . ! ? : and the line break, 2 for
# quotes (see `_ends`).
_CLASSES = bytes(1 if b in b".!?:\n" else 2 if b in b"\"'" else 32 if b == 32 else 97 for b in range(256))
_END = re.Match.end

# A list item opens its line: "1. ", "2) ", "- ", "* ", "\u2022 ".
_LIST_ITEM = re.compile(r" (?:\d{1,2}[.)]|[-+]) ")
_MARKER_STARTS = frozenset("-+0123456789")  # what a list marker can start with


def normalise(response: str, limit: int = MAX_CHARS) -> str:
    """The response as read: " word word ...", lower-cased, folded, one space between
    words, each line break followed by a space (so every word starts with one)."""
    think = _THINK.match(response)
    if think:  # a reasoning model's deliberation: the reply is what follows it
        close = response.find(f"</{think.group(1)}>", think.end())
        if close >= 0:
            response = response[close + len(think.group(1)) + 3 :]
    text = response[:limit]
    if not text.isascii():
        text = text.translate(_UNICODE_FOLD)
    raw = text.encode()
    # (`in` on bytes raises and clears an exception inside; `find` does not, so it is faster.)
    if "* " in text:  # a bullet, before its star is deleted as markup
        raw = raw.replace(b"\n* ", b"\n- ").replace(b"\n  * ", b"\n- ")
    raw = raw.translate(_BYTE_TABLE).replace(b"*", b"")
    if "\n" in text:  # one line break between lines, then one space
        raw = raw.strip()
        if raw.find(b" \n") >= 0:
            raw = _SPACES_BEFORE_BREAK.sub(b"\n", raw)
        raw = _BREAKS.sub(b"\n ", raw)
    if raw.find(b"  ") >= 0:
        raw = _SPACES.sub(b" ", raw)
    text = " " + raw.decode("utf-8", "replace").strip() + " "
    if '"' in text:  # quoted words are not the model speaking (a line of dialogue, an example reply)
        text = _QUOTED.sub('""', text)
    return text


def _ends(text: str) -> list[int]:
    """Where `_BOUND` matches end in a normalised text.

    For an ASCII text, on its classes: `_BOUND` matches where a run of . ! ? : line
    break and quote characters that holds one of the first five is followed by a space
    (a line break inside the run would be followed by a space, which ends the run, so
    the run never has to be cut short), and ends at that space. Once a quote after one
    of the five counts as one of them, such a run ends in a 1 and the text splits there."""
    if not text.isascii():
        return list(map(_END, _BOUND.finditer(text)))
    classes = text.encode().translate(_CLASSES)
    while classes.find(b"\x01\x02") >= 0:
        classes = classes.replace(b"\x01\x02", b"\x01\x01")
    pieces = classes.split(b"\x01 ")
    del pieces[-1]  # what follows the last end
    ends = []
    end = -1
    for piece in pieces:  # each end is after its piece and the 1, at the space
        end += len(piece) + 2
        ends.append(end)
    return ends


def sentences(text: str) -> tuple[list[int], list[int]]:
    """Where each sentence of a normalised text starts and ends."""
    ends = _ends(text)
    size = len(text)
    if ends and ":" not in text and min(map(sub, ends, [0, *ends])) >= 5:  # each end ends a sentence
        starts = [0, *ends]
        if size - ends[-1] > 2:
            ends.append(size)
        else:
            del starts[-1]
        return starts, ends
    return _merged(text, ends)


def _merged(text: str, bounds: list[int]) -> tuple[list[int], list[int]]:
    """Sentences where a list marker or a colon does not end one."""
    starts: list[int] = []
    ends: list[int] = []
    start = 0
    for end in bounds:
        if end - start < 5:
            if end - start < 3 or text[start:end].strip(" .!?:\n\"'-").isdigit():
                continue  # "1. ": a list marker, not a sentence
        elif text[end - 1] == ":":
            continue  # "note: ...": the sentence goes on
        starts.append(start)
        ends.append(end)
        start = end
    if len(text) - start > 2:
        starts.append(start)
        ends.append(len(text))
    return starts, ends


def list_items(text: str, starts: list[int]) -> list[bool]:
    """Whether each sentence opens a list item (on a line of its own)."""
    items = [False] * len(starts)
    if "\n" in text:
        for i, a in enumerate(starts):  # (a loop: for a few items, faster than maps or a comprehension)
            if text[a - 1] == "\n" and text[a + 1] in _MARKER_STARTS and _LIST_ITEM.match(text, a) is not None:
                items[i] = True
    return items
