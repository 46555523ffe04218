"""Stage 1: generate toxic seed prompts for one category, in batches of up to 20."""

from __future__ import annotations

import asyncio
import math
import sys
import time
from pathlib import Path
from typing import Sequence

from tqdm import tqdm

from ..cli import add_run_options, make_client, make_parser, open_cache, positive_int, rows_exit_code, run_cli
from ..constants import CATEGORIES, COL_CATEGORY, COL_PROMPT
from ..errors import FatalEndpointError, UserError
from ..llm import CallFailed, LLMClient
from ..parsing import prompt_list
from ..prompts import BATCH_SIZE, generator_messages, prompt_list_grammar
from ..resume import OutputLock, RowFile, read_rows, repair_torn_tail, write_atomic
from ..retry import EndpointError
from ..runinfo import write_runinfo
from ..stage import base_info, endpoint_info, warn

COLUMNS = [COL_PROMPT, COL_CATEGORY]
# Give up after this many waves in a row that add no new prompt (a model that only repeats
# itself, or whose replies cannot be parsed, would otherwise loop for ever).
MAX_BARREN_WAVES = 3


def plan_wave(needed: int, batch: int = BATCH_SIZE) -> list[int]:
    """How many prompts each call of the next wave asks for: full batches, and the last
    one only what is still needed (the original always asked for a full batch)."""
    calls = math.ceil(needed / batch)
    return [min(batch, needed - i * batch) for i in range(calls)]


def build_parser(doc: str | None):
    p = make_parser("generate_toxic_promt_from_category.py", doc)
    p.add_argument("--category", required=True, help=f"one of: {', '.join(CATEGORIES)}")
    p.add_argument("--num_toxic_prompts", type=positive_int, default=2000, help="how many unique prompts (default 2000)")
    p.add_argument("--output_path", default=None, help="output CSV (default: ./{category}_prompts.csv)")
    p.add_argument("--model", default="local", help="generator model (default: local; the paper used Mixtral-8x7B)")
    p.add_argument("--max_barren_waves", type=positive_int, default=MAX_BARREN_WAVES,
                   help=f"stop after this many rounds of calls in a row add no new prompt (default {MAX_BARREN_WAVES})")
    add_run_options(p, temperature=1.0, max_tokens=2000)
    return p


class Generator:
    """Runs waves of batch requests until the target count of unique prompts is reached.

    Each call has a sample number; with the cache on, a re-run replays the same samples,
    so an interrupted run ends with the same prompts as an uninterrupted one. Results of a
    wave are merged in sample order, so concurrency does not change which duplicate wins.
    """

    def __init__(self, client: LLMClient, category: str, target: int, temperature: float, max_tokens: int,
                 out: RowFile, already_written: set[str], start: list[str], max_barren: int = MAX_BARREN_WAVES) -> None:
        self.client, self.category, self.target = client, category, target
        self.temperature, self.max_tokens = temperature, max_tokens
        self.out, self.written = out, already_written
        self.accepted: list[str] = list(start)
        self.seen: set[str] = set(start)
        self.sample = 0
        self.calls = self.failed = self.unparsed = 0
        self.errors: list[str] = []
        self.max_barren = max_barren

    async def _one(self, sample: int, n: int, bar: tqdm) -> list[str]:
        try:
            res = await self.client.complete(
                generator_messages(self.category, n), temperature=self.temperature, max_tokens=self.max_tokens, sample=sample,
                grammar=prompt_list_grammar(n),
            )
        except CallFailed as err:
            self.failed += 1
            self.errors.append(str(err))
            return []
        self.calls += 1
        items = prompt_list(res.text)
        if not items:
            self.unparsed += 1
        fresh = [x for x in dict.fromkeys(items[:n]) if x not in self.written]
        if fresh:  # on disk at once; the in-order merge below decides the final file
            self.written.update(fresh)
            self.out.append({COL_PROMPT: x, COL_CATEGORY: self.category} for x in fresh)
        bar.set_postfix(calls=self.calls, cached=self.client.stats.cached, failed=self.failed, refresh=False)
        return items[:n]

    async def run(self, bar: tqdm) -> None:
        barren = 0
        try:
            while len(self.accepted) < self.target and barren < self.max_barren:
                sizes = plan_wave(self.target - len(self.accepted))
                first = self.sample
                self.sample += len(sizes)
                results = await asyncio.gather(*(self._one(first + i, n, bar) for i, n in enumerate(sizes)))
                before = len(self.accepted)
                for items in results:  # sample order, not completion order
                    for x in items:
                        if x not in self.seen and len(self.accepted) < self.target:
                            self.seen.add(x)
                            self.accepted.append(x)
                bar.update(len(self.accepted) - before)
                barren = 0 if len(self.accepted) > before else barren + 1
        finally:
            await self.client.aclose()


