"""DAP's filters (`corpus.clean.style: dap`): each on a pair that hits exactly it, the
characters DAP removes, and the vectorised filters against DAP's `filter_function` read pair
by pair (data/gen_sent_pair.py of github.com/ChillingDream/DAP) on random pairs.

The tokenizers are built here with the `tokenizers` library: a WordPiece one (mBERT's kind,
which DAP counted with) and a unigram one (XLM-R's kind, whose unknown pieces share one id).
"""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import yaml
from support import ROOT

from xlsent.corpus import dap_filters as dap
from xlsent.corpus import pair_filters
from xlsent.corpus.bitext import CorpusError, moses_files
from xlsent.corpus.clean import clean
from xlsent.corpus.clean_base import CHANGED, FILTERS, CleanConfig
from xlsent.corpus.lines import read_lines

# Whole words of the WordPiece vocabulary; a word of SUFFIXED + "s" is two pieces.
WORDS = [f"a{i}" for i in range(100)] + [f"b{i}" for i in range(100)] + ["Open", "the", "file"]
WORDS += ["now", "Die", "Datei", "jetzt", "öffnen", "N", "/", "A", "@", '"', "http", "HTTP"]
SUFFIXED = ["file", "Datei"]


def _wordpiece(directory: Path, truncation: int | None = None) -> Path:
    """An mBERT-like tokenizer: split at whitespace and punctuation, then WordPiece."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {token: i for i, token in enumerate(["[UNK]", "##s", *dict.fromkeys(WORDS)])}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if truncation is not None:
        tokenizer.enable_truncation(truncation)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def _unigram(directory: Path) -> Path:
    """An XLM-R-like tokenizer: unigram pieces, an unknown piece keeping its own text."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    pieces = [("<unk>", 0.0), *((word, -1.0) for word in dict.fromkeys(WORDS))]
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


