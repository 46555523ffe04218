"""Traditional Chinese is read through a table of Simplified forms (`cues_zh.TO_SIMPLIFIED`):
every character the Chinese patterns use must be either a Simplified form in that table or one
that has no other Traditional form."""

from __future__ import annotations

from orbench.refusal import cues_zh
from orbench.refusal.cues_zh import SPEC

# The characters of the Chinese patterns that OpenCC's TSCharacters table (Apache-2.0) maps from
# no other character: checked on 2026-11-29. A pattern that gains a character in neither this
# string nor the table fails the test below, until the character is looked up in OpenCC's table
# and added to one of the two (a Traditional reply would otherwise never match the pattern).
_SAME_IN_TRADITIONAL = (
    "一上下不且中主之也了予事互些享人仇他代以仰仲任但位何作你使供依便信倒倡值偏做健允全其具再分切刑列判到前力功助勿包十南危原"
    "去及反取受可名告命和在地型士多大太好如妥委婉子字孤守安完官定宜害容察尊就履工巧希帖常平度康建式形往待很律徒得德心必忍忙快"
    "思急恕恨息恰您情意感慎憾成我所手打扛找承技投抱拒括持指接推描提援撰支政效救文新方明是智暴更替最有服望期本果根案概模款歉正"
    "此步歧段每求法派涉渠源烈然熬片犯理生用由疑疼痛白的相看知社禁程究立站章符等答策管索罪置考而聊能自般良若苦莫行被裁要角解言警"
    "起超足跟路身迎述追透途通造道遵部重限院陪需露非靠鼓"
)


def _pattern_characters() -> set[str]:
    """Every Chinese character in any field of the grammar (a pattern, or a list of (role, pattern))."""
    texts = [str(value) for value in SPEC]  # (a list's text holds its patterns' characters)
    return {c for text in texts for c in text if "\u4e00" <= c <= "\u9fff"}


def test_every_character_of_the_chinese_patterns_is_read_in_traditional_too():
    used = _pattern_characters()
    assert len(used) > 400
    unchecked = used - set(_SAME_IN_TRADITIONAL) - set(cues_zh._SIMPLIFIED)
    assert not unchecked, f"look these up in OpenCC's TSCharacters: {''.join(sorted(unchecked))}"


def test_the_table_maps_each_traditional_character_once():
    assert len(cues_zh._TRADITIONAL) == len(cues_zh._SIMPLIFIED) == len(set(cues_zh._TRADITIONAL))
    assert not set(cues_zh._TRADITIONAL) & set(_SAME_IN_TRADITIONAL)
