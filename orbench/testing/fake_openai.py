"""A fake OpenAI-compatible server for tests and benchmarks: its public names and its command line.

The server listens on 127.0.0.1 only, speaks enough of the OpenAI protocol for the official
``openai`` SDK (chat completions, models, files and batches), and can be told to be slow,
return 429/500, hang, or send garbage. Its parts, one concern each:

* ``fake_http.py``: HTTP/1.1 on asyncio streams (read a request, write an answer);
* ``fake_loopback.py``: the server's life cycle, in a daemon thread or on the caller's loop;
* ``fake_chat.py``: behaviours, responders, and chat-completion replies (JSON or SSE);
* ``fake_faults.py``: which fault a chat request meets (hang, queue, garbage, random faults);
* ``fake_batches.py``: ``/v1/files`` and ``/v1/batches`` with a scripted lifecycle;
* ``fake_thinking.py``: models that think (inline, apart, hidden; cut by the token cap) and
  OpenAI's reasoning-model parameter rules;
* ``fake_records.py``: the record of every request, and the ``--log`` file;
* ``fake_server.py``: :class:`FakeOpenAIServer`, the routes and the order of decisions.

Every name tests and benchmarks use is importable from here. Two ways to run it:

* in-process: ``with FakeOpenAIServer(latency=0.01) as srv: ...`` (the event
  loop runs in a daemon thread), or ``async with FakeOpenAIServer() as srv``
  to share the caller's running loop;
* as a subprocess: ``python -m orbench.testing.fake_openai --port 0
  --port-file PATH [--log PATH] ...``; runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Dict, Optional, Sequence

from .fake_chat import (
    BEHAVIOUR_TYPES,
    BUILTIN_RESPONDERS,
    DEFAULT_MODEL,
    ECHO_CHARS,
    ECHO_PREFIX,
    REFUSAL_TEXT,
    REFUSE_MARKER,
    Behaviour,
    ContentFilter,
    EmptyChoices,
    Hang,
    Malformed,
    NullContent,
    Reply,
    Responder,
    Status,
    content_text,
    echo_responder,
    last_user_message,
    refuse_responder,
    resolve_responder,
)
from .fake_http import ERROR_DEFAULTS as _ERROR_DEFAULTS  # tests patch an entry of this dict
from .fake_http import HOST
from .fake_records import RequestRecord
from .fake_server import FakeOpenAIServer
from .fake_thinking import STYLES as THINKING_STYLES
from .fake_thinking import ReasoningAPI, ThinkingModel, default_thinking_words, reasoning_api

__all__ = [
    "BEHAVIOUR_TYPES", "BUILTIN_RESPONDERS", "DEFAULT_MODEL", "ECHO_CHARS", "ECHO_PREFIX", "HOST",
    "REFUSAL_TEXT", "REFUSE_MARKER", "Behaviour", "ContentFilter", "EmptyChoices", "FakeOpenAIServer",
    "Hang", "Malformed", "NullContent", "ReasoningAPI", "Reply", "RequestRecord", "Responder", "Status",
    "ThinkingModel", "reasoning_api",
    "build_arg_parser", "content_text", "echo_responder", "last_user_message", "main",
    "refuse_responder", "resolve_responder", "server_from_args",
]


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
    p.add_argument("--thinking", choices=THINKING_STYLES, default=None,
                   help="the model thinks before each reply: inline <think> tags, apart in reasoning_content, "
                        "hidden (reasoning tokens only) or after a stray </think>; cut by the request's token cap")
    p.add_argument("--thinking-words", type=int, default=None,
                   help="how long it thinks, in words (default: 30 to 149, fixed by the prompt)")
    p.add_argument("--reasoning-api", action="store_true",
                   help="refuse max_tokens and a temperature other than 1 with HTTP 400, as OpenAI's reasoning "
                        "models do")
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
    responder = args.responder
    if args.thinking:
        responder = ThinkingModel(responder, args.thinking,
                                  args.thinking_words if args.thinking_words is not None else default_thinking_words)
    if args.reasoning_api:
        responder = reasoning_api(responder)
    return FakeOpenAIServer(
        responder,
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
    sys.exit(main())
