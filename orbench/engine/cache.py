"""On-disk response cache (SQLite), safe for several processes writing at once.

Default place: $ORBENCH_CACHE_DIR/responses.sqlite3, else $XDG_CACHE_HOME/orbench/...,
else ~/.cache/orbench/responses.sqlite3.

The key is a SHA-256 of canonical JSON holding the endpoint identity, the model id, the
messages and every setting that changes the output; when temperature > 0 (or none is sent:
the model's default, 1) the sample number is in it too, so repeated samples differ and a
re-run gets the same ones back. API keys, timeouts and concurrency are never part of it.
Only complete, non-empty replies are stored, and replies cut inside their thinking
(engine/completion.py's ``cacheable`` says why).

``put`` hands the write to a background thread, which commits at once whatever has queued up
since its last commit, in one transaction (a group commit: under load many replies share one
transaction, and nothing waits on purpose): a write costs about 0.1 ms of disk wait, which a
stage's event loop would otherwise spend blocked once per request (docs/benchmarks.md). ``get`` sees
a queued reply at once; ``flush()`` (run by a client's ``aclose()`` when a stage's requests end,
by ``close()`` and at interpreter exit, which a stage's SIGTERM reaches too) waits until
everything queued is on disk. Only SIGKILL can lose a reply that arrived during the commit under
way, as it loses the requests in flight; never a row already written to an output.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import queue
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Any


def default_cache_path() -> Path:
    base = os.environ.get("ORBENCH_CACHE_DIR")
    if base:
        return Path(base) / "responses.sqlite3"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "orbench" / "responses.sqlite3"


def cache_key(
    endpoint: str,
    model: str,
    messages: list[dict[str, str]],
    settings: dict[str, Any],
    sample: int = 0,
) -> str:
    """Hash of everything that determines a reply. ``settings`` must only hold output-affecting
    values (temperature, max_tokens, ...); the caller keeps keys and timeouts out."""
    payload: dict[str, Any] = {
        "endpoint": endpoint,
        "model": model,
        "messages": messages,
        "settings": {k: v for k, v in sorted(settings.items()) if v is not None},
    }
    # A request sent without a temperature (a model that takes none) is sampled at the model's
    # default, 1: its sample number belongs in the key as for any temperature above 0.
    if "temperature" not in settings or float(settings.get("temperature") or 0.0) > 0.0:
        payload["sample"] = sample
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A key -> JSON value store. One connection per thread; WAL mode lets readers and a
    writer from other processes work at once, and busy_timeout makes writers queue."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._pending: dict[str, dict[str, Any]] = {}  # put, not yet committed (get reads it too)
        self._queue: queue.Queue[str | None] | None = None
        self._writer_pid = 0  # the process the writer thread runs in (a fork has none)
        self._error: BaseException | None = None
        conn = self._conn()
        with conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
        return conn

    def get(self, key: str) -> dict[str, Any] | None:
        # The queue first: the writer drops a key from it only after committing it, so a key
        # is always in one or the other.
        pending = self._pending.get(key)
        if pending is not None:
            return pending
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a reply (on the writer thread, soon; see the module docstring). The first reply
        stored under a key stays: a key never changes its answer."""
        self._raise_error()
        if self._queue is None or self._writer_pid != os.getpid():
            self._start_writer()
        self._pending.setdefault(key, value)
        self._queue.put(key)  # type: ignore[union-attr]

    def replace(self, key: str, value: dict[str, Any]) -> None:
        """Store a value that may change (what a client learnt of a model's parameters), now and
        over any stored before. Not for replies: a reply's key never changes its answer."""
        self.flush()
        conn = self._conn()
        conn.execute("INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                     (key, json.dumps(value, ensure_ascii=False), time.time()))

    def flush(self) -> None:
        """Wait until every reply put so far is committed; raise the writer's error, if any."""
        if self._queue is not None and self._writer_pid == os.getpid():
            self._queue.join()
        self._raise_error()

    def _raise_error(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _start_writer(self) -> None:
        self._queue = queue.Queue()
        self._writer_pid = os.getpid()
        threading.Thread(target=self._write_loop, args=(self._queue,), name="orbench-cache-writer",
                         daemon=True).start()
        atexit.register(_flush_at_exit, weakref.ref(self))

    def _write_loop(self, todo: queue.Queue[str | None]) -> None:
        while True:
            keys = [todo.get()]
            while len(keys) < 500:  # what else has queued up (during the last commit) goes in this one
                try:
                    keys.append(todo.get_nowait())
                except queue.Empty:
                    break
            live = [k for k in keys if k is not None]
            try:
                if live:
                    self._commit([(k, self._pending[k]) for k in dict.fromkeys(live) if k in self._pending])
            except BaseException as err:  # kept for the caller's next put() or flush()
                self._error = err
            finally:
                for k in live:
                    self._pending.pop(k, None)
                for _ in keys:
                    todo.task_done()
            if None in keys:  # close(): this thread's connection goes with it
                self._local.conn.close()
                return

    def _commit(self, items: "list[tuple[str, dict[str, Any]]]") -> int:
        """Store replies in one transaction; returns how many were new. INSERT OR IGNORE: if two
        writers raced on one key, the first reply stays."""
        conn = self._conn()
        now = time.time()
        before = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR IGNORE INTO responses (key, value, created) VALUES (?, ?, ?)",
                             ((k, json.dumps(v, ensure_ascii=False), now) for k, v in items))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return conn.total_changes - before

    def existing(self, keys: "list[str]") -> set[str]:
        """Which of these keys are stored (one query per 500 keys)."""
        self.flush()
        conn, found = self._conn(), set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in conn.execute(f"SELECT key FROM responses WHERE key IN ({marks})", chunk))
        return found

    def put_many(self, items: "list[tuple[str, dict[str, Any]]]") -> int:
        """Store many replies at once (a batch's results); returns how many were new."""
        self.flush()
        return self._commit(items)

    def __len__(self) -> int:
        self.flush()
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self.flush()
        if self._queue is not None and self._writer_pid == os.getpid():
            self._queue.put(None)  # the writer thread ends; a later put() starts another
            self._queue.join()
        self._queue = None
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def _flush_at_exit(ref: "weakref.ref[ResponseCache]") -> None:
    cache = ref()
    if cache is not None:
        cache.flush()
