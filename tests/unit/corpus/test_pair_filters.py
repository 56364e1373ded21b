"""The shortcuts of the vectorised per-pair filters are exact: checked on every code point.

`xlsent.corpus.pair_filters` settles most lines from facts about their bytes (`line_facts`)
and runs the filters as written down only on the others. These tests check the facts about
Unicode (as polars' kernels implement it) that make each shortcut exact, over all 1,112,064
code points, the facts against the text they stand for, and the filters on hand-made cases.
"""

from __future__ import annotations

import io
import random
import re

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from xlsent.corpus import pair_filters as pf
from xlsent.corpus.lines import read_lines

CODE_POINTS = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]


@pytest.fixture(scope="module")
def chars() -> pl.Series:
    return pl.Series(CODE_POINTS)


def _lines(lines: list[str | bytes]) -> pa.StructArray:
    """The lines as read from a Moses file, with their facts."""
    data = b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
    blocks = read_lines(io.BytesIO(data), facts=pf.line_facts)
    return pa.concat_arrays(list(blocks))


def _facts(lines: list[str | bytes]) -> dict[str, list]:
    batch = _lines(lines)
    names = ("utf8", "plain", "urlish", "spaces", "first")
    return {name: batch.field(name).to_numpy().tolist() for name in names}


def _full_normalise(text: pl.Series) -> pl.Series:
    """Normalising as written down: every text rewritten."""
    replaced = text.str.replace_all(pf.CONTROL, " ").str.replace_all(r"\s+", " ")
    return replaced.str.strip_chars()


def test_a_plain_line_is_its_normalised_text(chars: pl.Series) -> None:
    # Every code point inside a word (but the line end).
    inside = [c for c in CODE_POINTS if c != "\n"]
    texts = [f"ab{c}cd" for c in inside]
    plain = np.array(_facts(texts)["plain"], dtype=bool)
    changes = (_full_normalise(pl.Series(texts)) != pl.Series(texts)).to_numpy()
    assert not (plain & changes).any()
    # Not plain: exactly the characters that normalising changes.
    assert (~plain == changes).all()
    # At the ends, where stripping removes whitespace: every character that normalising
    # changes, and a sample of the others; then spaces.
    changing = [c for c, change in zip(inside, changes, strict=True) if change]
    ends = [c for c in changing + inside[::101] if c != "\r"]  # \r ends a line there
    texts = [f"{c}ab" for c in ends] + [f"ab{c}" for c in ends]
    texts += ["a  b", " a b", "a b ", "a b", "", "a\u200cb", "a\u2026 \u00ab\u00bb"]
    plain = np.array(_facts(texts)["plain"], dtype=bool)
    changes = (_full_normalise(pl.Series(texts)) != pl.Series(texts)).to_numpy()
    assert (~plain == changes).all()
    assert plain[-7:].tolist() == [False, False, False, True, True, True, True]


def test_lowercasing_turns_only_the_first_letter_class_into_letters(chars: pl.Series) -> None:
    """What makes `identical`'s first-letter test exact: the first letter of letters(text)
    is the lowercase of the first character of the raw text in LETTER_WHEN_LOWERCASED."""
    lower = chars.str.to_lowercase()
    first = chars.str.contains(f"^(?:{pf.LETTER_WHEN_LOWERCASED})$")
    letters = pf.letters(chars)
    # (a) Any other character lowercases to characters that letters() removes.
    assert (letters.filter(~first) == "").all()
    # (b) One of the class lowercases to a text that starts with a letter.
    assert (letters.filter(first).str.head(1) == lower.filter(first).str.head(1)).all()
    # (c) No other character is cased, so a capital sigma that is the first of the class is
    # never word-final: it lowercases to σ in the text as on its own.
    assert ((chars.filter(~first) + "Σ").str.to_lowercase().str.ends_with("σ")).all()
    # (d) A character of NON_ASCII_LETTER has letters beyond ASCII; an ASCII one has not.
    other = chars.str.contains(f"^(?:{pf.NON_ASCII_LETTER})$")
    assert (letters.filter(other).str.contains(r"[^\x00-\x7F]")).all()
    assert not letters.head(128).str.contains(r"[^\x00-\x7F]").any()
    # The class is the letters, and two capitals that only polars' lowercasing knows.
    assert chars.filter(first & chars.str.contains(f"^{pf.NOT_LETTER}$")).to_list() == [
        "\ua7d2",
        "\ua7d4",
    ]


def test_the_first_letter_fact_of_every_character_of_the_bmp() -> None:
    bmp = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000 and chr(c) not in "\r\n"]
    texts = pl.Series([c + "x" for c in bmp])
    letter = texts.str.contains(f"^(?:{pf.LETTER_WHEN_LOWERCASED})")
    expected = np.where(
        letter.to_numpy(),
        [ord(c) for c in pf._first_letter(texts).fill_null("\0").to_list()],
        -1,
    )
    assert _facts(texts.to_list())["first"] == expected.tolist()
    # Beyond the BMP (here 𝐀, a mathematical capital) the first letter is left to polars.
    assert _facts(["𝐀x", "x𝐀"])["first"] == [-1, ord("x")]


def test_only_w_and_W_fold_to_w_and_the_other_url_needs_fold_to_themselves(
    chars: pl.Series,
) -> None:
    """What makes the URL prefilter exact: under (?i), `www.` matches `www.` in ASCII cases
    only, and `@`, `:` and `/` only themselves."""
    for char, cases in [("w", ["W", "w"]), (".", ["."]), ("@", ["@"]), (":", [":"]), ("/", ["/"])]:
        assert chars.filter(chars.str.contains(f"^(?i){re.escape(char)}$")).to_list() == cases


