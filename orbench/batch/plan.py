"""Planning: the requests a stage would send (read from its spec by the runner) that the
cache cannot answer, written as OpenAI batch JSONL shards.

A request's ``custom_id`` is its cache key, so a result line goes straight into the cache
under the key the stage's normal path will look up.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..engine.llm import ChatRequest, LLMClient
from ..tables.naming import safe_name

CHAT_URL = "/v1/chat/completions"
MAX_REQUESTS = 50_000          # the OpenAI Batch API's limit per file
MAX_BYTES = 190 * 1024 * 1024  # under its 200 MB file limit


@dataclass
class Group:
    """The requests for one endpoint, in first-seen order, each once."""

    client: LLMClient
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)


class Planner:
    def __init__(self) -> None:
        self.groups: dict[int, Group] = {}

    def add(self, client: LLMClient, key: str, body: dict[str, Any]) -> None:
        group = self.groups.setdefault(id(client), Group(client))
        group.requests.setdefault(key, body)

    @property
    def total(self) -> int:
        return sum(len(g.requests) for g in self.groups.values())

    def keys(self) -> set[str]:
        return {k for g in self.groups.values() for k in g.requests}


def collect(requests: Iterable[tuple[LLMClient, ChatRequest]]) -> Planner:
    """The requests (each with its client) that the cache cannot answer, each once."""
    planner = Planner()
    for client, request in requests:
        prepared = client.prepare(request)
        planner.add(client, prepared.key, client.body(prepared))
    for group in planner.groups.values():
        cache = group.client.cache
        for key in cache.existing(list(group.requests)) if cache is not None else ():
            del group.requests[key]
    return planner


@dataclass
class ShardFile:
    path: Path
    endpoint: str
    requests: int
    bytes: int
    sha256: str


def request_line(key: str, body: dict[str, Any]) -> bytes:
    return (json.dumps({"custom_id": key, "method": "POST", "url": CHAT_URL, "body": body},
                       ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def write_shards(group: Group, folder: Path, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES,
                 start: int = 1) -> list[ShardFile]:
    """Split one endpoint's requests into files of at most ``max_requests`` lines and
    ``max_bytes`` bytes (whichever comes first), each written atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    name = safe_name(group.client.endpoint.name)
    shards: list[ShardFile] = []
    lines: list[bytes] = []
    size = 0

    def flush() -> None:
        nonlocal lines, size
        if not lines:
            return
        path = folder / f"{name}-{start + len(shards):03d}.jsonl"
        blob = b"".join(lines)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_bytes(blob)
        os.replace(tmp, path)
        shards.append(ShardFile(path, group.client.endpoint.identity, len(lines), len(blob),
                                hashlib.sha256(blob).hexdigest()))
        lines, size = [], 0

    for key, body in group.requests.items():
        line = request_line(key, body)
        if lines and (len(lines) >= max_requests or size + len(line) > max_bytes):
            flush()
        lines.append(line)
        size += len(line)
    flush()
    return shards


def custom_ids(path: Path) -> Iterable[str]:
    """The custom_ids of a shard file (a recorded batch's requests)."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)["custom_id"]
