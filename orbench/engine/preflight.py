"""Checks before a run spends anything: every role's model resolves (its key is set), and its
endpoint answers. Also `unreachable`, the TCP check a stage's client makes before its first
request that leaves the cache (engine/llm.py).

Reachability is one GET {base_url}/models per endpoint with a short timeout
($ORBENCH_PREFLIGHT_TIMEOUT seconds, default 5), carrying the endpoint's own key and nothing
else. No answer at all (a refused connection, an unknown host, a timeout) is a setting that
cannot finish: one line, exit code 2. A 401 or 403 is too, except on the providers whose
/models refuses good keys (providers.toml, ``models_checks_key``), where it is a warning.
Any other answer means the server is there. The embedded model is not probed: it is started
on demand.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Sequence
from urllib.parse import urlsplit

from ..errors import UserError, warn
from .providers import models_checks_key
from .registry import Endpoint, resolve

PROBE_SECONDS = 10.0


def unreachable(base_url: str, seconds: float) -> str | None:
    """Why nothing accepts a connection at ``base_url``'s host and port (refused, an unknown
    host, a timeout), or None when something does. A TCP connection only: no request is sent,
    so no server sees it. Behind a proxy (the *_PROXY variables) the answer is not ours to
    know, and None is returned."""
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                       "ALL_PROXY", "all_proxy")):
        return None
    parts = urlsplit(base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as err:
        return str(err)
    if not parts.hostname:
        return "no host in the URL"
    try:
        with socket.create_connection((parts.hostname, port), timeout=seconds):
            return None
    except OSError as err:  # refused, unknown host, unreachable network, timeout
        return str(err) or type(err).__name__


TIMEOUT_ENV = "ORBENCH_PREFLIGHT_TIMEOUT"
DEFAULT_TIMEOUT = 5.0


@dataclass(frozen=True)
class Role:
    """One role of a run (generator, moderator, target, judge...) and the model(s) it names."""

    role: str
    models: str  # a name, or a comma-separated ensemble
    base_url: str | None = None
    api_key_env: str | None = None

    def names(self) -> list[str]:
        return [m.strip() for m in self.models.split(",") if m.strip()]


def resolve_roles(roles: Sequence[Role], models_file: str | None = None) -> list[tuple[str, Endpoint]]:
    """Every role's endpoints; a missing key or an unknown model is one line naming the role."""
    out = []
    for r in roles:
        for name in r.names():
            try:
                out.append((r.role, resolve(name, models_file, base_url=r.base_url, api_key_env=r.api_key_env)))
            except UserError as err:
                raise UserError(f"the {r.role} ({name}): {err}") from None
    return out


def timeout() -> float:
    try:
        return float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
    except ValueError:
        raise UserError(f"${TIMEOUT_ENV} must be a number of seconds") from None


def probe(role: str, endpoint: Endpoint, seconds: float) -> None:
    """GET {url}/models for each base URL of the endpoint; raises UserError when it cannot work."""
    for url in endpoint.base_urls:
        request = urllib.request.Request(url.rstrip("/") + "/models", method="GET")
        if endpoint.api_key:
            request.add_header("Authorization", f"Bearer {endpoint.api_key}")
        try:
            with urllib.request.urlopen(request, timeout=seconds) as answer:
                _check_listed(role, endpoint, url, answer.read(1_000_000))
        except urllib.error.HTTPError as err:
            if err.code in (401, 403):
                where = f"${endpoint.api_key_env}" if endpoint.api_key_env else "no key"
                msg = f"the {role} ({endpoint.name}): {url} refused the key ({where}) with HTTP {err.code}"
                if models_checks_key(url):
                    raise UserError(msg + "; check the key and its variable") from None
                warn(msg + " on /models (this provider may do so to good keys; going on)")
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise UserError(f"the {role} ({endpoint.name}): cannot reach {url} within {seconds:g} s ({reason}); "
                            f"check the URL and the network, then run the same command again") from None


def _check_listed(role: str, endpoint: Endpoint, url: str, body: bytes) -> None:
    """A server that lists its models and not this one: a warning (some list only a few)."""
    try:
        ids = [str(m.get("id", "")) for m in json.loads(body).get("data", [])]
    except (ValueError, AttributeError, TypeError):
        return
    if ids and not any(i == endpoint.model or i.endswith("/" + endpoint.model) for i in ids):
        shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
        warn(f"the {role} ({endpoint.name}): {url} does not list model '{endpoint.model}' (it lists {shown})")


def check(roles: Sequence[Role], models_file: str | None = None) -> list[tuple[str, Endpoint]]:
    """Resolve every role and probe each endpoint once (the same URL and key are probed once)."""
    endpoints = resolve_roles(roles, models_file)
    seconds = timeout()
    seen: set[tuple[str, str]] = set()
    for role, ep in endpoints:
        if ep.is_embedded or (ep.identity, ep.api_key_env) in seen:
            continue
        seen.add((ep.identity, ep.api_key_env))
        probe(role, ep, seconds)
    return endpoints
