"""Reading batch result files (OpenAI's output and error files, ``vllm run-batch`` output)
into the response cache.

A line is ``{"custom_id": ..., "response": {"status_code": ..., "body": {...}}, "error": ...}``.
Only a 200 whose body holds a non-empty, unfiltered reply is cached, the rule the online path
follows; every other line is counted and its row goes through the normal path.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..engine.cache import ResponseCache
from ..errors import UserError
from ..engine.llm import Unreadable, cacheable, result_from_completion


@dataclass
class ImportCounts:
    errors: int = 0          # lines with an error status or error object
    not_cached: int = 0      # 200s with an empty, filtered or unreadable reply
    foreign: int = 0         # custom_ids this run did not plan (already cached, or another stage's)
    error_examples: Counter = field(default_factory=Counter)
    keys: set[str] = field(default_factory=set)  # the custom_ids whose replies are now cached
    failures: dict[str, str] = field(default_factory=dict)  # custom_id -> why it has no reply

    @property
    def cached(self) -> int:
        return len(self.keys)

    def add(self, other: "ImportCounts") -> None:
        self.errors += other.errors
        self.not_cached += other.not_cached
        self.foreign += other.foreign
        self.error_examples.update(other.error_examples)
        self.keys |= other.keys
        self.failures.update(other.failures)

    def as_info(self) -> dict[str, int]:
        return {"imported": self.cached, "batch_errors": self.errors, "empty_or_filtered": self.not_cached,
                "not_needed": self.foreign}

    def describe(self) -> str:
        parts = [f"{self.cached} cached"]
        if self.errors:
            common = "; ".join(f"{m} (x{n})" for m, n in self.error_examples.most_common(3))
            parts.append(f"{self.errors} failed in the batch ({common})")
        if self.not_cached:
            parts.append(f"{self.not_cached} empty or filtered (not cached)")
        if self.foreign:
            parts.append(f"{self.foreign} not needed by this run (already cached, or not this stage's; ignored)")
        return ", ".join(parts)


def error_message(line: dict[str, Any]) -> str | None:
    """Why a result line holds no reply, or None when it holds one."""
    err = line.get("error")
    response = line.get("response") if isinstance(line.get("response"), dict) else None
    status = response.get("status_code") if response else None
    if err:
        msg = err.get("message") if isinstance(err, dict) else str(err)
        return f"{status or 'error'}: {msg}"[:200]
    if response is None:
        return "no response"
    if status != 200:
        body = response.get("body") if isinstance(response.get("body"), dict) else {}
        inner = body.get("error") if isinstance(body.get("error"), dict) else {}
        return f"{status}: {inner.get('message') or 'error'}"[:200]
    return None


def cache_value(body: Any, default_model: str) -> dict[str, Any] | None:
    """What the online path would have stored for this reply, or None if it stores nothing."""
    try:
        result = result_from_completion(body, default_model)
    except Unreadable:
        return None
    return result.to_cache() if cacheable(result) else None


def parse_lines(lines: Iterable[bytes], wanted: set[str] | None, default_model: str,
                counts: ImportCounts) -> list[tuple[str, dict[str, Any]]]:
    entries: list[tuple[str, dict[str, Any]]] = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
            key = line["custom_id"]
        except (ValueError, KeyError, TypeError):
            raise UserError(f"line {n} of a batch result is not a result line (JSON with a custom_id)") from None
        if wanted is not None and key not in wanted:
            counts.foreign += 1
            continue
        why = error_message(line)
        if why is not None:
            counts.errors += 1
            counts.error_examples[why] += 1
            counts.failures[key] = f"batch result: {why}"
            continue
        value = cache_value(line["response"].get("body"), default_model)
        if value is None:
            counts.not_cached += 1
            counts.failures[key] = "batch result: an empty or filtered reply"
            continue
        entries.append((key, value))
    return entries


def import_blob(blob: bytes, cache: ResponseCache, wanted: set[str] | None, default_model: str) -> ImportCounts:
    counts = ImportCounts()
    entries = parse_lines(blob.splitlines(), wanted, default_model, counts)
    cache.put_many(entries)
    counts.keys = {k for k, _ in entries}
    return counts


def import_file(path: Path, cache: ResponseCache, wanted: set[str] | None, default_model: str) -> ImportCounts:
    try:
        blob = Path(path).read_bytes()
    except FileNotFoundError:
        raise UserError(f"batch result file not found: {path}") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory; give the result .jsonl files") from None
    try:
        return import_blob(blob, cache, wanted, default_model)
    except UserError as err:
        raise UserError(f"{path}: {err}") from None
