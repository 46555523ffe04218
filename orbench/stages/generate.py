"""Stage 1 of OR-Bench: generate toxic seed prompts for one category.

In:  --category, one of: hate, self-harm, sexual, violence, harassment, harmful, illegal,
     unethical, privacy, deception (anything else is refused).
Out: ./{category}_prompts.csv (or --output_path) with columns prompt, category:
     --num_toxic_prompts unique prompts (default 2000), exact duplicates dropped across the run.
     Run settings and counts: {category}_prompts.run.json.
How: each call asks the generator for a batch of up to 20 prompts wrapped in [[ ]]; the last
batch asks only for what is still needed. Temperature 1.0, max_tokens 2000. Each call has a
sample number (sent as the request's seed, and part of the cache key), so a re-run with the
cache replays the same batches. Default model: local (the paper used Mixtral-8x7B).
It stops short when --max_barren_waves rounds in a row add no new prompt.

Example (from toxic_prompt_generator/; installed: orbench generate --category=harmful):
  python generate_toxic_promt_from_category.py --category=harmful
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from ..run.cli import positive_int
from ..protocol.constants import CATEGORIES, COL_CATEGORY, COL_PROMPT
from ..errors import UserError
from ..engine.llm import CallFailed, ChatRequest
from ..protocol.parsing import prompt_list
from ..protocol.prompts import BATCH_SIZE, generator_messages, prompt_list_grammar
from ..tables.runinfo import endpoint_info
from ..run.runner import run_stage
from ..run.spec import GeneratorSpec, Reply, RunContext

COLUMNS = [COL_PROMPT, COL_CATEGORY]
# Give up after this many waves in a row that add no new prompt (a model that only repeats
# itself, or whose replies cannot be parsed, would otherwise loop for ever).
MAX_BARREN_WAVES = 3


def plan_wave(needed: int, batch: int = BATCH_SIZE) -> list[int]:
    """How many prompts each call of the next wave asks for: full batches, and the last
    one only what is still needed (the original always asked for a full batch)."""
    calls = math.ceil(needed / batch)
    return [min(batch, needed - i * batch) for i in range(calls)]


class Generate(GeneratorSpec):
    """Waves of calls until the target count of unique prompts is reached.

    Each call has a sample number; with the cache on, a re-run replays the same samples,
    so an interrupted run ends with the same prompts as an uninterrupted one. A wave's
    replies are merged in sample order, so concurrency does not change which duplicate wins.
    """

    stage = "toxic_prompt_generator"
    script = "generate_toxic_promt_from_category.py"
    temperature = 1.0
    max_tokens = 2000
    unit = "prompt"
    exit_codes = ("Exit codes: 0 the count reached; 3 stopped short of it (what was found is written; the same "
                  "command continues; --allow_failures makes it 0); 2 a user's mistake (an unknown category or "
                  "model, a missing key) or a fatal endpoint error (a refused key, a 404, no quota), in one line; "
                  "130 interrupted (the prompts found are kept).")

    @classmethod
    def add_arguments(cls, p: argparse.ArgumentParser) -> None:
        p.add_argument("--category", required=True, help=f"one of: {', '.join(CATEGORIES)}")
        p.add_argument("--num_toxic_prompts", type=positive_int, default=2000,
                       help="how many unique prompts (default 2000)")
        p.add_argument("--output_path", default=None, help="output CSV (default: ./{category}_prompts.csv)")
        p.add_argument("--model", default="local", help="generator model (default: local; the paper used Mixtral-8x7B)")
        p.add_argument("--max_barren_waves", type=positive_int, default=MAX_BARREN_WAVES,
                       help=f"stop after this many rounds of calls in a row add no new prompt (default {MAX_BARREN_WAVES})")

    def check(self) -> None:
        if self.args.category not in CATEGORIES:
            raise UserError(f"unknown category {self.args.category!r}; choose one of: {', '.join(CATEGORIES)}")

    def bind(self, ctx: RunContext) -> None:
        super().bind(ctx)
        args = self.args
        self.target = min(args.num_toxic_prompts, args.limit or args.num_toxic_prompts)
        self.accepted: list[str] = []
        self.seen: set[str] = set()
        self.written: set[str] = set()
        self.sample = self.calls = self.failed = self.unparsed = self.barren = 0
        self.errors: list[str] = []
        self.wave: list[list[str]] = []
        self.sizes: list[int] = []

    def output_path(self) -> Path:
        return Path(self.args.output_path or f"{self.args.category}_prompts.csv")

    def columns(self) -> list[str]:
        return COLUMNS

    def start(self, on_disk: list[dict[str, str]], cached: bool) -> None:
        existing = list(dict.fromkeys(r[COL_PROMPT] for r in on_disk))
        self.written = set(existing)
        # With the cache, replay from sample 0: finished calls come back from the cache and the
        # result is the same as an uninterrupted run. Without it, keep what is on disk and go on
        # past its samples (a server that honours seeds would repeat them).
        if not cached:
            self.accepted = existing[: self.target]
            self.seen = set(self.accepted)
            self.sample = len(self.accepted) // BATCH_SIZE

    def progress(self) -> int:
        return len(self.accepted)

    def next_round(self) -> list[ChatRequest]:
        if len(self.accepted) >= self.target or self.barren >= self.args.max_barren_waves:
            return []
        self.sizes = plan_wave(self.target - len(self.accepted))
        first, self.sample = self.sample, self.sample + len(self.sizes)
        self.wave = [[] for _ in self.sizes]
        category = self.args.category
        return [self.request(generator_messages(category, n), sample=first + i, grammar=prompt_list_grammar(n))
                for i, n in enumerate(self.sizes)]

    def preview(self) -> list[ChatRequest]:
        if len(self.accepted) >= self.target:
            return []
        sizes = plan_wave(self.target - len(self.accepted))
        return [self.request(generator_messages(self.args.category, n), sample=self.sample + i)
                for i, n in enumerate(sizes)]

    def plan_note(self) -> str:
        return (f"the first round; later rounds ask only for the prompts still missing, and stop after "
                f"{self.args.max_barren_waves} rounds in a row add nothing new")

    def arrived(self, index: int, reply: Reply) -> list[dict[str, str]]:
        if isinstance(reply, CallFailed):
            self.failed += 1
            self.errors.append(str(reply))
            return []
        self.calls += 1
        items = prompt_list(reply.text)
        if not items:
            self.unparsed += 1
        self.wave[index] = items[: self.sizes[index]]
        fresh = [x for x in dict.fromkeys(self.wave[index]) if x not in self.written]
        self.written.update(fresh)  # on disk at once; the in-order merge decides the final file
        return [{COL_PROMPT: x, COL_CATEGORY: self.args.category} for x in fresh]

    def round_done(self) -> None:
        before = len(self.accepted)
        for items in self.wave:  # sample order, not completion order
            for x in items:
                if x not in self.seen and len(self.accepted) < self.target:
                    self.seen.add(x)
                    self.accepted.append(x)
        self.barren = 0 if len(self.accepted) > before else self.barren + 1

    def rows(self) -> list[dict[str, str]]:
        return [{COL_PROMPT: x, COL_CATEGORY: self.args.category} for x in self.accepted]

    def shortfall(self) -> str | None:
        if len(self.accepted) >= self.target:
            return None
        why = self.errors[-1] if self.errors else "the model kept repeating itself or its replies could not be parsed"
        return f"stopped short of {self.target}: {why}. Run the same command again to continue."

    def record(self) -> dict[str, Any]:
        return {"model": self.args.model, **endpoint_info(self.ctx.clients[0]), "category": self.args.category,
                "num_toxic_prompts": self.target, "batch_size": BATCH_SIZE, "output": str(self.output_path())}

    def record_end(self) -> dict[str, Any]:
        return {"samples_used": self.sample, "calls": self.calls, "failed_calls": self.failed,
                "unparsed_replies": self.unparsed}

    def summary(self) -> str:
        cached = self.ctx.clients[0].stats.cached
        return (f"wrote {len(self.accepted)} unique {self.args.category} prompts to {self.output_path()} "
                f"({self.sample} calls, {cached} from cache, {self.failed} failed, {self.unparsed} unparseable)")

    def progress_label(self) -> str:
        return f"stage 1 {self.args.category}"


def main(argv: Sequence[str] | None = None, doc: str | None = None, prog: str | None = None) -> int:
    return run_stage(Generate, argv, doc or __doc__, prog)


if __name__ == "__main__":
    sys.exit(main())
