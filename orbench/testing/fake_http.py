"""HTTP/1.1 on asyncio streams, as the fake servers speak it: read a request, write an answer.

Only what the ``openai`` SDK (through httpx) sends is handled: a request line, headers,
a body by ``Content-Length`` or chunked, ``Expect: 100-continue`` and keep-alive. Bytes that
are not such a request raise :class:`ProtocolError`, which the server answers with a 400.
"""

from __future__ import annotations

import asyncio
import http
import json
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

HOST = "127.0.0.1"

MAX_HEADER_LINES = 200
STREAM_LIMIT = 1 << 20  # longest allowed request/header line
MAX_BODY = 64 << 20


class ProtocolError(Exception):
    """The bytes on the wire are not an HTTP/1.x request we can handle."""


@dataclass
class Request:
    """One parsed HTTP request; ``path`` has no query string and no trailing slash."""

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


@dataclass
class Outcome:
    """What to send back for one request, and how the request log names it."""

    status: Optional[int]  # None -> hang
    behaviour: str
    source: str
    body: bytes = b""
    content_type: str = "application/json"
    extra_headers: List[tuple] = field(default_factory=list)
    reply_text: Optional[str] = None
    latency: Optional[float] = None
    finish_reason: Optional[str] = None


# (type, code, default message) per status, as OpenAI's error bodies carry them.
ERROR_DEFAULTS: Dict[int, tuple] = {
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


def error_body(code: int, message: Optional[str] = None, err_code: Optional[str] = None,
               param: Optional[str] = None) -> Dict[str, Any]:
    """An OpenAI-style ``{"error": {...}}`` body for an HTTP status."""
    err_type, default_code, default_message = ERROR_DEFAULTS.get(
        code, ("server_error" if code >= 500 else "invalid_request_error", None, f"HTTP {code}.")
    )
    return {
        "error": {
            "message": message if message is not None else default_message,
            "type": err_type,
            "param": param,
            "code": err_code if err_code is not None else default_code,
        }
    }


def format_seconds(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    return str(int(seconds)) if seconds == int(seconds) else repr(seconds)


def status_outcome(
    code: int,
    source: str,
    message: Optional[str] = None,
    err_code: Optional[str] = None,
    retry_after: Optional[float] = None,
    param: Optional[str] = None,
) -> Outcome:
    """An error answer; ``retry_after`` adds ``Retry-After`` and ``retry-after-ms`` headers."""
    headers = []
    if retry_after is not None:
        headers.append(("Retry-After", format_seconds(retry_after)))
        headers.append(("retry-after-ms", str(int(round(max(0.0, retry_after) * 1000)))))
    body = json.dumps(error_body(code, message, err_code, param)).encode()
    return Outcome(code, "status", source, body=body, extra_headers=headers)


def reason(code: int) -> str:
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return "Unknown"


async def _read_head(reader: asyncio.StreamReader) -> Optional[tuple]:
    """The request line's three parts, the arrival times and the headers; None on a clean EOF."""
    line = b""
    for _ in range(8):  # tolerate a few stray CRLFs between requests
        line = await reader.readline()
        if not line:
            return None  # clean EOF: client closed an idle connection
        line = line.rstrip(b"\r\n")
        if line:
            break
    else:
        raise ProtocolError("no request line")
    arrival, wall = time.monotonic(), time.time()
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ProtocolError("bad request line")

    headers: Dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        raw = await reader.readline()
        if not raw:
            return None
        raw = raw.rstrip(b"\r\n")
        if not raw:
            return parts, arrival, wall, headers
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise ProtocolError("bad header line")
        key = name.strip().lower()
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise ProtocolError("too many headers")


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Optional[Request]:
    """Read one request; None when the client closed the connection between requests."""
    try:
        head = await _read_head(reader)
    except ValueError as exc:  # over-long line (LimitOverrunError) or bad decode
        raise ProtocolError(str(exc)) from None
    if head is None:
        return None
    (method, target, version), arrival, wall, headers = head

    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await read_chunked(reader)
    elif "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise ProtocolError("bad Content-Length") from None
        if length < 0 or length > MAX_BODY:
            raise ProtocolError("bad Content-Length")
        body = await reader.readexactly(length) if length else b""
    else:
        body = b""

    path = target.split("?", 1)[0]
    if len(path) > 1:
        path = path.rstrip("/")
    return Request(method.upper(), target, path, version, headers, body, arrival, wall)


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks = []
    total = 0
    while True:
        size_line = (await reader.readline()).strip()
        try:
            size = int(size_line.split(b";", 1)[0], 16)
        except ValueError:
            raise ProtocolError("bad chunk size") from None
        if size == 0:
            while (await reader.readline()).strip():  # trailers
                pass
            return b"".join(chunks)
        total += size
        if total > MAX_BODY:
            raise ProtocolError("body too large")
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)  # CRLF after each chunk


async def write_response(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    content_type: str,
    extra_headers: Sequence[tuple],
    keep_alive: bool,
    request_id: str,
) -> None:
    lines = [
        f"HTTP/1.1 {status} {reason(status)}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        f"Connection: {'keep-alive' if keep_alive else 'close'}",
        "Server: orbench-fake-openai",
        f"x-request-id: {request_id}",
    ]
    lines.extend(f"{name}: {value}" for name, value in extra_headers)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    writer.write(head + body)
    await writer.drain()


async def hold(reader: asyncio.StreamReader) -> None:
    """Keep a hung request's connection open until the peer closes it."""
    try:
        while await reader.read(65536):
            pass
    except (ConnectionError, OSError):
        pass
