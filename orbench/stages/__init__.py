"""One module per stage: build jobs from input rows, call models, parse, write."""
