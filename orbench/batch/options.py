"""The batch options that stages 2 to 5 share, and their checks."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from .plan import MAX_REQUESTS

DEFAULT_POLL_SECONDS = 30.0


@dataclass(frozen=True)
class BatchOptions:
    mode: str                      # submit, export, import or cancel
    max_requests: int = MAX_REQUESTS
    poll_seconds: float = DEFAULT_POLL_SECONDS
    export_dir: Path | None = None
    import_files: tuple[Path, ...] = field(default_factory=tuple)


def add_batch_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("batch mode (half price on OpenAI; `vllm run-batch` on your own GPUs)")
    g.add_argument("--batch", action="store_true",
                   help="send the requests the cache cannot answer as Batch API jobs, wait for them, then finish "
                        "from the cache; a re-run resumes the recorded batches (in {output}.batch.json)")
    g.add_argument("--batch_max_requests", type=int, default=MAX_REQUESTS,
                   help=f"requests per batch file (default {MAX_REQUESTS}; files are also cut at 190 MB)")
    g.add_argument("--batch_poll_seconds", type=float, default=DEFAULT_POLL_SECONDS,
                   help=f"seconds between polls of a running batch (default {DEFAULT_POLL_SECONDS:g})")
    g.add_argument("--batch_cancel", action="store_true", help="cancel the batches recorded for this output, then stop")
    g.add_argument("--batch_export", metavar="DIR", default=None,
                   help="write the batch files to DIR and print the `vllm run-batch` command for each, then stop")
    g.add_argument("--batch_import", metavar="FILE", nargs="+", default=None,
                   help="read batch result files (OpenAI or `vllm run-batch` output) into the cache, then finish")


def batch_options(args: argparse.Namespace) -> BatchOptions | None:
    chosen = [name for name, on in (("--batch", args.batch), ("--batch_cancel", args.batch_cancel),
                                    ("--batch_export", args.batch_export is not None),
                                    ("--batch_import", args.batch_import is not None)) if on]
    if not chosen:
        return None
    if len(chosen) > 1:
        raise UserError(f"{' and '.join(chosen)} cannot be used together; choose one")
    if getattr(args, "no_cache", False):
        raise UserError(f"{chosen[0]} needs the response cache (batch results are read back through it); "
                        f"drop --no_cache")
    if args.batch_max_requests < 1:
        raise UserError(f"--batch_max_requests must be at least 1, got {args.batch_max_requests}")
    if args.batch_poll_seconds < 0:
        raise UserError(f"--batch_poll_seconds must be 0 or more, got {args.batch_poll_seconds}")
    mode = {"--batch": "submit", "--batch_cancel": "cancel", "--batch_export": "export",
            "--batch_import": "import"}[chosen[0]]
    return BatchOptions(
        mode=mode,
        max_requests=args.batch_max_requests,
        poll_seconds=args.batch_poll_seconds,
        export_dir=Path(args.batch_export) if args.batch_export is not None else None,
        import_files=tuple(Path(f) for f in args.batch_import or ()),
    )
