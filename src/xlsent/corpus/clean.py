"""Cleaning of raw bitexts, as DAP prepared its OPUS data.

Each pair is dropped by the first filter that rejects it, in this order, and counted:

1. `invalid_utf8`: either side is not valid UTF-8.
2. `empty`: a side is empty once control characters are replaced and whitespace collapsed.
3. `url_or_email`: a side contains a URL or an e-mail address.
4. `too_short`: a side has fewer than `min_tokens` tokens (DAP drops ≤ 3). Tokens are
   whitespace-separated words, or characters for scripts written without spaces (zh, ja, th).
5. `identical`: the two sides are equal once case, punctuation, digits and spaces are
   removed: an untranslated copy rather than a translation.
6. `length_ratio`: the character-length ratio xx/en is further than `max_length_ratio` from
   the corpus's median ratio (either way). Relative to the median because scripts differ in
   characters per word (Chinese vs. German); the median is measured, not assumed.
7. `duplicate`: an exact repeat of an earlier (en, xx) pair.

Filters 1–5 look at one pair; 6–7 need the whole corpus, so cleaning makes two passes: the
first streams the bitexts in batches (vectorised with polars) to a temporary Parquet file
with a 64-bit hash and the log length ratio of each pair, the second keeps the first
occurrence of each hash inside the ratio band. Memory is bounded by those two numbers per
pair, never by the text.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from xlsent import languages
from xlsent.corpus.bitext import Bitext, CorpusError
from xlsent.faults import kill_point
from xlsent.io import ParquetWriter, parquet_writer

log = logging.getLogger(__name__)

FILTERS = (
    "invalid_utf8",
    "empty",
    "url_or_email",
    "too_short",
    "identical",
    "length_ratio",
    "duplicate",
)
CORPUS_SCHEMA = pa.schema(
    [("id", pa.int64()), ("en", pa.string()), ("xx", pa.string()), ("source", pa.string())]
)
_PASS1_SCHEMA = pa.schema(
    [
        ("en", pa.string()),
        ("xx", pa.string()),
        ("source", pa.string()),
        ("hash", pa.uint64()),
        ("logratio", pa.float32()),
    ]
)
# Control characters (C0, DEL, C1) and the byte-order mark; not format characters in
# general: ZWJ/ZWNJ carry meaning in Persian and Indic scripts.
_CONTROL = r"[\p{Cc}\x{FEFF}]"
_URL_OR_EMAIL = r"(?i)(?:\b(?:https?|ftp)://|\bwww\.)\S+|[\w.+-]+@[\w-]+\.[\w.-]*\w"
_EXAMPLES = 5  # locations kept per filter in the stats, for a human to look at


@dataclass(frozen=True)
class CleanConfig:
    min_tokens: int = 4
    max_length_ratio: float = 3.0
    batch_size: int = 100_000


def _batches(
    bitexts: Iterable[Bitext], size: int
) -> Iterator[tuple[Bitext, list[int], list[bytes], list[bytes]]]:
    for bitext in bitexts:
        linenos: list[int] = []
        en: list[bytes] = []
        xx: list[bytes] = []
        for lineno, a, b in bitext.lines():
            linenos.append(lineno)
            en.append(a)
            xx.append(b)
            if len(en) == size:
                yield bitext, linenos, en, xx
                linenos, en, xx = [], [], []
        if en:
            yield bitext, linenos, en, xx


def _text(lines: list[bytes]) -> pl.Series:
    """The lines as text, null where a line is not valid UTF-8 (the `invalid_utf8` filter)."""
    try:
        return pl.Series(lines, dtype=pl.Binary).cast(pl.String, strict=False)
    except pl.exceptions.PolarsError:
        # Polars raises on invalid UTF-8 even with strict=False, which would stop cleaning at
        # the first bad line instead of counting it: decode such a batch line by line.
        return pl.Series([_decode(line) for line in lines], dtype=pl.String)


def _decode(line: bytes) -> str | None:
    try:
        return line.decode()
    except UnicodeDecodeError:
        return None


def _token_count(col: pl.Expr, unspaced: bool) -> pl.Expr:
    return col.str.count_matches(r"\S" if unspaced else r"\S+")


def _normalise(col: pl.Expr) -> pl.Expr:
    return col.str.replace_all(_CONTROL, " ").str.replace_all(r"\s+", " ").str.strip_chars()


def _first_filter(frame: pl.DataFrame, lang: str, cfg: CleanConfig) -> pl.DataFrame:
    """Add `reason` (the first per-pair filter that drops the row, or null) to a raw batch."""
    unspaced = languages.get(lang).unspaced
    en, xx = pl.col("en"), pl.col("xx")

    def letters(col: pl.Expr) -> pl.Expr:
        return col.str.to_lowercase().str.replace_all(r"[\W\d_]+", "")

    return frame.with_columns(
        control=en.str.contains(_CONTROL) | xx.str.contains(_CONTROL),
        en=_normalise(en),
        xx=_normalise(xx),
    ).with_columns(
        reason=pl.when(en.is_null() | xx.is_null())
        .then(pl.lit("invalid_utf8"))
        .when((en == "") | (xx == ""))
        .then(pl.lit("empty"))
        .when(en.str.contains(_URL_OR_EMAIL) | xx.str.contains(_URL_OR_EMAIL))
        .then(pl.lit("url_or_email"))
        .when(
            (_token_count(en, False) < cfg.min_tokens)
            | (_token_count(xx, unspaced) < cfg.min_tokens)
        )
        .then(pl.lit("too_short"))
        .when(letters(en) == letters(xx))
        .then(pl.lit("identical"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def clean(
    bitexts: list[Bitext],
    lang: str,
    out_path: str | Path,
    cfg: CleanConfig = CleanConfig(),
) -> dict:
    """Clean `bitexts` of English–`lang` into `out_path` (Parquet); return the statistics."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)  # the first pass writes beside it
    pass1_path = out_path.with_name(f".{out_path.name}.pass1")
    try:
        stats = _first_pass(bitexts, lang, pass1_path, out_path, cfg)
        keep, ratio_dropped, dup_dropped, median = _corpus_filters(pass1_path, cfg)
        stats["dropped"]["length_ratio"] = ratio_dropped
        stats["dropped"]["duplicate"] = dup_dropped
        stats["median_length_ratio"] = median
        stats["kept"] = int(keep.sum())
        if stats["kept"] == 0:
            origins = ", ".join(s["origin"] for s in stats["sources"].values()) or "no source"
            raise CorpusError(
                f"{lang}: no pair survived cleaning (read {stats['read']} from {origins}; "
                f"dropped {stats['dropped']}). Check that the files hold {lang}-English text, "
                "loosen corpus.clean (e.g. min_tokens), or remove the language from `languages`."
            )
        for name, count in _write_kept(pass1_path, keep, out_path, cfg.batch_size).items():
            stats["sources"][name]["kept"] = count
    finally:
        pass1_path.unlink(missing_ok=True)
    return stats