def test_facts_of_random_lines_agree_with_their_text() -> None:
    rng = random.Random(0)
    alphabet = ["a", "Z", " ", "  ", "\t", "\x00", "\u00a0", "\u2003", "\ufeff", "@", ":", "/"]
    alphabet += ["w", "W", ".", "ә", "Ä", "中", "İ", "\u200c", "1", "-", "…"]
    texts = ["".join(rng.choices(alphabet, k=rng.randrange(12))) for _ in range(5000)]
    facts = _facts(texts)
    series = pl.Series(texts)
    assert facts["spaces"] == [t.count(" ") for t in texts]
    assert all(facts["utf8"])
    url = series.str.contains(pf.URL_OR_EMAIL).to_list()
    url_after = _full_normalise(series).str.contains(pf.URL_OR_EMAIL).to_list()
    assert all(u for u, m, n in zip(facts["urlish"], url, url_after, strict=True) if m or n)
    unchanged = (_full_normalise(series) == series).to_list()
    assert all(u for u, p in zip(unchanged, facts["plain"], strict=True) if p)


def test_invalid_utf8_is_found_per_line_even_where_two_lines_would_make_a_valid_sequence() -> None:
    # "é" is C3 A9: cut between two lines, neither line is valid, though the bytes are.
    lines = [b"caf\xc3", b"\xa9 au lait", b"fine", b"\xe2\x82", b"\xacuro", b"ok \xff", b""]
    assert _facts(lines)["utf8"] == [False, False, True, False, False, False, True]
    assert _facts(["all", "valid ǵ"])["utf8"] == [True, True]


def _reasons(pairs: list[tuple[str | bytes, str | bytes]], unspaced: bool = False) -> list:
    en, xx = _lines([a for a, _ in pairs]), _lines([b for _, b in pairs])
    batch = pf.filter_pairs(en, xx, unspaced=unspaced, min_tokens=4)
    return [pf.FILTERS[r - 1] if r else None for r in batch.reason]


def test_filters_on_a_batch_in_their_order() -> None:
    pairs: list[tuple[str | bytes, str | bytes]] = [
        (b"\xff bad", b""),  # invalid on one side, empty on the other: invalid first
        ("", "leer"),
        ("See www.example.org please now", "x y z w"),
        ("too short", "x y z w"),
        ("Open the file now", "open the file, now!"),
        ("Open\x85 the  file now", "Die Datei jetzt öffnen"),
    ]
    assert _reasons(pairs) == [
        "invalid_utf8",
        "empty",
        "url_or_email",
        "too_short",
        "identical",
        None,
    ]
    en, xx = _lines([a for a, _ in pairs]), _lines([b for _, b in pairs])
    batch = pf.filter_pairs(en, xx, unspaced=False, min_tokens=4)
    assert batch.en[5] == "Open the file now"
    assert batch.en[0] is None
    assert np.flatnonzero(batch.changed).tolist() == [5]


def test_identical_compares_letters_when_the_first_letters_agree() -> None:
    pairs = [
        ("Open the File now", "OPEN the file, now!", "identical"),
        ("Page 1 of 10 now", "Page 2, of 20 now", "identical"),
        ("ΣΟΦΙΑ is a name here", "σοφια is a name here", "identical"),
        ("1234 5678 90 12", "99 99 99 99", "identical"),  # no letters on either side
        ("İstanbul is a city", "i\u0307stanbul is a city", "identical"),  # İ: i and a dot
        ("  Open the File now", "open the file now", "identical"),  # not plain: by polars
        ("Kelvin is here now", "\u212aelvin is here now", "identical"),  # K: the Kelvin sign
        ("GNOME Klotski sliding blocks", "GNOME Klotski блокты жұмбақтар", None),  # Cyrillic
        ("Öffnen Sie die Datei", "öffnen Sie die Datei jetzt", None),
        ("x y z w", "y y z w", None),
        ("x y z w", "12 13 14 15", None),
    ]
    assert _reasons([(a, b) for a, b, _ in pairs]) == [fate for _, _, fate in pairs]


def test_too_short_counts_words_or_for_unspaced_scripts_characters() -> None:
    pairs = [
        ("one two three four", "一二三"),
        ("one two three four", "一二 三四"),  # four characters beside a space
        ("one two three", "一二三四"),
        ("one  two three", "一二三四五"),  # three words once normalised
    ]
    assert _reasons(pairs, unspaced=True) == ["too_short", None, "too_short", "too_short"]
    assert _reasons(pairs) == ["too_short"] * 4  # counted as words, a side is one or two


def test_urls_and_addresses_are_found_in_any_case() -> None:
    pairs = [
        ("See WWW.Example.org for it", "x y z w"),
        ("a b c d", "go to HTTPS://example.org now"),
        ("mail me at me@example.org", "x y z w"),
        ("name@host is not an address", "x y z w"),
        ("www\x00.example.org is not a link", "x y z w"),  # normalised: "www .example.org"
    ]
    assert _reasons(pairs) == ["url_or_email"] * 3 + [None, None]


def test_facts_of_ascii_lines() -> None:
    # An ASCII block skips the tests for bytes that begin longer characters, not DEL's.
    facts = _facts(["a\x7fb c", "a\x00b", "see me@x.org", "a b c d", "Open it"])
    assert facts["plain"] == [False, False, True, True, True]
    assert facts["urlish"] == [False, False, True, False, False]
    assert facts["spaces"] == [1, 0, 1, 3, 1]
    assert facts["first"] == [ord("a"), ord("a"), ord("s"), ord("a"), ord("o")]
