"""Resumable stage output.

While a stage runs, each finished row is appended to the output CSV at once (one write call
per row, so a kill leaves at most one torn record) and failed rows to the failed CSV.
Re-running the same command:
- repairs a torn last record;
- reads the rows already written and skips their inputs (a row's key is a hash of the input
  fields it carries, plus an occurrence number for repeated inputs);
- retries the rows that failed.
The failed CSV exists only while some row of the latest run failed: it is created at the
first failure, and a stale one is removed when a run starts (its rows are retried).
When every input is done the file is rewritten in input order, atomically (temp file +
rename). A lock file stops two runs from writing the same output at once.

Optional columns (a thinking model's `reasoning`) are in the file while a run writes it, and in
the final file only when some row fills one: an output of a model that shows no thinking has
the columns it always had. Resuming such a file puts the column back (empty for its rows)
until the run ends.
"""

from __future__ import annotations

import csv
import errno
import fcntl
import hashlib
import io
import os
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..errors import UserError

csv.field_size_limit(2**31 - 1)  # responses can be long


def content_hash(values: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=12)
    for v in values:
        h.update(str(v).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


def keys_with_occurrence(hashes: Iterable[str]) -> list[str]:
    """Number repeated hashes so that identical inputs remain distinct jobs."""
    seen: dict[str, int] = defaultdict(int)
    out = []
    for h in hashes:
        out.append(f"{h}.{seen[h]}")
        seen[h] += 1
    return out


def repair_torn_tail(path: Path) -> int:
    """Cut a record left half-written by a kill. Returns the number of bytes removed.

    A record ends at a newline outside quotes; quote parity per line finds those points
    without a byte-by-byte loop.
    """
    data = path.read_bytes()
    if not data:
        return 0
    good_end = 0
    pos = 0
    open_quote = False
    for line in data.split(b"\n")[:-1]:  # the piece after the last newline is never complete
        pos += len(line) + 1
        if line.count(b'"') % 2:
            open_quote = not open_quote
        if not open_quote:
            good_end = pos
    removed = len(data) - good_end
    if removed:
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return removed


def _row_bytes(values: Sequence[object]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return buf.getvalue().encode("utf-8")


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        rows = [dict(zip(header, r)) for r in reader if r]
    return header, rows


class OutputLock:
    """An exclusive lock next to the output; released automatically if the process dies."""

    def __init__(self, target: Path) -> None:
        self.path = target.with_name(target.name + ".lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise UserError(
                    f"another run is already writing {self.path.with_suffix('').name}; "
                    f"wait for it to finish (lock: {self.path})"
                ) from None
            raise
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            try:
                self.path.unlink()
            except OSError:
                pass
            os.close(self._fd)
            self._fd = None


def present_columns(columns: Sequence[str], optional: Sequence[str], rows: Sequence[dict]) -> list[str]:
    """The columns a final file has: every column but the optional ones no row fills."""
    return [c for c in columns if c not in optional or any(r.get(c) for r in rows)]


class RowFile:
    """An append-only CSV with a fixed header, one write() per batch of rows."""

    def __init__(self, path: Path, columns: Sequence[str], optional: Sequence[str] = ()) -> None:
        self.path = path
        self.columns = list(columns)
        self.optional = tuple(optional)
        self._fd: int | None = None

    def check_header(self) -> list[str] | None:
        """The header of the file there (None: no file yet). It must be this stage's columns,
        less any optional ones."""
        if not (self.path.exists() and self.path.stat().st_size > 0):
            return None
        with open(self.path, newline="", encoding="utf-8", errors="replace") as fh:
            header = next(csv.reader(fh), [])
        if header != [c for c in self.columns if c in header or c not in self.optional]:
            raise UserError(
                f"{self.path} exists with columns {header}, not this stage's {self.columns}; "
                f"choose another --output_path or move that file away"
            )
        return header

    def open(self, *, truncate: bool = False) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0)
        self._fd = os.open(self.path, flags, 0o644)
        if os.fstat(self._fd).st_size == 0:
            os.write(self._fd, _row_bytes(self.columns))

    def append(self, rows: Iterable[dict[str, object]]) -> None:
        assert self._fd is not None, "RowFile.open() first"
        blob = b"".join(_row_bytes([r.get(c, "") for c in self.columns]) for r in rows)
        if blob:
            os.write(self._fd, blob)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_atomic(path: Path, columns: Sequence[str], rows: Iterable[dict[str, object]]) -> int:
    """Write a whole CSV to a temp file, fsync, then rename over ``path``."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    n = 0
    with open(tmp, "wb") as fh:
        fh.write(_row_bytes(columns))
        for row in rows:
            fh.write(_row_bytes([row.get(c, "") for c in columns]))
            n += 1
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return n


class StageOutput:
    """The output CSV and failed CSV of one stage run.

    ``key_of(row)`` gives the content hash of a row from the input fields it carries.
    With ``many_rows_per_key`` (stage 2: several rewrites per seed) keys carry no
    occurrence number and the caller must give unique inputs.
    """

    def __init__(
        self,
        path: Path,
        columns: Sequence[str],
        failed_path: Path,
        failed_columns: Sequence[str],
        key_of: Callable[[dict[str, str]], str],
        *,
        many_rows_per_key: bool = False,
        optional_columns: Sequence[str] = (),
    ) -> None:
        self.path = Path(path)
        self.out = RowFile(self.path, columns, optional_columns)
        self.failed = RowFile(Path(failed_path), failed_columns)
        self.key_of = key_of
        self.many = many_rows_per_key
        self.lock = OutputLock(self.path)
        self.repaired_bytes = 0

    def open(self) -> set[str]:
        """Lock, repair, and return the keys already done."""
        self.lock.acquire()
        try:
            header = self.out.check_header()
            done: set[str] = set()
            if header is not None:
                self.repaired_bytes = repair_torn_tail(self.path)
                _, rows = read_rows(self.path)
                if header != self.out.columns:  # an optional column comes back while the run writes
                    write_atomic(self.path, self.out.columns, rows)
                hashes = [self.key_of(r) for r in rows]
                done = set(hashes) if self.many else set(keys_with_occurrence(hashes))
            self.out.open()
            # Rows that failed last time are not in ``done``: they are retried, and the
            # failed file is started afresh at this run's first failure (none: no file).
            self.failed.path.unlink(missing_ok=True)
        except BaseException:
            self.lock.release()
            raise
        return done

    def append(self, rows: Iterable[dict[str, object]]) -> None:
        self.out.append(rows)

    def append_failed(self, row: dict[str, object]) -> None:
        if self.failed._fd is None:
            self.failed.open(truncate=True)
        self.failed.append([row])

    def finalize(
        self,
        order: Sequence[str],
        transform: Callable[[list[dict[str, str]]], list[dict[str, str]]] | None = None,
    ) -> list[dict[str, str]]:
        """Rewrite the output in input order (``order`` = the input keys) and return the rows.
        Rows from earlier runs whose inputs are not in this run are kept, at the end."""
        self.out.close()
        self.failed.close()
        _, rows = read_rows(self.path)
        hashes = [self.key_of(r) for r in rows]
        keys = hashes if self.many else keys_with_occurrence(hashes)
        by_key: dict[str, list[dict[str, str]]] = defaultdict(list)
        for k, r in zip(keys, rows):
            by_key[k].append(r)
        ordered: list[dict[str, str]] = []
        for k in order:
            ordered.extend(by_key.pop(k, ()))
        for leftover in by_key.values():
            ordered.extend(leftover)
        if transform is not None:
            ordered = transform(ordered)
        write_atomic(self.path, present_columns(self.out.columns, self.out.optional, ordered), ordered)
        return ordered

    def close(self) -> None:
        self.out.close()
        self.failed.close()
        self.lock.release()
