"""python -m orbench: the `orbench` command (orbench/commands/console.py)."""

import sys

from orbench.commands.console import main

sys.exit(main())
