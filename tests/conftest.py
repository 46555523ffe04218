"""Shared fixtures: a fake OpenAI server on loopback, an isolated cache, zero backoff, a models
file pointing at the fake server, a runner for stage scripts as subprocesses, and the set-ups
computed once per test run (session scope) that several test files read."""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

# Before anything imports orbench.engine.retry: RetryPolicy reads this when its module is imported,
# and subprocesses inherit it.
os.environ["ORBENCH_BACKOFF_BASE"] = "0"

from orbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
STAGE4 = REPO_ROOT / "alignment_checker" / "gpt3_4_alignment_checker.py"
KEY_ENV = "ORBENCH_TEST_KEY"  # the env var the test models file names for its key
FAKE_MODEL = "fake-model"

# Variables from the developer's shell that would change what a test sees.
_SCRUB = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ORBENCH_MODELS_FILE", "ORBENCH_LOCAL_URL", "ORBENCH_LOCAL_REPLICAS",
          KEY_ENV, "HF_TOKEN", "HF_ENDPOINT", "HF_HUB_CACHE", "HF_HUB_OFFLINE")


# The longest tests first (measured: `python -m pytest --durations=20`), so that no worker is
# left running one of them alone at the end: first one test that computes the pool's
# leave-one-out (the others that read it come later, once it is shared), then the rest by length.
LONG_FIRST = ("test_refusal_loo.py::test_targets_reached_held_out", "test_pipeline_embedded.py::test_pipeline_on_the_embedded_model",
              "test_pipeline_report.py", "test_faults_resume.py", "test_readme_commands.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        node = item.nodeid.rsplit("/", 1)[-1]
        return next((i for i, key in enumerate(LONG_FIRST) if node == key or node.startswith(key + "::")),
                    len(LONG_FIRST))

    items.sort(key=rank)  # stable: the others keep their order


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded: starts the embedded llama.cpp model for real (runs by default)")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache folder (never ~/.cache) and zero backoff. The Hugging Face
    Hub is off (HF_HUB_OFFLINE=1, an empty HF_HOME): a test that reads from the Hub must serve
    it itself (orbench.testing.fake_hub) and switch the network back on for its subprocesses."""
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("ORBENCH_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("ORBENCH_BACKOFF_BASE", "0")
    for name in _SCRUB:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # the other workers keep the cores busy: llama.cpp's threads, which wait for each other
        # by spinning, finish sooner as one (measured: the embedded pipeline 78 s against 92 s)
        monkeypatch.setenv("ORBENCH_LOCAL_THREADS", "1")
        monkeypatch.setenv("ORBENCH_LOCAL_REPLICAS", "1")  # likewise one server, not one per core
    return cache_dir


@pytest.fixture
def fake_server():
    """An in-process fake OpenAI server (echo responder) on 127.0.0.1."""
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def make_server():
    """Factory for extra fake servers (replicas, a second endpoint); all stopped at the end."""
    servers: list[FakeOpenAIServer] = []

    def make(**kwargs) -> FakeOpenAIServer:
        srv = FakeOpenAIServer(**kwargs).start()
        servers.append(srv)
        return srv

    yield make
    for srv in servers:
        srv.stop()


@pytest.fixture
def write_models(tmp_path: Path) -> Callable[..., Path]:
    """Write a models TOML naming ``name`` -> the given server(s) / URL(s); returns its path.

    The key comes from $ORBENCH_TEST_KEY (set it with monkeypatch or in a subprocess env).
    """

    def write(
        targets,
        *,
        name: str = "fake",
        model: str = FAKE_MODEL,
        api_key_env: str = KEY_ENV,
        family: str = "generic",
        path: Path | None = None,
        **defaults,
    ) -> Path:
        if not isinstance(targets, (list, tuple)):
            targets = [targets]
        urls = [t.base_url if isinstance(t, FakeOpenAIServer) else str(t) for t in targets]
        lines = [
            f'["{name}"]',
            f'model = "{model}"',
            "base_urls = [" + ", ".join(f'"{u}"' for u in urls) + "]",
            f'api_key_env = "{api_key_env}"',
            f'family = "{family}"',
        ]
        if defaults:
            lines.append(f'["{name}".defaults]')
            lines += [f"{k} = {v!r}" for k, v in defaults.items()]
        out = path or tmp_path / f"models_{name}.toml"
        with open(out, "a" if path else "w", encoding="utf-8") as fh:  # a given path collects entries
            fh.write("\n".join(lines) + "\n\n")
        return out

    return write


@pytest.fixture
def write_prompts(tmp_path: Path) -> Callable[..., Path]:
    """Write a stage-4 input CSV (prompt, category) and return its path."""
    import pandas as pd

    def write(prompts: Sequence[str], name: str = "prompts.csv", categories: Sequence[str] | None = None) -> Path:
        cats = list(categories) if categories is not None else ["harmful"] * len(prompts)
        path = tmp_path / name
        pd.DataFrame({"prompt": list(prompts), "category": cats}).to_csv(path, index=False)
        return path

    return write


@pytest.fixture
def run_stage(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess]:
    """Run a stage script with this venv's python; returns the CompletedProcess (text mode).

    ``env`` entries are added to the current environment (which already holds the test's
    cache dir and zero backoff); a value of None removes that variable.
    """

    def run(
        script: Path | str,
        *args: str,
        env: dict[str, str | None] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(script), *map(str, args)],
            cwd=cwd or tmp_path,
            env=subprocess_env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


def subprocess_env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@pytest.fixture
def stage4_args(tmp_path: Path) -> Callable[..., list[str]]:
    """Common stage-4 argument list."""

    def args(
        models_file: Path,
        input_file: Path,
        output: Path | None = None,
        *,
        model: str = "fake",
        concurrency: int = 2,
        timeout: float = 5,
        no_cache: bool = True,
        extra: Sequence[str] = (),
    ) -> list[str]:
        out = output or tmp_path / "out" / "fake_merged_prompts.csv"
        a = [
            "--model", model, "--input_file", str(input_file), "--output_path", str(out),
            "--models_file", str(models_file), "--concurrency", str(concurrency), "--timeout", str(timeout),
        ]
        if no_cache:
            a.append("--no_cache")
        return a + list(extra)

    return args


# --------------------------------------------------------------------------
# Computed once per test run, shared by the tests that read them (never change them).
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class LooRun:
    text: str  # what the command printed
    metrics: dict[str, Any]  # what it wrote with --json
    result: Any  # the orbench.refusal.loo.LooResult it computed (the held-out scores)


class PoolLoo:
    """`python -m orbench.evaluate_refusal --leave_one_out` on the development pool, run
    in-process on first use (a few minutes on 2 cores), then kept for the whole test run.
    Under pytest-xdist the first worker that needs it runs it and the others read its pickle
    (`shared`: the run's folder that all workers see; None without xdist)."""

    def __init__(self, pool: Path, work: pytest.TempPathFactory, shared: Path | None):
        self.pool, self.work, self.shared = pool, work, shared

    @functools.cached_property
    def run(self) -> LooRun:
        if self.shared is None:
            return self._compute()
        from filelock import FileLock

        kept = self.shared / "pool_loo.pickle"
        with FileLock(str(kept) + ".lock"):
            if not kept.is_file():
                kept.write_bytes(pickle.dumps(self._compute()))
            return pickle.loads(kept.read_bytes())

    def _compute(self) -> LooRun:
        import orbench.refusal.loo as loo
        from orbench.evaluate_refusal import run

        results: list = []
        real = loo.leave_one_out

        def keeping(*args, **kwargs):  # a spy: the command's own computation, kept for reading
            results.append(real(*args, **kwargs))
            return results[-1]

        path = self.work.mktemp("pool_loo") / "loo.json"
        out = io.StringIO()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(loo, "leave_one_out", keeping)
            assert run(["--leave_one_out", "--pool_dir", str(self.pool), "--json", str(path)], out=out) == 0
        assert len(results) == 1
        return LooRun(out.getvalue(), json.loads(path.read_text(encoding="utf-8")), results[0])


@pytest.fixture(scope="session")
def pool_loo(tmp_path_factory: pytest.TempPathFactory) -> PoolLoo:
    """The leave-one-out on the development pool, once per test run: tests/test_refusal_loo.py
    reads its table and metrics, tests/test_coverage.py its held-out scores (only when they are
    not cached yet)."""
    from tests.refusal_pool_helpers import POOL

    if not POOL.is_dir():
        pytest.skip("the development pool (../shared/data) is absent")
    return PoolLoo(POOL, tmp_path_factory, xdist_shared(tmp_path_factory))


def xdist_shared(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """Under pytest-xdist, this run's folder that every worker sees (each worker's own is a
    subfolder of it); None otherwise (then the parent folder holds earlier runs too)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    return tmp_path_factory.getbasetemp().parent
