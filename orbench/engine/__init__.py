"""TODO engine."""
