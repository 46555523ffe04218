"""A fake OpenAI-compatible chat-completions server for tests and benchmarks.

This is a deliberately small HTTP/1.1 server built on ``asyncio`` streams. It
listens on 127.0.0.1 only, keeps connections alive (the ``openai`` SDK pools
connections through httpx), and answers:

* ``POST /v1/chat/completions`` (``/chat/completions`` also accepted)
* ``GET /v1/models`` and ``GET /v1/models/{id}``
* ``/v1/files`` and ``/v1/batches``: the Batch API, with a scripted lifecycle
  (see ``fake_batches.py``; ``batch_api=False`` turns it off, as on llama.cpp)

Everything else gets a 404 with an OpenAI-style error body.

What a chat request gets back is decided, in this order, by:

1. the API-key check (401 ``invalid_api_key``) when ``api_key`` is set;
2. request validation (400 for a body that is not a JSON object with a
   ``messages`` list);
3. ``hang=True``: every chat request hangs;
4. the FIFO queue of one-shot behaviours (:meth:`FakeOpenAIServer.enqueue`);
5. ``garbage=True``: cycle through Malformed, EmptyChoices, NullContent;
6. ``fail_when_contains``: any message containing that text gets
   ``fail_status``;
7. seeded random faults (``fault_rates``), one draw per chat request that gets
   this far, in arrival order;
8. the responder, ``responder(request_json) -> str`` (or a behaviour object).

Two ways to run it:

* in-process: ``with FakeOpenAIServer(latency=0.01) as srv: ...`` (the event
  loop runs in a daemon thread), or ``async with FakeOpenAIServer() as srv``
  to share the caller's running loop;
* as a subprocess: ``python -m orbench.testing.fake_openai --port 0
  --port-file PATH [--log PATH] ...``; runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import http
import importlib
import inspect
import itertools
import json
import os
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Union

HOST = "127.0.0.1"
DEFAULT_MODEL = "fake-model"
REFUSE_MARKER = "REFUSE"
REFUSAL_TEXT = "I'm sorry, but I can't help with that."
ECHO_PREFIX = "Here is an answer about: "
ECHO_CHARS = 60

_MAX_HEADER_LINES = 200
_STREAM_LIMIT = 1 << 20  # longest allowed request/header line
_MAX_BODY = 64 << 20


# --------------------------------------------------------------------------
# Scriptable behaviours
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A normal 200 completion with the given text.

    ``latency`` (seconds), when not None, replaces the server-wide latency for
    this one response.
    """

    text: str
    finish_reason: str = "stop"
    latency: Optional[float] = None


@dataclass(frozen=True)
class Status:
    """An HTTP error with an OpenAI-style JSON error body.

    ``retry_after`` (seconds) adds ``Retry-After`` and ``retry-after-ms``
    headers. ``message`` overrides the default error message.
    """

    code: int
    retry_after: Optional[float] = None
    message: Optional[str] = None


@dataclass(frozen=True)
class Hang:
    """Never answer; hold the connection until the client or server closes it."""


@dataclass(frozen=True)
class Malformed:
    """200 with a body that is not valid JSON."""


@dataclass(frozen=True)
class EmptyChoices:
    """200 with valid JSON whose ``choices`` list is empty."""


@dataclass(frozen=True)
class NullContent:
    """200 whose single choice has ``message.content == null``."""

    finish_reason: str = "stop"


@dataclass(frozen=True)
class ContentFilter:
    """200 with ``finish_reason == "content_filter"`` and null (or given) content."""

    content: Optional[str] = None


Behaviour = Union[Reply, Status, Hang, Malformed, EmptyChoices, NullContent, ContentFilter]
BEHAVIOUR_TYPES = (Reply, Status, Hang, Malformed, EmptyChoices, NullContent, ContentFilter)

Responder = Callable[[Dict[str, Any]], Union[str, Behaviour, Awaitable[Union[str, Behaviour]]]]

_BEHAVIOUR_NAMES = {
    Reply: "reply",
    Status: "status",
    Hang: "hang",
    Malformed: "malformed",
    EmptyChoices: "empty_choices",
    NullContent: "null_content",
    ContentFilter: "content_filter",
}


