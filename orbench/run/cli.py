"""What every stage CLI shares: common options, the error policy, and client set-up."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from ..errors import EarlyExit, UserError, run_command
from ..stopping import sigterm_as_interrupt
from ..engine.llm import LLMClient
from ..engine.cache import ResponseCache, default_cache_path
from ..engine.registry import Endpoint, resolve

# Exit codes a shell script can act on: 0 every row done; 2 the user's mistake or a fatal
# endpoint error (UserError); 3 the run finished but some rows failed (they are in the failed
# file, and the same command retries them). --allow_failures turns 3 into 0.
EXIT_OK = 0
EXIT_ROWS_FAILED = 3
# Every stage's --limit defaults to this variable: the same command, scaled down, unedited.
LIMIT_ENV = "ORBENCH_LIMIT"


def str2bool(value: str) -> bool:
    """Accept the original's spellings: --merge_result=False, true, 0, yes..."""
    v = str(value).strip().lower()
    if v in ("1", "true", "t", "yes", "y"):
        return True
    if v in ("0", "false", "f", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {value!r}")


def add_split_flag(p: argparse.ArgumentParser) -> None:
    """A plain flag beside the original's --merge_result=False."""
    p.add_argument("--no_merge_result", dest="merge_result", action="store_false",
                   help="the same as --merge_result=False")


def whole_number(value: str, minimum: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < minimum:
        raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, got {n}")
    return n


def positive_int(value: str) -> int:
    return whole_number(value, 1)


def non_negative_int(value: str) -> int:
    return whole_number(value, 0)


def positive_float(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not x > 0 or x == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {value}")
    return x


class Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and one line on a usage error (its default is also 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def make_parser(prog: str, doc: str | None, epilog: str | None = None) -> Parser:
    return Parser(prog=prog, description=doc, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_run_options(p: argparse.ArgumentParser, *, temperature: float, max_tokens: int) -> None:
    g = p.add_argument_group("run options (every stage)")
    g.add_argument("--concurrency", type=positive_int, default=None,
                   help="requests in flight per endpoint base URL (default: the registry entry's, else 8)")
    g.add_argument("--limit", type=positive_int, default=env_limit(),
                   help="only N input rows: a seeded random sample spread over the categories, every "
                        f"category present while N allows (stage 1: at most N prompts). Default: ${LIMIT_ENV} "
                        "if set (a scaled-down run of a real configuration), else every row")
    g.add_argument("--limit_seed", type=int, default=0, help="the seed of --limit's sample (default 0)")
    g.add_argument("--temperature", type=float, default=temperature, help=f"sampling temperature (default {temperature})")
    g.add_argument("--max_tokens", type=positive_int, default=max_tokens,
                   help=f"reply length cap, a thinking model's thinking included (default {max_tokens}; sent as "
                        "max_completion_tokens to the models that take it so: docs/models_that_think.md)")
    g.add_argument("--reasoning_effort", default=None, metavar="EFFORT",
                   help="sent as reasoning_effort (e.g. minimal, low, medium, high) to a model that takes it (OpenAI's "
                        "reasoning models, gpt-oss on vLLM, ...); default: not sent, the model's own")
    g.add_argument("--timeout", type=float, default=None,
                   help="seconds before one request is abandoned and retried (default: registry entry's, else 120)")
    g.add_argument("--no_cache", action="store_true", help="neither read nor write the response cache")
    g.add_argument("--cache_path", default=None,
                   help=f"response cache file (default {default_cache_path()}, or $ORBENCH_CACHE_DIR)")
    g.add_argument("--models_file", default=None,
                   help="extra model registry (TOML); also $ORBENCH_MODELS_FILE")
    add_endpoint_options(g)
    g.add_argument("--allow_failures", action="store_true",
                   help=f"exit {EXIT_OK} even when some rows failed (default: exit {EXIT_ROWS_FAILED}, so a script can stop)")


def add_endpoint_options(g, prefix: str = "", role: str = "the model(s) of this command") -> None:
    g.add_argument(f"--{prefix}base_url", default=None, metavar="URL",
                   help=f"send {role} to this OpenAI-compatible base URL instead of its registry entry's or "
                        f"provider's (its key then comes only from --{prefix}api_key_env)")
    g.add_argument(f"--{prefix}api_key_env", default=None, metavar="VAR",
                   help=f"the environment variable holding the key for {role}")


def env_limit() -> int | None:
    """--limit's default: $ORBENCH_LIMIT when set (a whole number >= 1), else None."""
    value = os.environ.get(LIMIT_ENV, "").strip()
    if not value:
        return None
    try:
        return positive_int(value)
    except argparse.ArgumentTypeError as err:
        raise UserError(f"${LIMIT_ENV}: {err}") from None


def rows_exit_code(failed: int, args: argparse.Namespace) -> int:
    """The exit code of a run that finished with ``failed`` rows not done."""
    return EXIT_ROWS_FAILED if failed and not getattr(args, "allow_failures", False) else EXIT_OK


def open_cache(args: argparse.Namespace) -> ResponseCache | None:
    return None if args.no_cache else ResponseCache(args.cache_path)


def make_client(name: str, args: argparse.Namespace, cache: ResponseCache | None) -> LLMClient:
    endpoint: Endpoint = resolve(name, args.models_file, base_url=getattr(args, "base_url", None),
                                 api_key_env=getattr(args, "api_key_env", None))
    return LLMClient(endpoint, concurrency=args.concurrency, timeout=args.timeout, cache=cache, probe_first=True)


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Load .env, run, and turn a user's mistake into one line and exit code 2."""
    from dotenv import find_dotenv, load_dotenv

    load_dotenv(find_dotenv(usecwd=True), override=False)  # the environment wins over .env
    sigterm_as_interrupt()
    try:
        return run_command(main, argv)
    except EarlyExit as stop:
        if str(stop):
            print(stop)
        return stop.exit_code
    except KeyboardInterrupt:
        print("interrupted: finished rows are saved; run the same command again to resume", file=sys.stderr)
        return 130
