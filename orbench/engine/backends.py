"""How a stage's chat requests get their replies. The runner picks one backend at the start
of a run and hands it every request; a stage never knows which one it has.

- ``Online``: the cache, else the endpoint (retries, concurrency bounds: ``LLMClient.send``).
- ``Offline``: the cache only. After ``--batch_import`` there is usually no server to ask:
  a request the result files did not answer fails its row with the engine's reason.
- Batch planning is not a backend that answers: ``orbench.batch.plan`` reads the requests a
  stage would make straight from its spec, records them and writes them as batch files; the
  run then finishes through ``Online`` (``--batch``) or ``Offline`` (``--batch_import``).
"""

from __future__ import annotations

import asyncio
from typing import Mapping, Protocol, Sequence

from .llm import CallFailed, ChatRequest, LLMClient, LLMResult

NO_RESULT = "no result for this request in the --batch_import files"


class Backend(Protocol):
    name: str

    async def answer(self, client: LLMClient, request: ChatRequest) -> LLMResult:
        """The reply, or CallFailed (this request failed for good) / EndpointError (stop)."""
        ...


class Online:
    name = "online"

    async def answer(self, client: LLMClient, request: ChatRequest) -> LLMResult:
        return await client.send(request)


class Offline:
    name = "offline"

    def __init__(self, reasons: Mapping[str, str]) -> None:
        self.reasons = dict(reasons)  # cache key -> why the engine gave no reply

    async def answer(self, client: LLMClient, request: ChatRequest) -> LLMResult:
        prepared = client.prepare(request)
        hit = client.cached(prepared)
        if hit is None:
            raise client.refuse(self.reasons.get(prepared.key) or NO_RESULT)
        return hit


async def answer_all(backend: Backend, clients: Sequence[LLMClient],
                     requests: Sequence[ChatRequest]) -> list[LLMResult | CallFailed]:
    """Every request at once (an ensemble costs one round trip); a request that fails for good
    gives its CallFailed in its place. An EndpointError stops the run."""

    async def one(request: ChatRequest) -> LLMResult | CallFailed:
        try:
            return await backend.answer(clients[request.model], request)
        except CallFailed as err:
            return err

    if len(requests) == 1:  # one model, one request: no task to make (a gather wraps each in one)
        return [await one(requests[0])]
    return list(await asyncio.gather(*(one(r) for r in requests)))