def _coerce_behaviour(item: Any) -> Behaviour:
    if isinstance(item, type) and item in BEHAVIOUR_TYPES:
        item = item()  # allow enqueue(Hang) as shorthand for enqueue(Hang())
    if isinstance(item, str):
        item = Reply(item)
    if not isinstance(item, BEHAVIOUR_TYPES):
        raise TypeError(f"not a fake-server behaviour: {item!r}")
    if isinstance(item, Status) and not 100 <= int(item.code) <= 599:
        raise ValueError(f"bad HTTP status code: {item.code!r}")
    return item


# --------------------------------------------------------------------------
# Request records
# --------------------------------------------------------------------------


@dataclass
class RequestRecord:
    """One request the server received, and what it did with it.

    ``time`` is ``time.monotonic()`` when the request line arrived;
    ``status`` is the HTTP status served (``None`` for a hung request);
    ``behaviour`` names the response kind ("reply", "status", "hang",
    "malformed", "empty_choices", "null_content", "content_filter", "models");
    ``source`` says why ("responder", "queue", "fault", "garbage",
    "hang_mode", "fail_when_contains", "auth", "validation", "route",
    "responder_error").
    """

    time: float
    method: str
    path: str
    headers: Dict[str, str]
    body: Optional[Any]
    status: Optional[int]
    behaviour: str
    source: str
    reply_text: Optional[str] = None
    wall_time: float = field(default_factory=time.time)

    @property
    def model(self) -> Optional[str]:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def messages(self) -> Optional[list]:
        return self.body.get("messages") if isinstance(self.body, dict) else None

    @property
    def authorization(self) -> Optional[str]:
        return self.headers.get("authorization")

    def to_json(self) -> Dict[str, Any]:
        """The JSON-serialisable form written to ``--log`` files."""
        return {
            "time": self.wall_time,
            "monotonic": self.time,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "behaviour": self.behaviour,
            "source": self.source,
            "model": self.model,
            "messages": self.messages,
            "authorization": self.authorization,
            "reply_text": self.reply_text,
        }


# --------------------------------------------------------------------------
# Responders
# --------------------------------------------------------------------------


