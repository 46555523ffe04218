"""The README's and the docs' commands, run as written (each block marked "tested as written", in
README.md or a page under docs/), against fake servers instead of the real endpoints and scaled down with ORBENCH_LIMIT, the variable every
stage reads as its --limit. Nothing in a block is edited: the test only supplies the
environment the block expects (its exported variables, the providers' URL variables, and a
models file that points the registry's names at the fake server)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import audit_labels, knowing_audit_reply, protocol_responder, stage_of
from tests.stage_helpers import REPO_ROOT, write_models
from tests.test_pipeline_report import pipeline_responder

MARK = "<!-- tested as written: tests/test_readme_commands.py -->"
BIN = Path(sys.executable).parent


def marked_blocks(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(re.escape(MARK) + r"\n```bash\n(.*?)\n```", text, re.S)]


def readme_blocks() -> list[str]:
    """The marked blocks of README.md and of every docs page; a command shown on two pages must
    be the same text on both."""
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    return [b for page in pages for b in marked_blocks(page)]


def block(starting: str) -> str:
    (found,) = {b for b in readme_blocks() if starting in b}
    return found


def env_for(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # this venv's `orbench`
    env.update(extra)
    return env


def test_the_readme_marks_its_tested_blocks():
    assert len(set(readme_blocks())) == 2  # `orbench eval` and the real pipeline run
    assert [b for b in marked_blocks(REPO_ROOT / "README.md") if "orbench eval" in b]


def test_measure_your_model_runs_as_written(tmp_path):
    if shutil.which("orbench", path=str(BIN)) is None:
        pytest.skip("the orbench command is not installed beside this Python (pip install -e .)")
    text = block("orbench eval")
    exported = re.findall(r"^export (\w+)=", text, re.M)
    assert exported == ["VLLM_BASE_URL", "OPENAI_API_KEY"]
    command = "\n".join(ln for ln in text.splitlines() if not ln.startswith("export "))

    def judge(request):
        return knowing_audit_reply(request, audit_labels()) if stage_of(request) == "audit" else protocol_responder(request)

    with FakeOpenAIServer(protocol_responder) as target, FakeOpenAIServer(judge, api_key="sk-judge") as judged:
        env = env_for({"VLLM_BASE_URL": target.base_url, "OPENAI_API_KEY": "sk-judge",
                       "OPENAI_BASE_URL": judged.base_url, "ORBENCH_LIMIT": "3"})
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = tmp_path / "runs" / "eval" / "vllm_meta-llama_Llama-3.1-8B-Instruct"
    summary = pd.read_csv(run / "report" / "summary.csv", keep_default_na=False)
    assert list(summary["model"]) == ["vllm/meta-llama/Llama-3.1-8B-Instruct (published sets)"]
    assert (run / "report" / "report.html").is_file()


def clone_of_scripts(root: Path) -> Path:
    """A folder laid out like a clone, its scripts linked to the repository's, so that
    `./run_pipeline.sh --run_dir runs/full` writes under the test's folder."""
    clone = root / "clone"
    clone.mkdir()
    for name in ("run_pipeline.sh", "build_datasets.py", "toxic_prompt_generator", "rewritter", "moderator",
                 "alignment_checker", "response_checker"):
        (clone / name).symlink_to(REPO_ROOT / name)
    return clone


def test_the_real_pipeline_run_runs_as_written(tmp_path):
    command = block("./run_pipeline.sh")
    names = sorted(set(re.findall(r"MODERATOR_MODELS=([\w.,-]+)", command)[0].split(",")
                       + re.findall(r"(?:GENERATOR|REWRITER|TARGET|JUDGE)_MODEL=([\w.-]+)", command)))
    assert names == ["gemini-1.5", "gpt-4o", "gpt4", "llama3", "mixtral"]
    clone = clone_of_scripts(tmp_path)
    keys = {"gpt4": "OPENAI_API_KEY", "gpt-4o": "OPENAI_API_KEY", "llama3": "TOGETHER_API_KEY",
            "gemini-1.5": "GEMINI_API_KEY", "mixtral": "MISTRAL_API_KEY"}
    with FakeOpenAIServer(pipeline_responder) as srv:
        models = write_models(tmp_path / "models.toml", {
            n: {"model": f"fake-{n}", "base_urls": [srv.base_url], "family": "generic", "api_key_env": keys[n]}
            for n in names})
        env = env_for({"ORBENCH_MODELS_FILE": str(models), "ORBENCH_LIMIT": "1", "PYTHON": sys.executable,
                       **{var: f"key-{var}" for var in set(keys.values())}})
        proc = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=1500)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-4000:]
    assert "run_pipeline.sh plan" in out and out.index("run_pipeline.sh plan") < out.index("=== 1.")
    run = clone / "runs" / "full"
    assert len(list((run / "1_seeds").glob("*_prompts.csv"))) == 10  # CATEGORIES=all
    assert (run / "report" / "summary.csv").is_file()
    assert list(run.rglob("*_failed*.csv")) == []
