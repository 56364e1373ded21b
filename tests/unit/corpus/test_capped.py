"""DAP's cleaning with the per-source cap drawn before its token filters (`xlsent.corpus.capped`)
against cleaning every pair (`xlsent.corpus.clean`) followed by the sample's cap.

The pairs are the demo's real German ones (CLDR names and Django's catalog: two sources),
with a third source made of copies of them: repeats of another source's pairs and of its own,
and copies whose whitespace differs, where one copy fails DAP's `identical` (a string
comparison) and the other passes. The tokenizer is a WordPiece one (mBERT's kind, which DAP
counted with) trained on the same text.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from xlsent.corpus.clean import clean
from xlsent.corpus.clean_base import CleanConfig
from xlsent.corpus.readers import demo, local

LANG = "de"
# A pair DAP's `identical` drops (the sides are equal strings), and its whitespace variant,
# whose sides differ, so that it passes; its kept text is the dropped pair's. Four tokens: too
# few for the overlap test.
SAME = ("Delete the selected objects", "Delete the selected objects")
SPACED = ("Delete the  selected objects", "Delete the selected objects")


def _write(directory: Path, corpus: str, pairs: list[tuple[str | bytes, str | bytes]]) -> None:
    """`pairs` as Moses files (bytes written as they are)."""
    for index, side in enumerate(("en", LANG)):
        path = directory / f"{corpus}.{local.pair_name(LANG)}.{side}"
        lines = (p[index] if isinstance(p[index], bytes) else p[index].encode() for p in pairs)
        path.write_bytes(b"".join(line + b"\n" for line in lines))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four sources, read in this order: `a-first`, a pair that `identical` drops and one not
    UTF-8 on a side; the demo's `cldr` and `django` pairs; then `copies`: 200 of django's
    pairs again, 100 more of them three times each, the whitespace variant of a-first's pair
    (twice: its earlier copy was dropped, so the first is kept), and 50 django pairs with a
    doubled space (their earlier copies have another text, and passed)."""
    directory = tmp_path_factory.mktemp("capped")
    by_corpus: dict[str, list[tuple[str, str]]] = {}
    for name, en, xx in demo.demo_pairs(LANG):
        by_corpus.setdefault(name, []).append((en, xx))
    django = by_corpus["django"]
    assert len(django) > 450 and len(by_corpus["cldr"]) > 1000
    keep = ("Keep this pair of words", "Dieses Wortpaar behalten")
    _write(directory, "a-first", [SAME, (b"Open the \xff file", "Die Datei"), keep])
    _write(directory, "cldr", by_corpus["cldr"])
    _write(directory, "django", django)
    spaced = [(en.replace(" ", "  ", 1), xx) for en, xx in django[400:450]]
    copies = django[:200] + django[300:400] * 3 + [SPACED, SPACED] + spaced
    _write(directory, "copies", copies)
    return directory


