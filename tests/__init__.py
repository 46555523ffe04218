"""The test suite (a regular package, so that a stray top-level `tests` package in site-packages,
such as the one ppi-python installs, cannot shadow it)."""
