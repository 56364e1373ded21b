"""Cleaning of raw bitexts: a style's filters, each pair dropped by the first filter that
rejects it, and counted (`xlsent.corpus.clean_base.FILTERS`, in order).

`corpus.clean.style: dap` runs DAP's filters, as DAP's data/gen_sent_pair.py built its corpus
(Li et al. 2023, arXiv:2305.09148): subword counts from a tokenizer, token overlap
(`xlsent.corpus.dap_filters`), then `duplicate` below; with a `corpus.per_source_cap` it
tokenizes only the pairs the cap needs (`xlsent.corpus.capped`). `words` (the default) runs
these:

1. `invalid_utf8`: either side is not valid UTF-8.
2. `empty`: a side is empty once control characters are replaced and whitespace collapsed.
3. `url_or_email`: a side contains a URL or an e-mail address.
4. `too_short`: a side has fewer than `min_tokens` tokens: whitespace-separated words, or
   characters for scripts written without spaces (zh, ja, th).
5. `identical`: the two sides are equal once case, punctuation, digits and spaces are
   removed: an untranslated copy rather than a translation.
6. `length_ratio`: the character-length ratio xx/en is further than `max_length_ratio` from
   the corpus's median ratio (either way). Relative to the median because scripts differ in
   characters per word (Chinese vs. German); the median is measured, not assumed.
7. `duplicate`: an exact repeat of an earlier (en, xx) pair, in any source of the language.
   (DAP removes repeats within each source only, so that one pair of two sources could be
   both a training and a dev pair.)

A style's per-pair filters (1–5 here) look at one pair; `length_ratio` (words only) and
`duplicate` need the whole corpus, so cleaning makes passes over a scratch directory beside
the output (removed at the end):

1. The bitexts are read in blocks (`xlsent.corpus.lines`), with facts about each line's
   bytes computed by numpy on the way, and filtered a batch at a time
   (`xlsent.corpus.pair_filters`: polars string kernels where the facts do not settle a
   pair; or `xlsent.corpus.dap_filters`). The survivors go to an Arrow file, their 64-bit
   hashes and log length ratios to files of their own, and the ratios into the histogram
   of an exact streaming median (`xlsent.corpus.median`).
2. One pass over the ratios refines the median's middle bins; the pairs inside the ratio
   band go, as (hash, position), to partition files by hash (`xlsent.corpus.dedup`), each of
   which yields the positions of its repeats.
3. The survivors are read back in order and written, less the pairs outside the band and
   the repeats, numbered from 0.

The output is the same, row for row, as that of a pair-by-pair loop over the filters as
written above (tests/unit/corpus/test_clean.py holds the before's numbers for the real
corpus; tests/unit/corpus/test_dap_filters.py sets DAP's filters beside its code's function,
pair by pair).
Memory does not grow with the corpus: the blocks being read (16 MiB a side), a batch of at
most `batch_size` pairs, a partition chunk of 2M (hash, position) rows with its hash table,
the median's 2^17 counts, a read buffer per partition: about 300 MiB above the
interpreter's at most, reached once a partition holds its 2M rows, for any corpus of up to
537M pairs per language (benchmarks/sampling.py, en-kk: 274 to 334 MiB peak RSS at 2M pairs,
330 to 388 at 20M, 343 at 40M, of which 101 are the interpreter's; the same code varies by
up to 50 MiB between runs). The scratch directory holds the surviving text uncompressed
(about the size of the input) and 16 bytes a surviving pair.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from tqdm import tqdm

from xlsent import languages
from xlsent.corpus import capped, dap_filters, pair_filters
from xlsent.corpus.bitext import Bitext
from xlsent.corpus.clean_base import (
    CHANGED,
    CORPUS_SCHEMA,
    FILTERS,
    SENTENCES,
    CleanConfig,
    account,
    check_kept,
    naming,
    scratch,
)
from xlsent.corpus.dedup import Duplicates
from xlsent.corpus.median import StreamingMedian
from xlsent.failures.kill_points import kill_point
from xlsent.io import parquet_writer

log = logging.getLogger(__name__)

# As polars exports text (large_string): no conversion on the way to the scratch file. The
# source is not a column there but each record batch's metadata: a batch is from one bitext.
_TEXT_SCHEMA = pa.schema([("en", pa.large_string()), ("xx", pa.large_string())])


def clean(
    bitexts: list[Bitext],
    lang: str,
    out_path: str | Path,
    cfg: CleanConfig | None = None,
) -> dict:
    """Clean `bitexts` of English–`lang` into `out_path` (Parquet) with `cfg` (default: the
    schema's defaults); return the statistics.

    Style dap with a `per_source_cap` tokenizes only what the cap needs: `xlsent.corpus.capped`.
    """
    cfg = cfg or CleanConfig()
    if cfg.style == "dap" and cfg.per_source_cap is not None:
        return capped.clean(bitexts, lang, out_path, cfg)
    out_path = Path(out_path)
    with scratch(out_path) as directory:
        survivors = _Survivors(directory)
        with survivors.writer(out_path) as write:
            stats = _first_pass(bitexts, lang, write, cfg)
        median = survivors.histogram.median(lambda: survivors.read(survivors.ratios))
        # DAP's length test is per pair (its tokens): the band then holds every pair.
        band = _Band(median, cfg.max_length_ratio if cfg.style == "words" else math.inf)
        with naming(out_path):
            duplicates = _duplicates(survivors, band, directory)
        if cfg.style == "words":
            stats["dropped"]["length_ratio"] = band.outside
        stats["dropped"]["duplicate"] = duplicates.count
        stats["median_length_ratio"] = None if median is None else round(math.exp(median), 4)
        stats["kept"] = survivors.histogram.count - band.outside - duplicates.count
        check_kept(stats, lang)
        for name, count in _write_kept(survivors, band, duplicates, out_path).items():
            stats["sources"][name]["kept"] = count
    return stats


class _Survivors:
    """The pairs that pass the per-pair filters, in the scratch directory: their text (an Arrow
    file, a record batch per batch read) and, each in a file of its own so that the corpus
    filters read them without the text, their hashes and log length ratios; and the
    histogram of the ratios for their median."""

    CHUNK = 1 << 20  # hashes or ratios read at a time

    def __init__(self, scratch: Path):
        self.text = scratch / "text.arrow"
        self.hashes = scratch / "hashes.u64"
        self.ratios = scratch / "logratios.f32"
        self.histogram = StreamingMedian()  # of the log length ratios

    @contextlib.contextmanager
    def writer(self, out_path: Path) -> Iterator[Callable[[pl.DataFrame, str], None]]:
        """A function that appends a frame of (en, xx, hash, logratio) from a source; its
        failures name `out_path`."""
        with contextlib.ExitStack() as files:
            with naming(out_path):
                text = files.enter_context(pa.ipc.new_file(str(self.text), _TEXT_SCHEMA))
                hashes = files.enter_context(open(self.hashes, "wb"))
                ratios = files.enter_context(open(self.ratios, "wb"))

            def write(frame: pl.DataFrame, source: str) -> None:
                logratio = frame["logratio"].to_numpy()
                self.histogram.add(logratio)
                with naming(out_path):
                    for batch in frame.select(SENTENCES).to_arrow().to_batches():
                        text.write_batch(batch, custom_metadata={"source": source})
                    frame["hash"].to_numpy().astype("<u8").tofile(hashes)
                    logratio.astype("<f4").tofile(ratios)

            try:
                yield write
            except BaseException:
                with contextlib.suppress(OSError):  # what failed first is the news
                    files.close()
                raise
            with naming(out_path):
                files.close()

    def read(self, path: Path, count: int = CHUNK) -> Iterator[np.ndarray]:
        """The hashes or the ratios, `count` at a time."""
        dtype = "<u8" if path == self.hashes else "<f4"
        with open(path, "rb") as source:
            while len(values := np.fromfile(source, dtype=dtype, count=count)):
                yield values

    def batches(self) -> Iterator[tuple[pa.RecordBatch, str, np.ndarray]]:
        """The text, a batch at a time, with its source and the log length ratios of its rows."""
        # Read, not memory-mapped: mapped pages would count as this process's memory.
        with pa.OSFile(str(self.text)) as text, open(self.ratios, "rb") as ratios:
            reader = pa.ipc.open_file(text)
            for i in range(reader.num_record_batches):
                batch, metadata = reader.get_batch_with_custom_metadata(i)
                logratios = np.fromfile(ratios, dtype="<f4", count=batch.num_rows)
                yield batch, metadata[b"source"].decode(), logratios


def _first_pass(
    bitexts: list[Bitext], lang: str, write: Callable[[pl.DataFrame], None], cfg: CleanConfig
) -> dict:
    """Per-pair filters; the survivors are written with their hash and log length ratio."""
    names, filter_pairs = _per_pair_filters(lang, cfg)
    dropped = dict.fromkeys(FILTERS[cfg.style], 0)
    examples: dict[str, list[str]] = {}
    sources: dict[str, dict] = {}
    for bitext in bitexts:  # up front, so that a source with no line or no survivor is listed
        sources.setdefault(bitext.corpus, {"origin": bitext.origin, "read": 0, "kept": 0})
    changed = 0
    with tqdm(desc=f"clean {lang}", unit=" pairs", unit_scale=True, mininterval=5) as bar:
        for bitext in bitexts:
            for first, en, xx in bitext.batches(cfg.batch_size, pair_filters.line_facts):
                batch = filter_pairs(en, xx)
                changed += int(batch.changed.sum())
                sources[bitext.corpus]["read"] += len(batch.reason)
                utf8 = [
                    (bitext.en_origin, pair_filters.fact(en, "utf8")),
                    (bitext.xx_origin, pair_filters.fact(xx, "utf8")),
                ]
                account(batch.reason, names, first, bitext.origin, dropped, examples, utf8)
                kept = np.flatnonzero(batch.reason == 0)
                survivors = pl.DataFrame({"en": batch.en.gather(kept), "xx": batch.xx.gather(kept)})
                write(
                    survivors.with_columns(
                        hash=pl.struct("en", "xx").hash(seed=0),
                        logratio=(
                            (pl.col("xx").str.len_chars() + 1) / (pl.col("en").str.len_chars() + 1)
                        )
                        .log()
                        .cast(pl.Float32),
                    ),
                    bitext.corpus,
                )
                bar.update(len(batch.reason))
    return {
        "lang": lang,
        "read": sum(s["read"] for s in sources.values()),
        "kept": None,
        "dropped": dropped,
        CHANGED[cfg.style]: changed,
        "median_length_ratio": None,
        "sources": sources,
        "examples": examples,
    }


def _per_pair_filters(
    lang: str, cfg: CleanConfig
) -> tuple[tuple[str, ...], Callable[[pa.StructArray, pa.StructArray], pair_filters.Filtered]]:
    """The names of the style's per-pair filters, and a function that runs them on a batch
    of English and foreign lines."""
    if cfg.style == "dap":
        tokens = dap_filters.SubwordTokens(cfg.tokenizer)
        return dap_filters.FILTERS, lambda en, xx: dap_filters.filter_pairs(
            en, xx, tokens, cfg.min_tokens
        )
    unspaced = languages.get(lang).unspaced
    return pair_filters.FILTERS, lambda en, xx: pair_filters.filter_pairs(
        en, xx, unspaced, cfg.min_tokens
    )


def _duplicates(survivors: _Survivors, band: _Band, scratch: Path) -> Duplicates:
    """The repeats among the survivors inside the ratio band (counting those outside it)."""
    duplicates = Duplicates(scratch, survivors.histogram.count)
    position = 0
    hashes, ratios = survivors.read(survivors.hashes), survivors.read(survivors.ratios)
    for chunk, logratios in zip(hashes, ratios, strict=True):
        rows = np.flatnonzero(band.holds(logratios))
        duplicates.add(chunk[rows], position + rows)
        position += len(chunk)
    duplicates.find()
    return duplicates


class _Band:
    """The pairs whose log length ratio is within log(max_ratio) of the median's; counts the
    others."""

    def __init__(self, median: np.float32 | None, max_ratio: float):
        self._median = None if median is None else float(median)
        self._radius = math.log(max_ratio)
        self.outside = 0

    def holds(self, logratio: np.ndarray, count: bool = True) -> np.ndarray:
        if self._median is None:  # no pair survived the per-pair filters
            return np.zeros(len(logratio), dtype=bool)
        inside = np.abs(logratio - self._median) <= self._radius
        if count:
            self.outside += int((~inside).sum())
        return inside


def _write_kept(
    survivors: _Survivors, band: _Band, duplicates: Duplicates, out_path: Path
) -> Counter[str]:
    """Stream the kept rows of the first pass to the final file, numbering them from 0."""
    per_source: Counter[str] = Counter()
    start = kept = 0  # rows read back, rows written
    with parquet_writer(out_path, CORPUS_SCHEMA, SENTENCES) as writer:
        for batch, source, logratios in survivors.batches():
            keep = band.holds(logratios, count=False)
            keep[duplicates.below(start + batch.num_rows) - start] = False
            start += batch.num_rows
            rows = batch.filter(pa.array(keep))
            per_source[source] += rows.num_rows
            ids = np.arange(kept, kept + rows.num_rows, dtype=np.int64)
            kept += rows.num_rows
            id_column = pa.array(ids)
            text = [rows.column(name).cast(pa.string()) for name in SENTENCES]
            sources = pa.repeat(source, rows.num_rows)
            writer.write_table(
                pa.Table.from_arrays([id_column, *text, sources], schema=CORPUS_SCHEMA)
            )
            kill_point("clean")
    return per_source
