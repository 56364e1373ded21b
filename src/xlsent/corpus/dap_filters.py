"""DAP's per-pair filters (`corpus.clean.style: dap`), vectorised over a batch.

DAP (Li et al. 2023, "Dual-Alignment Pre-training for Cross-lingual Sentence Embedding",
arXiv:2305.09148) does not describe its cleaning; its corpus, which WACSE (Miao et al. 2024,
§4.1) trained on too, was built by `data/gen_sent_pair.py` of github.com/ChillingDream/DAP.
Per pair:

- Characters (`map_function`): every C0 control character but the tab (U+0000–U+0008,
  U+000A–U+001F), DEL and the ASCII double quote (U+0022) are removed, and a tab becomes a
  space. DAP wrote its corpus as TSV, which tabs and quotes would have broken; we keep the
  removal so that the text is DAP's.
- Filters (`filter_function`), each pair dropped by the first that rejects it, in DAP's order:

  1. `invalid_utf8`: a side is not UTF-8 (DAP's reader would have stopped).
  2. `empty`: a side is nothing but whitespace. Not DAP's own test: its `too_short` drops
     nearly every such side (mBERT's tokenizer makes no token of whitespace, XLM-R's one,
     but for U+0085, which XLM-R keeps as unknown pieces); counted apart, as in the words
     style, and so that no `min_tokens` keeps a side that collapsing whitespace empties.
  3. `at_or_http`: a side holds `@` or `http` anywhere (case-sensitive substrings).
  4. `not_available`: a side is exactly `N/A`.
  5. `too_short`: a side has fewer than `min_tokens` tokens (DAP: `<= 3`, so 4).
  6. `length_ratio`: the longer side has more than max(2 × the shorter's, 32) tokens.
  7. `too_long`: the shorter side has more than 64 tokens.
  8. `identical`: the two sides are the same string.
  9. `overlap`: both sides have more than 5 tokens, and of either side at least half its
     tokens (each occurrence) are strings that occur anywhere on the other side.

Tokens are `tokenizer.tokenize(text)` of a Hugging Face fast tokenizer (no special tokens,
no truncation): here the `tokenizer.json` of `corpus.clean.tokenizer`'s model. DAP counted
with bert-base-multilingual-cased's WordPiece for both its models (mBERT and XLM-R).

Filters 1–4 read the text alone (`text_filters`); 5–9 need the tokens (`token_filters`),
most of the cost, which `xlsent.corpus.capped` spends only on the pairs a cap needs.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import polars as pl
import pyarrow as pa

from xlsent.corpus.bitext import CorpusError
from xlsent.corpus.pair_filters import Filtered, Verdicts, decode, fact

FILTERS = (
    "invalid_utf8",
    "empty",
    "at_or_http",
    "not_available",
    "too_short",
    "length_ratio",
    "too_long",
    "identical",
    "overlap",
)
Text = TypeVar("Text", pl.Series, pl.Expr)
TEXT_FILTERS = FILTERS[:4]  # those that read the text alone, before any token is counted
REMOVED = r'[\x00-\x08\x0A-\x1F\x7F"]'  # what `map_function` deletes (the tab it replaces)
RATIO = 2  # the longer side has at most RATIO × the shorter's tokens ...
RATIO_FLOOR = 32  # ... unless it has at most RATIO_FLOOR
MAX_SHORTER = 64  # tokens of the shorter side at most
OVERLAP_FROM = 6  # tokens a side needs, both sides, for the overlap test


class SubwordTokens:
    """A tokenizer's tokens of texts, as integers that are equal exactly when the tokens'
    strings are (DAP compares strings)."""

    def __init__(self, directory: str | Path):
        from tokenizers import Tokenizer

        path = Path(directory) / "tokenizer.json"
        if not path.is_file():
            raise CorpusError(
                f"{path} does not exist: DAP's filters count tokens with a Hugging Face fast "
                "tokenizer; corpus.clean.tokenizer must name a model whose directory holds "
                "its tokenizer.json"
            )
        self._tokenizer = Tokenizer.from_file(str(path))
        # A saved tokenizer may carry the model's truncation, which would cut the counts.
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._size = self._tokenizer.get_vocab_size(with_added_tokens=True)
        # A unigram model (XLM-R's) gives every unknown piece the unknown id but keeps the
        # piece's text as its token; WordPiece and BPE make it the unknown token itself.
        model = json.loads(path.read_text(encoding="utf-8"))["model"]
        self._unk = model["unk_id"] if model["type"] == "Unigram" else None

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each text's number of tokens, and all the tokens, text after text (the integers of
        unknown pieces hold within one call)."""
        encodings = self._tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        ids = [encoding.ids for encoding in encodings]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        tokens = np.fromiter(
            itertools.chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum())
        )
        if self._unk is None:
            return lengths, tokens
        unknown = np.flatnonzero(tokens == self._unk)
        if len(unknown):
            # Each distinct unknown piece gets an integer beyond the vocabulary. The fast
            # encoding leaves out the tokens' text: the few texts with one are encoded again.
            starts = np.cumsum(lengths) - lengths
            texts_of = np.searchsorted(starts, unknown, side="right") - 1
            pieces: dict[str, int] = {}
            for text in np.unique(texts_of):
                strings = self._tokenizer.encode(texts[text], add_special_tokens=False).tokens
                for at in unknown[texts_of == text]:
                    piece = strings[at - starts[text]]
                    tokens[at] = pieces.setdefault(piece, self._size + len(pieces))
        return lengths, tokens


