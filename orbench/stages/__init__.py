"""One module per stage (and datasets, the set builder): build jobs from input rows, call models, parse, write. May import judge_audit, inspect_eval, run and everything below them."""