@pytest.fixture(scope="module")
def tokenizer(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WordPiece tokenizer (mBERT's kind) trained on the corpus."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    text = [
        line
        for path in sorted(corpus.iterdir())
        for line in path.read_text(errors="replace").splitlines()
    ]
    trainer = trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[UNK]"])
    tokenizer.train_from_iterator(text, trainer)
    directory = tmp_path_factory.mktemp("wordpiece")
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def _clean(corpus: Path, out: Path, cfg: CleanConfig) -> tuple[dict, pl.DataFrame]:
    stats = clean(local.discover(corpus, LANG), LANG, out, cfg)
    return stats, pl.read_parquet(out)


def _without_cap(stats: dict) -> dict:
    """The statistics as cleaning every pair gives them (no `beyond_cap`), examples aside:
    those are listed in another order."""
    stats = {k: v for k, v in stats.items() if k not in ("beyond_cap", "per_source_cap")}
    stats["sources"] = {
        name: {k: v for k, v in source.items() if k != "beyond_cap"}
        for name, source in stats["sources"].items()
    }
    stats["examples"] = {k: sorted(v) for k, v in stats["examples"].items()}
    return stats


@pytest.fixture(scope="module")
def everything(corpus: Path, tokenizer: Path, tmp_path_factory: pytest.TempPathFactory):
    """Every pair through DAP's filters (no cap): the statistics and the rows."""
    out = tmp_path_factory.mktemp("everything") / "clean.parquet"
    stats = _without_cap(_clean(corpus, out, CleanConfig(style="dap", tokenizer=tokenizer))[0])
    return stats, pl.read_parquet(out)


def test_a_cap_no_source_reaches_keeps_the_rows_and_counts_of_cleaning_every_pair(
    corpus: Path, tokenizer: Path, everything, tmp_path: Path
) -> None:
    full_stats, full_rows = everything
    assert full_stats["dropped"]["duplicate"] >= 150  # the copies are there to be found
    assert full_stats["dropped"]["identical"] >= 1 and full_stats["dropped"]["invalid_utf8"] == 1
    kept = set(full_rows.select("en", "xx", "source").iter_rows())
    # The variant is kept in `copies`, as single-spaced text: a-first's pair itself.
    assert (*SAME, "copies") in kept and (*SAME, "a-first") not in kept
    cap = max(source["kept"] for source in full_stats["sources"].values())
    cfg = CleanConfig(style="dap", tokenizer=tokenizer, per_source_cap=cap)
    stats, rows = _clean(corpus, tmp_path / "clean.parquet", cfg)
    assert rows.equals(full_rows)
    assert stats["beyond_cap"] == 0 and stats["per_source_cap"] == cap
    assert _without_cap(stats) == full_stats


def test_each_source_keeps_its_cap_of_the_pairs_cleaning_keeps(
    corpus: Path, tokenizer: Path, everything, tmp_path: Path
) -> None:
    full_stats, full_rows = everything
    cfg = CleanConfig(style="dap", tokenizer=tokenizer, per_source_cap=150)
    stats, rows = _clean(corpus, tmp_path / "a.parquet", cfg)
    for name, source in stats["sources"].items():
        ours = set(rows.filter(pl.col("source") == name).select("en", "xx").iter_rows())
        theirs = set(full_rows.filter(pl.col("source") == name).select("en", "xx").iter_rows())
        assert ours <= theirs, name
        assert source["kept"] == len(ours) == min(150, full_stats["sources"][name]["kept"])
        assert source["read"] == full_stats["sources"][name]["read"]
    # Every pair is counted once: by a filter, as kept, or as beyond the cap (never tokenized).
    assert stats["read"] == sum(stats["dropped"].values()) + stats["kept"] + stats["beyond_cap"]
    assert stats["beyond_cap"] == sum(s["beyond_cap"] for s in stats["sources"].values()) > 1000
    assert rows["id"].to_list() == list(range(len(rows)))
    # The filters on the text alone saw every pair, as when every pair is cleaned.
    for name in ("invalid_utf8", "empty", "at_or_http", "not_available"):
        assert stats["dropped"][name] == full_stats["dropped"][name]
    assert stats["characters_removed"] == full_stats["characters_removed"]
    # Again, read and filtered in batches of 300 pairs: the keys are drawn per pair, whatever
    # the batches.
    again = _clean(corpus, tmp_path / "b.parquet", dataclasses.replace(cfg, batch_size=300))
    assert again[0] == stats and again[1].equals(rows)
    other = _clean(corpus, tmp_path / "c.parquet", dataclasses.replace(cfg, seed=1))[1]
    assert len(other) == len(rows) and not other.equals(rows)


def test_a_pair_with_many_copies_is_drawn_as_often_as_any_other(
    tokenizer: Path, everything, tmp_path: Path
) -> None:
    """One source of 40 distinct pairs that survive, one of them repeated 30 times, cap 10:
    each pair is drawn with probability 1/4, as a draw among the kept pairs gives (a walk over
    the raw lines in random order would meet the repeated pair first nearly every time)."""
    django = everything[1].filter(pl.col("source") == "django")
    pairs = list(django.select("en", "xx").head(40).iter_rows())
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _write(corpus, "one", pairs + [pairs[0]] * 29)
    cfg = CleanConfig(style="dap", tokenizer=tokenizer, per_source_cap=10)
    full = _clean(corpus, tmp_path / "full.parquet", dataclasses.replace(cfg, per_source_cap=None))
    assert len(full[1]) == 40  # all 40 survive DAP's filters; the 29 repeats do not count
    seeds = 60
    drawn = 0
    for seed in range(seeds):
        rows = _clean(corpus, tmp_path / "s.parquet", dataclasses.replace(cfg, seed=seed))[1]
        assert len(rows) == 10
        drawn += pairs[0] in set(rows.select("en", "xx").iter_rows())
    # Binomial(60, 1/4): mean 15, standard deviation 3.4; a walk over the raw lines: about 60.
    assert 5 <= drawn <= 25
