"""Model registry: resolve a short model name to an endpoint (base URLs, key, model id, family)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UserError

SHIPPED_REGISTRY = Path(__file__).with_name("models.toml")
EMBEDDED = "embedded"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"


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


def resolve(name: str, models_file: str | os.PathLike | None = None) -> Endpoint:
    """Resolve a --model value. Raises UserError when the model cannot be reached as configured."""
    from .refusal import family_for_model  # family guess for unregistered ids

    name = (name or "").strip()
    if not name:
        raise UserError("no model given: pass --model NAME (a registry name such as 'local', or a model id)")
    registry = load_registry(models_file)
    entry = registry.get(name)
    if entry is None:
        # Not registered: a model id on the OpenAI-compatible endpoint the openai client
        # itself would use, configured by its own variables.
        base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        key = os.environ.get("OPENAI_API_KEY", "")
        if not key:
            known = ", ".join(sorted(registry))
            raise UserError(
                f"unknown model '{name}': it is not in the registry ({known}), and OPENAI_API_KEY "
                f"is not set for it at {base_url}. Use a registry name, or set OPENAI_API_KEY "
                f"(and OPENAI_BASE_URL for a vLLM server)"
            )
        return Endpoint(
            name=name,
            model=name,
            base_urls=(base_url,),
            family=family_for_model(name),
            api_key_env="OPENAI_API_KEY",
            api_key=key,
        )
    if not isinstance(entry, dict) or "model" not in entry:
        raise UserError(f"registry entry '{name}' needs at least 'model' and 'base_urls'")
    urls = _as_urls(entry.get("base_urls", entry.get("base_url")), name)
    key_env = entry.get("api_key_env", "")
    key = ""
    if key_env:
        key = os.environ.get(key_env, "")
        if not key:
            raise UserError(
                f"{name} needs an API key in ${key_env}: set it in the environment or in a .env file"
            )
    return Endpoint(
        name=name,
        model=str(entry["model"]),
        base_urls=urls,
        family=str(entry.get("family") or family_for_model(str(entry["model"]))),
        api_key_env=key_env,
        api_key=key,
        defaults=dict(entry.get("defaults", {})),
    )
