"""On-disk response cache (SQLite), safe for several processes writing at once.

Default place: $ORBENCH_CACHE_DIR/responses.sqlite3, else $XDG_CACHE_HOME/orbench/...,
else ~/.cache/orbench/responses.sqlite3.

The key is a SHA-256 of canonical JSON holding the endpoint identity, the model id, the
messages and every setting that changes the output; when temperature > 0 the sample number
is in it too, so repeated samples differ and a re-run gets the same ones back. API keys,
timeouts and concurrency are never part of it. Only complete, non-empty replies are stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
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
    if float(settings.get("temperature") or 0.0) > 0.0:
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
        row = self._conn().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        # INSERT OR IGNORE: if two writers raced on one key, the first reply stays, so a key
        # never changes its answer once stored.
        self._conn().execute(
            "INSERT OR IGNORE INTO responses (key, value, created) VALUES (?, ?, ?)",
            (key, json.dumps(value, ensure_ascii=False), time.time()),
        )

    def existing(self, keys: "list[str]") -> set[str]:
        """Which of these keys are stored (one query per 500 keys)."""
        conn, found = self._conn(), set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in conn.execute(f"SELECT key FROM responses WHERE key IN ({marks})", chunk))
        return found

    def put_many(self, items: "list[tuple[str, dict[str, Any]]]") -> int:
        """Store many replies in one transaction (a batch's results); returns how many were new."""
        conn = self._conn()
        now = time.time()
        before = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR IGNORE INTO responses (key, value, created) VALUES (?, ?, ?)",
                ((k, json.dumps(v, ensure_ascii=False), now) for k, v in items),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return conn.total_changes - before

    def __len__(self) -> int:
        return self._conn().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
