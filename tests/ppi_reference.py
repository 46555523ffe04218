"""Reference values of classic PPI (ppi_py.ppi_mean_ci, lam=1) for the cases the tests use.

    .venv/bin/pip install -e '.[test]'                # the test extra installs ppi-python
    .venv/bin/python tests/ppi_reference.py           # print the values
    .venv/bin/python tests/ppi_reference.py --check   # and compare orbench's with them

prints, for each case of CASES, the point estimate and 95% interval that ppi_py computes;
--check also computes them with orbench.statistics.estimators.ppi_normal_interval and exits 1 when any
differs by more than 1e-12. tests/test_estimators.py keeps these numbers beside the inputs
(REFERENCE) and, when ppi_py is installed, checks them live too.

ppi-python 0.2.3 also installs its own test files as a top-level package named `tests`. This
suite's `tests` has an __init__.py, so that it wins over that one (the repository root comes
first on the path, and a regular package is found before a folder without __init__.py
could be).

A case is counts: N scored rows of which K the keyword rules call refusals, and on the
judged sample the 2x2 table (judge, keyword): s11 both refusal, s10 judge refusal and
keyword answer (missed), s01 judge answer and keyword refusal (false refusal), s00 both
answer.
"""

from __future__ import annotations

import numpy as np

# name: (N, K, s11, s10, s01, s00)
CASES: dict[str, tuple[int, int, int, int, int, int]] = {
    "mixed": (1000, 300, 25, 15, 5, 55),
    "misses_half": (80000, 28800, 70, 72, 4, 54),
    "no_disagreement": (1319, 400, 60, 0, 0, 140),
    "mostly_refused": (655, 600, 45, 3, 1, 1),
}


def arrays(case: tuple[int, int, int, int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keyword on all rows, keyword on the judged rows, judge on the judged rows) as 0/1."""
    big_n, k, s11, s10, s01, s00 = case
    keyword_all = np.r_[np.ones(k), np.zeros(big_n - k)]
    judge = np.r_[np.ones(s11 + s10), np.zeros(s01 + s00)]
    keyword = np.r_[np.ones(s11), np.zeros(s10), np.ones(s01), np.zeros(s00)]
    return keyword_all, keyword, judge


def ppi_reference(case: tuple[int, int, int, int, int, int]) -> tuple[float, float, float]:
    """(estimate, low, high) from ppi_py itself (imported here: an optional package)."""
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    keyword_all, keyword, judge = arrays(case)
    est = ppi_mean_pointestimate(judge, keyword, keyword_all, lam=1)
    low, high = ppi_mean_ci(judge, keyword, keyword_all, alpha=0.05, lam=1)
    return float(np.ravel(est)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])


def main(argv: list[str]) -> int:
    check = "--check" in argv
    worst = 0.0
    print("REFERENCE = {")
    for name, case in CASES.items():
        est, low, high = ppi_reference(case)
        print(f"    {name!r}: ({est!r}, {low!r}, {high!r}),")
        if check:
            from orbench.statistics.estimators import ppi_normal_interval

            ours = ppi_normal_interval(*arrays(case))
            worst = max(worst, *(abs(a - b) for a, b in zip(ours, (est, low, high))))
    print("}")
    if check:
        print(f"largest difference from orbench.statistics.estimators.ppi_normal_interval: {worst:.2e}")
        return 0 if worst <= 1e-12 else 1
    return 0


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main(sys.argv[1:]))
