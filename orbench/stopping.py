"""How a stage stops: SIGTERM (a job scheduler, `kill`, a container stop) as Ctrl-C does.

Either way the rows and cached replies a stage holds are written before it exits with 130
(`orbench.run.cli.run_cli` prints the line that says so). While an asyncio run is on, Ctrl-C
cancels its main task (asyncio's own SIGINT handler), and SIGTERM takes the same path.

Where SIGINT is ignored, as in a process started in the background of a script (`stage ... &`
without job control: the shell starts it so, and Python keeps it), asyncio sets no handler of
its own and a raised SIGINT does nothing: SIGTERM then cancels the run started by `run_async`
itself, or raises KeyboardInterrupt where no run is on (batch polling, reading files). Ctrl-C
stays ignored there, as the script asked.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")

_running: list[asyncio.Task] = []  # the main task of the asyncio run on, if any (started by run_async)
_terminated = False  # a SIGTERM cancelled it


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, which SIGTERM stops as Ctrl-C does (KeyboardInterrupt) even where
    SIGINT is ignored."""
    global _terminated

    async def main() -> T:
        _running.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            return await coro
        finally:
            _running.pop()

    _terminated = False
    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if _terminated:
            raise KeyboardInterrupt from None
        raise


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    global _terminated
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):  # Python's or asyncio's Ctrl-C handler: the same path
        handler(signal.SIGINT, frame)
        return
    if _running and not _running[-1].done():  # SIGINT ignored, a run on: cancel it as asyncio would
        _terminated = True
        _running[-1].cancel()
        _running[-1].get_loop().call_soon_threadsafe(lambda: None)  # wake the loop
        return
    raise KeyboardInterrupt


def sigterm_as_interrupt() -> None:
    """From now on SIGTERM stops this process as Ctrl-C does (see the module's docstring). A
    handler someone else set stays."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
            signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
