"""DAP's cleaning with the per-source cap drawn before the token filters (`corpus.clean.style:
dap` with `corpus.per_source_cap`): a source of tens of millions of raw pairs is tokenized
only until its cap is reached.

DAP's corpus (its data/gen_sent_pair.py; docs/methods.md, "Corpus") runs its filters on
every pair of a source, drops the repeats, shuffles and keeps the first min(N, 1.01M): a
uniform random sample of the source's distinct survivors, which `xlsent.corpus.clean`
followed by `sample.per_source_caps` reproduces. Its token filters need a subword
tokenization of every raw pair (2.5K–10K pairs/s on one CPU), so here the random order
comes first:

1. Every raw pair goes through DAP's character cleanup and its filters on the text alone
   (`dap_filters.TEXT_FILTERS`: not UTF-8, empty, `@` or `http`, `N/A`), counted as
   `xlsent.corpus.clean` counts them. The others, the candidates, go to a scratch directory
   with a random key each (a stream per source seeded by (seed, language, source), as
   `sample.per_source_caps` seeds its draw), the hash of their kept text (the repeat test)
   and the hash of their text as the filters read it (before whitespace is made single).
2. Each source's candidates are filtered in the order of their keys, in rounds of key
   ranges (a small pilot, then what its survival rate says the cap needs), until
   `per_source_cap` of them are kept. A candidate is kept when it passes DAP's token filters
   and no earlier raw pair (in the order `clean` reads them, any source) with the same kept
   text passes them, as `clean` drops repeats: an earlier copy with the same filtered text
   has the same verdict; one whose text differs from it only in whitespace is filtered too.
3. The kept pairs with the `per_source_cap` smallest keys of each source are written, in
   the order read, numbered from 0.

The same distribution, not the same set: the keys are drawn independently of the pairs, so
the cap smallest keys among a source's kept pairs are a uniform random sample of them
without replacement, as DAP's shuffle and `sample.per_source_caps`' draw are; which sample
differs (those draws index the kept pairs, whose number is known only once every pair is
tokenized). A cap at least a source's kept pairs keeps all of them: `clean`'s rows and
counts exactly (tests/unit/corpus/test_capped.py). The train/dev draw of `xlsent.corpus.sample`
follows over the pairs kept, every source then within its cap.

Counts: the text filters count every pair; the token filters and `duplicate` count the
candidates whose key is at most the key of their source's last kept pair (what a walk in
key order examines, however far the rounds went), and `beyond_cap` the other candidates,
never tokenized: `read` = the dropped + `kept` + `beyond_cap`, per language and per source.
`median_length_ratio` is that of the counted survivors.

Memory: the tokenizer and a batch, as `clean`, and for each candidate examined its key,
verdict and repeat test (what its earlier copies need): 1,189 to 1,231 MiB peak RSS at a cap
of 1.01M on 2M raw pairs and 1,280 MiB on 20M, against 1,052 to 1,061 MiB for `clean`
filtering all of 2M (benchmarks/sampling.py, XLM-R's tokenizer, one CPU). The scratch
directory holds the candidates' text uncompressed and 26 bytes a candidate.
"""

from __future__ import annotations

import contextlib
import logging
import math
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from tqdm import tqdm

from xlsent.corpus import clean_base, dap_filters, pair_filters
from xlsent.corpus.bitext import Bitext
from xlsent.corpus.pair_filters import Verdicts
from xlsent.failures.kill_points import kill_point
from xlsent.io import parquet_writer

log = logging.getLogger(__name__)

FILTERS = clean_base.FILTERS["dap"]
_TEXT_SCHEMA = pa.schema(
    [("en", pa.large_string()), ("xx", pa.large_string()), ("line", pa.int64())]
)
# The candidates' files besides their text: each candidate's source, key and two hashes.
_DTYPES = {"sources": "<u2", "keys": "<u8", "kept_hashes": "<u8", "filtered_hashes": "<u8"}
_CHUNK = 1 << 20  # candidates' keys or hashes read at a time
_PILOT = 20_000  # candidates a source's first round examines at least ...
_PILOT_SHARE = 16  # ... or 1/16 of its cap: enough to estimate how many are kept
_MARGIN = 1.03  # a later round examines 3 % (and 3·√need) beyond what its rate says it needs
_SPAN = 1 << 64  # the keys: uniform 64-bit integers


