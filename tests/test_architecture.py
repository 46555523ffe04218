"""docs/architecture.md's worked example (a new stage in one spec file) runs as written: online,
resumed, and in batch mode, with the runner's options, failed file and run record; and every
module the page names exists."""

from __future__ import annotations

import re
import types
from pathlib import Path

from tests.stage_helpers import harness, read_csv, runinfo, write_csv  # noqa: F401  (fixture)

PAGE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def _example() -> types.ModuleType:
    code = re.search(r"```python\n(# orbench/stages/translate.py\n.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert code, "the worked example is missing from docs/architecture.md"
    module = types.ModuleType("translate_example")
    exec(compile(code.group(1), str(PAGE), "exec"), module.__dict__)
    return module


def _translator(request):
    text = request["messages"][-1]["content"]
    if "FAIL" in text:
        from orbench.testing.fake_openai import Status
        return Status(400, message="no")
    return "traduit: " + text.rsplit("\n", 1)[-1]


def test_the_worked_example_runs_online_and_resumes(harness):
    srv = harness.serve(_translator)
    write_csv(harness.work / "q.csv", {"prompt": ["hello", "FAIL me", "bye"], "category": ["a", "b", "c"]})
    main = _example().main
    assert harness.run(main, "--model", "fake", "--input_file", "q.csv", "--concurrency", "2") == 3
    out = harness.work / "q_French.csv"
    assert list(read_csv(out)["translation"]) == ["traduit: hello", "traduit: bye"]
    assert list(read_csv(harness.work / "q_French_failed.csv")["prompt"]) == ["FAIL me"]
    info = runinfo(out)
    assert info["stage"] == "translator" and info["rows_failed"] == 1 and info["complete"] is False
    sent = len(srv.requests)
    assert harness.run(main, "--model", "fake", "--input_file", "q.csv") == 3  # only the failed row again
    assert len(srv.requests) == sent + 1


def test_the_worked_example_runs_in_batch_mode(harness):
    srv = harness.serve(_translator)
    write_csv(harness.work / "q.csv", {"prompt": ["hello", "bye"], "category": ["a", "b"]})
    main = _example().main
    assert harness.run(main, "--model", "fake", "--input_file", "q.csv", "--batch", "--batch_poll_seconds", "0") == 0
    assert list(read_csv(harness.work / "q_French.csv")["translation"]) == ["traduit: hello", "traduit: bye"]
    assert not [r for r in srv.requests if r.path.endswith("/chat/completions")]  # all through the batch


def test_every_module_the_page_names_exists():
    root = PAGE.parents[1]  # the repository (the page is in docs/)
    text = PAGE.read_text(encoding="utf-8")
    named = set(re.findall(r"orbench/[\w/]+(?:\.py|/)", text)) | set(re.findall(r"(?<![\w/.])([a-z_]+(?:/[a-z_]+)*\.py)\b", text))
    named -= {"orbench/stages/translate.py", "translate.py"}  # the example's own, hypothetical files
    assert len(named) > 20
    files = [str(p.relative_to(root)) for p in root.rglob("*.py") if ".venv" not in p.parts]
    missing = [n for n in sorted(named) if not (root / n).exists() and not (root / "orbench" / n).exists()
               and not any(f.endswith("/" + n) for f in files)]
    assert not missing, missing


def test_the_tree_names_every_folder_and_the_layers_are_the_tests():
    from tests.test_layout import LAYERS

    text = PAGE.read_text(encoding="utf-8")
    tree = re.search(r"## The tree\n.*?```\n(.*?)```", text, re.S).group(1)
    package = PAGE.parents[1] / "orbench"
    folders = sorted(p.name for p in package.iterdir() if p.is_dir() and not p.name.startswith("__"))
    assert [f for f in folders if f"  {f}/" not in tree] == []
    table = re.findall(r"^\| (\d+) \| (.*?) \|", text, re.M)
    placed = {f: int(n) for n, cell in table for f in re.findall(r"`(\w+)/`", cell)}
    subpackages = {k.split(".")[1]: v for k, v in LAYERS.items() if k.count(".") == 1 and (package / k.split(".")[1]).is_dir()}
    assert placed == subpackages
