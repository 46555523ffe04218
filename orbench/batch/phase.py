"""The batch phase of a stage run: it fills the cache, and the stage's normal path finishes
from it, writing the same files an online run writes.

- submit (``--batch``): resume the batches recorded in the sidecar, plan what is still
  missing, write and upload the shards, create the batches, poll them to the end, import.
- export (``--batch_export DIR``): plan, write the shards to DIR, print the commands, stop.
- import (``--batch_import FILE...``): read result files into the cache; the finish is
  offline, and a request with no reply in the files fails its row.
- cancel (``--batch_cancel``): cancel the recorded batches, stop.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..engine.backends import Backend, Offline, Online
from ..engine.cache import ResponseCache
from ..errors import UserError
from ..engine.llm import ChatRequest, LLMClient
from .options import BatchOptions
from .plan import Planner, collect, custom_ids, write_shards
from .remote import BatchRemote
from .results import ImportCounts, import_blob, import_file
from .sidecar import TERMINAL, ShardRecord, Sidecar, shard_folder, sidecar_path


def note(msg: str) -> None:
    print(f"batch: {msg}", file=sys.stderr)


Planned = Sequence[tuple[LLMClient, ChatRequest]]


@dataclass(frozen=True)
class BatchPhase:
    """What the phase leaves for the runner: the record's "batch" entry, the backend that
    finishes the run, or the message of a mode that stops here (export, cancel)."""

    info: dict[str, Any] = field(default_factory=dict)
    backend: Backend = field(default_factory=Online)
    stop: str | None = None


def run_batch_phase(opts: BatchOptions, *, requests: Planned, clients: Sequence[LLMClient], output: Path,
                    stage: str) -> BatchPhase:
    """Run the phase for the requests the stage would make now (its jobs not done yet)."""
    cache = _cache_of(clients)
    if opts.mode == "cancel":
        return BatchPhase(stop=_cancel(Sidecar.load(sidecar_path(output)), clients))
    if opts.mode == "export":
        return BatchPhase(stop=_export(opts, collect(requests)))
    if opts.mode == "import":
        return _import(opts, collect(requests), cache)
    return BatchPhase(info=Submission(opts, clients, cache, output, stage).run(requests))


def _cache_of(clients: Sequence[LLMClient]) -> ResponseCache:
    cache = clients[0].cache
    if cache is None:
        raise UserError("batch mode needs the response cache; drop --no_cache")
    return cache


def _export(opts: BatchOptions, planner: Planner) -> str:
    assert opts.export_dir is not None
    if planner.total == 0:
        return "nothing to export: the cache already answers every request; run without --batch_export"
    lines = []
    for group in planner.groups.values():
        for shard in write_shards(group, opts.export_dir, opts.max_requests):
            out = shard.path.with_name(shard.path.stem + ".results.jsonl")
            lines.append(f"vllm run-batch -i {shlex.quote(str(shard.path))} -o {shlex.quote(str(out))} "
                         f"--model {shlex.quote(group.client.endpoint.model)}")
    return (
        f"wrote {planner.total} request(s) in {len(lines)} file(s) to {opts.export_dir}. Run:\n"
        + "\n".join(lines)
        + "\nthen this same command with --batch_import <the .results.jsonl files> instead of --batch_export."
    )


def _import(opts: BatchOptions, planner: Planner, cache: ResponseCache) -> BatchPhase:
    wanted = planner.keys()
    total = ImportCounts()
    for path in opts.import_files:
        counts = import_file(path, cache, wanted, "")
        note(f"{path}: {counts.describe()}")
        total.add(counts)
    rest = wanted - total.keys
    if rest:
        note(f"{len(rest)} request(s) have no reply in these files; their rows go to the failed file "
             f"(--batch_export again writes a file of just those)")
    info = {"mode": "import", "files": [str(p) for p in opts.import_files], "planned": len(wanted),
            **total.as_info()}
    # No engine to ask: the run finishes offline, from the cache.
    return BatchPhase(info=info, backend=Offline({k: total.failures.get(k, "") for k in rest}))


def _say_rest(rest: int) -> None:
    if rest:
        note(f"{rest} request(s) have no batch result; the normal path sends them online now")


def _cancel(sc: Sidecar, clients: Sequence[LLMClient]) -> str:
    if not sc.path.exists():
        raise UserError(f"no batches are recorded for this output ({sc.path} does not exist)")
    remotes = _Remotes(clients)
    live = [s for s in sc.shards if s.submitted and s.status not in TERMINAL]
    for shard in live:
        batch = remotes.of(shard).cancel(shard.batch_id)
        shard.status = batch.status
        sc.save()
        note(f"{shard.batch_id} ({Path(shard.path).name}): {batch.status}")
    return (f"cancel requested for {len(live)} batch(es); run with --batch to collect their partial "
            f"results and resubmit the rest" if live else "no running batch to cancel")


class _Remotes:
    def __init__(self, clients: Sequence[LLMClient]) -> None:
        self.clients = {c.endpoint.identity: c for c in clients}
        self._made: dict[str, BatchRemote] = {}

    def of(self, shard: ShardRecord) -> BatchRemote:
        if shard.endpoint not in self._made:
            client = self.clients.get(shard.endpoint)
            if client is None:
                raise UserError(f"a recorded batch ({shard.batch_id or shard.path}) was sent to another endpoint "
                                f"({shard.endpoint_name}); run with the same models as before")
            self._made[shard.endpoint] = BatchRemote(client)
        return self._made[shard.endpoint]


class Submission:
    def __init__(self, opts: BatchOptions, clients: Sequence[LLMClient], cache: ResponseCache, output: Path,
                 stage: str) -> None:
        self.opts, self.clients, self.cache = opts, clients, cache
        self.sc = Sidecar.load(sidecar_path(output))
        self.sc.stage = stage
        self.folder = shard_folder(output.resolve())  # absolute: a re-run may start in another folder
        self.remotes = _Remotes(clients)
        self.counts = ImportCounts()
        self.failed: list[ShardRecord] = []

    def run(self, requests: Planned) -> dict[str, Any]:
        # Shards written but never uploaded cost nothing: plan them afresh.
        self.sc.shards = [s for s in self.sc.shards if s.file_id is not None]
        resumed = [s for s in self.sc.shards if s.pending]
        if resumed:
            note(f"resuming {len(resumed)} recorded batch(es) from {self.sc.path}")
        self._submit([s for s in self.sc.shards if not s.submitted])
        self._wait()
        planner = collect(requests)
        taken = self._taken()
        new: list[ShardRecord] = []
        for group in planner.groups.values():
            for key in taken & set(group.requests):
                del group.requests[key]
            start = 1 + sum(s.endpoint == group.client.endpoint.identity for s in self.sc.shards)
            for f in write_shards(group, self.folder, self.opts.max_requests, start=start):
                new.append(ShardRecord(str(f.path), f.endpoint, group.client.endpoint.name, f.requests, f.bytes,
                                       f.sha256))
        if new:
            self.sc.shards.extend(new)
            self.sc.save()
            note(f"{sum(s.requests for s in new)} request(s) in {len(new)} file(s) under {self.folder}")
            self._submit(new)
            self._wait()
        elif not resumed:
            note("nothing to submit: the cache already answers every request")
        if self.failed:
            raise UserError(self._failure_text())
        planned = planner.keys() - taken
        _say_rest(len(planned - self.counts.keys))
        return {"mode": "submit", "sidecar": str(self.sc.path), "batches": [s.batch_id for s in self.sc.shards],
                "planned": len(planned), **self.counts.as_info()}

    def _taken(self) -> set[str]:
        """Requests of batches that completed or still run: never submitted again. Those of
        failed, expired or cancelled batches that got no reply may be planned again."""
        keys: set[str] = set()
        for s in self.sc.shards:
            if s.submitted and s.status not in ("failed", "expired", "cancelled"):
                if not Path(s.path).exists():
                    # Its replies are in the cache already; only its failed requests could be
                    # submitted again, and those would fail the same way.
                    note(f"warning: {s.path} (batch {s.batch_id}) is gone; its failed requests may be sent again")
                    continue
                keys.update(custom_ids(Path(s.path)))
        return keys

    def _submit(self, shards: list[ShardRecord]) -> None:
        for shard in shards:
            remote = self.remotes.of(shard)
            if shard.file_id is None:
                shard.file_id = remote.upload(Path(shard.path))
                shard.status = "uploaded"
                self.sc.save()
            batch = remote.find(shard.file_id, shard.sha256) if shard.status == "uploaded" else None
            if batch is None:
                batch = remote.create(shard.file_id, shard.sha256)
            shard.batch_id, shard.status = batch.id, batch.status
            self.sc.save()  # before the first poll
            note(f"submitted {shard.batch_id} ({shard.requests} request(s), {Path(shard.path).name})")

    def _wait(self) -> None:
        live = [s for s in self.sc.shards if s.pending]
        if not live:
            return
        from tqdm import tqdm  # here, not at the top: a light --help

        bar = tqdm(total=sum(s.requests for s in live), desc="batch", unit="req", dynamic_ncols=True, disable=None)
        dropped = 0
        try:
            while live:
                for shard in live:
                    batch = self.remotes.of(shard).poll(shard.batch_id)
                    if batch is None:
                        dropped += 1
                        continue
                    self._update(shard, batch)
                bar.n = sum(s.request_counts.get("completed", 0) + s.request_counts.get("failed", 0) for s in live)
                states = sorted({s.status for s in live})
                bar.set_postfix(states=",".join(states), dropped_polls=dropped, refresh=True)
                live = [s for s in live if not s.handled]
                if live:
                    time.sleep(self.opts.poll_seconds)
        finally:
            bar.close()

    def _update(self, shard: ShardRecord, batch: Any) -> None:
        counts = batch.request_counts
        changed = batch.status != shard.status
        shard.status = batch.status
        if counts is not None:
            shard.request_counts = {"total": counts.total, "completed": counts.completed, "failed": counts.failed}
        shard.output_file_id, shard.error_file_id = batch.output_file_id, batch.error_file_id
        if batch.status in TERMINAL:
            if batch.status == "failed":
                errors = getattr(batch.errors, "data", None) or []
                shard.errors = [f"line {e.line}: {e.message}" if e.line else str(e.message) for e in errors][:20]
                self.failed.append(shard)
            else:
                self._collect(shard)
            shard.handled = True
            changed = True
        if changed:
            self.sc.save()

    def _collect(self, shard: ShardRecord) -> None:
        remote = self.remotes.of(shard)
        counts = ImportCounts()
        for file_id in (shard.output_file_id, shard.error_file_id):
            if file_id:
                counts.add(import_blob(remote.content(file_id), self.cache, None, ""))
        missing = shard.requests - counts.cached - counts.errors - counts.not_cached
        tail = f", {missing} never run (the batch {shard.status})" if missing > 0 else ""
        note(f"{shard.batch_id} {shard.status}: {counts.describe()}{tail}")
        self.counts.add(counts)

    def _failure_text(self) -> str:
        parts = [f"{s.batch_id} ({Path(s.path).name}): " + ("; ".join(s.errors) or "no reason given")
                 for s in self.failed]
        return (f"{len(self.failed)} batch(es) failed validation, nothing from them was cached: " + " | ".join(parts)
                + ". Fix the cause, then run the same command again")
