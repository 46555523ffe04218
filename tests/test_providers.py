"""Provider-qualified model names (vllm/..., openai/..., openai-api/NAME/...) and --base_url /
--api_key_env: where each name goes and which key goes with it; registry names and plain ids
as before; every registry name docs/models.md lists resolves to its model."""

from __future__ import annotations

import re

import pytest

from orbench.errors import UserError
from orbench.engine.registry import DEFAULT_OPENAI_BASE_URL, resolve
from tests.stage_helpers import REPO_ROOT


def test_vllm_name_reads_vllm_base_url_and_its_optional_key(monkeypatch):
    monkeypatch.setenv("VLLM_BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")  # never taken for a vllm/ name
    ep = resolve("vllm/meta-llama/Llama-3.1-8B-Instruct")
    assert (ep.provider, ep.model, ep.base_urls) == ("vllm", "meta-llama/Llama-3.1-8B-Instruct",
                                                     ("http://gpu-box:8000/v1",))
    assert ep.api_key == "" and ep.family == "llama"
    monkeypatch.setenv("VLLM_API_KEY", "vk")
    assert resolve("vllm/m").api_key == "vk"


def test_vllm_name_without_its_url_is_one_line():
    with pytest.raises(UserError, match=r"\$VLLM_BASE_URL"):
        resolve("vllm/m")


def test_openai_name_goes_to_openai_unless_openai_base_url_says_otherwise(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    ep = resolve("openai/gpt-4o")
    assert ep.base_urls == (DEFAULT_OPENAI_BASE_URL,) and ep.model == "gpt-4o" and ep.api_key == "sk-o"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy/v1")
    assert resolve("openai/gpt-4o").base_urls == ("http://proxy/v1",)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        resolve("openai/gpt-4o")


def test_a_registry_name_keeps_its_own_endpoint_whatever_openai_base_url_says(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8000/v1")  # the vLLM recipe of old
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    ep = resolve("gpt4")
    assert ep.base_urls == (DEFAULT_OPENAI_BASE_URL,) and ep.provider == "registry"


def test_google_takes_either_key_variable(monkeypatch):
    monkeypatch.setenv("GOOGLE_API_KEY", "g")
    ep = resolve("google/gemini-1.5-pro")
    assert ep.api_key == "g" and ep.api_key_env == "GOOGLE_API_KEY" and ep.family == "gemini"


def test_openai_api_name_reads_its_own_variables(monkeypatch):
    monkeypatch.setenv("MY_BOX_BASE_URL", "http://box:9000/v1")
    ep = resolve("openai-api/my-box/some/model")
    assert (ep.provider, ep.model, ep.base_urls, ep.api_key_env) == (
        "openai-api/my-box", "some/model", ("http://box:9000/v1",), "MY_BOX_API_KEY")
    with pytest.raises(UserError, match="openai-api/NAME/MODEL"):
        resolve("openai-api/only-a-name")


def test_base_url_never_carries_a_key_meant_for_another_host(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    ep = resolve("gpt4", base_url="http://gpu-box:8000/v1")
    assert ep.base_urls == ("http://gpu-box:8000/v1",) and ep.api_key == ""
    monkeypatch.setenv("BOX_KEY", "bk")
    ep = resolve("openai/gpt-4o", base_url="http://gpu-box:8000/v1", api_key_env="BOX_KEY")
    assert ep.api_key == "bk" and ep.model == "gpt-4o"
    with pytest.raises(UserError, match=r"\$MISSING_KEY"):
        resolve("gpt4", api_key_env="MISSING_KEY")


def test_a_plain_id_with_a_slash_is_still_a_plain_id(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8000/v1")
    ep = resolve("meta-llama/Meta-Llama-3-8B-Instruct")  # "meta-llama" is no provider
    assert ep.model == "meta-llama/Meta-Llama-3-8B-Instruct" and ep.base_urls == ("http://gpu-box:8000/v1",)


def test_every_registry_name_documented_resolves_to_its_model(monkeypatch):
    # gemini-1.5 and claude-3.5-sonnet were once bare dotted TOML keys: nested tables, so the
    # names fell through to plain ids at OpenAI.
    for var in ("OPENAI_API_KEY", "TOGETHER_API_KEY", "GEMINI_API_KEY", "MISTRAL_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(var, "k")
    page = (REPO_ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    registry = page[page.index("## The registry"):page.index("## Providers")]
    rows = re.findall(r"^\| (`[^|]+`) \| ([^|]+) \|", registry, re.M)
    assert len(rows) == 7
    for names, models in rows:
        for name, model in zip(re.findall(r"`([^`]+)`", names), models.split(", ")):
            ep = resolve(name)
            assert ep.provider == "registry", name  # not silently a plain id at OpenAI
            assert ep.model == model.strip(), name
