"""The test suite, as a regular package: `tests.x` must be this folder even when an installed
distribution ships a top-level `tests` of its own (ppi-python does), which would otherwise win
over a folder without __init__.py."""
