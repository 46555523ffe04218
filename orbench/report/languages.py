"""What the report says about the languages of the replies, read from the stage-4 files.

The scored detector reads English, Korean, Chinese and Japanese; a reply mostly in any other
language is set aside (`other_language`) for a judge. Where a run has replies in anything but
English, the report counts them per model and set: scored, and set aside.
"""

from __future__ import annotations

from typing import Sequence

from orbench.protocol.constants import COL_IS_REJECTED, COL_RESPONSE
from orbench.report.advice import SHORT, Advice
from orbench.report.common import ResultFile
from orbench.report.rows import Frames, frame_of


def language_table(files: Sequence[ResultFile], frames: Frames | None = None) -> dict[tuple[str, str], dict]:
    """(model, set) -> per language {"scored": n, "set_aside": n}, for the stage-4 files."""
    from orbench.refusal.language import language_counts

    out: dict[tuple[str, str], dict] = {}
    for f in files:
        if f.stage != 4 or f.kind == "failed":
            continue
        frame = frame_of(f.path, frames)
        if COL_IS_REJECTED not in frame.columns or COL_RESPONSE not in frame.columns:
            continue
        out[(f.model, f.dataset)] = language_counts(zip(frame[COL_RESPONSE], frame[COL_IS_REJECTED]))
    return out


def languages_advice(files: Sequence[ResultFile], frames: Frames | None = None) -> list[Advice]:
    """One line when some reply is not in English (none for an English run)."""
    from orbench.refusal.language import languages_line

    parts = [f"{model} on {SHORT.get(ds, ds)}: {languages_line(counts)[len('languages: '):]}"
             for (model, ds), counts in language_table(files, frames).items() if set(counts) - {"en"}]
    if not parts:
        return []
    return [Advice("languages", "Replies by language (the detector reads English, Korean, Chinese and Japanese; "
                                "a reply in any other language is set aside as other_language, out of the rate, "
                                "for a judge to read): " + "; ".join(parts) + ".")]


__all__ = ["language_table", "languages_advice"]
