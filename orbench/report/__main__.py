"""python -m orbench.report"""

import sys

from orbench.report.cli import main

sys.exit(main())
