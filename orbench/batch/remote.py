"""The provider side of a batch, through the openai client: upload a shard, create the batch,
poll it, cancel it, download its result files. Errors are sorted as online calls are
(orbench.engine.retry): a refused key stops the run with one line; a dropped connection or a 5xx is
retried a few times, and a dropped poll is simply tried again at the next poll."""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..errors import FatalEndpointError, UserError, warn
from ..engine.llm import LLMClient
from ..engine.retry import EndpointError, RetryPolicy, TransientError, classify
from .plan import CHAT_URL

T = TypeVar("T")
COMPLETION_WINDOW = "24h"
SHARD_TAG = "orbench_shard"  # batch metadata: the shard's SHA-256, to find a batch after a kill


class NoListing(Exception):
    """The endpoint has no list of batches (HTTP 404 or 405 on GET /v1/batches)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class BatchRemote:
    def __init__(self, client: LLMClient) -> None:
        endpoint = client.endpoint
        if endpoint.is_embedded:
            raise UserError("the embedded model has no Batch API; use --batch_export with `vllm run-batch`, "
                            "or point --batch at an endpoint that has one (OpenAI, or a compatible provider)")
        self.where = client.where
        self.warned_no_listing = False
        self.policy = RetryPolicy()
        import openai  # here, not at the top: the runner imports this module for every stage's --help

        self.api = openai.OpenAI(base_url=endpoint.base_urls[0], api_key=endpoint.api_key or "no-key-needed",
                                 max_retries=0, timeout=client.timeout)

    def _call(self, what: str, fn: Callable[[], T], attempts: int | None = None) -> T:
        import openai  # loaded by __init__ already; bound here for the except clause

        tries = attempts or self.policy.attempts
        for attempt in range(1, tries + 1):
            try:
                return fn()
            except openai.NotFoundError as err:
                if what == "list":
                    raise NoListing(404) from None
                if what in ("upload", "create", "list"):
                    raise UserError(f"{self.where} does not offer the Batch API (HTTP 404 at {what}); "
                                    f"run this stage without --batch, or use --batch_export") from None
                raise UserError(f"{what}: HTTP 404 from {self.where}: {err.message}") from None
            except Exception as err:  # sorted just below
                if what == "list" and getattr(err, "status_code", None) == 405:
                    raise NoListing(405) from None
                failure = classify(err, self.where)
                if isinstance(failure, EndpointError):
                    raise FatalEndpointError(f"batch {what}: {failure}") from None
                if not isinstance(failure, TransientError) or attempt == tries:
                    raise UserError(f"batch {what} failed: {failure}; run the same command again to resume") from None
                base = self.policy.backoff_base
                time.sleep(min(self.policy.backoff_max, base * 2 ** (attempt - 1)) if base > 0 else 0)
        raise AssertionError("unreachable")

    def upload(self, path: Path) -> str:
        def go() -> str:
            with open(path, "rb") as fh:
                return self.api.files.create(file=(path.name, fh), purpose="batch").id
        return self._call("upload", go)

    def create(self, file_id: str, sha256: str) -> Any:
        return self._call("create", lambda: self.api.batches.create(
            input_file_id=file_id, endpoint=CHAT_URL, completion_window=COMPLETION_WINDOW,
            metadata={SHARD_TAG: sha256[:64]}))

    def find(self, file_id: str, sha256: str) -> Any | None:
        """A batch created from this upload of this shard (a run killed right after creating
        it never recorded its id)."""
        # The newest first, pages followed; a batch created seconds before the kill is near the top.
        try:
            recent = self._call("list", lambda: list(itertools.islice(self.api.batches.list(limit=100), 1000)))
        except NoListing as err:
            if not self.warned_no_listing:
                self.warned_no_listing = True
                warn(f"{self.where} cannot list batches (HTTP {err.status} on GET /v1/batches), so a batch created "
                     f"just before a run was killed cannot be found again: its file is submitted anew, and if that "
                     f"earlier batch ran, its requests are paid twice")
            return None
        for batch in recent:
            meta = batch.metadata or {}
            if batch.input_file_id == file_id and meta.get(SHARD_TAG) == sha256[:64]:
                return batch
        return None

    def poll(self, batch_id: str) -> Any | None:
        """The batch now, or None when this poll was dropped (it is tried again next time)."""
        try:
            return self._call("poll", lambda: self.api.batches.retrieve(batch_id), attempts=1)
        except FatalEndpointError:
            raise
        except UserError:
            return None

    def cancel(self, batch_id: str) -> Any:
        return self._call("cancel", lambda: self.api.batches.cancel(batch_id))

    def content(self, file_id: str) -> bytes:
        return self._call("download", lambda: self.api.files.content(file_id).content)

    def close(self) -> None:
        self.api.close()
