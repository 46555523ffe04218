"""What the fake server remembers: one :class:`RequestRecord` per request, kept in order.

Tests read the records (``server.requests``, ``server.status_counts``) and may wait for
some to arrive; with a log path each record is also appended to a JSON-lines file, flushed
per line, so that a test can read what a server in another process saw.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union


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
    finish_reason: Optional[str] = None

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
            "finish_reason": self.finish_reason,
        }


class RequestLog:
    """The records, their status counts, and the optional JSON-lines file; thread-safe."""

    def __init__(self, path: Union[str, os.PathLike, None] = None) -> None:
        self.path = os.fspath(path) if path is not None else None
        self._changed = threading.Condition()
        self._records: List[RequestRecord] = []
        self._counts: "collections.Counter[Optional[int]]" = collections.Counter()
        self._file = None

    def open(self) -> None:
        if self.path is not None:
            self._file = open(self.path, "a", encoding="utf-8")

    def close(self) -> None:
        log_file, self._file = self._file, None
        if log_file is not None:
            log_file.close()

    def add(self, record: RequestRecord) -> None:
        with self._changed:
            self._records.append(record)
            self._counts[record.status] += 1
            self._changed.notify_all()
        log_file = self._file
        if log_file is not None:
            log_file.write(json.dumps(record.to_json(), ensure_ascii=False, default=str) + "\n")
            log_file.flush()

    def records(self) -> List[RequestRecord]:
        with self._changed:
            return list(self._records)

    def counts(self) -> Dict[Optional[int], int]:
        with self._changed:
            return dict(self._counts)

    def clear(self) -> None:
        with self._changed:
            self._records.clear()
            self._counts.clear()

    def wait_for(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` records exist; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self._records) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True
