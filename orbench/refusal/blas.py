"""One BLAS thread while fitting.

SciPy's L-BFGS-B works on vectors of some 10,000 weights, too short for OpenBLAS's threads to
pay: they spin more than they help. Measured on the development pool (one fit on all 8,427
rows, 2 cores): 0.46 s of CPU and 0.46 s of wall time with one thread, 2.63 s and 1.37 s with
two. threadpoolctl (orbench[train]) sets the limit for the fit only; without it nothing changes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def one_blas_thread() -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
