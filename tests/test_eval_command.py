"""`orbench eval`: a target on one fake server and a judge on another, each with its own key
(provider-qualified names, and per-role --base_url/--api_key_env), the report with both
rates, the audit and the paper's points; a re-run that pays for nothing; settings that cannot
finish stopped before any request; a step with nothing usable stopped with one line."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pandas as pd
import pytest

from orbench.commands import eval_command
from orbench.testing.fake_openai import FakeOpenAIServer, NullContent
from tests.responders import audit_labels, knowing_audit_reply, protocol_responder, stage_of

TARGET_KEY, JUDGE_KEY, DECOY_KEY = "sk-target-111", "sk-judge-222", "sk-decoy-333"
TARGET_ID, JUDGE_ID = "meta-llama/Llama-3.1-8B-Instruct", "gpt-4-turbo-2024-04-09"


def judge_responder(request):
    """Passes its audit (it knows the labels); judges the rest as the protocol responder."""
    if stage_of(request) == "audit":
        return knowing_audit_reply(request, audit_labels())
    return protocol_responder(request)


@pytest.fixture
def servers():
    target = FakeOpenAIServer(protocol_responder, api_key=TARGET_KEY, models=(TARGET_ID,)).start()
    judge = FakeOpenAIServer(judge_responder, api_key=JUDGE_KEY, models=(JUDGE_ID,)).start()
    yield target, judge
    target.stop()
    judge.stop()


def chats(server) -> list:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def point_providers_at(monkeypatch, target, judge) -> None:
    """vllm/ names at the target's server with its key, openai/ names at the judge's with its own."""
    monkeypatch.setenv("VLLM_BASE_URL", target.base_url)
    monkeypatch.setenv("VLLM_API_KEY", TARGET_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)


def assert_keys_stayed_home(target, judge, run: Path) -> None:
    """Both reached, each only with its own key; no key in any file written."""
    assert chats(target) and chats(judge)
    assert {r.authorization for r in target.requests} == {f"Bearer {TARGET_KEY}"}
    assert {r.authorization for r in judge.requests} == {f"Bearer {JUDGE_KEY}"}
    for f in run.rglob("*"):
        if f.is_file() and f.suffix in (".csv", ".json", ".md", ".html"):
            text = f.read_text(encoding="utf-8", errors="replace")
            assert not any(k in text for k in (TARGET_KEY, JUDGE_KEY, DECOY_KEY)), f


def test_provider_names_put_target_and_judge_on_their_own_servers(servers, tmp_path, monkeypatch, capsys):
    target, judge = servers
    point_providers_at(monkeypatch, target, judge)
    run = tmp_path / "run"
    code = eval_command.main([f"--model=vllm/{TARGET_ID}", f"--judge=openai/{JUDGE_ID}", "--limit=5",
                              f"--output_dir={run}"])
    out = capsys.readouterr().out
    assert code == 0, out
    # The plan came first, before any chat request, with both roles and their caps.
    plan = out[: out.index("=== stage 4")]
    assert f"vllm/{TARGET_ID}" in plan and f"openai/{JUDGE_ID}" in plan and "max_tokens" in plan
    assert "stage 5 audit" in plan and "tokens out <=" in plan
    assert_keys_stayed_home(target, judge, run)
    # The report: both rates from the judge (it passed its audit), and the paper's 32 beside them.
    summary = pd.read_csv(run / "report" / "summary.csv", keep_default_na=False)
    ours = summary[summary["model"] == f"vllm/{TARGET_ID} (published sets)"].iloc[0]
    assert ours["hard_rejection_pct"] != "" and ours["toxic_rejection_pct"] != ""
    assert ours["hard_scored_by"].startswith("judge") and ours["toxic_scored_by"].startswith("judge")
    page = (run / "report" / "report.html").read_text(encoding="utf-8")
    assert "GPT-4o" in page  # one of the paper's models
    # Each role's provider and base URL on record, never a key.
    record = json.loads((run / "eval.run.json").read_text())
    assert record["target"]["provider"] == "vllm" and record["target"]["base_url"] == target.base_url
    assert record["judge"][0]["provider"] == "openai" and record["judge"][0]["base_url"] == judge.base_url
    judged = json.loads(next((run / "judged").glob("*hard-1k*.run.json")).read_text())
    assert judged["provider"] == "openai" and judged["target_provider"] == "vllm"
    assert judged["audit"]["verdict"] == "passed" and judged["audit"]["size"] == 100


def test_base_url_and_api_key_env_per_role_never_send_another_hosts_key(servers, tmp_path, monkeypatch, capsys):
    target, judge = servers
    monkeypatch.setenv("OPENAI_API_KEY", DECOY_KEY)  # a plain id would use it: --base_url must not
    monkeypatch.setenv("MY_TARGET_KEY", TARGET_KEY)
    monkeypatch.setenv("JUDGEBOX_BASE_URL", judge.base_url)
    monkeypatch.setenv("JUDGEBOX_API_KEY", JUDGE_KEY)
    run = tmp_path / "run"
    code = eval_command.main([f"--model={TARGET_ID}", f"--base_url={target.base_url}", "--api_key_env=MY_TARGET_KEY",
                              f"--judge=openai-api/judgebox/{JUDGE_ID}", "--limit=3", "--judge_sample=2",
                              f"--output_dir={run}"])
    assert code == 0, capsys.readouterr()
    assert_keys_stayed_home(target, judge, run)
    stage4 = json.loads(next((run / "results").glob("*hard-1k.run.json")).read_text())
    assert stage4["endpoint"] == target.base_url and stage4["provider"] == "openai-compatible"


def test_a_rerun_resumes_and_pays_for_nothing(servers, tmp_path, monkeypatch, capsys):
    target, judge = servers
    point_providers_at(monkeypatch, target, judge)
    monkeypatch.setenv("ORBENCH_LIMIT", "4")  # the documented way to scale a command down
    run = tmp_path / "run"
    args = [f"--model=vllm/{TARGET_ID}", f"--judge=openai/{JUDGE_ID}", f"--output_dir={run}"]
    assert eval_command.main(args) == 0
    first = (run / "report" / "summary.csv").read_bytes()
    sent = len(chats(target)), len(chats(judge))
    assert sent[0] == 8  # 4 prompts of each set
    capsys.readouterr()
    assert eval_command.main(args) == 0
    assert (len(chats(target)), len(chats(judge))) == sent
    assert (run / "report" / "summary.csv").read_bytes() == first


@pytest.mark.parametrize("case", ["unreachable", "no judge key", "no vllm url", "wrong target key"])
def test_settings_that_cannot_finish_stop_before_any_request(servers, tmp_path, monkeypatch, capsys, case):
    target, judge = servers
    monkeypatch.setenv("VLLM_BASE_URL", target.base_url)
    monkeypatch.setenv("VLLM_API_KEY", TARGET_KEY if case != "wrong target key" else JUDGE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", JUDGE_KEY)
    if case == "unreachable":
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    elif case == "no judge key":
        monkeypatch.delenv("OPENAI_API_KEY")
    elif case == "no vllm url":
        monkeypatch.delenv("VLLM_BASE_URL")
    run = tmp_path / "run"
    code = eval_command.main([f"--model=vllm/{TARGET_ID}", f"--judge=openai/{JUDGE_ID}", f"--output_dir={run}"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and err[0].startswith("error: the ")
    assert {"unreachable": "cannot reach", "no judge key": "OPENAI_API_KEY",
            "no vllm url": "VLLM_BASE_URL", "wrong target key": "HTTP 401"}[case] in err[0]
    assert chats(target) == [] and chats(judge) == [] and not run.exists()


def test_a_step_with_nothing_usable_stops_with_one_line(tmp_path, monkeypatch, capsys):
    with FakeOpenAIServer(lambda request: NullContent(), models=(TARGET_ID,)) as target:
        monkeypatch.setenv("VLLM_BASE_URL", target.base_url)
        run = tmp_path / "run"
        code = eval_command.main([f"--model=vllm/{TARGET_ID}", "--judge=none", "--limit=3", f"--output_dir={run}"])
    err = capsys.readouterr().err
    assert code == 3
    (line,) = [ln for ln in err.splitlines() if ln.startswith("orbench eval: stopped")]
    assert "stage 4" in line and f"vllm/{TARGET_ID}" in line and "scored reply" in line
    assert not (run / "report").exists()  # the next step never ran on an empty input
