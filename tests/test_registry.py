"""Resolving --model names: registry entries, models files, unregistered ids, keys from the
environment and .env, replicas; and that the key never lands in any file."""

from __future__ import annotations

import asyncio

import pytest

from orbench.run.cli import EXIT_ROWS_FAILED
from orbench.errors import UserError
from orbench.engine.llm import LLMClient
from orbench.engine.registry import DEFAULT_OPENAI_BASE_URL, load_registry, resolve
from orbench.tables.resume import read_rows
from orbench.engine.retry import RetryPolicy

from tests.conftest import FAKE_MODEL, KEY_ENV, STAGE4


def chat(client: LLMClient, prompts):
    async def go():
        try:
            return await asyncio.gather(*[
                client.complete([{"role": "user", "content": p}], temperature=0, max_tokens=10) for p in prompts
            ])
        finally:
            await client.aclose()

    return asyncio.run(go())


def n_chat(srv) -> int:
    return sum(1 for r in srv.requests if r.path.endswith("/chat/completions"))


# --------------------------------------------------------------------------- unregistered names


def test_unknown_name_with_openai_key_is_a_model_id_at_openai_base_url(fake_server, monkeypatch):
    fake_server.api_key = "sk-openai-test"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    ep = resolve("my-finetune-v2")
    assert ep.model == "my-finetune-v2" and ep.base_urls == (fake_server.base_url,)
    assert ep.api_key_env == "OPENAI_API_KEY"
    (res,) = chat(LLMClient(ep, timeout=5, policy=RetryPolicy(attempts=1)), ["hello"])
    assert res.text
    (req,) = fake_server.requests
    assert req.model == "my-finetune-v2" and req.authorization == "Bearer sk-openai-test"