@pytest.fixture(scope="module")
def wordpiece(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _wordpiece(tmp_path_factory.mktemp("wordpiece"))


@pytest.fixture(scope="module")
def unigram(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _unigram(tmp_path_factory.mktemp("unigram"))


def _lines(lines: list[str | bytes]) -> pa.StructArray:
    """The lines as read from a Moses file, with their facts."""
    data = b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
    return pa.concat_arrays(list(read_lines(io.BytesIO(data), facts=pair_filters.line_facts)))


def _filter(pairs: list[tuple], tokenizer: Path, min_tokens: int = 4) -> pair_filters.Filtered:
    en, xx = _lines([p[0] for p in pairs]), _lines([p[1] for p in pairs])
    return dap.filter_pairs(en, xx, dap.SubwordTokens(tokenizer), min_tokens)


def _reasons(pairs: list[tuple], tokenizer: Path) -> list[str | None]:
    return [dap.FILTERS[r - 1] if r else None for r in _filter(pairs, tokenizer).reason]


def _words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


# -- each filter, in DAP's order --------------------------------------------------------------
def test_each_filter_on_a_pair_that_hits_it(wordpiece: Path) -> None:
    cases = [
        (b"Open the \xff file now", "Die Datei jetzt öffnen", "invalid_utf8"),
        (" \t ", "Die Datei jetzt öffnen", "empty"),
        ("Open the file now @", "Die Datei jetzt öffnen", "at_or_http"),
        ("Open the file now", "Die Datei httpjetzt öffnen", "at_or_http"),  # a substring
        ("Open the file now HTTP", "Die Datei jetzt öffnen", None),  # case-sensitive
        ("N/A", "Die Datei jetzt öffnen", "not_available"),
        ("Open the files", "Die Datei jetzt öffnen", None),  # 3 words, 4 tokens: file ##s
        ("Open the file", "Die Datei jetzt öffnen", "too_short"),  # 3 tokens
        (_words("a", 32), _words("b", 4), None),  # the longer side at most 32: no ratio
        (_words("a", 33), _words("b", 16), "length_ratio"),  # 33 > max(2 × 16, 32)
        (_words("a", 40), _words("b", 20), None),  # 40 = 2 × 20
        (_words("a", 41), _words("b", 20), "length_ratio"),
        (_words("a", 64), _words("b", 64), None),
        (_words("a", 65), _words("b", 65), "too_long"),  # the shorter side over 64
        ("Open the file now", "Open the file now", "identical"),
        ("Open the file now", "Open the file now ", None),  # DAP compares the strings
        ("a1 a2 a3 b1 b2 b3", "b1 b2 b3 a7 a8 a9", "overlap"),  # half of each side shared
        ("a1 a2 a3 b1 b2", "b1 b2 a7 a8 a9 a10", None),  # a side of 5 tokens: never tested
        ("b1 b1 b1 a1 a2 a3", "b1 a4 a5 a6 a7 a8 a9", "overlap"),  # each occurrence counts
        ("a0 a1 a2 a3 a4 b1 b2", "b1 b2 b3 b4 b5 b6 b7", None),  # 2 of 7 and 2 of 7
    ]
    assert _reasons(cases, wordpiece) == [case[2] for case in cases]


def test_dap_removes_quotes_and_control_characters_and_keeps_the_rest(wordpiece: Path) -> None:
    pairs = [
        ('Open "the" file now', "Die Datei\x07 jetzt öffnen"),
        ("Open\tthe  file now ", "Die Datei\x9f jetzt öffnen"),  # a tab; C1 controls stay
        ("Open the file now", "Die Datei jetzt öffnen"),
    ]
    batch = _filter(pairs, wordpiece)
    assert batch.reason.tolist() == [0, 0, 0]
    # The text DAP tested, whitespace made single spaces for the word stage.
    assert batch.en.to_list() == ["Open the file now"] * 3
    assert batch.xx.to_list() == [
        "Die Datei jetzt öffnen",
        "Die Datei\x9f jetzt öffnen",
        "Die Datei jetzt öffnen",
    ]
    assert batch.changed.tolist() == [True, True, False]


def test_a_saved_truncation_does_not_cut_the_counts(tmp_path: Path) -> None:
    tokenizer = _wordpiece(tmp_path / "truncating", truncation=8)
    assert _reasons([(_words("a", 40), _words("b", 10))], tokenizer) == ["length_ratio"]


def test_unknown_pieces_are_compared_by_their_text(unigram: Path) -> None:
    """XLM-R's unigram model gives every unknown piece one id: DAP compared strings."""
    tokens = dap.SubwordTokens(unigram)
    lengths, ids = tokens.encode(["α a1 β", "α b1 γ α"])
    assert lengths.tolist() == [3, 4]
    alpha, beta, gamma = ids[0], ids[2], ids[5]
    assert len({alpha, beta, gamma}) == 3 and ids[6] == alpha
    pairs = [("α β γ δ ε ζ", "η θ ι κ λ μ"), ("α β γ δ ε ζ", "α β γ a1 a2 a3")]
    assert _reasons(pairs, unigram) == [None, "overlap"]


def test_a_directory_without_tokenizer_json_is_named(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=f"{tmp_path}/tokenizer.json does not exist"):
        dap.SubwordTokens(tmp_path)


# -- against DAP's filter_function, pair by pair ---------------------------------------------
def _dap_keeps(en: str | bytes, xx: str | bytes, tokenizer) -> bool:
    """DAP's map_function and filter_function on one pair (line1: the foreign side), with
    the two tests it lacks (bytes that are not UTF-8, a side of whitespace only)."""
    try:
        en, xx = (side.decode() if isinstance(side, bytes) else side for side in (en, xx))
    except UnicodeDecodeError:
        return False
    line1, line2 = (
        re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", "", side).replace("\t", " ").replace('"', "")
        for side in (xx, en)
    )
    if not line1.strip() or not line2.strip():
        return False
    if "@" in line1 or "@" in line2 or "http" in line1 or "http" in line2:
        return False
    if line1 == "N/A" or line2 == "N/A":
        return False
    group1, group2 = tokenizer.tokenize(line1), tokenizer.tokenize(line2)
    l1, l2 = len(group1), len(group2)
    if l1 <= 3 or l2 <= 3:
        return False
    if max(l1, l2) > max(min(l1, l2) * 2, 32) or min(l1, l2) > 64:
        return False
    if line1 == line2:
        return False
    if l1 <= 5 or l2 <= 5:
        return True
    if sum(token in group2 for token in group1) * 2 >= l1:
        return False
    return sum(token in group1 for token in group2) * 2 < l2


FRAGMENTS = [*WORDS[:12], *WORDS[100:106], *WORDS[200:211], "HTTP", "files", "Dateis"]
FRAGMENTS += ["α", "β", "αβ", "x"]
# Inserted anywhere in a side, up to twice: characters DAP removes or keeps, and its tests'.
NOISE = ['"', "\t", "\x07", "\x1f", "\x7f", "\x85", "  ", " ", "@", "http"]


def _random_side(rng: random.Random, length: int) -> str:
    words = [rng.choice(FRAGMENTS) for _ in range(length)]
    text = " ".join(words)
    for _ in range(rng.randrange(3)):
        at = rng.randrange(len(text) + 1)
        text = text[:at] + rng.choice(NOISE) + text[at:]
    return text


def _random_pairs(seed: int, n: int) -> list[tuple[str | bytes, str | bytes]]:
    rng = random.Random(seed)
    pairs: list[tuple[str | bytes, str | bytes]] = []
    for _ in range(n):
        en = _random_side(rng, rng.choice([0, 1, 3, 4, 5, 6, 8, 12, 20, 33, 40, 70]))
        roll = rng.random()
        if roll < 0.1:
            xx = en  # identical
        elif roll < 0.4:  # shares some of the English words
            words = en.split(" ")
            xx = " ".join([*words[: rng.randrange(len(words) + 1)], _random_side(rng, 4)])
        else:
            xx = _random_side(rng, rng.choice([1, 4, 6, 10, 16, 17, 30, 66, 80]))
        if rng.random() < 0.02:
            xx = rng.choice(["N/A", "", b"\xff\xfe bad", "   "])
        pairs.append((en, xx))
    return pairs


@pytest.mark.parametrize("kind", ["wordpiece", "unigram"])
def test_the_filters_keep_what_dap_keeps(kind: str, request: pytest.FixtureRequest) -> None:
    from transformers import PreTrainedTokenizerFast

    directory = request.getfixturevalue(kind)
    # What DAP called: a transformers fast tokenizer's tokenize().
    reference = PreTrainedTokenizerFast(tokenizer_file=str(directory / "tokenizer.json"))
    pairs = _random_pairs(seed=len(kind), n=3000)
    expected = [_dap_keeps(en, xx, reference) for en, xx in pairs]
    kept = (_filter(pairs, directory).reason == 0).tolist()
    assert kept == expected
    assert 0.1 < np.mean(expected) < 0.9  # the pairs exercise both outcomes


def _moses_corpus(tmp_path: Path, pairs: list[tuple[str, str]]) -> list[Path]:
    """`pairs` as a local Moses corpus `c` (de-en) in tmp_path/raw: its en and de files."""
    raw = tmp_path / "raw"
    raw.mkdir()
    paths = [raw / f"c.de-en.{side}" for side in ("en", "de")]
    for path, side in zip(paths, zip(*pairs, strict=True), strict=True):
        path.write_text("".join(line + "\n" for line in side))
    return paths


# -- the whole cleaning with style dap --------------------------------------------------------
def test_clean_with_style_dap_counts_every_filter(tmp_path: Path, wordpiece: Path) -> None:
    pairs = [
        ("Open the file now", "Die Datei jetzt öffnen"),
        ('Open the "file" now', "Die Datei jetzt öffnen"),  # a repeat once DAP's quotes go
        ("Open the file", "Die Datei jetzt öffnen"),
        ("N/A", "Die Datei jetzt öffnen"),
        (_words("a", 60), "Die Datei jetzt öffnen"),  # a character ratio words would keep
        ("Open the files now", "Die Datei jetzt öffnen"),
    ]
    paths = _moses_corpus(tmp_path, pairs)
    out = tmp_path / "clean.parquet"
    cfg = CleanConfig(style="dap", tokenizer=wordpiece)
    stats = clean([moses_files("c", *paths)], "de", out, cfg)
    assert list(stats["dropped"]) == list(FILTERS["dap"])
    assert {k: v for k, v in stats["dropped"].items() if v} == {
        "too_short": 1,
        "not_available": 1,
        "length_ratio": 1,
        "duplicate": 1,
    }
    assert stats[CHANGED["dap"]] == 1 and "control_chars_replaced" not in stats
    assert stats["kept"] == 2 == stats["sources"]["c"]["kept"]
    table = pl.read_parquet(out)
    assert table["en"].to_list() == ["Open the file now", "Open the files now"]


def test_the_schema_offers_exactly_the_styles() -> None:
    schema = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    clean_keys = schema["properties"]["corpus"]["properties"]["clean"]["properties"]
    assert clean_keys["style"]["enum"] == list(FILTERS)


def test_the_clean_command_checks_its_settings(tmp_path: Path) -> None:
    from xlsent.cli import build_parser
    from xlsent.commands import UsageError

    argv = ["clean", "--lang", "de", "--source", "local", "--local-dir", str(tmp_path)]
    argv += ["--out", "c.parquet", "--stats", "c.json"]
    for settings, message in (
        ({"style": "dap", "min_tokens": 4}, "--tokenizer-dir is required with style dap"),
        (
            {"style": "bogus", "min_tokens": 4},
            "corpus.clean style must be one of words, dap, not bogus",
        ),
        (
            {"style": "dap", "min_tokens": 4, "tokenizer": "mbert"},
            "corpus.clean setting 'tokenizer' is a model's name: pass the directory",
        ),
        (
            {"style": "words", "min_tokens": 4, "max_lenght_ratio": 3.0},
            "unknown corpus.clean setting 'max_lenght_ratio' \\(did you mean 'max_length_ratio'",
        ),
    ):
        args = build_parser().parse_args([*argv, "--settings", json.dumps(settings)])
        with pytest.raises(UsageError, match=message):
            args.handler(args)
    # Style words without max_length_ratio takes CleanConfig's default, the schema's
    # (test_settings): past the settings, to the empty directory.
    args = build_parser().parse_args([*argv, "--settings", '{"style": "words", "min_tokens": 4}'])
    with pytest.raises(CorpusError, match="has no corpus for de"):
        args.handler(args)


def test_the_clean_command_cleans_as_the_style_dap_config(tmp_path: Path, wordpiece: Path) -> None:
    """The rule's settings with style dap (neither tokenizer nor max_length_ratio) and
    --tokenizer-dir clean as CleanConfig(style="dap", tokenizer=DIR) does."""
    from xlsent.cli import main

    pairs = [
        ("Open the file now", "Die Datei jetzt öffnen"),
        ("Open the file", "Die Datei jetzt öffnen"),
        ("N/A", "Die Datei jetzt öffnen"),
        ("Open the files now", "Die Datei jetzt öffnen"),
    ]
    paths = _moses_corpus(tmp_path, pairs)
    expected = tmp_path / "api.parquet"
    clean([moses_files("c", *paths)], "de", expected, CleanConfig(style="dap", tokenizer=wordpiece))
    out = tmp_path / "cli.parquet"
    argv = ["clean", "--lang", "de", "--source", "local", "--local-dir", str(paths[0].parent)]
    argv += ["--settings", json.dumps({"min_tokens": 4, "style": "dap"})]
    argv += ["--tokenizer-dir", str(wordpiece)]
    main([*argv, "--out", str(out), "--stats", str(tmp_path / "stats.json")])
    assert out.read_bytes() == expected.read_bytes()
    assert pl.read_parquet(out)["en"].to_list() == ["Open the file now", "Open the files now"]
