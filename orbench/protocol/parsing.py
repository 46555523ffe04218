"""Reading structured answers out of free-form model replies.

- Lists of prompts (stages 1 and 2): items in [[...]], else in «...», else numbered lines
  (the protocol's order), else items in single [...] as a last resort.
- The moderator's choice (stage 3): the last [[...]] naming one of the 11 options.
- The judge's verdict (stage 5): the last [[...]] naming one of the 3 classes.
Anything that cannot be read returns None: the caller records it as unparsed/unscored.
"""

from __future__ import annotations

import re

from .constants import JUDGE_CLASSES, MODERATION_OPTIONS

_QUOTES = "\"'“”‘’«»`"


def bracketed(text: str) -> list[str]:
    """Items between ``[[`` and ``]]``. Single brackets inside an item are allowed and kept
    (``[[Explain [briefly] why]]``); an unclosed ``[[`` at the end is ignored."""
    items: list[str] = []
    i, n = 0, len(text)
    while True:
        start = text.find("[[", i)
        if start < 0:
            break
        j = start + 2
        while j < n and text[j] == "[":  # "[[[item]]]": extra brackets are not content
            j += 1
        depth = 0
        k = j
        end = -1
        while k < n:
            c = text[k]
            if c == "[":
                if text.startswith("[[", k) and depth == 0:
                    break  # a new item opens before this one closed: drop the unclosed one
                depth += 1
            elif c == "]":
                if depth > 0:
                    depth -= 1
                elif text.startswith("]]", k):
                    end = k
                    break
            k += 1
        if end < 0:
            i = k if k > start + 2 else start + 2
            if k >= n:
                break
            continue
        items.append(text[j:end])
        i = end + 2
    return items


def guillemets(text: str) -> list[str]:
    return re.findall(r"«(.+?)»", text, flags=re.S)


_NUMBERED = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:\(?\d{1,3}[.):]|\d{1,3}\s+-|#\d{1,3}[.:]?|(?:prompt|item)\s*\d{1,3}[.:)]?)(?:\*\*)?\s+(.+?)\s*$",
    flags=re.I | re.M,
)


def numbered(text: str) -> list[str]:
    return [m.group(1) for m in _NUMBERED.finditer(text)]


def single_bracketed(text: str) -> list[str]:
    """Last resort, after the protocol's three: items in single [...] (small models often
    drop one bracket of the pair)."""
    return re.findall(r"\[([^\[\]\n]{4,})\]", text)


def clean_item(item: str) -> str:
    s = " ".join(item.split())  # fold internal whitespace and newlines
    s = re.sub(r"^(?:\(?\d{1,3}[.):]|\d{1,3}\s+-)\s+", "", s)  # numbering left inside brackets
    # A label some models put before each item: "[First prompt]:", "Prompt 3 -", "Rewrite:".
    s = re.sub(r"^\[?(?:(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th)?)\s+)?"
               r"(?:prompt|rewrite|rewritten prompt|question)\s*\d*\]?\s*[:.\-]\s*", "", s, flags=re.I)
    s = s.strip()
    for _ in range(3):
        s = s.strip("*_ ").strip()
        if len(s) >= 2 and s[0] in _QUOTES and s[-1] in _QUOTES:
            s = s[1:-1].strip()
        if s.startswith("[") and s.endswith("]") and s.count("[") == 1 and s.count("]") == 1:
            s = s[1:-1].strip()
    return s


def prompt_list(text: str | None) -> list[str]:
    """Stage 1 and 2 replies: [[...]] first, then «...», then numbered lines, then [...]."""
    if not text:
        return []
    for extract in (bracketed, guillemets, numbered, single_bracketed):
        items = [clean_item(x) for x in extract(text)]
        items = [x for x in items if len(x) > 3]
        if items:
            return items
    return []


def last_bracketed(text: str | None) -> str | None:
    """The last [[...]] item of a reply, cleaned (clean_item); None when there is none."""
    if not text:
        return None
    items = bracketed(text)
    return clean_item(items[-1]) if items else None


_OPTION_BY_NAME = {name: name for name in MODERATION_OPTIONS}
_NAMES_LONGEST_FIRST = sorted(MODERATION_OPTIONS, key=len, reverse=True)


def moderation_choice(text: str | None) -> str | None:
    """The option named in the last [[...]]: a category, "none of the above", or None."""
    item = last_bracketed(text)
    if item is None:
        return None
    item = item.lower()
    m = re.match(r"^\s*(\d{1,2})\s*[.):\-]?\s*(.*)$", item)
    number = int(m.group(1)) if m else None
    name_part = (m.group(2) if m else item).strip(" .:-*")
    named = None
    for name in _NAMES_LONGEST_FIRST:
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", name_part):
            named = name
            break
    if named is not None:
        return named
    if number is not None and 1 <= number <= len(MODERATION_OPTIONS) and not name_part:
        return MODERATION_OPTIONS[number - 1]
    return None


def judge_verdict(text: str | None) -> str | None:
    """The class in the last [[...]], or None when there is none or it is not one of the 3."""
    item = last_bracketed(text)
    if item is None:
        return None
    label = re.sub(r"[\s\-]+", "_", item.strip().lower()).strip("_.")
    return label if label in JUDGE_CLASSES else None
