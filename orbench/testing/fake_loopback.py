"""A small HTTP/1.1 server on 127.0.0.1: its life cycle and its connections.

It runs on its own event loop in a daemon thread (``with server: ...``) or on the caller's
running loop (``async with server: ...``). A subclass decides what each request gets by
defining ``respond(request) -> Outcome``; this class sends it: after ``latency`` seconds,
or never (the connection is held open) when the outcome's status is None.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from typing import Any, List, Optional, Self

from .fake_http import (
    HOST,
    STREAM_LIMIT,
    Outcome,
    ProtocolError,
    Request,
    error_body,
    hold,
    read_request,
    write_response,
)


class LoopbackHTTPServer:
    """Serves ``respond(request)`` on 127.0.0.1; port 0 lets the OS choose a free one."""

    def __init__(self, port: int = 0, latency: float = 0.0) -> None:
        self.latency = float(latency)
        self._requested_port = int(port)
        self._port: Optional[int] = None
        self._request_ids = itertools.count(1)
        self._server: Optional[asyncio.base_events.Server] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._conn_tasks: "set[asyncio.Task]" = set()

    async def respond(self, request: Request) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

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
    def sockname(self) -> List[tuple]:
        """Addresses of the listening sockets."""
        server = self._server
        return [s.getsockname() for s in server.sockets] if server is not None else []

    @property
    def running(self) -> bool:
        return self._server is not None

    # ---- lifecycle: background thread -----------------------------------

    def start(self, timeout: float = 10.0) -> Self:
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    # ---- lifecycle: caller's event loop ---------------------------------

    async def start_async(self) -> Self:
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

    async def __aenter__(self) -> Self:
        return await self.start_async()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop_async()

    # ---- open/close ------------------------------------------------------

    async def _open(self) -> None:
        self._server = await asyncio.start_server(
            self._handle_connection,
            host=HOST,
            port=self._requested_port,
            backlog=1024,
            limit=STREAM_LIMIT,
            reuse_address=True,
        )
        self._port = self._server.sockets[0].getsockname()[1]

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

    # ---- connections -----------------------------------------------------

    async def _handle_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conn_tasks.add(task)
        try:
            while True:
                try:
                    request = await read_request(reader, writer)
                except ProtocolError as exc:
                    body = json.dumps(error_body(400, f"Malformed HTTP request: {exc}")).encode()
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

    async def _serve(self, request: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; returns whether the connection stays open."""
        outcome = await self.respond(request)
        if outcome.status is None:  # Hang
            await hold(reader)
            return False
        delay = self.latency if outcome.latency is None else outcome.latency
        if delay and delay > 0:
            await asyncio.sleep(delay)
        keep_alive = request.keep_alive
        await self._write(
            writer, outcome.status, outcome.body, outcome.content_type, outcome.extra_headers, keep_alive
        )
        return keep_alive

    async def _write(self, writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str,
                     extra_headers: list, keep_alive: bool) -> None:
        request_id = f"req_fake{next(self._request_ids):08d}"
        await write_response(writer, status, body, content_type, extra_headers, keep_alive, request_id)