def clean_text(text: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """DAP's `map_function` on each text; and which texts it changed."""
    changed = text.str.contains(r'[\x00-\x1F\x7F"]').fill_null(False).to_numpy()
    return text.str.replace_all(REMOVED, "").str.replace_all("\t", " ", literal=True), changed


def filter_pairs(
    en: pa.StructArray, xx: pa.StructArray, tokens: SubwordTokens, min_tokens: int
) -> Filtered:
    """Run the filters on the lines (with their `pair_filters.line_facts`) of a batch.

    The kept text is DAP's with whitespace runs made one space and the ends stripped (the
    word stage reads single-spaced text); the tests ran on DAP's.
    """
    (en_text, en_changed), (xx_text, xx_changed) = (
        clean_text(decode(side.field("line"), fact(side, "utf8"))) for side in (en, xx)
    )
    verdicts = Verdicts(len(en), FILTERS)
    text_filters(en_text, xx_text, verdicts)
    token_filters(en_text, xx_text, tokens, min_tokens, verdicts)
    return Filtered(
        verdicts.reason, single_spaced(en_text), single_spaced(xx_text), en_changed | xx_changed
    )


def text_filters(en_text: pl.Series, xx_text: pl.Series, verdicts: Verdicts) -> None:
    """DAP's filters before its tokens (TEXT_FILTERS): on the text alone, cheap."""
    drop = verdicts.drop

    def either(test: Callable[[pl.Series], pl.Series]) -> np.ndarray:
        return _bools(test(en_text)) | _bools(test(xx_text))

    drop(en_text.is_null().to_numpy() | xx_text.is_null().to_numpy(), "invalid_utf8")
    drop(either(lambda text: text.str.contains(r"^\s*$")), "empty")
    drop(
        either(
            lambda text: (
                text.str.contains("@", literal=True) | text.str.contains("http", literal=True)
            )
        ),
        "at_or_http",
    )
    drop(either(lambda text: text == "N/A"), "not_available")


def token_filters(
    en_text: pl.Series,
    xx_text: pl.Series,
    tokens: SubwordTokens,
    min_tokens: int,
    verdicts: Verdicts,
) -> None:
    """DAP's filters from its tokens on (those after TEXT_FILTERS), on the pairs still alive:
    the costly part, a tokenizer's pass over both sides."""
    drop, alive = verdicts.drop, verdicts.alive
    rows = np.flatnonzero(alive)
    # Both sides in one call: an unknown piece gets the same integer on either side.
    lengths, both = tokens.encode(pl.concat([en_text.gather(rows), xx_text.gather(rows)]).to_list())
    en_len, xx_len = lengths[: len(rows)], lengths[len(rows) :]
    en_tokens, xx_tokens = both[: en_len.sum()], both[en_len.sum() :]
    shorter, longer = np.minimum(en_len, xx_len), np.maximum(en_len, xx_len)

    def drop_rows(hit: np.ndarray, name: str) -> None:
        every = np.zeros(len(alive), dtype=bool)
        every[rows] = hit
        drop(every, name)

    drop_rows(shorter < min_tokens, "too_short")
    drop_rows(longer > np.maximum(RATIO * shorter, RATIO_FLOOR), "length_ratio")
    drop_rows(shorter > MAX_SHORTER, "too_long")
    drop(_bools(en_text == xx_text), "identical")
    en_shared = _shared(en_len, en_tokens, xx_len, xx_tokens)
    xx_shared = _shared(xx_len, xx_tokens, en_len, en_tokens)
    overlap = (2 * en_shared >= en_len) | (2 * xx_shared >= xx_len)
    drop_rows((shorter >= OVERLAP_FROM) & overlap, "overlap")


def single_spaced(text: Text) -> Text:
    """The text as kept: whitespace runs made one space, the ends stripped (a Series, or an
    expression of one)."""
    return text.str.replace_all(r"\s+", " ").str.strip_chars()


def _shared(
    lengths: np.ndarray, tokens: np.ndarray, other_lengths: np.ndarray, other_tokens: np.ndarray
) -> np.ndarray:
    """For each text, how many of its tokens occur in the other side's text of its pair."""
    pairs = np.arange(len(lengths))
    base = int(max(tokens.max(initial=0), other_tokens.max(initial=0))) + 1
    keys = np.repeat(pairs, lengths) * base + tokens
    other_keys = np.repeat(pairs, other_lengths) * base + other_tokens
    found = np.isin(keys, other_keys)
    return np.bincount(np.repeat(pairs, lengths)[found], minlength=len(lengths))


def _bools(series: pl.Series) -> np.ndarray:
    return series.fill_null(False).to_numpy()
