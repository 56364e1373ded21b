"""Dual-encoder training: data from the subword shards, the loop, checkpoints and resume."""
