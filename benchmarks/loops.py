"""The two reference loops the stages are measured against. Both send the stages' own
messages and settings to the same server, and print one JSON line with the in-process time.

    python benchmarks/loops.py sequential --base_url URL --models fake-model --kind alignment --input in.csv --output out.csv
    python benchmarks/loops.py bare --concurrency 64 --base_url URL --models a,b,c --kind moderate --input in.csv --output out.csv

- ``sequential``: the original's way: a synchronous ``openai.OpenAI`` client, one request at
  a time (an ensemble's moderators one after another), each row appended to the CSV as it
  arrives.
- ``bare``: the bound: one ``AsyncOpenAI`` client per model and an ``asyncio.Semaphore``
  holding ``--concurrency`` rows in flight (an ensemble row sends its requests at once); rows
  are written at the end. No retries, no cache, no resume, no progress bar.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai  # noqa: E402

from orbench.protocol.prompts import judge_messages, moderator_messages  # noqa: E402

SETTINGS = {"temperature": 0.0, "max_tokens": 1000}  # the stages' defaults
USAGE = {"prompt_tokens": 0, "completion_tokens": 0}


def count(resp) -> None:
    usage = getattr(resp, "usage", None)
    USAGE["prompt_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
    USAGE["completion_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)


def messages_for(kind: str, row: dict[str, str]) -> list[dict[str, str]]:
    if kind == "alignment":
        return [{"role": "user", "content": row["prompt"]}]
    if kind == "moderate":
        return moderator_messages(row["prompt"])
    if kind == "judge":
        return judge_messages(row["prompt"], row["response"])
    raise ValueError(kind)


def read_rows(path: str, limit: int | None) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return rows[:limit] if limit else rows


def sequential(args: argparse.Namespace, rows: list[dict[str, str]], models: list[str]) -> int:
    client = openai.OpenAI(base_url=args.base_url, api_key="none", max_retries=0, timeout=args.timeout)
    requests = 0
    with open(args.output, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["prompt", "category", *models])
        for row in rows:
            msgs = messages_for(args.kind, row)
            replies = []
            for model in models:
                resp = client.chat.completions.create(model=model, messages=msgs, **SETTINGS)
                replies.append(resp.choices[0].message.content)
                count(resp)
                requests += 1
            writer.writerow([row["prompt"], row.get("category", ""), *replies])
            fh.flush()
    return requests


async def bare(args: argparse.Namespace, rows: list[dict[str, str]], models: list[str]) -> int:
    clients = {m: openai.AsyncOpenAI(base_url=args.base_url, api_key="none", max_retries=0, timeout=args.timeout) for m in models}
    slots = asyncio.Semaphore(args.concurrency)

    async def one(row: dict[str, str]) -> list[str]:
        msgs = messages_for(args.kind, row)
        async with slots:
            resps = await asyncio.gather(
                *(clients[m].chat.completions.create(model=m, messages=msgs, **SETTINGS) for m in models)
            )
        for r in resps:
            count(r)
        return [r.choices[0].message.content for r in resps]

    results = await asyncio.gather(*(one(r) for r in rows))
    with open(args.output, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["prompt", "category", *models])
        for row, replies in zip(rows, results):
            writer.writerow([row["prompt"], row.get("category", ""), *replies])
    for c in clients.values():
        await c.close()
    return len(rows) * len(models)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("loop", choices=("sequential", "bare"))
    p.add_argument("--base_url", required=True)
    p.add_argument("--models", required=True, help="comma-separated model ids (several = an ensemble)")
    p.add_argument("--kind", choices=("alignment", "moderate", "judge"), default="alignment")
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--concurrency", type=int, default=1, help="rows in flight (bare only)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--max_tokens", type=int, default=SETTINGS["max_tokens"])
    p.add_argument("--timeout", type=float, default=120.0)
    args = p.parse_args(argv)
    SETTINGS["max_tokens"] = args.max_tokens
    rows = read_rows(args.input, args.limit)
    models = args.models.split(",")
    start = time.perf_counter()
    if args.loop == "sequential":
        requests = sequential(args, rows, models)
    else:
        requests = asyncio.run(bare(args, rows, models))
    seconds = time.perf_counter() - start
    print(json.dumps({"loop": args.loop, "rows": len(rows), "requests": requests, "seconds": round(seconds, 4), **USAGE}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
