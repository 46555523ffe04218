"""The one narrow interface every stage uses to call a model.

``LLMClient.complete(messages, temperature=..., max_tokens=...)`` returns an ``LLMResult``.
It goes through the openai async client (its own retries off, finite timeout), with tenacity
deciding retries (see ``retry.py``), a per-base-URL concurrency bound, and the response cache.
The parameters a request is sent with are the model's (``params.py``): a client that an
endpoint answers with HTTP 400 for a parameter learns once and sends the request again.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import warn
from .cache import ResponseCache, cache_key
from .completion import CONTENT_FILTER, LLMResult, Unreadable, cacheable, result_from_completion
from .params import ModelParams, fix_for
from .registry import Endpoint
from .retry import EndpointError, RequestError, RetryPolicy, TransientError, UnsupportedParameter, classify

if TYPE_CHECKING:
    import openai  # imported where the client is made: `--help` should not pay for it

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT = 120.0


class CallFailed(Exception):
    """A request failed for good; the row is recorded as failed with this message."""


@dataclass(frozen=True)
class ChatRequest:
    """One chat call a stage asks for: which of its models (an index into the stage's
    clients), the messages, and the settings that shape the reply."""

    model: int
    messages: tuple[dict[str, str], ...]
    temperature: float
    max_tokens: int
    sample: int = 0
    grammar: str | None = None
    reasoning_effort: str | None = None  # sent only when given (--reasoning_effort)


@dataclass(frozen=True)
class Prepared:
    """A request as it goes on the wire: its cache key ("" without a cache) and its settings."""

    key: str
    messages: list[dict[str, str]]
    settings: dict[str, Any]
    params: ModelParams | None = field(default=None, compare=False)  # the client's, when prepared


def request_body(model: str, messages: list[dict[str, str]], settings: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions body the online path sends (grammar as llama.cpp's extra field)."""
    return {"model": model, "messages": messages, **settings}


@dataclass
class _Replica:
    url: str
    client: openai.AsyncOpenAI
    slots: asyncio.Semaphore
    in_flight: int = 0


@dataclass
class ClientStats:
    requests: int = 0
    cached: int = 0
    failed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0  # of completion_tokens, those the model spent thinking
    param_refusals: int = 0  # requests refused with HTTP 400 for a parameter, then sent as the model takes them


