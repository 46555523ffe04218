"""TODO commands."""
