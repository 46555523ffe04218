"""The README's two commands and the documentation site, against what runs them: .ci/run calls the
README's test command exactly as written, benchmarks/bench_demo.py times exactly the README's main
command, and every page under docs/ is in mkdocs.yml's nav and every nav entry is a page. (CI's
`mkdocs build --strict` checks the nav and every link too; this runs without mkdocs installed.)"""

from __future__ import annotations

import importlib.util
import re

from tests.stage_helpers import REPO_ROOT

DOCS = REPO_ROOT / "docs"


def two_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Two commands\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, re.S)


def test_the_readme_gives_two_commands():
    main, tests = two_commands()
    assert main.endswith("./run_pipeline.sh") and "'.[test]'" in tests


def test_ci_runs_the_readmes_test_command_as_written():
    _, tests = two_commands()
    assert tests in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_bench_demo_times_the_readmes_main_command():
    main, _ = two_commands()
    spec = importlib.util.spec_from_file_location("bench_demo", REPO_ROOT / "benchmarks" / "bench_demo.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert main in " ".join(bench.__doc__.split())
    install = [" ".join(a for a in argv if a != "-q") for argv in bench.INSTALL]  # -q: quieter, same install
    assert " && ".join([*install, "./run_pipeline.sh"]) == main


def nav_pages() -> list[str]:
    text = (REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s*-\s(?:[^\n]*:\s)?([\w./-]+\.md)\s*$", nav, re.M)


def test_every_docs_page_is_in_the_nav_once():
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts)
    nav = nav_pages()
    assert len(nav) == len(set(nav))
    assert sorted(nav) == pages
