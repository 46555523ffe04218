"""python -m orbench: the `orbench` command (orbench/console.py)."""

import sys

from orbench.console import main

sys.exit(main())
