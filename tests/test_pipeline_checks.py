"""run_pipeline.sh stops before spending on settings that cannot finish (HARD_K above the number
of targets, an endpoint that does not answer), and stops with one line, naming the step, the
model and why, when a step yields nothing the next could use; the next step never runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import protocol_responder, stage_of
from tests.stage_helpers import KEY, KEY_ENV, REPO_ROOT, chat_requests, fake_entry, write_models

PIPELINE = REPO_ROOT / "run_pipeline.sh"


def run(tmp_path, responder, *args, **settings):
    with FakeOpenAIServer(responder) as srv:
        models = write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})
        env = {**os.environ, "ORBENCH_MODELS_FILE": str(models), KEY_ENV: KEY, "PYTHON": sys.executable,
               "GENERATOR_MODEL": "fake", "REWRITER_MODEL": "fake", "MODERATOR_MODELS": "fake",
               "TARGET_MODEL": "fake", "JUDGE_MODEL": "fake", **settings}
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(["bash", str(PIPELINE), "--run_dir", str(tmp_path / "run"), *args], env=env,
                              capture_output=True, text=True, timeout=600)
        return proc, chat_requests(srv)


def lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip() and "it/s" not in ln and "%|" not in ln]


def test_hard_k_above_the_targets_stops_before_any_request(tmp_path):
    proc, sent = run(tmp_path, protocol_responder, HARD_K="3")
    assert proc.returncode == 2 and sent == []
    (line,) = lines(proc.stderr)
    assert "HARD_K=3" in line and "2 targets" in line
    assert "=== 1." not in proc.stdout


def test_an_endpoint_that_does_not_answer_stops_before_any_request(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc, sent = run(tmp_path, protocol_responder, GENERATOR_MODEL="vllm/some-model",
                     VLLM_BASE_URL=f"http://127.0.0.1:{port}/v1")
    assert proc.returncode == 2 and sent == []
    (line,) = lines(proc.stderr)
    assert "the generator (vllm/some-model)" in line and "cannot reach" in line


def test_the_plan_comes_before_the_first_call(tmp_path):
    proc, _ = run(tmp_path, lambda r: "no list here" if stage_of(r) == "generate" else protocol_responder(r),
                  "--categories", "harmful")
    plan = proc.stdout[: proc.stdout.index("=== 1.")]
    for step in ("stage 1", "stage 2", "stage 3", "stage 4", "stage 5", "stage 5 audit"):
        assert f"\n  {step} " in plan
    assert "max_tokens" in plan and "tokens out <=" in plan


def test_a_stage_1_with_no_seed_stops_the_run_with_one_line(tmp_path):
    proc, sent = run(tmp_path, lambda r: "I would rather not." if stage_of(r) == "generate" else protocol_responder(r),
                     "--categories", "harmful privacy")
    assert proc.returncode == 3
    stops = [ln for ln in lines(proc.stderr) if ln.startswith("stopped at")]
    assert stops == [stops[0]] and "stage 1, harmful" in stops[0] and "generator fake" in stops[0]
    assert "no seed" in stops[0]
    assert "=== 2." not in proc.stdout  # nothing ran on the empty input
    assert {stage_of(r.body) for r in sent} == {"generate"}
