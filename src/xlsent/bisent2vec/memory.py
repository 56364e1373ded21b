"""The memory a `bisent2vec_train` job asks for: the trainer's two matrices in float32 (the
input rows, words and n-gram buckets, and the output rows, words) plus the process's own."""

from __future__ import annotations

# What the word count is when bisent2vec.max_vocab_size leaves it open (null): the matrices of
# up to 2M words.
UNCAPPED_WORDS = 2_000_000
# The process itself (the interpreter, the corpus's reader, the binary), in MiB.
PROCESS_MB = 2000


def job_mem_mb(settings: dict, attempt: int) -> int:
    """MiB for a job with a run's `bisent2vec` block `settings`: `(2 × words + buckets) × dim`
    floats (buckets only with word n-grams above 1) and the process, times the attempt."""
    words = settings["max_vocab_size"] or UNCAPPED_WORDS
    buckets = settings["bucket"] if settings["word_ngrams"] > 1 else 0
    matrices = (2 * words + buckets) * settings["dim"] * 4 / 2**20
    return int(PROCESS_MB + matrices) * attempt