class LLMClient:
    """Calls one endpoint (one or more replicas of one model)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        concurrency: int | None = None,
        timeout: float | None = None,
        cache: ResponseCache | None = None,
        policy: RetryPolicy | None = None,
        probe_first: bool = False,
    ) -> None:
        self.endpoint = endpoint
        defaults = endpoint.defaults
        self.concurrency = int(concurrency or defaults.get("concurrency") or DEFAULT_CONCURRENCY)
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.timeout = float(timeout or defaults.get("timeout") or DEFAULT_TIMEOUT)
        self.cache = cache
        self.policy = policy or RetryPolicy()
        self.stats = ClientStats()
        self.send_seed = bool(defaults.get("send_seed", True))
        self.use_grammar = bool(defaults.get("grammar", False))
        urls = endpoint.base_urls
        if endpoint.is_embedded:
            from .local_server import ensure_local_server

            urls = ensure_local_server()
        self._urls = urls
        self._replicas: list[_Replica] | None = None  # built lazily inside the event loop
        self._fatal: EndpointError | None = None  # set once the endpoint refused us for good
        # A stage's client checks, before its first request leaves the cache, that something
        # answers at the endpoint at all: a wrong URL is then one line at once, not minutes of
        # retries per row. (A client made by hand retries refused connections, as a server
        # that is still starting needs.)
        self._unprobed = probe_first and not endpoint.is_embedded
        self._probe_lock: asyncio.Lock | None = None
        # How the model takes its cap and temperature; a 400 naming one of them changes it, and
        # the cache remembers that for the next run (its plan and its requests).
        self.params = endpoint.params
        if cache is not None:
            self.params = self.params.recalled(cache.get(self._params_key()))
        # Until the first request's first attempt has an answer, the others wait: a model that
        # refuses a parameter refuses one request, not one per request in flight.
        self._unsettled = not endpoint.is_embedded
        self._answered: asyncio.Event | None = None

    @property
    def where(self) -> str:
        return self.endpoint.describe()

    def _replica_pool(self) -> list[_Replica]:
        if self._replicas is None:
            import openai  # deliberately here, not at the top: about 0.5 s to import

            self._replicas = [
                _Replica(
                    url=url,
                    client=openai.AsyncOpenAI(
                        base_url=url,
                        api_key=self.endpoint.api_key or "no-key-needed",
                        max_retries=0,
                        timeout=self.timeout,
                    ),
                    slots=asyncio.Semaphore(self.concurrency),
                )
                for url in self._urls
            ]
        return self._replicas

    def _params_key(self) -> str:
        """Where the cache keeps what this endpoint's model taught about its parameters."""
        return cache_key(self.endpoint.identity, self.endpoint.model, [], {"learnt": "parameters"})

    def key_for(self, messages: list[dict[str, str]], settings: dict[str, Any], sample: int) -> str:
        return cache_key(self.endpoint.identity, self.endpoint.model, messages, settings, sample)

    def prepare(self, request: ChatRequest) -> Prepared:
        """The settings sent and the cache key of a request, without sending it."""
        settings = self.params.settings(request.temperature, request.max_tokens, request.reasoning_effort)
        if settings.get("temperature", 0.0) > 0 and self.send_seed:
            # Sample n of a request carries seed n: servers that honour it (vLLM, llama.cpp,
            # OpenAI best-effort) give the same sample again even without our cache.
            settings["seed"] = int(request.sample)
        if request.grammar and self.use_grammar:
            settings["grammar"] = request.grammar  # sent in the body as llama.cpp's extension field
        messages = list(request.messages)
        key = self.key_for(messages, settings, request.sample) if self.cache is not None else ""
        return Prepared(key, messages, settings, self.params)

    def sent(self, temperature: float, max_tokens: int, reasoning_effort: str | None = None) -> dict[str, Any]:
        """What this client sends for these settings, for the run record (engine/params.py)."""
        return self.params.info(temperature, max_tokens, reasoning_effort)

    def body(self, prepared: Prepared) -> dict[str, Any]:
        """The chat-completions body of a prepared request (a batch file's line)."""
        return request_body(self.endpoint.model, prepared.messages, prepared.settings)

    def cached(self, prepared: Prepared) -> LLMResult | None:
        """The cached reply of a prepared request, counted as a cache hit; None if there is none."""
        if self.cache is None:
            return None
        hit = self.cache.get(prepared.key)
        if hit is None:
            return None
        self.stats.cached += 1
        return LLMResult.from_cache(hit)

    def refuse(self, reason: str) -> CallFailed:
        """A request this client will not send (e.g. an offline finish): counted as failed."""
        self.stats.failed += 1
        return CallFailed(reason)

    async def complete(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float,
        max_tokens: int,
        sample: int = 0,
        grammar: str | None = None,
        reasoning_effort: str | None = None,
    ) -> LLMResult:
        """One chat completion. Raises CallFailed (this request failed for good) or
        EndpointError (nothing will work at this endpoint: stop the run).

        ``grammar`` (llama.cpp GBNF) is sent only to endpoints whose registry entry has
        ``grammar = true``; elsewhere it is ignored."""
        return await self.send(ChatRequest(0, tuple(messages), temperature, max_tokens, sample, grammar,
                                           reasoning_effort))

    async def send(self, request: ChatRequest) -> LLMResult:
        """``complete`` for a ChatRequest: the cache first, then the endpoint with retries."""
        prepared = self.prepare(request)
        hit = self.cached(prepared)
        if hit is not None:
            return hit
        if self._unprobed:
            await self._probe()
        return await self._exchange(request, prepared)

    async def _turn(self) -> bool:
        """While the parameters are untried (the first request, or the first after a 400
        changed them), one request goes and the others wait for its answer. True: this one goes."""
        while self._unsettled:
            if self._answered is None:
                self._answered = asyncio.Event()
                return True
            await self._answered.wait()
        return False

    def _settle(self) -> None:
        """The trying request has its answer (or failure): the others may go."""
        self._unsettled = False
        if self._answered is not None:
            self._answered.set()
            self._answered = None

    async def _exchange(self, request: ChatRequest, prepared: Prepared) -> LLMResult:
        """The endpoint's reply. A 400 naming a parameter the model does not take changes it
        once (``_learn``), and the request goes again as the model takes it, after the cache:
        a resumed run that learns it anew finds the reply it paid for."""
        while True:
            trying = await self._turn()
            if prepared.params is not self.params:  # learnt while this one waited
                prepared = self.prepare(request)
                hit = self.cached(prepared)
                if hit is not None:
                    if trying:
                        self._settle()
                    return hit
            try:
                result = await self._attempts(prepared, trying)
            except UnsupportedParameter as err:
                self.stats.param_refusals += 1
                if prepared.params is self.params:  # (else another request has learnt it already)
                    self._learn(err, request)
                continue
            self.stats.requests += 1
            self.stats.prompt_tokens += result.prompt_tokens
            self.stats.completion_tokens += result.completion_tokens
            self.stats.reasoning_tokens += result.reasoning_tokens
            if self.cache is not None and cacheable(result):
                self.cache.put(prepared.key, result.to_cache())
            return result

    async def _attempts(self, prepared: Prepared, trying: bool = False) -> LLMResult:
        """One request with its retries; CallFailed when it fails for good. ``trying``: its
        first attempt tries the parameters for the requests waiting (``_turn``)."""
        started = time.monotonic()
        try:
            try:
                # The first attempt outside tenacity: nearly every request succeeds at once, and
                # entering tenacity's loop costs 0.1-0.3 ms of CPU per request (docs/benchmarks.md).
                try:
                    return await self._send(prepared.messages, prepared.settings)
                finally:
                    if trying:
                        self._settle()
            except TransientError as first:
                return await self._retry(prepared, first, started)
        except TransientError as err:
            raise self.refuse(f"{err} (gave up after {self.policy.attempts} failed attempts or "
                              f"{self.policy.max_seconds:.0f} s of retrying)") from None
        except UnsupportedParameter:
            raise
        except RequestError as err:
            raise self.refuse(str(err)) from None

    def _learn(self, err: UnsupportedParameter, request: ChatRequest) -> None:
        """Take a 400 for a parameter to heart: send it as the model takes it from now on, with
        one warning naming the setting that does so from the start; or, when there is nothing
        else to try, stop the run with one line (every request would be refused the same way)."""
        learnt = self.params.learn(err.param)
        if learnt is None:
            self._fatal = EndpointError(f"{err}. Every request to it would be refused the same way; "
                                        f"to go on: {fix_for(err.param)}")
            raise self._fatal
        before = self.params.describe(request.temperature, request.max_tokens, request.reasoning_effort)
        self.params = learnt
        self._unsettled = True  # the next request tries the new parameters for the others
        if self.cache is not None:
            self.cache.replace(self._params_key(), learnt.learnt() or {})
        now = learnt.describe(request.temperature, request.max_tokens, request.reasoning_effort)
        warn(f"{self.where} refused '{err.param}' (HTTP 400); sending {now} instead of {before} from now on. "
             f"To send that from the start: {fix_for(err.param)}")

    async def _probe(self) -> None:
        """Once per client: every base URL's host must accept a connection."""
        from .preflight import PROBE_SECONDS, unreachable

        if self._probe_lock is None:
            self._probe_lock = asyncio.Lock()
        async with self._probe_lock:
            if not self._unprobed:
                return
            for url in self._urls:
                reason = await asyncio.to_thread(unreachable, url, min(self.timeout, PROBE_SECONDS))
                if reason is not None:
                    self._fatal = EndpointError(f"cannot reach {self.where}: nothing answers at {url} ({reason}); "
                                                f"check the URL and that the server is up, then run the same command again")
                    raise self._fatal
            self._unprobed = False

    async def _retry(self, prepared: Prepared, first: TransientError, started: float) -> LLMResult:
        """The retries after a first attempt failed with ``first``: tenacity's loop takes that
        failure as its attempt 1 (its wait, its count), so the policy is the same as if the loop
        had made it."""
        failed_first = [first]
        async for attempt in self.policy.retrying(started):
            with attempt:
                if failed_first:
                    raise failed_first.pop()
                result = await self._send(prepared.messages, prepared.settings)
        return result

    async def _send(self, messages: list[dict[str, str]], settings: dict[str, Any]) -> LLMResult:
        pool = self._replica_pool()
        replica = min(pool, key=lambda r: r.in_flight)  # least busy replica
        replica.in_flight += 1
        try:
            async with replica.slots:
                if self._fatal is not None:  # a call waiting for a slot must not send after a 401
                    raise self._fatal
                try:
                    standard = {k: v for k, v in settings.items() if k != "grammar"}
                    extra = {"grammar": settings["grammar"]} if "grammar" in settings else None
                    resp = await replica.client.chat.completions.create(
                        model=self.endpoint.model, messages=messages, extra_body=extra, **standard
                    )
                except Exception as err:  # sorted into our three classes just below
                    failure = classify(err, self.where)
                    if isinstance(failure, EndpointError):
                        self._fatal = failure  # set before the slot is released
                    raise failure from None
        finally:
            replica.in_flight -= 1
        return self._read(resp)

    def _read(self, resp: Any) -> LLMResult:
        dump = getattr(resp, "model_dump", None)  # the client's pydantic model; anything else is unreadable
        try:
            return result_from_completion(dump() if callable(dump) else resp, self.endpoint.model)
        except Unreadable as err:
            raise TransientError(f"reply from {self.where} {err}") from None

    async def aclose(self) -> None:
        for replica in self._replicas or []:
            await replica.client.close()
        self._replicas = None
        if self._answered is not None:  # an asyncio event belongs to the loop it was made in
            self._answered.set()
            self._answered = None
        if self.cache is not None:
            self.cache.flush()  # the replies still queued for the disk are written when the requests end


__all__ = ["LLMClient", "LLMResult", "CallFailed", "ChatRequest", "Prepared", "Unreadable", "cacheable",
           "request_body", "result_from_completion", "EndpointError", "RequestError", "ClientStats",
           "CONTENT_FILTER"]