def _first_pass(
    bitexts: list[Bitext], lang: str, pass1_path: Path, out_path: Path, cfg: CleanConfig
) -> dict:
    """Per-pair filters; survivors go to `pass1_path` with their hash and log length ratio."""
    dropped = dict.fromkeys(FILTERS, 0)
    examples: dict[str, list[str]] = {}
    sources: dict[str, dict] = {}
    for bitext in bitexts:  # up front, so that a source with no line or no survivor is listed
        sources.setdefault(bitext.corpus, {"origin": bitext.origin, "read": 0, "kept": 0})
    control = 0
    writer = ParquetWriter(out_path, pass1_path, _PASS1_SCHEMA)  # failures name the output
    try:
        with tqdm(desc=f"clean {lang}", unit=" pairs", unit_scale=True, mininterval=5) as bar:
            for bitext, linenos, en, xx in _batches(bitexts, cfg.batch_size):
                frame = _first_filter(
                    pl.DataFrame(
                        {
                            "lineno": linenos,
                            "en": _text(en),
                            "xx": _text(xx),
                        }
                    ),
                    lang,
                    cfg,
                )
                control += int(frame["control"].sum())
                source = sources[bitext.corpus]
                source["read"] += frame.height
                rejected = frame.filter(pl.col("reason").is_not_null())
                for reason, lineno in rejected.select("reason", "lineno").iter_rows():
                    dropped[reason] += 1
                    if reason == "invalid_utf8":
                        log.warning("%s line %d is not valid UTF-8; skipped", bitext.origin, lineno)
                    seen = examples.setdefault(reason, [])
                    if len(seen) < _EXAMPLES:
                        seen.append(f"{bitext.origin}:{lineno}")
                kept = frame.filter(pl.col("reason").is_null()).select(
                    "en",
                    "xx",
                    source=pl.lit(bitext.corpus),
                    hash=pl.struct("en", "xx").hash(seed=0),
                    logratio=(
                        (pl.col("xx").str.len_chars() + 1) / (pl.col("en").str.len_chars() + 1)
                    )
                    .log()
                    .cast(pl.Float32),
                )
                writer.write_table(kept.to_arrow().cast(_PASS1_SCHEMA))
                bar.update(frame.height)
    finally:
        writer.close()
    return {
        "lang": lang,
        "read": sum(s["read"] for s in sources.values()),
        "kept": None,
        "dropped": dropped,
        "control_chars_replaced": control,
        "median_length_ratio": None,
        "sources": sources,
        "examples": examples,
    }


def _corpus_filters(
    pass1_path: Path, cfg: CleanConfig
) -> tuple[np.ndarray, int, int, float | None]:
    """The keep-mask of the corpus-level filters (length ratio, then duplicates)."""
    table = pq.read_table(pass1_path, columns=["hash", "logratio"])
    hashes = table["hash"].to_numpy()
    logratio = table["logratio"].to_numpy()
    if len(hashes) == 0:
        return np.zeros(0, dtype=bool), 0, 0, None
    median = float(np.median(logratio))
    in_band = np.abs(logratio - median) <= math.log(cfg.max_length_ratio)
    candidates = np.flatnonzero(in_band)
    _, first = np.unique(hashes[candidates], return_index=True)
    keep = np.zeros(len(hashes), dtype=bool)
    keep[candidates[first]] = True
    ratio_dropped = int((~in_band).sum())
    return keep, ratio_dropped, int(in_band.sum() - keep.sum()), round(math.exp(median), 4)


def _write_kept(
    pass1_path: Path, keep: np.ndarray, out_path: Path, batch_size: int
) -> Counter[str]:
    """Stream the kept rows of the first pass to the final file, numbering them from 0."""
    per_source: Counter[str] = Counter()
    start = 0
    with parquet_writer(out_path, CORPUS_SCHEMA) as writer:
        # Without pre_buffer: it reads ahead across row groups, so memory would grow with the file.
        for batch in pq.ParquetFile(pass1_path, pre_buffer=False).iter_batches(
            batch_size=batch_size, columns=["en", "xx", "source"]
        ):
            rows = pl.from_arrow(batch).filter(pl.Series(keep[start : start + batch.num_rows]))
            start += batch.num_rows
            first_id = sum(per_source.values())
            rows = rows.with_row_index("id", offset=first_id).cast({"id": pl.Int64})
            per_source.update(dict(rows["source"].value_counts().iter_rows()))
            writer.write_table(rows.to_arrow().cast(CORPUS_SCHEMA))
            kill_point("clean")
    return per_source
