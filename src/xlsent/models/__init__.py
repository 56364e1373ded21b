"""Encoders and their tokenizers."""
