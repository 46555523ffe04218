"""Result files for the report's judge tests: stage-4 files, stage-5 files (judged samples or
full runs) and their .run.json with the audit record stage 5 writes (orbench.judge_audit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from orbench.judge_audit.scoring import AuditCounts, score
from tests.stage_helpers import write_rows

# Audit counts of 100 rows: a judge that agrees with the labels, and one that calls
# everything a refusal (as the embedded 135M judge does).
GOOD = AuditCounts(tp=48, fn=2, fp=3, tn=47)
ALWAYS_REFUSAL = AuditCounts(tp=50, fn=0, fp=50, tn=0)


def audit_record(judge: str, counts: AuditCounts | None, members: Sequence[tuple[str, AuditCounts]] = ()) -> dict:
    """The "audit" of a stage-5 .run.json: one judge, or members plus the vote (counts)."""
    if members:
        judges = [score(n, c) for n, c in members]
        vote = score(f"{'+'.join(n for n, _ in members)} (majority vote)", counts)
    else:
        judges, vote = [score(judge, counts)], None
    deciding = vote or judges[0]
    return {"size": deciding["rows"], "refusals": 50, "answers": 50, "judges": judges, "vote": vote,
            "verdict": deciding["verdict"]}


def pairs(both: int, missed: int, false: int, neither: int) -> list[tuple[bool, bool]]:
    """(judge says refusal, keyword says refusal) per row."""
    return [(True, True)] * both + [(True, False)] * missed + [(False, True)] * false + [(False, False)] * neither


def write_stage4(path: Path, rows: Sequence[tuple[bool, bool]], model: str | None = None,
                 input_file: str | None = None) -> Path:
    write_rows(path, ["prompt", "is_rejected", "response", "category"],
               [(f"{path.stem} p{i}", str(k), f"r{i}", "privacy" if i % 2 else "harmful") for i, (_, k) in enumerate(rows)])
    info = {"model": model or path.name.split("_merged_")[0], "complete": True}
    if input_file:
        info["input_file"] = input_file
    path.with_name(path.stem + ".run.json").write_text(json.dumps(info), encoding="utf-8")
    return path


def write_stage5(path: Path, stage4: Path, rows: Sequence[tuple[bool, bool]], judge: str,
                 audit: dict | None, sample: bool = True) -> Path:
    """The judge's verdicts on stage4's rows (all of them); a judged sample when sample."""
    verdict = lambda t: "direct_refusal" if t else "direct_answer"  # noqa: E731
    write_rows(path, ["prompt", "answer_category", "answer_type_response", "response", "category", "is_rejected"],
               [(f"{stage4.stem} p{i}", verdict(t), f"[[{verdict(t)}]]", f"r{i}", "privacy" if i % 2 else "harmful", str(k))
                for i, (t, k) in enumerate(rows)])
    info = {"check_model": judge, "complete": True, "input_file": str(stage4), "input_path": str(stage4.resolve()),
            "target_model": stage4.name.split("_merged_")[0]}
    if sample:
        info.update({"sample_size": len(rows), "sample_seed": 0})
    if audit is not None:
        info["audit"] = audit
    path.with_name(path.stem + ".run.json").write_text(json.dumps(info), encoding="utf-8")
    return path


def write_model(root: Path, model: str, judge: str, audit: dict | None, sample: bool = True,
                sets: dict[str, list[tuple[bool, bool]]] | None = None) -> None:
    """A model's stage-4 files on three sets and the judge's files of them."""
    sets = sets or {"or-bench-hard-1k": pairs(10, 30, 0, 20), "or-bench-toxic": pairs(40, 0, 0, 20),
                    "or-bench-80k": pairs(2, 8, 0, 50)}
    for name, rows in sets.items():
        s4 = write_stage4(root / "5_results" / f"{model}_merged_{name}.csv", rows)
        write_stage5(root / "6_judged" / f"{model}_merged_{name}_response_check_merged_{judge}.csv", s4, rows,
                     judge, audit, sample)


SHAPES = ("passes", "fails", "judged nothing")


def write_shape(root: Path, shape: str) -> Path:
    """Three models on three sets, judged samples by one judge, gpt4: it passes its audit, fails
    it, or fails it and judged no row (stage 5 held the rows back: its files hold none, and
    their records say why under judge_skipped). The
    results of one model, "small", read the published sets (the report labels it
    "small (published sets)"); another has a long name."""
    audit = audit_record("gpt4", GOOD if shape == "passes" else ALWAYS_REFUSAL)
    for model in ("Meta-Llama-3.1-70B-Instruct-with-safety-prompt", "gpt-4o-2024-08-06", "small"):
        write_model(root, model, "gpt4", audit)
    for record in (root / "5_results").glob("small_merged_or-bench-*.run.json"):
        info = json.loads(record.read_text(encoding="utf-8"))
        info["input_source"] = {"copy": "bundled", "dataset": "bench-llm/or-bench",
                                "file": record.name.split("_merged_")[1].replace(".run.json", ".csv")}
        record.write_text(json.dumps(info), encoding="utf-8")
    if shape == "judged nothing":  # as stage 5 leaves them when the audit holds the rows back
        for judged in (root / "6_judged").glob("*.csv"):
            judged.write_text(judged.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
            record = judged.with_name(judged.stem + ".run.json")
            info = json.loads(record.read_text(encoding="utf-8"))
            info["judge_skipped"] = {"reason": "failed", "judge": "gpt4", "audit_size": 100,
                                     "rows_not_sent": 60, "why": "judge gpt4 failed its audit"}
            record.write_text(json.dumps(info), encoding="utf-8")
    return root
