"""What the ``inspect_ai`` entry point in pyproject.toml registers with Inspect: the tasks
(``inspect eval orbench/or_bench_hard_1k``), the scorers (``inspect score LOG --scorer
orbench/refusal_judge``), the system-prompt solver and the metrics."""

from .scorers import refusal_detector, refusal_judge, rejection_ci, rejection_rate  # noqa: F401
from .tasks import or_bench_80k, or_bench_hard_1k, or_bench_toxic, system_prompt_message  # noqa: F401
