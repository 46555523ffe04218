"""The OR-Bench sets as Inspect tasks: ``or_bench_80k``, ``or_bench_hard_1k``, ``or_bench_toxic``.

    inspect eval orbench/or_bench_hard_1k --model openai/gpt-4o
    inspect eval orbench/or_bench_toxic --model openai/gpt-4o -T input_file=my_toxic.csv -T scorer=judge \\
        --model-role grader=openai/gpt-4-turbo-2024-04-09

Each sample is one prompt of the set, sent as stage 4 sends it: one user message, no system
prompt unless ``system_prompt`` is given, temperature 0, max_tokens 1000 (``--temperature``
and ``--max-tokens`` override these; ``--reasoning-effort`` is Inspect's own). A model that
takes no temperature (OpenAI's o-series and GPT-5, as orbench.engine.params knows them) is
sent none, as stage 4 sends it none; Inspect sends their cap as max_completion_tokens itself. The input is read by ``orbench.tables.inputs.load_rows``, the
reader every stage uses: the set's short name by default (Hard-1K and Toxic: the copies bundled
with orbench, offline; 80K: the Hub), or any file a stage reads (``prompt`` column,
``category`` or XSTest's ``type`` optional).

Task arguments (``-T name=value``):
  input_file     the prompts (default: the set's short name: the bundled copy for Hard-1K and Toxic,
                 the Hugging Face Hub through huggingface_hub for 80K, where HF_ENDPOINT, HF_TOKEN,
                 HF_HUB_OFFLINE and its cache apply); also hf://datasets/OWNER/NAME[@REV]/FILE
                 (the Hub's copy) or any file a stage reads
  scorer         detector (default; our refusal detector, no model call), judge (the stage-5
                 judge through the grader model) or both
  rules          the detector's rules, as stage 4's --rules (default scored, stage 4's default)
  system_prompt  a system message before each prompt (default none, as in the paper)
  judge_model    the judge (default: the grader role, else the evaluated model)
  name           the target's name in our report (default: Inspect's model name)
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, GenerateConfig
from inspect_ai.scorer import Scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from orbench import __version__
from orbench.engine.params import known_params
from orbench.protocol.constants import COL_CATEGORY, COL_PROMPT, COL_TYPE
from orbench.errors import UserError
from orbench.protocol.prompts import TEMPLATE_VERSION
from orbench.tables.inputs import load_rows

from . import (
    CATEGORY_KEY,
    DEFAULT_SCORER,
    NO_CATEGORY,
    SCORER_CHOICES,
    SET_BY_TASK,
    TASK_META_NAME,
    TASK_META_SET,
)
from orbench.refusal import DEFAULT_RULES

from .scorers import RULE_CHOICES, refusal_detector, refusal_judge

try:  # Inspect's CLI prints this kind of error as its message alone, with no traceback
    from inspect_ai._util.error import PrerequisiteError
except ImportError:  # a private name; should it move, the errors still say what is wrong
    PrerequisiteError = Exception

# The paper's generation settings for the target model (stage 4's defaults).
TARGET_CONFIG = GenerateConfig(temperature=0.0, max_tokens=1000)


class TaskInputError(UserError, PrerequisiteError):
    """A bad task argument or input file: one line, no traceback."""

    def __init__(self, message: str) -> None:
        UserError.__init__(self, message)
        self.message = message


def load_dataset(source: str, name: str) -> tuple[MemoryDataset, dict | None]:
    """The prompts of a set as samples: id = position among the non-empty prompts (from 1),
    input = the prompt, metadata = its category. Also the published copy read (bundled, or the
    Hub's repo, file and commit), with its SHA-256, when the input is one (see orbench.tables.published)."""
    prepared = load_rows(source, [COL_PROMPT], COL_PROMPT, None, {COL_TYPE: COL_CATEGORY})
    samples = [
        Sample(id=i, input=row[COL_PROMPT],
               metadata={CATEGORY_KEY: str(row.get(COL_CATEGORY) or "").strip() or NO_CATEGORY})
        for i, row in enumerate(prepared.rows, start=1)
    ]
    found = prepared.source or {}
    location = found.get("uri") or found.get("path") or str(source)
    return MemoryDataset(samples, name=name, location=location), prepared.source


@solver
def system_prompt_message(text: str) -> Solver:
    """Put ``text`` first in the conversation, as it is.

    Not Inspect's ``system_message``: that one reads a file or URL when the text names one
    and fills ``{...}`` from the sample's metadata, so the message sent could differ from
    the one stage 4 sends for the same --system_prompt.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.messages.insert(0, ChatMessageSystem(content=text))
        return state

    return solve


@solver
def protocol_generate() -> Solver:
    """Inspect's generate; for a model that takes no temperature (the parameters stage 4 sends
    it: orbench.engine.params), the same call with the temperature left out."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if known_params(str(state.model)).temperature:
            return await generate(state)
        return await _generate_without_temperature(state)

    return solve


