"""TODO run."""
