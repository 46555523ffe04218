"""Helpers for the stage tests: a throw-away clone layout to run the scripts from inside their
folders (as the original README does), subprocess environments, models files, CSV reading."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

REPO_ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "ORBENCH_TEST_KEY"
KEY = "sk-test-key"

# folder -> script, as in the original repository
SCRIPTS = {
    "toxic_prompt_generator": "generate_toxic_promt_from_category.py",
    "rewritter": "mixtral_rewrite_only.py",
    "moderator": "moderate_only.py",
    "alignment_checker": "gpt3_4_alignment_checker.py",
    "response_checker": "check_response.py",
}


def make_clone(root: Path) -> Path:
    """A folder laid out like a clone, with each stage script symlinked to the real one.

    Running a script from ``clone/<folder>`` writes its default outputs there (not in the
    repository) while executing the repository's own files.
    """
    clone = root / "clone"
    for folder, script in SCRIPTS.items():
        (clone / folder).mkdir(parents=True, exist_ok=True)
        link = clone / folder / script
        if not link.exists():
            link.symlink_to(REPO_ROOT / folder / script)
    return clone


def stage_env(extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The test's environment (isolated cache dir, zero backoff) plus the test key.
    PYTHONPATH is dropped: the scripts must find the package on their own."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["ORBENCH_BACKOFF_BASE"] = "0"
    env[KEY_ENV] = KEY
    assert env.get("ORBENCH_CACHE_DIR"), "the autouse fixture sets ORBENCH_CACHE_DIR"
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run_script(clone: Path, folder: str, *args: str, env: Mapping[str, str | None] | None = None,
               timeout: float = 180) -> subprocess.CompletedProcess:
    """``cd clone/folder && python script args...``"""
    return subprocess.run(
        [sys.executable, SCRIPTS[folder], *map(str, args)],
        cwd=clone / folder,
        env=stage_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_models(path: Path, entries: Mapping[str, Mapping[str, object]]) -> Path:
    """Write a models TOML: ``{name: {"base_urls": [...], "model": ..., "family": ...}}``.
    Every entry takes its key from $ORBENCH_TEST_KEY unless it says otherwise."""
    lines = []
    for name, entry in entries.items():
        entry = {"api_key_env": KEY_ENV, **entry}
        lines.append(f'["{name}"]')
        for k, v in entry.items():
            if k == "defaults":
                continue
            if isinstance(v, (list, tuple)):
                lines.append(f"{k} = [" + ", ".join(json.dumps(str(x)) for x in v) + "]")
            else:
                lines.append(f"{k} = {json.dumps(v)}")
        if entry.get("defaults"):
            lines.append(f'["{name}".defaults]')
            lines += [f"{k} = {json.dumps(v)}" for k, v in entry["defaults"].items()]
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def fake_entry(server, model: str = "fake-model", family: str = "generic", **extra) -> dict[str, object]:
    return {"model": model, "base_urls": [server.base_url], "family": family, **extra}


def read_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def columns(path: Path) -> list[str]:
    return list(read_csv(path).columns)


def write_csv(path: Path, rows: Sequence[Mapping[str, str]] | Mapping[str, Sequence[str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def write_rows(path: Path, columns: Sequence[str], rows: Iterable[Sequence[object]]) -> Path:
    """A CSV with this header and these rows, written with the csv module (no pandas quoting)."""
    import csv

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        w.writerows(rows)
    return path


def runinfo(output_csv: Path) -> dict:
    p = Path(output_csv)
    return json.loads(p.with_name(p.name[: -len(p.suffix)] + ".run.json").read_text(encoding="utf-8"))


def error_lines(stderr: str) -> list[str]:
    """Non-empty stderr lines other than tqdm progress bars."""
    return [ln for ln in stderr.splitlines() if ln.strip() and not re.search(r"\d+%\||it/s|row/s|prompt/s", ln)]


def chat_requests(server, stage: str | None = None) -> list:
    """The chat requests a fake server received, optionally only one stage's kind."""
    from tests.responders import stage_of

    reqs = [r for r in server.requests if r.path.endswith("/chat/completions") and isinstance(r.body, dict)]
    return [r for r in reqs if stage is None or stage_of(r.body) == stage]


def asked_counts(server) -> list[int]:
    """How many prompts each stage-1 request asked for, in arrival order."""
    from tests.responders import generator_request

    return [generator_request(r.body)[0] for r in chat_requests(server, "generate")]


def rows_by(df: pd.DataFrame, key: str, value_col: str) -> dict[str, str]:
    return dict(zip(df[key], df[value_col]))


def set_key(monkeypatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def flat(xs: Iterable[Iterable[str]]) -> list[str]:
    return [x for inner in xs for x in inner]


# --------------------------------------------------------------------------- the harness fixture

import pytest  # noqa: E402

from orbench.testing.fake_openai import FakeOpenAIServer  # noqa: E402


class Harness:
    """Fake servers + a models file + a working folder, for in-process stage runs.

    ``h.serve(responder)`` starts a fake server and registers it as model ``fake``;
    ``h.add_model(name, server, ...)`` adds more names; ``h.run(main, *args)`` calls a stage's
    ``main`` in the working folder with ``--models_file`` appended and returns its exit code.
    """

    def __init__(self, tmp_path: Path, monkeypatch) -> None:
        self.tmp = tmp_path
        self.work = tmp_path / "work"
        self.work.mkdir()
        self.models_file = tmp_path / "models.toml"
        self.entries: dict[str, dict[str, object]] = {}
        self.servers: list[FakeOpenAIServer] = []
        write_models(self.models_file, {})
        monkeypatch.setenv(KEY_ENV, KEY)
        monkeypatch.chdir(self.work)

    def serve(self, responder=None, *, name: str = "fake", model: str = "fake-model", family: str = "generic",
              **server_kwargs) -> FakeOpenAIServer:
        if responder is None:
            from tests.responders import protocol_responder as responder
        srv = FakeOpenAIServer(responder, **server_kwargs).start()
        self.servers.append(srv)
        if name:
            self.add_model(name, srv, model=model, family=family)
        return srv

    def add_model(self, name: str, server: FakeOpenAIServer, *, model: str = "fake-model",
                  family: str = "generic", **extra) -> None:
        self.entries[name] = fake_entry(server, model=model, family=family, **extra)
        write_models(self.models_file, self.entries)

    def run(self, main, *args: str) -> int:
        return main([*map(str, args), "--models_file", str(self.models_file)])

    def close(self) -> None:
        for srv in self.servers:
            srv.stop()


@pytest.fixture
def harness(tmp_path: Path, monkeypatch) -> Harness:
    h = Harness(tmp_path, monkeypatch)
    yield h
    h.close()


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    return make_clone(tmp_path)
