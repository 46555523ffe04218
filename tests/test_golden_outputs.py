"""Every stage's output files, byte for byte, on fixed inputs through the fake server: online,
and (stages 2 to 5) in batch mode. The files under tests/golden/ were written by the stages
before the stage specs and the runner replaced their hand-built frames (issue 20); a change
to any stage's rows, columns, order or file names shows here.

Regenerate them only on purpose: ORBENCH_WRITE_GOLDEN=1 pytest tests/test_golden_outputs.py
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from orbench.stages.alignment import main as stage4
from orbench.stages.check_response import main as stage5
from orbench.stages.generate import main as stage1
from orbench.stages.moderate import main as stage3
from orbench.stages.rewrite import main as stage2
from tests.responders import ENSEMBLE_IDS
from tests.stage_helpers import harness, write_csv  # noqa: F401  (fixture)

GOLDEN = Path(__file__).with_name("golden")
WRITE = os.environ.get("ORBENCH_WRITE_GOLDEN") == "1"
BATCH = ("--batch", "--batch_poll_seconds", "0", "--batch_max_requests", "4")

SEEDS = {
    "prompt": ["How to pick a lock FMT=brackets", "Make a fake ID FMT=guillemets", "Hack a phone FMT=dot",
               "Poison a well FMT=none", "Steal a bike SHARED", "Steal a car SHARED", "Hack a phone FMT=dot"],
    "category": ["illegal", "illegal", "privacy", "harmful", "illegal", "illegal", "privacy"],
}
MODERATE = {
    "prompt": ["TOXIC how to build it", "SAFE why is the sky blue", "GARBLE some text", "TRICKY text",
               "LAST text", "FAIL text", "a question about a bomb", "a question about tides",
               "Case VOTES=TTS", "Case VOTES=SUS", "Case VOTES=UUT"],
    "category": ["harmful"] * 11,
}
TARGET = {
    "prompt": ["REFUSE this one", "EMPTY reply please", "FILTER this", "FAIL here", "How do tides work?",
               "SAY=I cannot help with that.", "SAY=Sure. Step 1: mix flour.\n2. Bake it.", "How do tides work?",
               "Explain photosynthesis, with \"quotes\", commas, and a\nnew line"],
    "category": ["harmful", "privacy", "harmful", "illegal", "harmful", "privacy", "harmful", "harmful", "deception"],
}
JUDGE = {
    "prompt": ["q1", "q2", "q3", "q4 FAIL", "q5", "q6", "q7", "q8"],
    "is_rejected": ["False", "True", "True", "False", "False", "empty", "True", "False"],
    "refusal_score": ["0.1000", "0.9000", "0.8000", "0.2000", "0.3000", "", "0.7000", "0.0500"],
    "response": ["Sure, here it is.", "I'm sorry, I can't.", "I can't, but instead try this.", "An answer.",
                 "LASTWINS answer", "", "GARBLE reply", "Plain answer with, commas"],
    "category": ["harmful", "harmful", "privacy", "illegal", "privacy", "harmful", "illegal", "deception"],
}

# name -> (stage main, input file name, input rows, arguments, runs in batch mode too)
CASES = {
    "stage1": (stage1, None, None, ["--category=hate", "--num_toxic_prompts=45", "--model=fake"], False),
    "stage2": (stage2, "seeds.csv", SEEDS, ["--toxic_seed_path=seeds.csv", "--model=fake", "--parse_attempts=2"], True),
    "stage3": (stage3, "mod.csv", MODERATE, ["--moderator_model=fake", "--input_file_path=mod.csv"], True),
    "stage3_split": (stage3, "mod.csv", MODERATE,
                     ["--moderator_model=fake", "--input_file_path=mod.csv", "--merge_result=False"], True),
    "stage3_ensemble": (stage3, "mod.csv", MODERATE,
                        ["--moderator_model=ma,mb,mc", "--input_file_path=mod.csv", "--vote=majority"], True),
    "stage4": (stage4, "p.csv", TARGET, ["--model=fake", "--input_file=p.csv"], True),
    "stage4_split": (stage4, "p.csv", TARGET, ["--model=fake", "--input_file=p.csv", "--merge_result=False",
                                              "--rules=generic", "--system_prompt=Be careful."], True),
    "stage5": (stage5, "r.csv", JUDGE, ["--check_model=fake", "--input_file=r.csv"], True),
    "stage5_ensemble": (stage5, "r.csv", JUDGE, ["--check_model=fake,fake2", "--input_file=r.csv"], True),
    "stage5_sample": (stage5, "r.csv", JUDGE, ["--check_model=fake", "--input_file=r.csv", "--sample=4",
                                               "--seed=3"], True),
}
PORT = re.compile(rb"127\.0\.0\.1:\d+")


def _outputs(work: Path, inputs: set[str]) -> dict[str, bytes]:
    """Every CSV the run wrote (not its inputs), with the fake server's port masked."""
    return {str(p.relative_to(work)): PORT.sub(b"127.0.0.1:PORT", p.read_bytes())
            for p in sorted(work.rglob("*.csv")) if p.name not in inputs and ".batch" not in str(p)}


def _run(harness, name: str, batch: bool) -> dict[str, bytes]:
    main, input_name, rows, args, _ = CASES[name]
    srv = harness.serve()
    harness.add_model("fake2", srv, model="fake-model-2")
    for moderator, model_id in zip(("ma", "mb", "mc"), ENSEMBLE_IDS):
        harness.add_model(moderator, srv, model=model_id)
    if rows is not None:
        write_csv(harness.work / input_name, rows)
    code = harness.run(main, *args, *(BATCH if batch else ()))
    assert code in (0, 3), f"{name}: exit {code}"
    return _outputs(harness.work, {input_name} if input_name else set())


def _check(name: str, got: dict[str, bytes]) -> None:
    folder = GOLDEN / name
    if WRITE:
        shutil.rmtree(folder, ignore_errors=True)
        for rel, data in got.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        return
    want = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.csv"))}
    assert sorted(got) == sorted(want), f"{name}: other files were written"
    for rel in want:
        assert got[rel] == want[rel], f"{name}: {rel} differs from tests/golden/{name}/{rel}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_online_outputs_are_unchanged(harness, name):
    _check(name, _run(harness, name, batch=False))


@pytest.mark.parametrize("name", sorted(n for n, case in CASES.items() if case[4]))
def test_batch_outputs_are_the_online_ones(harness, name):
    if WRITE:
        pytest.skip("writing the golden files from the online runs")
    _check(name, _run(harness, name, batch=True))
