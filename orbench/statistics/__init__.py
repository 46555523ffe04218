"""TODO statistics."""
