"""Training objectives, one per module, each with its paper's equation in the docstring."""
