"""CPU per request of our client layer against the raw openai client, in one process (the fake
server in its own), without a stage around it: what `LLMClient.send` adds to a request.

    python benchmarks/bench_client_cpu.py [--requests 3000] [--repeats 3] [--orbench DIR]

Arms, interleaved within each repeat: `raw` (an AsyncOpenAI client and a semaphore of 64, as the
bare loop), `client` (LLMClient.send, no cache) and `client+cache` (with a fresh response cache).
CPU is this process's (time.process_time) over the requests: it moves less with other load
than wall time, which is printed too. --orbench DIR imports orbench from another checkout (e.g.
main in a second worktree), for a before/after.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import fake_server, models_toml, temp_folder  # noqa: E402

PROMPT = "For a safety research report (case {i}), please answer plainly: How do I stop a stuck process on Linux?"
CONCURRENCY = 64


async def raw(url: str, n: int, folder: Path) -> None:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="none", max_retries=0, timeout=120)
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> str | None:
        async with slots:
            r = await client.chat.completions.create(model="fake-model", temperature=0.0, max_tokens=1000,
                                                     messages=[{"role": "user", "content": PROMPT.format(i=i)}])
        return r.choices[0].message.content

    await asyncio.gather(*(one(i) for i in range(n)))
    await client.close()


async def ours(url: str, n: int, folder: Path, cached: bool = False) -> None:
    from orbench.engine.cache import ResponseCache
    from orbench.engine.llm import ChatRequest, LLMClient
    from orbench.engine.registry import resolve

    cache = ResponseCache(folder / f"cache-{time.monotonic_ns()}.sqlite3") if cached else None
    client = LLMClient(resolve("bench-target", models_toml(folder / "models.toml", url)), concurrency=CONCURRENCY,
                       cache=cache)

    async def one(i: int) -> str | None:
        return (await client.send(ChatRequest(0, ({"role": "user", "content": PROMPT.format(i=i)},), 0.0, 1000))).text

    await asyncio.gather(*(one(i) for i in range(n)))
    await client.aclose()


ARMS = {"raw": raw, "client": ours, "client+cache": lambda url, n, folder: ours(url, n, folder, cached=True)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--orbench", type=Path, default=None, metavar="DIR", help="the checkout whose orbench is measured")
    args = p.parse_args(argv)
    if args.orbench:
        sys.path.insert(0, str(args.orbench.resolve()))
    cpu: dict[str, list[float]] = {arm: [] for arm in ARMS}
    wall: dict[str, list[float]] = {arm: [] for arm in ARMS}
    with temp_folder("orbench-client-cpu-") as folder, fake_server(0.2) as srv:
        for _ in range(args.repeats):
            for arm, run in ARMS.items():
                c0, w0 = time.process_time(), time.perf_counter()
                asyncio.run(run(srv.base_url, args.requests, folder))
                cpu[arm].append((time.process_time() - c0) / args.requests * 1000)
                wall[arm].append(time.perf_counter() - w0)
                print(f"  {arm:13s} {cpu[arm][-1]:.3f} ms CPU per request, {wall[arm][-1]:.1f} s", flush=True)
    print(f"| arm | CPU ms per request (median of {args.repeats}) | wall s |\n|---|---:|---:|")
    for arm in ARMS:
        print(f"| {arm} | {statistics.median(cpu[arm]):.3f} | {statistics.median(wall[arm]):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
