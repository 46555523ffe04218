"""Model registry: resolve a short model name to an endpoint (base URLs, key, model id, family)."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import providers
from ..errors import UserError
from .params import ModelParams, entry_params

SHIPPED_REGISTRY = Path(__file__).with_name("models.toml")
EMBEDDED = "embedded"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
# Endpoint.provider of a registry entry and of a plain model id (else the provider's name).
REGISTRY = "registry"
PLAIN = "openai-compatible"


@dataclass(frozen=True)
class Endpoint:
    """Where one model lives. The key is held here only to build clients; it is never
    part of repr, the cache key, logs or outputs."""

    name: str
    model: str
    base_urls: tuple[str, ...]
    family: str
    api_key_env: str
    api_key: str = field(default="", repr=False, compare=False)
    defaults: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    provider: str = field(default="", compare=False)  # registry, openai, vllm, ...: what the name named
    # How the model takes its cap and temperature, and whether it thinks (engine/params.py).
    params: ModelParams = field(default_factory=ModelParams, compare=False)

    @property
    def is_embedded(self) -> bool:
        return self.base_urls == (EMBEDDED,)

    @property
    def identity(self) -> str:
        """What the cache key uses for 'the endpoint': stable across runs and ports."""
        if self.is_embedded:
            return f"{EMBEDDED}:{self.model}"
        return ",".join(u.rstrip("/") for u in self.base_urls)

    def describe(self) -> str:
        """Name and endpoint for messages (no key)."""
        where = "the embedded llama.cpp server" if self.is_embedded else " ".join(self.base_urls)
        return f"model '{self.name}' ({self.model}) at {where}"


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"models file not found: {path}") from None
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"models file {path} is not valid TOML: {err}") from None


def load_registry(models_file: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """The shipped registry, overridden by ORBENCH_MODELS_FILE, overridden by --models_file."""
    entries = dict(_load_toml(SHIPPED_REGISTRY))
    for extra in (os.environ.get("ORBENCH_MODELS_FILE"), models_file):
        if extra:
            entries.update(_load_toml(Path(extra)))
    return entries


def _as_urls(value: Any, name: str) -> tuple[str, ...]:
    urls = [value] if isinstance(value, str) else list(value or [])
    if not urls or not all(isinstance(u, str) and u for u in urls):
        raise UserError(f"registry entry '{name}' needs base_urls: a URL or a list of URLs")
    return tuple(urls)


def resolve(name: str, models_file: str | os.PathLike | None = None, *, base_url: str | None = None,
            api_key_env: str | None = None) -> Endpoint:
    """Resolve a --model value: a registry name, a provider-qualified name (``vllm/MODEL``,
    ``openai/MODEL``, see providers.toml) or a plain model id. ``base_url`` and ``api_key_env``
    (--base_url, --api_key_env) move it to another endpoint. Raises UserError when the model
    cannot be reached as configured."""
    name = (name or "").strip()
    if not name:
        raise UserError("no model given: pass --model NAME (a registry name such as 'local', or a model id)")
    registry = load_registry(models_file)
    entry = registry.get(name)
    loc = _registered(name, entry) if entry is not None else (providers.locate(name) or _plain(name))
    loc = providers.override(loc, base_url, api_key_env)
    if loc.provider == PLAIN and not (base_url or api_key_env) and not os.environ.get("OPENAI_API_KEY"):
        known = ", ".join(sorted(registry))
        raise UserError(
            f"unknown model '{name}': it is not in the registry ({known}) nor provider-qualified "
            f"(PROVIDER/MODEL, PROVIDER one of {', '.join(providers.known())}), and OPENAI_API_KEY is not set for it at "
            f"{loc.base_urls[0]}. Use a registry name, a provider such as vllm/{name} (with VLLM_BASE_URL), "
            f"or set OPENAI_API_KEY (and OPENAI_BASE_URL)"
        )
    key_env, key = providers.find_key(name, loc)
    try:
        params = entry_params(loc.model, entry if isinstance(entry, dict) else None, dict(loc.params))
    except ValueError as err:
        raise UserError(f"model '{name}': {err}") from None
    return Endpoint(
        name=name,
        model=loc.model,
        base_urls=loc.base_urls,
        family=loc.family or family_guess(loc.model),
        api_key_env=key_env,
        api_key=key,
        defaults=dict(entry.get("defaults", {})) if entry is not None else {},
        provider=loc.provider,
        params=params,
    )


# Which of the original keyword rules (orbench.refusal.families) fits a model id: registry data,
# used for ids the registry does not list. "generic" is orbench.refusal.names.GENERIC.
_MODEL_FAMILY = (
    (re.compile(r"gpt-?3\.5|gpt-?35|text-davinci"), "gpt-3.5"),
    (re.compile(r"gpt-?4|chatgpt-4o|\bo[134](?:-|$)"), "gpt-4"),
    (re.compile(r"claude"), "claude"),
    (re.compile(r"gemini|palm|bison"), "gemini"),
    (re.compile(r"mistral|mixtral|codestral|ministral"), "mistral"),
    (re.compile(r"llama"), "llama"),
    (re.compile(r"qwen"), "qwen"),
)
GENERIC_FAMILY = "generic"


def family_for_model(model_id: str, default: str = GENERIC_FAMILY) -> str:
    """Best guess of the rule family for a model id such as 'gpt-4o-2024-05-13'."""
    name = model_id.lower().rsplit("/", 1)[-1]
    for pattern, family in _MODEL_FAMILY:
        if pattern.search(name):
            return family
    return default


def family_guess(model: str) -> str:
    return family_for_model(model)


def _registered(name: str, entry: Any) -> providers.Location:
    if not isinstance(entry, dict) or "model" not in entry:
        raise UserError(f"registry entry '{name}' needs at least 'model' and 'base_urls'")
    urls = _as_urls(entry.get("base_urls", entry.get("base_url")), name)
    key_env = str(entry.get("api_key_env", "") or "")
    return providers.Location(REGISTRY, str(entry["model"]), urls, (key_env,) if key_env else (), bool(key_env),
                              str(entry.get("family") or ""))


def _plain(name: str) -> providers.Location:
    """Not registered, no provider: a model id on the OpenAI-compatible endpoint the openai
    client itself would use, configured by its own variables."""
    base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
    return providers.Location(PLAIN, name, (base_url,), ("OPENAI_API_KEY",), True)
