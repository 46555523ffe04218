"""OR-Bench reimplementation: shared core used by every stage script."""

__version__ = "0.1.0"
