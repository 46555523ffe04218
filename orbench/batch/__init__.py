"""Batch mode, a stage's requests sent as one batch. May import tables, engine, protocol and the root.

Feed a stage's requests to an engine that already does large runs well (a
provider's Batch API, or ``vllm run-batch``), put the results in the response cache, and let
the stage finish from it.

- ``plan``: the requests a stage would send and the cache cannot answer, as JSONL shards;
- ``remote``: upload, create, poll, cancel and download through the openai client;
- ``sidecar``: ``{output}.batch.json``, what was submitted, so a re-run never pays twice;
- ``results``: result files (OpenAI's and vLLM's) into the cache;
- ``phase``: the order of it all; ``options``: the shared command-line options.
"""

from .options import BatchOptions, add_batch_options, batch_options
from .phase import BatchPhase, run_batch_phase

__all__ = ["BatchOptions", "add_batch_options", "batch_options", "BatchPhase", "run_batch_phase"]
