"""Provider-qualified model names: ``vllm/meta-llama/Llama-3.1-8B-Instruct``, ``openai/gpt-4o``.

The provider (the part before the first "/") says where the model lives and which variable
holds its key (``providers.toml``); the rest is the model id sent. ``openai-api/NAME/MODEL``
(Inspect's spelling) is any OpenAI-compatible server at ``$NAME_BASE_URL`` with the optional
key ``$NAME_API_KEY``. Each role of a run (generator, moderator, target, judge) can so live on
its own endpoint with its own key, without a models file.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UserError
from .params import ENTRY_KEYS

SHIPPED_PROVIDERS = Path(__file__).with_name("providers.toml")
OPENAI_API = "openai-api"  # openai-api/NAME/MODEL: $NAME_BASE_URL, $NAME_API_KEY


@dataclass(frozen=True)
class Location:
    """Where a model is and where its key may come from (no key held here)."""

    provider: str
    model: str
    base_urls: tuple[str, ...]
    key_envs: tuple[str, ...]
    key_required: bool
    family: str = ""
    params: tuple = ()  # (key, value) pairs of engine/params.py's ENTRY_KEYS the provider sets


@dataclass(frozen=True)
class Provider:
    name: str
    base_url: str
    base_url_env: str
    key_envs: tuple[str, ...]
    key_required: bool
    family: str = ""
    models_checks_key: bool = True
    params: tuple = ()  # (key, value) pairs of engine/params.py's ENTRY_KEYS


@functools.lru_cache(maxsize=1)
def providers() -> dict[str, Provider]:
    with open(SHIPPED_PROVIDERS, "rb") as fh:
        raw = tomllib.load(fh)
    out = {}
    for name, e in raw.items():
        envs = e.get("api_key_env", ())
        out[name] = Provider(name, str(e.get("base_url", "")), str(e.get("base_url_env", "")),
                             (envs,) if isinstance(envs, str) else tuple(envs), bool(e.get("key_required", True)),
                             str(e.get("family", "")), bool(e.get("models_checks_key", True)),
                             tuple((k, e[k]) for k in ENTRY_KEYS if k in e))
    return out


def _env_prefix(name: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


def locate(name: str) -> Location | None:
    """The location of a provider-qualified name, or None when its first part is no provider."""
    first, sep, rest = name.partition("/")
    if not sep:
        return None
    if first == OPENAI_API:
        server, sep, model = rest.partition("/")
        if not (sep and server and model):
            raise UserError(f"'{name}': write openai-api/NAME/MODEL (the URL in $NAME_BASE_URL)")
        prefix = _env_prefix(server)
        return _located(name, f"{OPENAI_API}/{server}", model, "", f"{prefix}_BASE_URL", (f"{prefix}_API_KEY",),
                        False, "")
    p = providers().get(first)
    if p is None:
        return None
    if not rest:
        raise UserError(f"'{name}' names no model: write {first}/MODEL")
    loc = _located(name, p.name, rest, p.base_url, p.base_url_env, p.key_envs, p.key_required, p.family)
    return replace(loc, params=p.params)


def _located(name: str, provider: str, model: str, base_url: str, base_url_env: str, key_envs: tuple[str, ...],
             key_required: bool, family: str) -> Location:
    url = (os.environ.get(base_url_env) if base_url_env else "") or base_url
    if not url:
        raise UserError(f"{name} needs the server's URL in ${base_url_env} (e.g. http://gpu-box:8000/v1), "
                        f"or --base_url")
    return Location(provider, model, (url,), key_envs, key_required, family)


def override(loc: Location, base_url: str | None, api_key_env: str | None) -> Location:
    """--base_url / --api_key_env. With another URL the key comes only from --api_key_env: a
    key configured for one host is never sent to another."""
    if base_url:
        envs = (api_key_env,) if api_key_env else ()
        return replace(loc, base_urls=(base_url,), key_envs=envs, key_required=bool(api_key_env))
    if api_key_env:
        return replace(loc, key_envs=(api_key_env,), key_required=True)
    return loc


def find_key(name: str, loc: Location) -> tuple[str, str]:
    """(variable, key) for a location: the first of its variables that is set. A required key
    that is missing is one line naming the variable(s)."""
    for env in loc.key_envs:
        key = os.environ.get(env, "")
        if key:
            return env, key
    if loc.key_required:
        names = " or ".join(f"${e}" for e in loc.key_envs)
        raise UserError(f"{name} needs an API key in {names}: set it in the environment or in a .env file")
    return (loc.key_envs[0] if loc.key_envs else ""), ""


def models_checks_key(base_url: str) -> bool:
    """Does GET {base_url}/models answer 401 only to a bad key? False for the providers known
    to refuse good keys there; true for every other server (vLLM, llama.cpp, OpenAI...)."""
    url = base_url.rstrip("/")
    return all(p.models_checks_key for p in providers().values() if p.base_url and p.base_url.rstrip("/") == url)


def known() -> list[str]:
    return sorted(providers()) + [f"{OPENAI_API}/NAME"]
