"""The OR-Bench protocol as data: column names, categories, prompt templates, reply parsing, verdicts, the judges' vote, stage summaries. May import only the root (errors)."""
