"""Which failures are worth retrying, and how long to wait. Tenacity owns the retry loop, from
the first transient failure on (LLMClient.send makes a request's first attempt itself).

- 429 (rate limit): wait what ``Retry-After`` asks (or back off), then retry; a 429 does not
  use up one of the attempts, but a request stops being retried after ORBENCH_MAX_RETRY_SECONDS
  (default 900 s);
- 5xx, timeouts, connection errors, garbled replies: exponential backoff with jitter;
- 400/422: the request itself is bad: fail this row at once. A 400 that names a parameter the
  model does not take (OpenAI's ``unsupported_parameter`` / ``unsupported_value``) is an
  ``UnsupportedParameter``: the client learns from it (engine/params.py) instead;
- 401/403/404 and exhausted quota: the endpoint will refuse everything: stop the run.

ORBENCH_BACKOFF_BASE (seconds, default 1) scales the exponential backoff; tests set it to 0.
``Retry-After`` is always honoured, capped at ORBENCH_MAX_RETRY_AFTER (default 120 s).
"""

from __future__ import annotations

import functools
import os
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

if TYPE_CHECKING:
    import openai  # imported in classify(), the only place that needs it at run time


class TransientError(Exception):
    """Worth another try. ``retry_after`` is the server's requested wait, if any."""

    def __init__(self, message: str, retry_after: float | None = None, *, rate_limited: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.rate_limited = rate_limited


class RequestError(Exception):
    """This request fails for good (bad request, garbled reply after all retries)."""


class UnsupportedParameter(RequestError):
    """HTTP 400 naming a parameter this model does not take (or a value of it): every request
    sent the same way fails the same way. ``param`` is the parameter named."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


class EndpointError(Exception):
    """Every request to this endpoint will fail (bad key, no access, unknown model, no quota)."""


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    backoff_base: float = float(os.environ.get("ORBENCH_BACKOFF_BASE", "1.0"))
    backoff_max: float = 60.0
    max_retry_after: float = float(os.environ.get("ORBENCH_MAX_RETRY_AFTER", "120"))
    # A 429 says "not now", not "broken": it does not use up an attempt. This bounds how long
    # one request may keep being rate-limited before it is recorded as failed.
    max_seconds: float = float(os.environ.get("ORBENCH_MAX_RETRY_SECONDS", "900"))

    def stop(self, state: RetryCallState, started: float | None = None) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        hard = getattr(state, "orbench_hard_failures", 0)
        if not (isinstance(exc, TransientError) and exc.rate_limited):
            hard += 1
        state.orbench_hard_failures = hard  # type: ignore[attr-defined]
        elapsed = state.seconds_since_start if started is None else state.outcome_timestamp - started
        return hard >= self.attempts or elapsed >= self.max_seconds

    def wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return min(max(exc.retry_after, 0.0), self.max_retry_after)
        if self.backoff_base <= 0:
            return 0.0
        # Exponential with full jitter: spreads retries of many concurrent requests.
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** (state.attempt_number - 1)))
        return random.uniform(ceiling / 2, ceiling)

    def retrying(self, started: float | None = None) -> AsyncRetrying:
        """Tenacity's loop. ``started`` (time.monotonic()) is when the request's first attempt
        began, when that attempt ran before this loop (LLMClient.send): max_seconds counts from it."""
        return AsyncRetrying(
            retry=retry_if_exception(lambda e: isinstance(e, TransientError)),
            wait=self.wait,
            stop=self.stop if started is None else functools.partial(self.stop, started=started),
            reraise=True,
        )


def _retry_after_seconds(response) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (number of seconds only)."""
    if response is None:
        return None
    headers = response.headers
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) / scale
            except ValueError:
                continue  # an HTTP date: fall back to our own backoff
    return None


def _error_code(err: openai.APIStatusError) -> str:
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    code = inner.get("code") if isinstance(inner, dict) else None
    kind = inner.get("type") if isinstance(inner, dict) else None
    return f"{code or ''} {kind or ''}".strip()


def classify(err: BaseException, where: str) -> Exception:
    """Map an exception from the openai client to one of our three classes.
    ``where`` names the model and endpoint for the message (never the key)."""
    if isinstance(err, (TransientError, RequestError, EndpointError)):
        return err
    import openai  # here, not at the top: loaded already by whoever made the failing call

    if isinstance(err, openai.APITimeoutError):
        return TransientError(f"timed out waiting for {where}")
    if isinstance(err, openai.APIConnectionError):
        return TransientError(f"could not connect to {where}: {err}")
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        code = _error_code(err)
        detail = f"HTTP {status}{' ' + code if code else ''} from {where}"
        if status == 429:
            if "insufficient_quota" in code:
                return EndpointError(f"{detail}: the account's quota is exhausted")
            return TransientError(detail, retry_after=_retry_after_seconds(err.response), rate_limited=True)
        if status in (401, 403):
            return EndpointError(f"{detail}: the API key was refused; check the key for this endpoint")
        if status == 404:
            return EndpointError(f"{detail}: the model or URL does not exist there")
        if status == 408 or status >= 500:
            return TransientError(detail, retry_after=_retry_after_seconds(err.response))
        param = _unsupported_param(err) if status == 400 else None
        if param:
            return UnsupportedParameter(f"{detail}: {_short(err)}", param)
        return RequestError(f"{detail}: {_short(err)}")
    if isinstance(err, (openai.APIResponseValidationError, ValueError, KeyError, TypeError)):
        return TransientError(f"unreadable reply from {where}: {type(err).__name__}")
    return err if isinstance(err, Exception) else RuntimeError(str(err))


_UNSUPPORTED = re.compile(r"Unsupported (?:parameter|value): '([\w.]+)'")
_UNSUPPORTED_CODES = ("unsupported_parameter", "unsupported_value")


def _unsupported_param(err: openai.APIStatusError) -> str | None:
    """The parameter a 400 says the model does not take (OpenAI's error.param with code
    unsupported_parameter/unsupported_value, or named in its message), else None."""
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    inner = inner if isinstance(inner, dict) else {}
    param = inner.get("param")
    if inner.get("code") in _UNSUPPORTED_CODES and isinstance(param, str) and param:
        return param
    named = _UNSUPPORTED.search(str(inner.get("message") or ""))
    return named.group(1) if named else None


def _short(err: openai.APIStatusError) -> str:
    body = err.body if isinstance(err.body, dict) else {}
    inner = body.get("error", body) if isinstance(body, dict) else {}
    msg = inner.get("message") if isinstance(inner, dict) else None
    return (msg or str(err))[:300]
