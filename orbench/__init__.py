"""OR-Bench reimplementation. Each folder is one layer (docs/architecture.md); the root holds only
what every layer may import (errors, lazy) and the finder of old module paths (_moved)."""

from . import _moved

__version__ = "0.1.0"

_moved.install()
