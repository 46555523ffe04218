"""Support for the fault, bad-input and security tests: a fake model for every stage with
garbage markers, a deterministic fault injector, and every model-calling stage's command line.

``respond(request)`` is ``tests.responders.protocol_responder`` (it answers each stage the way
a well-behaved model would, from the request alone: same request, same reply, so interrupted
and uninterrupted runs can be compared; stage 1 varies its prompts by the request's seed).
Markers in a text force a bad reply first: ``MALFORMED`` (a body that is not JSON),
``EMPTYCHOICES`` (``choices: []``), ``NULLCONTENT`` (``content: null``), ``UNPARSEABLE``
(text with no ``[[ ]]``).

Usable in-process (``FakeOpenAIServer(responder=respond)``) or by the subprocess server
(``--responder tests.fault_responders:respond`` with the repository root on PYTHONPATH).
"""

from __future__ import annotations

import csv
import os
import subprocess
import hashlib
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pytest

from orbench.testing.fake_openai import (
    EmptyChoices,
    FakeOpenAIServer,
    Malformed,
    NullContent,
    Reply,
    Status,
    last_user_message,
)
from tests.responders import protocol_responder

REPO_ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "ORBENCH_TEST_KEY"  # the variable conftest's write_models names for the key
KEY = "sk-test-fault-key"
GUARD = 300  # seconds: a hang guard for subprocesses, never a speed assertion

MARK_MALFORMED = "MALFORMED"
MARK_EMPTY_CHOICES = "EMPTYCHOICES"
MARK_NULL = "NULLCONTENT"
MARK_UNPARSEABLE = "UNPARSEABLE"
UNPARSEABLE_TEXT = "I would rather not put a label on this one."


def _h(*parts: object) -> int:
    blob = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "big")


def respond(request: Mapping[str, Any]):
    """``tests.responders.protocol_responder`` plus the garbage markers above."""
    user = last_user_message(request)
    if MARK_MALFORMED in user:
        return Malformed()
    if MARK_EMPTY_CHOICES in user:
        return EmptyChoices()
    if MARK_NULL in user:
        return NullContent()
    if MARK_UNPARSEABLE in user:
        return Reply(UNPARSEABLE_TEXT)
    return protocol_responder(request)


def request_key(request: Mapping[str, Any]) -> str:
    """Identity of one logical request (its retries share it): the whole body, seed included."""
    return json.dumps(request, sort_keys=True, ensure_ascii=False)


class Faulty:
    """Wrap a responder: a share of requests get 429 (with Retry-After) or 500.

    The draw is a hash of (request body, how many times this body was seen), so which try
    of which request fails does not depend on arrival order. There is no cap on faults in a
    row by default: 429s do not use up the client's attempts, so only a run of six 500s
    (one in a million at 10%) could fail a row. ``max_run`` can set a cap.
    """

    def __init__(self, inner: Callable = respond, *, rate_429: float = 0.3, rate_500: float = 0.1,
                 retry_after: float = 0.2, max_run: int | None = None, salt: int = 0) -> None:
        self.inner, self.rate_429, self.rate_500 = inner, rate_429, rate_500
        self.retry_after, self.max_run, self.salt = retry_after, max_run, salt
        self._seen: dict[str, int] = {}
        self._run: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: Mapping[str, Any]):
        key = request_key(request)
        with self._lock:
            k = self._seen.get(key, 0)
            self._seen[key] = k + 1
            run = self._run.get(key, 0)
            u = (_h(self.salt, key, k) % 1_000_000) / 1_000_000
            fault = None
            if self.max_run is None or run < self.max_run:
                if u < self.rate_429:
                    fault = Status(429, retry_after=self.retry_after)
                elif u < self.rate_429 + self.rate_500:
                    fault = Status(500)
            self._run[key] = run + 1 if fault else 0
        return fault if fault is not None else self.inner(request)


# --------------------------------------------------------------------------------------
# The stages' command lines
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageCli:
    """How to run one model-calling stage: script, flags and file names."""

    number: int
    script: Path
    model_flag: str
    input_flag: str | None  # stage 1 reads no file
    input_columns: tuple[str, ...]
    output_name: str  # chosen so that the stage's failed-file rule applies
    failed_name: str | None

    @property
    def id(self) -> str:
        return f"stage{self.number}"

    def args(self, *, input_file: Path | None, output: Path, models_file: Path | None, model: str = "fake",
             concurrency: int = 4, timeout: float = 10, no_cache: bool = True, rows: int = 20,
             extra: Sequence[str] = ()) -> list[str]:
        a = [self.model_flag, model, "--output_path", str(output), "--concurrency", str(concurrency),
             "--timeout", str(timeout)]
        if models_file is not None:
            a += ["--models_file", str(models_file)]
        if self.input_flag is None:
            a += ["--category", "harmful", "--num_toxic_prompts", str(rows)]
        elif input_file is not None:
            a += [self.input_flag, str(input_file)]
        if no_cache:
            a.append("--no_cache")
        if self.number == 5:
            # These tests count and fault the stage's own rows; the judge audit has its own
            # tests (tests/test_stage5_audit.py) and would add 100 requests to every run here.
            a += ["--audit", "0"]
        return a + list(extra)

    def failed_path(self, output: Path) -> Path | None:
        return output.with_name(self.failed_name) if self.failed_name else None