@dataclass
class _Source:
    """One source's candidates and how far its walk in key order has come."""

    name: str
    code: int
    candidates: int = 0
    examined_to: int = 0  # every key below it has been examined (_SPAN: all)
    # Per examined candidate: `position` among all candidates, `key`, `reason` (0: passed
    # the filters, else 1 + the filter's index in FILTERS), `kept`, `logratio` (of its kept
    # text), `bitext` and `line`.
    rows: list[pl.DataFrame] = field(default_factory=list)

    def examined(self) -> int:
        return sum(len(frame) for frame in self.rows)

    def kept(self) -> int:
        return sum(int(frame["kept"].sum()) for frame in self.rows)

    def done(self, cap: int) -> bool:
        return self.candidates == 0 or self.examined_to >= _SPAN or self.kept() >= cap

    def next_range(self, cap: int) -> tuple[int, int]:
        """The keys the next round examines: [examined_to, its end)."""
        if self.candidates <= cap:  # every candidate is needed
            return self.examined_to, _SPAN
        if not self.examined_to:
            wanted = max(_PILOT, cap // _PILOT_SHARE)
        else:
            rate = max(self.kept(), 1) / max(self.examined(), 1)
            need = (cap - self.kept()) / rate
            wanted = need * _MARGIN + 3 * math.sqrt(need) + 1
        step = math.ceil(wanted / self.candidates * _SPAN)
        return self.examined_to, min(_SPAN, self.examined_to + step)


def clean(
    bitexts: list[Bitext], lang: str, out_path: str | Path, cfg: clean_base.CleanConfig
) -> dict:
    """Clean `bitexts` of English–`lang` into `out_path` (Parquet) with DAP's filters, at most
    `cfg.per_source_cap` pairs of each source; return the statistics: those of
    `xlsent.corpus.clean`, with `beyond_cap` (in all and per source) and `per_source_cap`."""
    out_path = Path(out_path)
    cap = int(cfg.per_source_cap)
    with clean_base.scratch(out_path) as directory:
        files = _Files(directory)
        with clean_base.naming(out_path):
            stats, sources = _first_pass(bitexts, lang, cfg, files)
        tokens = dap_filters.SubwordTokens(cfg.tokenizer)
        rounds = 0
        while pending := [source for source in sources if not source.done(cap)]:
            rounds += 1
            _examine(files, pending, cap, tokens, cfg)
            log.info(
                "%s: round %d: %s",
                lang,
                rounds,
                "; ".join(
                    f"{s.name}: {s.examined():,} of {s.candidates:,} candidates filtered, "
                    f"{s.kept():,} kept"
                    for s in pending
                ),
            )
        chosen = _count(stats, sources, cap, [bitext.origin for bitext in bitexts])
        clean_base.check_kept(stats, lang)
        with clean_base.naming(out_path):
            written = _write(files, chosen, [bitext.corpus for bitext in bitexts], out_path)
        for name, count in written.items():
            stats["sources"][name]["kept"] = count
    stats["per_source_cap"] = cap
    return stats


class _Files:
    """The candidates in the scratch directory: their text (an Arrow file, a record batch per
    batch read, with the index of its bitext in its metadata) and, each in a file of its own,
    their sources, keys, and the hashes of their kept and of their filtered text."""

    def __init__(self, directory: Path):
        self.text = directory / "candidates.arrow"
        self.paths = {name: directory / f"{name}.bin" for name in _DTYPES}

    @contextlib.contextmanager
    def writer(self) -> Iterator[dict[str, object]]:
        """The open files: `text` an Arrow file writer, the others binary files."""
        with contextlib.ExitStack() as stack:
            files: dict[str, object] = {
                "text": stack.enter_context(pa.ipc.new_file(str(self.text), _TEXT_SCHEMA))
            }
            for name, path in self.paths.items():
                files[name] = stack.enter_context(open(path, "wb"))
            yield files

    def chunks(self, *names: str) -> Iterator[tuple[int, list[np.ndarray]]]:
        """(position of the chunk's first candidate, each named file's values) a chunk at a
        time, over every candidate."""
        with contextlib.ExitStack() as stack:
            files = [stack.enter_context(open(self.paths[name], "rb")) for name in names]
            start = 0
            while True:
                values = [
                    np.fromfile(f, dtype=_DTYPES[name], count=_CHUNK)
                    for f, name in zip(files, names, strict=True)
                ]
                if not len(values[0]):
                    return
                yield start, values
                start += len(values[0])

    def texts(self, positions: np.ndarray) -> Iterator[tuple[pl.DataFrame, int]]:
        """The candidates at `positions` (ascending), a record batch at a time: a frame of
        `position`, `en`, `xx` (as the filters read them) and `line`, and its bitext."""
        # Read, not memory-mapped: mapped pages would count as this process's memory.
        with pa.OSFile(str(self.text)) as source:
            reader = pa.ipc.open_file(source)
            start = 0
            for i in range(reader.num_record_batches):
                if not len(positions):
                    return
                batch, metadata = reader.get_batch_with_custom_metadata(i)
                stop = start + batch.num_rows
                cut = int(np.searchsorted(positions, stop))
                if cut:
                    taken, positions = positions[:cut], positions[cut:]
                    rows = pl.from_arrow(batch.take(pa.array(taken - start)))
                    yield rows.with_columns(position=pl.Series(taken)), int(metadata[b"bitext"])
                start = stop


def _first_pass(
    bitexts: list[Bitext], lang: str, cfg: clean_base.CleanConfig, files: _Files
) -> tuple[dict, list[_Source]]:
    """DAP's character cleanup and text filters on every pair; the candidates to `files`."""
    dropped = dict.fromkeys(FILTERS, 0)
    examples: dict[str, list[str]] = {}
    stats_sources: dict[str, dict] = {}
    sources: dict[str, _Source] = {}
    for bitext in bitexts:  # up front, so that a source with no line or no survivor is listed
        info = {"origin": bitext.origin, "read": 0, "kept": 0, "beyond_cap": 0}
        stats_sources.setdefault(bitext.corpus, info)
        sources.setdefault(bitext.corpus, _Source(bitext.corpus, len(sources)))
    # A source's keys: one stream, seeded as `sample.per_source_caps` seeds its draw.
    streams = {
        name: np.random.default_rng(
            [cfg.seed, zlib.crc32(lang.encode()), zlib.crc32(name.encode())]
        ).bit_generator
        for name in sources
    }
    changed = 0
    with (
        files.writer() as out,
        tqdm(desc=f"clean {lang}", unit=" pairs", unit_scale=True, mininterval=5) as bar,
    ):
        for index, bitext in enumerate(bitexts):
            source = sources[bitext.corpus]
            for first, en, xx in bitext.batches(cfg.batch_size, pair_filters.line_facts):
                (en_text, en_changed), (xx_text, xx_changed) = (
                    dap_filters.clean_text(
                        pair_filters.decode(side.field("line"), pair_filters.fact(side, "utf8"))
                    )
                    for side in (en, xx)
                )
                verdicts = Verdicts(len(en), FILTERS)
                dap_filters.text_filters(en_text, xx_text, verdicts)
                changed += int((en_changed | xx_changed).sum())
                stats_sources[bitext.corpus]["read"] += len(en)
                utf8 = [
                    (bitext.en_origin, pair_filters.fact(en, "utf8")),
                    (bitext.xx_origin, pair_filters.fact(xx, "utf8")),
                ]
                clean_base.account(
                    verdicts.reason, FILTERS, first, bitext.origin, dropped, examples, utf8
                )
                bar.update(len(en))
                alive = np.flatnonzero(verdicts.alive)
                if not len(alive):
                    continue
                filtered = pl.DataFrame({"en": en_text.gather(alive), "xx": xx_text.gather(alive)})
                kept = filtered.select(dap_filters.single_spaced(pl.col("en", "xx")))
                text = filtered.with_columns(line=first + pl.Series(alive, dtype=pl.Int64))
                for batch in text.to_arrow().cast(_TEXT_SCHEMA).to_batches():
                    out["text"].write_batch(batch, custom_metadata={"bitext": str(index)})
                np.full(len(alive), source.code, dtype="<u2").tofile(out["sources"])
                streams[bitext.corpus].random_raw(len(alive)).astype("<u8").tofile(out["keys"])
                for name, frame in (("kept_hashes", kept), ("filtered_hashes", filtered)):
                    hashes = frame.select(pl.struct("en", "xx").hash(seed=0)).to_series()
                    hashes.to_numpy().astype("<u8").tofile(out[name])
                source.candidates += len(alive)
    stats = {
        "lang": lang,
        "read": sum(s["read"] for s in stats_sources.values()),
        "kept": None,
        "dropped": dropped,
        clean_base.CHANGED["dap"]: changed,
        "median_length_ratio": None,
        "sources": stats_sources,
        "examples": examples,
    }
    return stats, list(sources.values())


def _examine(
    files: _Files,
    pending: list[_Source],
    cap: int,
    tokens: dap_filters.SubwordTokens,
    cfg: clean_base.CleanConfig,
) -> None:
    """One round: filter each pending source's candidates of its next key range, and decide
    which of them are kept."""
    ranges = {source.code: source.next_range(cap) for source in pending}
    chosen = _in_ranges(files, ranges)
    copies, others = _earlier_copies(files, chosen)
    chosen = chosen.drop("kept_hash", "filtered_hash")  # memory for the tokenizer's batches
    needed = np.union1d(chosen["position"].to_numpy(), others["earlier"].to_numpy())
    verdicts = _verdicts(files, needed, tokens, cfg.min_tokens, cfg.batch_size)
    passed = verdicts.filter(pl.col("reason") == 0).select("position")
    # A survivor is kept unless an earlier copy survived: one with the same filtered text
    # (`copy`) did, its verdict being the same; the others were filtered here.
    repeated = others.join(passed, left_on="earlier", right_on="position", how="semi")
    examined = (
        chosen.join(copies, on="position")
        .join(verdicts, on="position")
        .with_columns(
            kept=(pl.col("reason") == 0)
            & ~pl.col("copy")
            & ~pl.col("position").is_in(repeated["position"].implode())
        )
        .select("position", "key", "reason", "kept", "logratio", "bitext", "line", "source")
    )
    for source in pending:
        source.rows.append(examined.filter(pl.col("source") == source.code).drop("source"))
        source.examined_to = ranges[source.code][1]


def _in_ranges(files: _Files, ranges: dict[int, tuple[int, int]]) -> pl.DataFrame:
    """The candidates whose key is in their source's range: `position`, `key`, `source`, and
    the hashes of their kept (`kept_hash`) and filtered (`filtered_hash`) text."""
    names = ("sources", "keys", "kept_hashes", "filtered_hashes")
    found = []
    for start, (sources, keys, kept, filtered) in files.chunks(*names):
        hit = np.zeros(len(keys), dtype=bool)
        for code, (low, high) in ranges.items():
            inside = (sources == code) & (keys >= np.uint64(low))
            hit |= inside & (keys < np.uint64(high)) if high < _SPAN else inside
        rows = np.flatnonzero(hit)
        found.append(
            pl.DataFrame(
                {
                    "position": start + rows,
                    "key": keys[rows],
                    "source": sources[rows],
                    "kept_hash": kept[rows],
                    "filtered_hash": filtered[rows],
                }
            )
        )
    return pl.concat(found)


def _earlier_copies(files: _Files, chosen: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The chosen candidates' earlier copies (earlier candidates with the same kept text):
    (`position`, `copy`) for each chosen one, `copy` whether one of them has the same filtered
    text; and (`position`, `earlier`) for those without such a copy, `earlier` the first
    candidate of each other filtered text among their earlier copies."""
    wanted = chosen.select(pl.col("kept_hash").unique())
    matches = []
    for start, (kept, filtered) in files.chunks("kept_hashes", "filtered_hashes"):
        chunk = pl.DataFrame(
            {
                "kept_hash": kept,
                "filtered_hash": filtered,
                "first": np.arange(start, start + len(kept), dtype=np.int64),
            }
        )
        matches.append(chunk.join(wanted, on="kept_hash", how="semi"))
    # The first candidate of each (kept, filtered) text: a chosen one is among them itself.
    firsts = pl.concat(matches).group_by("kept_hash", "filtered_hash").agg(pl.col("first").min())
    copies = chosen.join(firsts, on=["kept_hash", "filtered_hash"]).select(
        "position", copy=pl.col("first") < pl.col("position")
    )
    others = (
        chosen.join(copies.filter(~pl.col("copy")), on="position", how="semi")
        .join(firsts, on="kept_hash")
        .filter(pl.col("first") < pl.col("position"))
        .select("position", earlier=pl.col("first"))
    )
    return copies, others


def _verdicts(
    files: _Files,
    positions: np.ndarray,
    tokens: dap_filters.SubwordTokens,
    min_tokens: int,
    batch_size: int,
) -> pl.DataFrame:
    """DAP's token filters on the candidates at `positions` (ascending): `position`, `reason`
    (0: passed, else 1 + the filter's index in FILTERS), `logratio` (of the kept text, as
    `clean` computes it), `bitext` and `line`."""
    verdicts = []
    waiting: list[pl.DataFrame] = []

    def run(rows: pl.DataFrame) -> None:
        marks = Verdicts(len(rows), FILTERS)
        dap_filters.token_filters(rows["en"], rows["xx"], tokens, min_tokens, marks)
        en, xx = (dap_filters.single_spaced(rows[side]) for side in ("en", "xx"))
        logratio = ((xx.str.len_chars() + 1) / (en.str.len_chars() + 1)).log()
        verdicts.append(
            rows.select("position", "bitext", "line").with_columns(
                reason=pl.Series(marks.reason), logratio=logratio.cast(pl.Float32)
            )
        )

    # Filtered `batch_size` at a time, as `clean` does: the tokenizer's output for a batch is
    # most of the memory.
    for rows, bitext in files.texts(positions):
        waiting.append(rows.with_columns(bitext=pl.lit(bitext, dtype=pl.UInt16)))
        while sum(len(frame) for frame in waiting) >= batch_size:
            ready = pl.concat(waiting)
            waiting = [ready.slice(batch_size)]
            run(ready.head(batch_size))
    if waiting and len(rest := pl.concat(waiting)):
        run(rest)
    if not verdicts:  # a range without a candidate
        schema = {"position": pl.Int64, "bitext": pl.UInt16, "line": pl.Int64}
        return pl.DataFrame(schema={**schema, "reason": pl.Int8, "logratio": pl.Float32})
    return pl.concat(verdicts)


def _count(stats: dict, sources: list[_Source], cap: int, origins: list[str]) -> np.ndarray:
    """Complete `stats` from the examined candidates, counting those a walk in key order
    examines (up to each source's last kept pair); return the positions of the pairs kept
    (ascending)."""
    counted, chosen = [], []
    for source in sources:
        if not source.rows:
            stats["sources"][source.name]["beyond_cap"] = source.candidates
            continue
        rows = pl.concat(source.rows).sort("key", "position")
        kept = np.flatnonzero(rows["kept"].to_numpy())
        if len(kept) > cap:  # the walk stops at its cap-th kept pair
            rows = rows.head(int(kept[cap - 1]) + 1)
        counted.append(rows)
        chosen.append(rows.filter("kept")["position"].to_numpy())
        stats["sources"][source.name]["beyond_cap"] = source.candidates - len(rows)
    rows = pl.concat(counted).sort("position") if counted else None
    dropped = stats["dropped"]
    survivors = np.zeros(0, dtype=np.float32)
    if rows is not None:
        reasons = np.bincount(rows["reason"].to_numpy(), minlength=len(FILTERS) + 1)
        for code in np.flatnonzero(reasons[1:]) + 1:
            dropped[FILTERS[code - 1]] += int(reasons[code])
            hits = rows.filter(pl.col("reason") == code).head(clean_base.EXAMPLES)
            stats["examples"][FILTERS[code - 1]] = [
                f"{origins[bitext]}:{line}" for bitext, line in hits.select("bitext", "line").rows()
            ]
        passed = rows.filter(pl.col("reason") == 0)
        dropped["duplicate"] = len(passed) - int(passed["kept"].sum())
        survivors = passed["logratio"].to_numpy()
    median = np.median(survivors) if len(survivors) else None
    stats["median_length_ratio"] = None if median is None else round(math.exp(median), 4)
    stats["beyond_cap"] = sum(s["beyond_cap"] for s in stats["sources"].values())
    positions = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    stats["kept"] = len(positions)
    return positions


def _write(
    files: _Files, positions: np.ndarray, sources: list[str], out_path: Path
) -> dict[str, int]:
    """Write the candidates at `positions` (ascending), their text as kept, numbered from 0;
    `sources`: each bitext's source. Return the pairs written per source."""
    written = dict.fromkeys(sources, 0)
    with parquet_writer(out_path, clean_base.CORPUS_SCHEMA, clean_base.SENTENCES) as writer:
        for rows, bitext in files.texts(positions):
            first = sum(written.values())
            written[sources[bitext]] += len(rows)
            ids = pa.array(np.arange(first, first + len(rows), dtype=np.int64))
            text = [
                dap_filters.single_spaced(rows[side]).to_arrow().cast(pa.string())
                for side in clean_base.SENTENCES
            ]
            columns = [ids, *text, pa.repeat(sources[bitext], len(rows))]
            writer.write_table(pa.Table.from_arrays(columns, schema=clean_base.CORPUS_SCHEMA))
            kill_point("clean")
    return written
