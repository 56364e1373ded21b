"""Bi-Sent2vec (Sabet et al. 2019): cross-lingual word and sentence vectors from parallel pairs.

The trainer is C++ (`csrc/bisent2vec/`, built with CMake); this package drives it:

- `build`: compile the `bisent2vec` binary into a build directory (skipped when up to date);
- `data`: turn the tokenize stage's word Parquet files into the trainer's text input;
- `trainer`: the settings and one training run (a subprocess, its progress streamed to the log)
  into a model directory;
- `model`: load a model (or any word vectors) and compute sentence vectors the way the C++
  does, optionally tf-idf weighted, also as the text encoder `xlsent.evaluate.tatoeba` takes;
- `baseline`: the monolingual fastText CBOW baseline on the same tokens.

Word translation (BLI) is evaluated by `xlsent.evaluate.bli`.

One model is trained per language pair en-xx, as the paper does.
"""

from __future__ import annotations

from xlsent.failures.errors import XlsentError


class Bisent2vecError(XlsentError):
    """A build, training run or model file that failed; the message names the cause and fix."""