STAGES: dict[int, StageCli] = {
    1: StageCli(1, REPO_ROOT / "toxic_prompt_generator" / "generate_toxic_promt_from_category.py", "--model", None,
                (), "harmful_prompts.csv", None),
    2: StageCli(2, REPO_ROOT / "rewritter" / "mixtral_rewrite_only.py", "--model", "--toxic_seed_path",
                ("prompt", "category"), "seeds_rewrite.csv", "seeds_rewrite_failed.csv"),
    3: StageCli(3, REPO_ROOT / "moderator" / "moderate_only.py", "--moderator_model", "--input_file_path",
                ("prompt", "category"), "texts_moderation_merged_fake_prompt.csv", "texts_moderation_failed_fake_prompt.csv"),
    4: StageCli(4, REPO_ROOT / "alignment_checker" / "gpt3_4_alignment_checker.py", "--model", "--input_file",
                ("prompt", "category"), "fake_merged_prompts.csv", "fake_failed_prompts.csv"),
    5: StageCli(5, REPO_ROOT / "response_checker" / "check_response.py", "--check_model", "--input_file",
                ("prompt", "response", "category"), "answers_response_check_merged_fake.csv",
                "answers_response_check_failed_fake.csv"),
}
BUILD_DATASETS = REPO_ROOT / "build_datasets.py"


def input_rows(stage: int, n: int, *, start: int = 0, markers: Sequence[str] = ()) -> list[dict[str, str]]:
    """``n`` distinct input rows for a stage; ``markers`` go into the first rows' prompts."""
    cats = ("harmful", "illegal", "privacy", "deception")
    rows = []
    for i in range(start, start + n):
        prompt = f"How does one go about task number {i} in a careful way?"
        j = i - start
        if j < len(markers):
            prompt = f"{markers[j]} {prompt}"
        row = {"prompt": prompt, "category": cats[i % len(cats)]}
        if stage == 5:
            row["response"] = ("I'm sorry, but I can't help with that." if i % 5 == 0
                               else f"Here is an answer about task {i}: do it step by step.")
        rows.append(row)
    return rows


def write_csv(path: Path, rows: Sequence[Mapping[str, object]], columns: Sequence[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = list(columns or (rows[0].keys() if rows else ["prompt"]))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in cols})
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(sys.maxsize)
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def data_lines(path: Path) -> int:
    """Rows written so far (newlines after the header; our rows never hold newlines)."""
    try:
        return max(0, Path(path).read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


def expected_rows(stage: int, n: int) -> int:
    """Output rows for ``n`` good inputs (stage 2 writes 5 rewrites per seed)."""
    return 5 * n if stage == 2 else n


# --------------------------------------------------------------------------------------
# Running a stage as a subprocess
# --------------------------------------------------------------------------------------


def stage_env(extra: dict[str, str | None] | None = None) -> dict[str, str]:
    env = dict(os.environ)  # holds the test's own cache dir and zero backoff (conftest)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env[KEY_ENV] = KEY
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run_stage(stage: StageCli, args: Sequence[str], cwd: Path, env: dict | None = None,
              timeout: float = GUARD) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(stage.script), *args], cwd=cwd, env=stage_env(env),
                          capture_output=True, text=True, timeout=timeout)


def start_stage(stage: StageCli, args: Sequence[str], cwd: Path, log: Path) -> subprocess.Popen:
    out = open(log, "ab")  # a file, not a pipe: a long run never blocks on a full pipe
    try:
        return subprocess.Popen([sys.executable, str(stage.script), *args], cwd=cwd, env=stage_env(),
                                stdout=out, stderr=subprocess.STDOUT)
    finally:
        out.close()


def message_lines(stderr: str) -> list[str]:
    """Non-empty stderr lines, tqdm progress bars left out."""
    lines = []
    for chunk in stderr.splitlines():
        last = chunk.split("\r")[-1]
        if last.strip() and "%|" not in last:
            lines.append(last)
    return lines


def runinfo(output: Path) -> dict:
    return json.loads(output.with_name(output.stem + ".run.json").read_text(encoding="utf-8"))


def chat(server: FakeOpenAIServer) -> list:
    return [r for r in server.requests if r.path.endswith("/chat/completions") and isinstance(r.body, dict)]


ALL_STAGES = [pytest.param(n, id=f"stage{n}") for n in (1, 2, 3, 4, 5)]
FILE_STAGES = [pytest.param(n, id=f"stage{n}") for n in (2, 3, 4, 5)]


def stage_input(stage: int, folder: Path, n: int, markers: Sequence[str] = ()) -> Path | None:
    """Stage ``stage``'s input file of ``n`` rows in ``folder`` (stage 1 reads none)."""
    if stage == 1:
        return None
    name = {2: "seeds.csv", 3: "texts.csv", 4: "prompts.csv", 5: "answers.csv"}[stage]
    return write_csv(folder / name, input_rows(stage, n, markers=markers))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The folder the stage subprocesses run in."""
    d = tmp_path / "work"
    d.mkdir()
    return d
