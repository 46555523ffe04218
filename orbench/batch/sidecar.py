"""The sidecar ``{output}.batch.json``: which shards were written, uploaded and submitted as
which batches, and where each batch stands. Written atomically after every change, and
before the first poll, so a run killed at any moment is resumed without paying twice."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import UserError

TERMINAL = ("completed", "failed", "expired", "cancelled")
PENDING = ("validating", "in_progress", "finalizing", "cancelling")


def sidecar_path(output: Path) -> Path:
    base = output.name[: -len(output.suffix)] if output.suffix else output.name
    return output.with_name(base + ".batch.json")


def shard_folder(output: Path) -> Path:
    base = output.name[: -len(output.suffix)] if output.suffix else output.name
    return output.with_name(base + ".batch")


@dataclass
class ShardRecord:
    path: str
    endpoint: str              # the endpoint's identity (never its key)
    endpoint_name: str
    requests: int
    bytes: int
    sha256: str
    file_id: str | None = None
    batch_id: str | None = None
    status: str = "planned"    # planned, uploaded, then the batch's own status
    request_counts: dict[str, int] = field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    handled: bool = False      # a terminal batch whose results were imported (or errors shown)
    errors: list[str] = field(default_factory=list)

    @property
    def submitted(self) -> bool:
        return self.batch_id is not None

    @property
    def pending(self) -> bool:
        return self.submitted and not (self.status in TERMINAL and self.handled)


@dataclass
class Sidecar:
    path: Path
    stage: str = ""
    shards: list[ShardRecord] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> "Sidecar":
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            names = {f.name for f in fields(ShardRecord)}
            shards = [ShardRecord(**{k: v for k, v in s.items() if k in names}) for s in data["shards"]]
        except (ValueError, KeyError, TypeError) as err:
            raise UserError(f"{path} is not a batch record this version can read ({err}); "
                            f"move it away to start the batches afresh") from None
        return cls(path, data.get("stage", ""), shards)

    def save(self) -> None:
        payload: dict[str, Any] = {"stage": self.stage, "shards": [asdict(s) for s in self.shards]}
        tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
