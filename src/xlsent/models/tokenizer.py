"""The encoder's subword tokenizer: a pretrained model's own, or SentencePiece trained here.

`model.init: scratch` trains a SentencePiece unigram model on the training corpus (both
sides, every language) and wraps it exactly as XLM-R wraps its own: the fairseq id layout
(<s>=0, <pad>=1, </s>=2, <unk>=3, pieces, <mask> last), saved as a Hugging Face tokenizer.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow.parquet as pq

from xlsent.failures.kill_points import kill_point
from xlsent.failures.unreadable import reading
from xlsent.io import atomic_path, write_json

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)

# What transformers 5 writes into tokenizer_config.json about how that copy of the tokenizer
# was loaded, not about the tokenizer: `local_files_only` is True where HF_HUB_OFFLINE (or
# TRANSFORMERS_OFFLINE) was set, as from_pretrained turns it on in offline mode; `is_local`
# whether the source was a directory or a hub id. from_pretrained sets both anew at every
# load, so the saved values are never read; left in, one environment variable would change
# the bytes of a tokenizer or model directory, which the trainer fingerprints file by file.
LOADING_RECORD = ("is_local", "local_files_only")


def drop_loading_record(directory: str | Path) -> None:
    """Remove `LOADING_RECORD` from the tokenizer_config.json in `directory`, written again as
    transformers writes it; call it after every save of a tokenizer (`save_pretrained`, or a
    SentenceTransformer's `save`, which saves its tokenizer again). A file without those keys
    (transformers 4 writes neither) is left as it is."""
    path = Path(directory) / "tokenizer_config.json"
    settings = json.loads(path.read_text(encoding="utf-8"))
    if not any(key in settings for key in LOADING_RECORD):
        return
    for key in LOADING_RECORD:
        settings.pop(key, None)
    text = json.dumps(settings, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


def _balanced_sample(corpus_paths: dict[str, Path], max_sentences: int, seed: int) -> list[str]:
    """Up to `max_sentences` sentences, the same budget per language (half English)."""
    per_lang = max(1, max_sentences // (2 * len(corpus_paths)))
    rng = np.random.default_rng(seed)
    sentences: list[str] = []
    for lang in sorted(corpus_paths):
        with reading(corpus_paths[lang]):
            table = pq.read_table(corpus_paths[lang], columns=["en", "xx"])
        take = rng.permutation(table.num_rows)[:per_lang]
        for side in ("en", "xx"):
            sentences.extend(table.column(side).take(take).to_pylist())
    return sentences


def train_sentencepiece(
    corpus_paths: dict[str, Path],
    out_dir: str | Path,
    vocab_size: int,
    max_sentences: int = 2_000_000,
    seed: int = 0,
    threads: int = 1,
) -> dict:
    """Train a unigram SentencePiece model on the corpora and save it as an XLM-R tokenizer."""
    import sentencepiece as spm
    from transformers import XLMRobertaTokenizer

    sentences = _balanced_sample(corpus_paths, max_sentences, seed)
    spm.set_random_generator_seed(seed)
    with tempfile.TemporaryDirectory() as tmp, atomic_path(out_dir) as out:
        text = Path(tmp) / "sentences.txt"
        text.write_text("\n".join(sentences) + "\n")
        # XLM-R's own SentencePiece layout (<unk>=0, <s>=1, </s>=2): its tokenizer maps
        # those three to fairseq's ids and adds <pad> and <mask>, so V pieces give V + 2 ids.
        # (Any other layout would lose the first real pieces to the three special slots.)
        spm.SentencePieceTrainer.train(
            input=str(text),
            model_prefix=str(Path(tmp) / "sp"),
            vocab_size=vocab_size - 2,
            model_type="unigram",
            character_coverage=0.9995,
            unk_id=0,
            bos_id=1,
            eos_id=2,
            pad_id=-1,
            # A small corpus may not support the requested size: take what it supports.
            hard_vocab_limit=False,
            num_threads=threads,
            minloglevel=2,
        )
        hf_dir = Path(tmp) / "hf"
        hf_dir.mkdir()
        shutil.copy(Path(tmp) / "sp.model", hf_dir / "sentencepiece.bpe.model")
        tokenizer = XLMRobertaTokenizer.from_pretrained(hf_dir)
        tokenizer.save_pretrained(out)
        drop_loading_record(out)
        stats = {
            "sentences": len(sentences),
            "vocab_size": len(tokenizer),
            "requested_vocab_size": vocab_size,
            "seed": seed,
        }
        kill_point("tokenizer")
        write_json(out / "xlsent_tokenizer.json", stats)
    log.info("trained a %d-piece tokenizer on %d sentences", stats["vocab_size"], len(sentences))
    return stats


def save_pretrained_tokenizer(model_dir: str | Path, out_dir: str | Path) -> dict:
    """Copy a pretrained model's tokenizer (as transformers saves it) to `out_dir`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    with atomic_path(out_dir) as out:
        tokenizer.save_pretrained(out)
        drop_loading_record(out)
    return {"vocab_size": len(tokenizer), "source": str(model_dir)}


def fast_tokenizer(tokenizer_dir: str | Path) -> Tokenizer:
    """The `tokenizers` backend of a saved Hugging Face tokenizer (its tokenizer.json),
    without truncation or padding: the same ids and character offsets as transformers'
    `AutoTokenizer(..., add_special_tokens=False)`, loaded in a tenth of a second where
    importing transformers' tokenizer classes takes five (most of a demo subwords job)."""
    from tokenizers import Tokenizer

    path = Path(tokenizer_dir) / "tokenizer.json"
    if not path.is_file():
        raise ValueError(
            f"{tokenizer_dir}: no tokenizer.json; the subword stages need a fast tokenizer "
            "(transformers saves one for XLM-R and every model with a `tokenizers` backend): "
            "use such a model, or rebuild the tokenizer directory with the tokenizer rule"
        )
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