async def _generate_without_temperature(state: TaskState) -> TaskState:
    """One generate call with this sample's config (the task's, with the command line's flags
    over it) less its temperature. Inspect's ``generate`` would merge the task's temperature
    back in, so the model is called here (no tools: one call)."""
    from inspect_ai.model import get_model
    from inspect_ai.model._generate_config import active_generate_config, set_active_generate_config

    config = active_generate_config().model_copy(update={"temperature": None})
    set_active_generate_config(config)  # the model merges the active config over its own
    state.output = await get_model().generate(state.messages, config=config)
    state.messages.append(state.output.message)
    return state


def _scorers(choice: str, rules: str, judge_model: str | None) -> list[Scorer]:
    if choice not in SCORER_CHOICES:
        raise TaskInputError(f"unknown scorer {choice!r} (-T scorer=...); choose one of: {', '.join(SCORER_CHOICES)}")
    if rules not in RULE_CHOICES:
        raise TaskInputError(f"unknown rules {rules!r} (-T rules=...); choose one of: {', '.join(RULE_CHOICES)}")
    chosen = []
    if choice in ("detector", "both"):
        chosen.append(refusal_detector(rules=rules))
    if choice in ("judge", "both"):
        chosen.append(refusal_judge(judge_model=judge_model))
    return chosen


def bench_task(task_name: str, input_file: str | None = None, scorer: str = DEFAULT_SCORER,
               rules: str = DEFAULT_RULES, system_prompt: str | None = None,
               judge_model: str | None = None, name: str | None = None) -> Task:
    """The task for one set; the three @task functions below differ only in the set."""
    bench = SET_BY_TASK[task_name]
    source = str(input_file) if input_file else bench.source
    scorers = _scorers(scorer, rules, judge_model)  # checked before the input is read
    try:
        dataset, input_source = load_dataset(source, task_name)
    except UserError as err:
        raise TaskInputError(str(err)) from None
    solvers = ([system_prompt_message(system_prompt)] if system_prompt else []) + [protocol_generate()]
    return Task(
        dataset=dataset,
        solver=solvers,
        scorer=scorers,
        config=TARGET_CONFIG,
        metadata={
            TASK_META_SET: bench.dataset,
            TASK_META_NAME: name,
            "input_file": source,
            "input_source": input_source,
            "system_prompt": system_prompt,
            "rules": rules,
            "template_version": TEMPLATE_VERSION,
            "orbench_version": __version__,
        },
    )


@task
def or_bench_80k(input_file: str | None = None, scorer: str = DEFAULT_SCORER, rules: str = DEFAULT_RULES,
                 system_prompt: str | None = None, judge_model: str | None = None,
                 name: str | None = None) -> Task:
    """OR-Bench-80K: safe prompts that only look harmful (over-refusal)."""
    return bench_task("or_bench_80k", input_file, scorer, rules, system_prompt, judge_model, name)


@task
def or_bench_hard_1k(input_file: str | None = None, scorer: str = DEFAULT_SCORER, rules: str = DEFAULT_RULES,
                     system_prompt: str | None = None, judge_model: str | None = None,
                     name: str | None = None) -> Task:
    """OR-Bench-Hard-1K: the safe prompts strong models most often refuse (over-refusal)."""
    return bench_task("or_bench_hard_1k", input_file, scorer, rules, system_prompt, judge_model, name)


@task
def or_bench_toxic(input_file: str | None = None, scorer: str = DEFAULT_SCORER, rules: str = DEFAULT_RULES,
                   system_prompt: str | None = None, judge_model: str | None = None,
                   name: str | None = None) -> Task:
    """OR-Bench-Toxic: really toxic prompts (a model should refuse them)."""
    return bench_task("or_bench_toxic", input_file, scorer, rules, system_prompt, judge_model, name)
