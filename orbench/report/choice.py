"""Whose verdicts the headline numbers use: decided by what the files record, not by how the
report is run.

- A judge that passed its audit, or was not audited (old files): as before. Its verdicts
  take precedence over keyword verdicts, and a judged sample's corrected rate is the
  headline rate.
- A judge that failed its audit: its verdicts and corrected rates are shown, marked, and set
  aside. The figure, the trade-off score and the ranking use the keyword rates.
- `--prefer judge|keyword`, given explicitly, overrides this for every judge, and the page
  says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbench.report.common import ReportError
from orbench.report.judges import JudgeAudit

PREFER = ("judge", "keyword")


@dataclass(frozen=True)
class VerdictChoice:
    prefer: str | None  # None: from the audits; else the --prefer the user gave
    audits: dict[str, JudgeAudit] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.prefer is not None and self.prefer not in PREFER:
            raise ReportError(f"--prefer must be judge or keyword, not {self.prefer!r}")

    def set_aside(self, judge: str) -> bool:
        """True: this judge's verdicts are shown but not used (it failed its audit)."""
        if self.prefer is not None:
            return self.prefer == "keyword"
        audit = self.audits.get(judge)
        return audit is not None and audit.failed

    @property
    def distrusted(self) -> set[str]:
        """Judges whose full-run verdicts give way to keyword verdicts where there are some."""
        if self.prefer is not None:
            return set()  # --prefer keyword already prefers keyword rows everywhere
        return {j for j in self.audits if self.set_aside(j)}

    @property
    def select_prefer(self) -> str:
        return self.prefer or "judge"

    def uses_correction(self, judge: str) -> bool:
        return not self.set_aside(judge)

    def note(self) -> str:
        """What the page says about the choice when the user made it."""
        if self.prefer is None:
            return ""
        failed = sorted(j for j, a in self.audits.items() if a.failed)
        text = (f"--prefer {self.prefer} was given: the report uses "
                + ("the keyword verdicts (and no corrected rate) for every model and set, whatever the judges' "
                   "audits found." if self.prefer == "keyword" else
                   "every judge's verdicts and corrected rates, whatever its audit found."))
        if self.prefer == "judge" and failed:
            text += f" This includes {', '.join(failed)}, which failed its audit."
        return text
