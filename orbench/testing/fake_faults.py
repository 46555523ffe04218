"""The faults a fake server can be told to make, and which one a chat request meets.

:meth:`FaultPlan.pick` goes through them in a fixed order and returns the first that
applies, or None (the responder answers):

1. ``hang``: every chat request hangs;
2. the FIFO queue of one-shot behaviours (:meth:`FaultPlan.enqueue`);
3. ``garbage``: cycle through Malformed, EmptyChoices, NullContent;
4. ``fail_when_contains``: a request whose messages contain that text gets ``fail_status``;
5. seeded random faults (``fault_rates``), one draw per request that gets this far, in
   arrival order, so that a seed gives the same faults on every run.
"""

from __future__ import annotations

import collections
import itertools
import random
import threading
from typing import Any, Dict, Mapping, Optional, Tuple

from .fake_chat import Behaviour, EmptyChoices, Hang, Malformed, NullContent, Status, coerce_behaviour, content_text


def checked_fault_rates(fault_rates: Optional[Mapping[int, float]]) -> Dict[int, float]:
    """``{status: probability}`` sorted by status, zero rates dropped; ValueError when invalid."""
    rates: Dict[int, float] = {}
    for code, rate in sorted((fault_rates or {}).items()):
        code, rate = int(code), float(rate)
        if not 400 <= code <= 599:
            raise ValueError(f"fault status must be 4xx/5xx, got {code}")
        if rate < 0:
            raise ValueError(f"fault rate must be >= 0, got {rate}")
        if rate > 0:
            rates[code] = rate
    if sum(rates.values()) > 1.0 + 1e-9:
        raise ValueError(f"fault rates add up to more than 1: {rates}")
    return rates


class FaultPlan:
    """The fault settings (each may be changed while the server runs) and their state."""

    def __init__(
        self,
        fault_rates: Optional[Mapping[int, float]] = None,
        retry_after: Optional[float] = 1.0,
        seed: Optional[int] = 0,
        hang: bool = False,
        garbage: bool = False,
        fail_when_contains: Optional[str] = None,
        fail_status: int = 400,
    ) -> None:
        self.fault_rates = checked_fault_rates(fault_rates)
        self.retry_after = retry_after
        self.seed = seed
        self.hang = bool(hang)
        self.garbage = bool(garbage)
        self.fail_when_contains = fail_when_contains
        self.fail_status = int(fail_status)
        self._rng = random.Random(seed)
        self._garbage_cycle = itertools.cycle((Malformed(), EmptyChoices(), NullContent()))
        self._queue: "collections.deque[Behaviour]" = collections.deque()
        self._lock = threading.Lock()

    # ---- the one-shot queue ----------------------------------------------

    def enqueue(self, *behaviours: Any) -> None:
        items = [coerce_behaviour(b) for b in behaviours]
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def clear_queue(self) -> None:
        with self._lock:
            self._queue.clear()

    # ---- choosing ----------------------------------------------------------

    def pick(self, body: Mapping[str, Any]) -> Optional[Tuple[Behaviour, str]]:
        """The fault this chat request meets and its source name, or None for none."""
        if self.hang:
            return Hang(), "hang_mode"
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        if queued is not None:
            return queued, "queue"
        if self.garbage:
            return next(self._garbage_cycle), "garbage"
        if self.fail_when_contains is not None and _contains(body, self.fail_when_contains):
            return Status(self.fail_status), "fail_when_contains"
        fault = self._draw_fault()
        return (fault, "fault") if fault is not None else None

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


def _contains(body: Mapping[str, Any], needle: str) -> bool:
    for message in body.get("messages") or []:
        if isinstance(message, dict) and needle in content_text(message.get("content")):
            return True
    return False


def forwarded(name: str) -> property:
    """A server attribute that reads and writes the same attribute of its ``faults`` plan."""

    def get(server: Any) -> Any:
        return getattr(server.faults, name)

    def set_(server: Any, value: Any) -> None:
        setattr(server.faults, name, value)

    return property(get, set_, doc=f"The fault plan's ``{name}`` (settable while serving).")