def test_unknown_name_defaults_to_openai(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert resolve("gpt-3.5-turbo-0125").base_urls == (DEFAULT_OPENAI_BASE_URL,)


def test_unknown_name_without_key_is_a_user_error():
    with pytest.raises(UserError) as info:
        resolve("no-such-model")
    msg = str(info.value)
    assert "no-such-model" in msg and "OPENAI_API_KEY" in msg and "\n" not in msg


def test_empty_name_is_a_user_error():
    with pytest.raises(UserError):
        resolve("  ")


def test_known_entry_without_its_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    with pytest.raises(UserError) as info:
        resolve("llama3")
    assert "TOGETHER_API_KEY" in str(info.value) and "llama3" in str(info.value)


def test_known_entry_with_its_key(monkeypatch):
    monkeypatch.setenv("TOGETHER_API_KEY", "tk")
    ep = resolve("llama3")
    assert ep.api_key == "tk" and ep.family == "llama" and "api.together.xyz" in ep.base_urls[0]
    assert "tk" not in repr(ep) and "tk" not in ep.describe()


def test_shipped_local_entry_needs_no_key():
    ep = resolve("local")
    assert ep.is_embedded and ep.api_key == "" and ep.defaults["concurrency"] == 2


# --------------------------------------------------------------------------- models files


def test_models_file_adds_and_overrides_entries(fake_server, write_models, monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, "k")
    path = tmp_path / "mine.toml"
    write_models(fake_server, name="gpt4", model="gpt-4-on-my-proxy", path=path)  # override a shipped entry
    write_models(fake_server, name="brand-new", path=path, concurrency=3, timeout=7.5)  # add one
    ep = resolve("gpt4", path)
    assert ep.base_urls == (fake_server.base_url,) and ep.model == "gpt-4-on-my-proxy" and ep.api_key_env == KEY_ENV
    new = resolve("brand-new", path)
    assert new.model == FAKE_MODEL and new.defaults == {"concurrency": 3, "timeout": 7.5}
    client = LLMClient(new)
    assert client.concurrency == 3 and client.timeout == 7.5
    assert "llama3" in load_registry(path)  # the shipped entries are still there


def test_orbench_models_file_env_and_flag_precedence(fake_server, make_server, write_models, monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, "k")
    other = make_server()
    from_env = write_models(fake_server, name="gpt4", path=tmp_path / "env.toml")
    write_models(fake_server, name="only-in-env", path=from_env)
    from_flag = write_models(other, name="gpt4", path=tmp_path / "flag.toml")
    monkeypatch.setenv("ORBENCH_MODELS_FILE", str(from_env))
    assert resolve("gpt4").base_urls == (fake_server.base_url,)  # env file over the shipped one
    assert resolve("gpt4", from_flag).base_urls == (other.base_url,)  # flag over env
    assert resolve("only-in-env", from_flag).base_urls == (fake_server.base_url,)  # both files apply


@pytest.mark.parametrize("content, match", [(None, "not found"), ("[broken\n", "not valid TOML"),
                                            ('[x]\nmodel = "m"\n', "base_urls")])
def test_bad_models_file_is_a_user_error(tmp_path, content, match):
    path = tmp_path / "models.toml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UserError, match=match):
        resolve("x", path)


# --------------------------------------------------------------------------- replicas


def test_two_base_urls_spread_requests_across_both(make_server, write_models, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "k")
    a, b = make_server(latency=0.05), make_server(latency=0.05)
    ep = resolve("pair", write_models([a, b], name="pair"))
    assert ep.base_urls == (a.base_url, b.base_url)
    results = chat(LLMClient(ep, concurrency=2, timeout=5), [f"question {i}" for i in range(20)])
    assert all(r.text for r in results)
    assert n_chat(a) + n_chat(b) == 20
    assert n_chat(a) >= 5 and n_chat(b) >= 5


def test_stage_cli_uses_every_replica(make_server, write_models, write_prompts, stage4_args, monkeypatch, tmp_path):
    from orbench.stages import alignment

    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.chdir(tmp_path)
    a, b = make_server(latency=0.05), make_server(latency=0.05)
    models = write_models([a, b])
    out = tmp_path / "out" / "fake_merged_prompts.csv"
    assert alignment.main(stage4_args(models, write_prompts([f"q{i}" for i in range(16)]), out, concurrency=2)) == 0
    assert len(read_rows(out)[1]) == 16
    assert n_chat(a) > 0 and n_chat(b) > 0 and n_chat(a) + n_chat(b) == 16


# --------------------------------------------------------------------------- .env and the key


def test_key_in_dotenv_is_picked_up_by_the_stage_cli(fake_server, write_models, write_prompts, stage4_args,
                                                     run_stage, tmp_path):
    fake_server.api_key = "sk-from-dotenv"
    (tmp_path / ".env").write_text(f"{KEY_ENV}=sk-from-dotenv\n")
    out = tmp_path / "out" / "fake_merged_prompts.csv"
    proc = run_stage(STAGE4, *stage4_args(write_models(fake_server), write_prompts(["hi"]), out),
                     env={KEY_ENV: None}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r.authorization for r in fake_server.requests] == ["Bearer sk-from-dotenv"]
    assert len(read_rows(out)[1]) == 1


def test_environment_wins_over_dotenv(fake_server, write_models, write_prompts, stage4_args, run_stage, tmp_path):
    fake_server.api_key = "sk-from-environment"
    (tmp_path / ".env").write_text(f"{KEY_ENV}=sk-from-dotenv-is-wrong\n")
    proc = run_stage(STAGE4, *stage4_args(write_models(fake_server), write_prompts(["hi"])),
                     env={KEY_ENV: "sk-from-environment"}, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r.authorization for r in fake_server.requests] == ["Bearer sk-from-environment"]


def test_missing_key_stops_the_cli_with_one_line(fake_server, write_models, write_prompts, stage4_args, run_stage):
    proc = run_stage(STAGE4, *stage4_args(write_models(fake_server), write_prompts(["hi"])), env={KEY_ENV: None})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert KEY_ENV in proc.stderr and "Traceback" not in proc.stderr
    assert fake_server.requests == []


SECRET = "sk-SECRET-7f3a9c1e5b2d4f6a8c0e"


def test_api_key_is_never_written_anywhere(fake_server, write_models, write_prompts, stage4_args, run_stage,
                                           tmp_path, isolated_env):
    fake_server.api_key = SECRET
    fake_server.fail_when_contains = "BAD"  # some rows fail, so the failed file has content
    models = write_models(fake_server)
    prompts = write_prompts(["hello there", "a BAD one", "REFUSE this", "fine"])
    out = tmp_path / "out" / "fake_merged_prompts.csv"
    outputs = []
    for extra in ([], [], ["--merge_result", "False"]):  # fresh, then all from the cache, then split files
        proc = run_stage(STAGE4, *stage4_args(models, prompts, out, no_cache=False, extra=extra), env={KEY_ENV: SECRET})
        assert proc.returncode == EXIT_ROWS_FAILED, proc.stderr  # the BAD row
        outputs += [proc.stdout, proc.stderr]
    # A refused key: its error message must not echo the key either.
    proc = run_stage(STAGE4, *stage4_args(models, prompts, tmp_path / "o2" / "x_merged_y.csv"),
                     env={KEY_ENV: SECRET[:-1] + "X"})
    assert proc.returncode == 2
    outputs += [proc.stdout, proc.stderr]

    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite3" for p in files) and isolated_env.is_relative_to(tmp_path)
    assert any(p.name.endswith(".run.json") for p in files) and any("_failed_" in p.name for p in files)
    for p in files:
        data = p.read_bytes()
        assert SECRET.encode() not in data and SECRET[:-1].encode() not in data, f"key written to {p}"
    for text in outputs:
        assert SECRET[:-1] not in text