def content_text(content: Any) -> str:
    """Flatten an OpenAI message ``content`` (string or list of parts) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
        return " ".join(pieces)
    return str(content)


def last_user_message(request: Mapping[str, Any]) -> str:
    """Text of the last ``role == "user"`` message, or "" if there is none."""
    messages = request.get("messages") or []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def echo_responder(request: Mapping[str, Any]) -> str:
    """Default responder: a deterministic reply derived from the last user message.

    Messages containing ``"REFUSE"`` get a canned refusal.
    """
    text = last_user_message(request)
    if REFUSE_MARKER in text:
        return REFUSAL_TEXT
    return ECHO_PREFIX + text[:ECHO_CHARS]


def refuse_responder(request: Mapping[str, Any]) -> str:
    """Always refuses."""
    return REFUSAL_TEXT


BUILTIN_RESPONDERS: Dict[str, Responder] = {
    "echo": echo_responder,
    "refuse": refuse_responder,
}


def resolve_responder(spec: Union[str, Responder, None]) -> Responder:
    """Turn ``None``, a builtin name ("echo", "refuse") or "pkg.mod:attr" into a callable."""
    if spec is None:
        return echo_responder
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"responder must be a callable or a string, got {spec!r}")
    if spec in BUILTIN_RESPONDERS:
        return BUILTIN_RESPONDERS[spec]
    module_name, sep, attr_path = spec.partition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(
            f"responder {spec!r}: expected a builtin name {sorted(BUILTIN_RESPONDERS)} "
            "or 'module.path:callable'"
        )
    obj: Any = importlib.import_module(module_name)
    for attr in attr_path.split("."):
        obj = getattr(obj, attr)
    if not callable(obj):
        raise TypeError(f"responder {spec!r} is not callable")
    return obj


# --------------------------------------------------------------------------
# HTTP helpers
# --------------------------------------------------------------------------


class _ProtocolError(Exception):
    """The bytes on the wire are not an HTTP/1.x request we can handle."""


@dataclass
class _Request:
    method: str
    target: str
    path: str
    version: str
    headers: Dict[str, str]
    raw_body: bytes
    arrival: float
    wall: float

    @property
    def keep_alive(self) -> bool:
        tokens = {t.strip() for t in self.headers.get("connection", "").lower().split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


# (type, code, default message) per status.
_ERROR_DEFAULTS: Dict[int, tuple] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", None, "You are not allowed to access this resource."),
    404: ("invalid_request_error", "not_found", "Not found."),
    405: ("invalid_request_error", "method_not_allowed", "Method not allowed."),
    408: ("timeout_error", None, "Request timed out."),
    409: ("conflict_error", None, "Conflict."),
    413: ("invalid_request_error", "request_too_large", "Request too large."),
    422: ("invalid_request_error", None, "Unprocessable entity."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests (fake server)."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", "bad_gateway", "Bad gateway."),
    503: ("server_error", "service_unavailable", "The server is overloaded or not ready yet."),
    504: ("server_error", "gateway_timeout", "Gateway timeout."),
}


def _error_body(code: int, message: Optional[str] = None, err_code: Optional[str] = None) -> Dict[str, Any]:
    err_type, default_code, default_message = _ERROR_DEFAULTS.get(
        code, ("server_error" if code >= 500 else "invalid_request_error", None, f"HTTP {code}.")
    )
    return {
        "error": {
            "message": message if message is not None else default_message,
            "type": err_type,
            "param": None,
            "code": err_code if err_code is not None else default_code,
        }
    }


def _reason(code: int) -> str:
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return "Unknown"


def _format_seconds(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    return str(int(seconds)) if seconds == int(seconds) else repr(seconds)


def _word_count(text: Optional[str]) -> int:
    return len(text.split()) if text else 0


@dataclass
class _Outcome:
    """What to send back for one request."""

    status: Optional[int]  # None -> hang
    behaviour: str
    source: str
    body: bytes = b""
    content_type: str = "application/json"
    extra_headers: List[tuple] = field(default_factory=list)
    reply_text: Optional[str] = None
    latency: Optional[float] = None


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


class FakeOpenAIServer:
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
        from .fake_batches import FakeBatchAPI

        self.batches: Optional[FakeBatchAPI] = FakeBatchAPI(self) if batch_api else None
        self.responder: Responder = resolve_responder(responder)
        self.latency = float(latency)
        self.fault_rates: Dict[int, float] = {}
        for code, rate in sorted((fault_rates or {}).items()):
            code, rate = int(code), float(rate)
            if not 400 <= code <= 599:
                raise ValueError(f"fault status must be 4xx/5xx, got {code}")
            if rate < 0:
                raise ValueError(f"fault rate must be >= 0, got {rate}")
            if rate > 0:
                self.fault_rates[code] = rate
        if sum(self.fault_rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault rates add up to more than 1: {self.fault_rates}")
        self.retry_after = retry_after
        self.seed = seed
        self.hang = bool(hang)
        self.garbage = bool(garbage)
        self.api_key = api_key
        self.models = list(models)
        self.log_path = os.fspath(log_path) if log_path is not None else None
        self.fail_when_contains = fail_when_contains
        self.fail_status = int(fail_status)

        self._requested_port = int(port)
        self._port: Optional[int] = None
        self._rng = random.Random(seed)
        self._garbage_cycle = itertools.cycle((Malformed(), EmptyChoices(), NullContent()))
        self._ids = itertools.count(1)
        self._request_ids = itertools.count(1)
        self._queue: "collections.deque[Behaviour]" = collections.deque()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._records: List[RequestRecord] = []
        self._counts: "collections.Counter[Optional[int]]" = collections.Counter()

        self._server: Optional[asyncio.base_events.Server] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._conn_tasks: "set[asyncio.Task]" = set()
        self._log_file = None

    # ---- addresses -------------------------------------------------------

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server is not started")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no /v1)."""
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, suitable for ``openai.OpenAI(base_url=...)``."""
        return f"{self.url}/v1"

    @property
    def sockname(self) -> List[tuple]:
        """Addresses of the listening sockets."""
        server = self._server
        return [s.getsockname() for s in server.sockets] if server is not None else []

    @property
    def running(self) -> bool:
        return self._server is not None

    # ---- scripting and inspection ---------------------------------------

    def enqueue(self, *behaviours: Union[Behaviour, type, str]) -> None:
        """Queue one-shot behaviours for the next chat requests, in arrival order.

        Accepts behaviour instances, behaviour classes (``Hang``) or plain
        strings (shorthand for ``Reply(text)``).
        """
        items = [_coerce_behaviour(b) for b in behaviours]
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Number of queued behaviours not yet consumed."""
        with self._lock:
            return len(self._queue)

    def clear_queue(self) -> None:
        with self._lock:
            self._queue.clear()

    @property
    def requests(self) -> List[RequestRecord]:
        """A snapshot (copy) of every request recorded so far."""
        with self._lock:
            return list(self._records)

    @property
    def status_counts(self) -> Dict[Optional[int], int]:
        """``{status: count}`` snapshot; hung requests count under ``None``."""
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        """Forget recorded requests and counts, and drop queued behaviours."""
        with self._lock:
            self._records.clear()
            self._counts.clear()
            self._queue.clear()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` requests are recorded; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._records) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    # ---- lifecycle: background thread -----------------------------------

    def start(self, timeout: float = 10.0) -> "FakeOpenAIServer":
        """Start serving from a daemon thread; returns self once listening."""
        if self._loop is not None:
            raise RuntimeError("server already started")
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        failure: List[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                try:
                    loop.run_until_complete(self._open())
                except BaseException as exc:  # report to start() and quit
                    failure.append(exc)
                    return
                finally:
                    ready.set()
                loop.run_forever()
                loop.run_until_complete(self._close())  # in case stop() timed out
            finally:
                try:
                    loop.run_until_complete(loop.shutdown_asyncgens())
                finally:
                    loop.close()

        thread = threading.Thread(target=run, name="fake-openai-server", daemon=True)
        thread.start()
        if not ready.wait(timeout):
            loop.call_soon_threadsafe(loop.stop)
            raise RuntimeError("fake OpenAI server did not start in time")
        if failure:
            thread.join(timeout)
            raise failure[0]
        self._loop, self._thread = loop, thread
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving; hung and idle connections are dropped. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if thread is None:
            raise RuntimeError("server was started with start_async(); use stop_async()")
        self._loop = self._thread = None
        if loop.is_closed() or not thread.is_alive():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close(), loop).result(timeout)
        except Exception:
            pass
        finally:
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # loop already closed
                pass
            thread.join(timeout)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # ---- lifecycle: caller's event loop ---------------------------------

    async def start_async(self) -> "FakeOpenAIServer":
        """Start serving on the running event loop (for async tests)."""
        if self._loop is not None:
            raise RuntimeError("server already started")
        self._loop = asyncio.get_running_loop()
        try:
            await self._open()
        except BaseException:
            self._loop = None
            raise
        return self

    async def stop_async(self) -> None:
        if self._thread is not None:
            raise RuntimeError("server was started with start(); use stop()")
        self._loop = None
        await self._close()

    async def __aenter__(self) -> "FakeOpenAIServer":
        return await self.start_async()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop_async()

    # ---- internals: open/close -------------------------------------------

    async def _open(self) -> None:
        self._server = await asyncio.start_server(
            self._handle_connection,
            host=HOST,
            port=self._requested_port,
            backlog=1024,
            limit=_STREAM_LIMIT,
            reuse_address=True,
        )
        self._port = self._server.sockets[0].getsockname()[1]
        if self.log_path is not None:
            self._log_file = open(self.log_path, "a", encoding="utf-8")

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        current = asyncio.current_task()
        tasks = [t for t in self._conn_tasks if t is not current and not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2.0)
        try:
            await asyncio.wait_for(server.wait_closed(), timeout=2.0)
        except asyncio.TimeoutError:
            pass
        log_file, self._log_file = self._log_file, None
        if log_file is not None:
            log_file.close()

    # ---- internals: connection handling ------------------------------------

    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        try:
            while True:
                try:
                    request = await self._read_request(reader, writer)
                except _ProtocolError as exc:
                    body = json.dumps(_error_body(400, f"Malformed HTTP request: {exc}")).encode()
                    await self._write(writer, 400, body, "application/json", [], keep_alive=False)
                    return
                if request is None:
                    return
                if not await self._serve(request, reader, writer):
                    return
        except asyncio.CancelledError:
            pass  # server shutting down
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass  # client went away
        finally:
            if task is not None:
                self._conn_tasks.discard(task)
            try:
                writer.close()
            except Exception:
                pass

    async def _read_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> Optional[_Request]:
        try:
            line = b""
            for _ in range(8):  # tolerate a few stray CRLFs between requests
                line = await reader.readline()
                if not line:
                    return None  # clean EOF: client closed an idle connection
                line = line.rstrip(b"\r\n")
                if line:
                    break
            else:
                raise _ProtocolError("no request line")
            arrival, wall = time.monotonic(), time.time()
            parts = line.decode("latin-1").split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                raise _ProtocolError("bad request line")
            method, target, version = parts

            headers: Dict[str, str] = {}
            for _ in range(_MAX_HEADER_LINES):
                raw = await reader.readline()
                if not raw:
                    return None
                raw = raw.rstrip(b"\r\n")
                if not raw:
                    break
                name, sep, value = raw.decode("latin-1").partition(":")
                if not sep:
                    raise _ProtocolError("bad header line")
                key = name.strip().lower()
                value = value.strip()
                headers[key] = f"{headers[key]}, {value}" if key in headers else value
            else:
                raise _ProtocolError("too many headers")
        except ValueError as exc:  # over-long line (LimitOverrunError) or bad decode
            raise _ProtocolError(str(exc)) from None

        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")

        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = await self._read_chunked(reader)
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise _ProtocolError("bad Content-Length") from None
            if length < 0 or length > _MAX_BODY:
                raise _ProtocolError("bad Content-Length")
            body = await reader.readexactly(length) if length else b""
        else:
            body = b""

        path = target.split("?", 1)[0]
        if len(path) > 1:
            path = path.rstrip("/")
        return _Request(method.upper(), target, path, version, headers, body, arrival, wall)

    async def _read_chunked(self, reader: asyncio.StreamReader) -> bytes:
        chunks = []
        total = 0
        while True:
            size_line = (await reader.readline()).strip()
            try:
                size = int(size_line.split(b";", 1)[0], 16)
            except ValueError:
                raise _ProtocolError("bad chunk size") from None
            if size == 0:
                while (await reader.readline()).strip():  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > _MAX_BODY:
                raise _ProtocolError("body too large")
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)  # CRLF after each chunk

    async def _serve(self, request: _Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; returns whether the connection stays open."""
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
            outcome = self._status_outcome(Status(500, message=f"fake server error: {exc!r}"), "internal_error")
        self._record(
            RequestRecord(
                time=request.arrival,
                method=request.method,
                path=request.path,
                headers=dict(request.headers),
                body=body_json,
                status=outcome.status,
                behaviour=outcome.behaviour,
                source=outcome.source,
                reply_text=outcome.reply_text,
                wall_time=request.wall,
            )
        )

        if outcome.status is None:  # Hang
            await self._hold(reader)
            return False

        delay = self.latency if outcome.latency is None else outcome.latency
        if delay and delay > 0:
            await asyncio.sleep(delay)
        keep_alive = request.keep_alive
        await self._write(
            writer, outcome.status, outcome.body, outcome.content_type, outcome.extra_headers, keep_alive
        )
        return keep_alive

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        content_type: str,
        extra_headers: Sequence[tuple],
        keep_alive: bool,
    ) -> None:
        lines = [
            f"HTTP/1.1 {status} {_reason(status)}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            f"Connection: {'keep-alive' if keep_alive else 'close'}",
            "Server: orbench-fake-openai",
            f"x-request-id: req_fake{next(self._request_ids):08d}",
        ]
        lines.extend(f"{name}: {value}" for name, value in extra_headers)
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        writer.write(head + body)
        await writer.drain()

    @staticmethod
    async def _hold(reader: asyncio.StreamReader) -> None:
        """Keep a hung request's connection open until the peer closes it."""
        try:
            while await reader.read(65536):
                pass
        except (ConnectionError, OSError):
            pass

    def _record(self, record: RequestRecord) -> None:
        with self._changed:
            self._records.append(record)
            self._counts[record.status] += 1
            self._changed.notify_all()
        log_file = self._log_file
        if log_file is not None:
            log_file.write(json.dumps(record.to_json(), ensure_ascii=False, default=str) + "\n")
            log_file.flush()

    # ---- internals: deciding what to answer ------------------------------

    async def _decide(self, request: _Request, body: Optional[Any], body_ok: bool) -> _Outcome:
        if self.api_key is not None:
            auth = request.headers.get("authorization", "")
            if auth != f"Bearer {self.api_key}":
                return self._status_outcome(
                    Status(401, message="Incorrect API key provided."), "auth", err_code="invalid_api_key"
                )

        path = request.path
        if self.batches is not None and path.startswith(("/v1/files", "/v1/batches")):
            return await self.batches.handle(request, body)
        if path in ("/v1/chat/completions", "/chat/completions"):
            if request.method != "POST":
                return self._status_outcome(Status(405), "route")
        elif path in ("/v1/models", "/models"):
            if request.method != "GET":
                return self._status_outcome(Status(405), "route")
            data = {"object": "list", "data": [self._model_obj(m) for m in self.models]}
            return _Outcome(200, "models", "route", body=json.dumps(data).encode())
        elif path.startswith(("/v1/models/", "/models/")):
            model_id = path.split("/models/", 1)[1]
            if request.method != "GET":
                return self._status_outcome(Status(405), "route")
            if model_id not in self.models:
                return self._status_outcome(
                    Status(404, message=f"The model '{model_id}' does not exist"), "route",
                    err_code="model_not_found",
                )
            return _Outcome(200, "models", "route", body=json.dumps(self._model_obj(model_id)).encode())
        else:
            return self._status_outcome(
                Status(404, message=f"Unknown request URL: {request.method} {path}."), "route",
                err_code="unknown_url",
            )

        # --- chat completions ---
        if not body_ok:
            return self._status_outcome(
                Status(400, message="We could not parse the JSON body of your request."), "validation"
            )
        return await self.chat_outcome(body)

    async def chat_outcome(self, body: Any) -> _Outcome:
        """What one chat-completions body gets: also used for each line of a batch."""
        if not isinstance(body, dict):
            return self._status_outcome(
                Status(400, message="We could not parse the JSON body of your request."), "validation"
            )
        if not isinstance(body.get("messages"), list):
            return self._status_outcome(
                Status(400, message="'messages' is a required property and must be an array."), "validation"
            )

        behaviour: Behaviour
        if self.hang:
            behaviour, source = Hang(), "hang_mode"
        else:
            with self._lock:
                queued = self._queue.popleft() if self._queue else None
            if queued is not None:
                behaviour, source = queued, "queue"
            elif self.garbage:
                behaviour, source = next(self._garbage_cycle), "garbage"
            elif self.fail_when_contains is not None and self._contains(body, self.fail_when_contains):
                behaviour, source = Status(self.fail_status), "fail_when_contains"
            else:
                fault = self._draw_fault()
                if fault is not None:
                    behaviour, source = fault, "fault"
                else:
                    try:
                        result = self.responder(body)
                        if inspect.isawaitable(result):
                            result = await result
                        behaviour, source = _coerce_behaviour(result), "responder"
                    except Exception as exc:
                        behaviour = Status(500, message=f"fake server responder failed: {exc!r}")
                        source = "responder_error"
        return self._chat_outcome(behaviour, source, body)

    def _draw_fault(self) -> Optional[Status]:
        if not self.fault_rates:
            return None
        draw = self._rng.random()
        cumulative = 0.0
        for code, rate in self.fault_rates.items():
            cumulative += rate
            if draw < cumulative:
                return Status(code, retry_after=self.retry_after if code == 429 else None)
        return None

    @staticmethod
    def _contains(body: Mapping[str, Any], needle: str) -> bool:
        for message in body.get("messages") or []:
            if isinstance(message, dict) and needle in content_text(message.get("content")):
                return True
        return False

    @staticmethod
    def _model_obj(model_id: str) -> Dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 0, "owned_by": "orbench-fake"}

    def _status_outcome(self, status: Status, source: str, err_code: Optional[str] = None) -> _Outcome:
        headers = []
        if status.retry_after is not None:
            headers.append(("Retry-After", _format_seconds(status.retry_after)))
            headers.append(("retry-after-ms", str(int(round(max(0.0, status.retry_after) * 1000)))))
        body = json.dumps(_error_body(status.code, status.message, err_code)).encode()
        return _Outcome(status.code, "status", source, body=body, extra_headers=headers)

    def _chat_outcome(self, behaviour: Behaviour, source: str, request: Dict[str, Any]) -> _Outcome:
        name = _BEHAVIOUR_NAMES[type(behaviour)]
        if isinstance(behaviour, Status):
            return self._status_outcome(behaviour, source)
        if isinstance(behaviour, Hang):
            return _Outcome(None, name, source)
        stream = request.get("stream") is True

        if isinstance(behaviour, Malformed):
            if stream:
                body = b'data: {"id": "chatcmpl-broken", "choices": [{"delta": \n\n'
                return _Outcome(200, name, source, body=body, content_type="text/event-stream")
            body = b'{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assi'
            return _Outcome(200, name, source, body=body)

        content: Optional[str]
        if isinstance(behaviour, Reply):
            content, finish, latency = behaviour.text, behaviour.finish_reason, behaviour.latency
        elif isinstance(behaviour, NullContent):
            content, finish, latency = None, behaviour.finish_reason, None
        elif isinstance(behaviour, ContentFilter):
            content, finish, latency = behaviour.content, "content_filter", None
        else:  # EmptyChoices
            content, finish, latency = None, None, None
        with_choices = not isinstance(behaviour, EmptyChoices)

        completion = self._completion_obj(request, content, finish, with_choices)
        if stream:
            body = self._sse_body(completion, request)
            return _Outcome(200, name, source, body=body, content_type="text/event-stream",
                            reply_text=content, latency=latency)
        return _Outcome(200, name, source, body=json.dumps(completion).encode(),
                        reply_text=content, latency=latency)

    def _completion_obj(
        self, request: Mapping[str, Any], content: Optional[str], finish: Optional[str], with_choices: bool
    ) -> Dict[str, Any]:
        n = request.get("n")
        n = n if isinstance(n, int) and 1 <= n <= 128 else 1
        prompt_tokens = sum(
            _word_count(content_text(m.get("content"))) for m in request.get("messages") or [] if isinstance(m, dict)
        )
        completion_tokens = _word_count(content) * n if with_choices else 0
        choices = []
        if with_choices:
            for i in range(n):
                choices.append({
                    "index": i,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish,
                })
        model = request.get("model")
        return {
            "id": f"chatcmpl-fake{next(self._ids):08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model if isinstance(model, str) and model else DEFAULT_MODEL,
            "system_fingerprint": "fp_orbench_fake",
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    @staticmethod
    def _sse_body(completion: Dict[str, Any], request: Mapping[str, Any]) -> bytes:
        """Render a completion as ``chat.completion.chunk`` server-sent events."""
        base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
        base["object"] = "chat.completion.chunk"
        events = []

        def emit(choices: list, **extra: Any) -> None:
            events.append("data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n")

        if not completion["choices"]:
            emit([])
        for choice in completion["choices"]:
            i, content = choice["index"], choice["message"]["content"]
            emit([{"index": i, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}])
            if content:
                words = content.split(" ")
                for j in range(0, len(words), 8):
                    piece = " ".join(words[j:j + 8]) + (" " if j + 8 < len(words) else "")
                    emit([{"index": i, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}])
            emit([{"index": i, "delta": {}, "logprobs": None, "finish_reason": choice["finish_reason"]}])
        options = request.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            emit([], usage=completion["usage"])
        events.append("data: [DONE]\n\n")
        return "".join(events).encode()


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m orbench.testing.fake_openai",
        description="Fake OpenAI chat-completions server on 127.0.0.1 for tests and benchmarks.",
    )
    p.add_argument("--port", type=int, default=0, help="TCP port (0 = let the OS choose; default)")
    p.add_argument("--port-file", help="write the chosen port here (atomically) once listening")
    p.add_argument("--responder", default="echo",
                   help="builtin name (echo, refuse) or module.path:callable (default: echo)")
    p.add_argument("--latency", type=float, default=0.0, help="seconds added before every response")
    p.add_argument("--rate-429", type=float, default=0.0, help="probability of a random 429")
    p.add_argument("--rate-500", type=float, default=0.0, help="probability of a random 500")
    p.add_argument("--fault", action="append", default=[], metavar="STATUS=RATE",
                   help="extra random fault, e.g. --fault 503=0.05 (repeatable)")
    p.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on random 429s")
    p.add_argument("--seed", type=int, default=0, help="seed for random faults")
    p.add_argument("--hang", action="store_true", help="every chat request hangs")
    p.add_argument("--garbage", action="store_true",
                   help="cycle replies through malformed JSON, empty choices, null content")
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (401 otherwise)")
    p.add_argument("--log", help="append one JSON line per request to this file")
    p.add_argument("--model", action="append", dest="models", metavar="ID",
                   help=f"model id listed by /v1/models (repeatable; default {DEFAULT_MODEL})")
    p.add_argument("--fail-when-contains", metavar="TEXT", help="requests whose messages contain TEXT fail")
    p.add_argument("--fail-status", type=int, default=400, help="status used by --fail-when-contains")
    p.add_argument("--quiet", action="store_true", help="do not print the listening address")
    return p


def server_from_args(args: argparse.Namespace) -> FakeOpenAIServer:
    fault_rates: Dict[int, float] = {}
    if args.rate_429:
        fault_rates[429] = args.rate_429
    if args.rate_500:
        fault_rates[500] = args.rate_500
    for spec in args.fault:
        code, sep, rate = spec.partition("=")
        if not sep:
            raise SystemExit(f"--fault expects STATUS=RATE, got {spec!r}")
        fault_rates[int(code)] = float(rate)
    return FakeOpenAIServer(
        args.responder,
        port=args.port,
        latency=args.latency,
        fault_rates=fault_rates,
        retry_after=args.retry_after,
        seed=args.seed,
        hang=args.hang,
        garbage=args.garbage,
        api_key=args.api_key,
        models=args.models or (DEFAULT_MODEL,),
        log_path=args.log,
        fail_when_contains=args.fail_when_contains,
        fail_status=args.fail_status,
    )


def _write_port_file(path: str, port: int) -> None:
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(f"{port}\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


async def _serve_until_signalled(server: FakeOpenAIServer, port_file: Optional[str], quiet: bool) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))
    await server.start_async()
    try:
        if port_file:
            _write_port_file(port_file, server.port)
        if not quiet:
            print(f"fake-openai listening on {server.base_url}", flush=True)
        await stop.wait()
    finally:
        await server.stop_async()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_arg_parser().parse_args(argv)
    try:
        server = server_from_args(args)
    except (ValueError, TypeError, ImportError, AttributeError) as exc:
        print(f"fake-openai: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve_until_signalled(server, args.port_file, args.quiet))
    return 0


if __name__ == "__main__":
    # Re-import under the package name so that behaviour classes returned by a
    # --responder are the same classes the server checks against.
    from orbench.testing.fake_openai import main as _main

    sys.exit(_main())
