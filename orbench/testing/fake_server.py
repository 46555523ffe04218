"""The fake OpenAI-compatible server: its routes, and the order in which a request is decided.

It answers:

* ``POST /v1/chat/completions`` (``/chat/completions`` also accepted);
* ``GET /v1/models`` and ``GET /v1/models/{id}``;
* ``/v1/files`` and ``/v1/batches``: the Batch API (``fake_batches.py``; ``batch_api=False``
  turns it off, as on llama.cpp).

Everything else gets a 404 with an OpenAI-style error body. What a chat request gets back
is decided, in this order, by:

1. the API-key check (401 ``invalid_api_key``) when ``api_key`` is set;
2. request validation (400 for a body that is not a JSON object with a ``messages`` list);
3. the fault plan (``fake_faults.py``): hang mode, the one-shot queue, garbage mode,
   ``fail_when_contains``, seeded random faults;
4. the responder, ``responder(request_json) -> str`` (or a behaviour object).
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .fake_batches import FakeBatchAPI
from .fake_chat import (
    DEFAULT_MODEL,
    Behaviour,
    ChatReplies,
    Responder,
    Status,
    coerce_behaviour,
    resolve_responder,
)
from .fake_faults import FaultPlan, forwarded
from .fake_http import Outcome, Request, status_outcome
from .fake_loopback import LoopbackHTTPServer
from .fake_records import RequestLog, RequestRecord

_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_BAD_JSON = "We could not parse the JSON body of your request."


class FakeOpenAIServer(LoopbackHTTPServer):
    """Fake OpenAI chat-completions server on 127.0.0.1.

    Parameters
    ----------
    responder:
        ``responder(request_json) -> str`` (may also return a behaviour object
        or be async), a builtin name ("echo", "refuse") or "module:callable".
        Defaults to :func:`echo_responder`.
    port:
        TCP port; 0 (default) lets the OS pick one. See :attr:`port`.
    latency:
        Seconds slept (without blocking the loop) before every response.
        May be changed at runtime.
    fault_rates:
        ``{status: probability}``, e.g. ``{429: 0.3, 500: 0.1}``; drawn from
        ``random.Random(seed)`` once per eligible chat request, in arrival order.
    retry_after:
        Seconds put in the ``Retry-After`` header of random 429s (None: omit).
    hang:
        Every chat request hangs.
    garbage:
        Cycle chat replies through Malformed, EmptyChoices, NullContent.
    api_key:
        When set, requests must send ``Authorization: Bearer <api_key>``.
    models:
        Model ids listed by ``GET /v1/models``.
    log_path:
        Append one JSON line per request to this file (flushed per line).
    fail_when_contains / fail_status:
        Any chat request whose messages contain this text gets ``fail_status``.
    """

    fault_rates = forwarded("fault_rates")
    retry_after = forwarded("retry_after")
    seed = forwarded("seed")
    hang = forwarded("hang")
    garbage = forwarded("garbage")
    fail_when_contains = forwarded("fail_when_contains")
    fail_status = forwarded("fail_status")

    def __init__(
        self,
        responder: Union[str, Responder, None] = None,
        *,
        port: int = 0,
        latency: float = 0.0,
        fault_rates: Optional[Mapping[int, float]] = None,
        retry_after: Optional[float] = 1.0,
        seed: Optional[int] = 0,
        hang: bool = False,
        garbage: bool = False,
        api_key: Optional[str] = None,
        models: Sequence[str] = (DEFAULT_MODEL,),
        log_path: Union[str, os.PathLike, None] = None,
        fail_when_contains: Optional[str] = None,
        fail_status: int = 400,
        batch_api: bool = True,
    ) -> None:
        super().__init__(port=port, latency=latency)
        self.batches: Optional[FakeBatchAPI] = FakeBatchAPI(self.chat_outcome) if batch_api else None
        self.responder: Responder = resolve_responder(responder)
        self.faults = FaultPlan(fault_rates, retry_after, seed, hang, garbage, fail_when_contains, fail_status)
        self.api_key = api_key
        self.models = list(models)
        self.log_path = os.fspath(log_path) if log_path is not None else None
        self._log = RequestLog(self.log_path)
        self._replies = ChatReplies()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, suitable for ``openai.OpenAI(base_url=...)``."""
        return f"{self.url}/v1"

    # ---- scripting and inspection ---------------------------------------

    def enqueue(self, *behaviours: Union[Behaviour, type, str]) -> None:
        """Queue one-shot behaviours for the next chat requests, in arrival order.

        Accepts behaviour instances, behaviour classes (``Hang``) or plain
        strings (shorthand for ``Reply(text)``).
        """
        self.faults.enqueue(*behaviours)

    @property
    def pending(self) -> int:
        """Number of queued behaviours not yet consumed."""
        return self.faults.pending

    def clear_queue(self) -> None:
        self.faults.clear_queue()

    @property
    def requests(self) -> List[RequestRecord]:
        """A snapshot (copy) of every request recorded so far."""
        return self._log.records()

    @property
    def status_counts(self) -> Dict[Optional[int], int]:
        """``{status: count}`` snapshot; hung requests count under ``None``."""
        return self._log.counts()

    def reset(self) -> None:
        """Forget recorded requests and counts, and drop queued behaviours."""
        self._log.clear()
        self.faults.clear_queue()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` requests are recorded; False on timeout."""
        return self._log.wait_for(count, timeout)

    # ---- open/close: the request log file follows the server -------------

    async def _open(self) -> None:
        await super()._open()
        self._log.open()

    async def _close(self) -> None:
        await super()._close()
        self._log.close()

    # ---- answering -------------------------------------------------------

    async def respond(self, request: Request) -> Outcome:
        """Decide one request's answer and record it."""
        body_json: Optional[Any] = None
        body_ok = True
        if request.raw_body:
            try:
                body_json = json.loads(request.raw_body)
            except (ValueError, UnicodeDecodeError):
                body_ok = False
        try:
            outcome = await self._decide(request, body_json, body_ok)
        except Exception as exc:  # a bug here should still produce an HTTP answer
            outcome = status_outcome(500, "internal_error", f"fake server error: {exc!r}")
        self._log.add(RequestRecord(
            time=request.arrival, method=request.method, path=request.path,
            headers=dict(request.headers), body=body_json, status=outcome.status,
            behaviour=outcome.behaviour, source=outcome.source, reply_text=outcome.reply_text,
            wall_time=request.wall, finish_reason=outcome.finish_reason,
        ))
        return outcome

    async def _decide(self, request: Request, body: Optional[Any], body_ok: bool) -> Outcome:
        if self.api_key is not None and request.headers.get("authorization", "") != f"Bearer {self.api_key}":
            return status_outcome(401, "auth", "Incorrect API key provided.", err_code="invalid_api_key")
        path = request.path
        if self.batches is not None and path.startswith(("/v1/files", "/v1/batches")):
            return await self.batches.handle(request, body)
        if path.startswith(("/v1/models", "/models")):
            return self._models_outcome(request)
        if path not in _CHAT_PATHS:
            return _unknown_url(request)
        if request.method != "POST":
            return status_outcome(405, "route")
        if not body_ok:
            return status_outcome(400, "validation", _BAD_JSON)
        return await self.chat_outcome(body)

    def _models_outcome(self, request: Request) -> Outcome:
        path = request.path
        if path in ("/v1/models", "/models"):
            if request.method != "GET":
                return status_outcome(405, "route")
            data = {"object": "list", "data": [_model_obj(m) for m in self.models]}
            return Outcome(200, "models", "route", body=json.dumps(data).encode())
        if not path.startswith(("/v1/models/", "/models/")):
            return _unknown_url(request)
        model_id = path.split("/models/", 1)[1]
        if request.method != "GET":
            return status_outcome(405, "route")
        if model_id not in self.models:
            return status_outcome(404, "route", f"The model '{model_id}' does not exist", err_code="model_not_found")
        return Outcome(200, "models", "route", body=json.dumps(_model_obj(model_id)).encode())

    async def chat_outcome(self, body: Any) -> Outcome:
        """What one chat-completions body gets: also used for each line of a batch."""
        if not isinstance(body, dict):
            return status_outcome(400, "validation", _BAD_JSON)
        if not isinstance(body.get("messages"), list):
            return status_outcome(400, "validation", "'messages' is a required property and must be an array.")
        picked = self.faults.pick(body)
        if picked is None:
            picked = await self._ask_responder(body)
        behaviour, source = picked
        return self._replies.outcome(behaviour, source, body)

    async def _ask_responder(self, body: Dict[str, Any]) -> Tuple[Behaviour, str]:
        try:
            result = self.responder(body)
            if inspect.isawaitable(result):
                result = await result
            return coerce_behaviour(result), "responder"
        except Exception as exc:
            return Status(500, message=f"fake server responder failed: {exc!r}"), "responder_error"


def _unknown_url(request: Request) -> Outcome:
    return status_outcome(404, "route", f"Unknown request URL: {request.method} {request.path}.",
                          err_code="unknown_url")


def _model_obj(model_id: str) -> Dict[str, Any]:
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "orbench-fake"}