def _main(argv: Sequence[str] | None, doc: str | None) -> int:
    args = build_parser(doc).parse_args(argv)
    if args.category not in CATEGORIES:
        raise UserError(f"unknown category {args.category!r}; choose one of: {', '.join(CATEGORIES)}")
    target = min(args.num_toxic_prompts, args.limit or args.num_toxic_prompts)
    output_path = Path(args.output_path or f"{args.category}_prompts.csv")
    cache = open_cache(args)
    client = make_client(args.model, args, cache)

    lock = OutputLock(output_path)
    lock.acquire()
    try:
        out = RowFile(output_path, COLUMNS)
        out.check_header()
        existing: list[str] = []
        if output_path.exists() and output_path.stat().st_size > 0:
            if repair_torn_tail(output_path):
                warn(f"repaired a torn last row in {output_path}")
            existing = list(dict.fromkeys(r[COL_PROMPT] for r in read_rows(output_path)[1]))
        out.open()
        # With the cache, replay from sample 0: finished calls come back from the cache and the
        # result is the same as an uninterrupted run. Without it, keep what is on disk and go on.
        start = [] if cache is not None else existing[:target]
        gen = Generator(client, args.category, target, args.temperature, args.max_tokens, out, set(existing), start, args.max_barren_waves)
        gen.sample = len(start) // BATCH_SIZE  # no cache: go on past the samples on disk (a server that honours seeds would repeat them)
        info = base_info("toxic_prompt_generator", args, model=args.model, **endpoint_info(client),
                         category=args.category, num_toxic_prompts=target, batch_size=BATCH_SIZE, output=str(output_path))
        write_runinfo(output_path, {**info, "complete": False})
        started = time.time()
        bar = tqdm(total=target, initial=len(start), desc=f"stage 1 {args.category}", unit="prompt", dynamic_ncols=True, disable=None)
        try:
            asyncio.run(gen.run(bar))
        except EndpointError as err:
            bar.leave = False
            raise FatalEndpointError(str(err)) from None
        finally:
            bar.close()
            out.close()
        write_atomic(output_path, COLUMNS, ({COL_PROMPT: x, COL_CATEGORY: args.category} for x in gen.accepted))
        complete = len(gen.accepted) >= target
        write_runinfo(output_path, {
            **info, "complete": complete, "rows_written": len(gen.accepted), "calls": gen.calls + client.stats.cached,
            "samples_used": gen.sample, "failed_calls": gen.failed, "unparsed_replies": gen.unparsed,
            "cached": client.stats.cached, "prompt_tokens": client.stats.prompt_tokens,
            "completion_tokens": client.stats.completion_tokens, "seconds": round(time.time() - started, 3),
        })
    finally:
        lock.release()
    print(f"wrote {len(gen.accepted)} unique {args.category} prompts to {output_path} "
          f"({gen.sample} calls, {client.stats.cached} from cache, {gen.failed} failed, {gen.unparsed} unparseable)")
    if not complete:
        why = gen.errors[-1] if gen.errors else "the model kept repeating itself or its replies could not be parsed"
        print(f"stopped short of {target}: {why}. Run the same command again to continue.", file=sys.stderr)
        return rows_exit_code(target - len(gen.accepted), args)
    return 0


def main(argv: Sequence[str] | None = None, doc: str | None = None) -> int:
    return run_cli(lambda a: _main(a, doc or __doc__), argv)


if __name__ == "__main__":
    sys.exit(main())
