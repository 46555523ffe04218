"""The OR-Bench protocol as data: column names, categories, prompt templates, reply parsing, verdicts,
the judges' vote, stage summaries. Imports nothing of orbench but the root (errors)."""
