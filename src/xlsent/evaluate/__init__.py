"""Evaluation: similarity search and the benchmark tasks built on it."""
