"""The per-pair filters of cleaning (1–5 in `xlsent.corpus.clean`), vectorised over a batch.

A regular expression scans text at a few ns a byte, a numpy comparison at a fifth of a ns;
so what every line needs is computed from its bytes with numpy while its block is read
(`line_facts`), and the polars string kernels of the filters as written down run only on
the lines that these facts cannot settle. Each fact is exact, never a heuristic:

- Normalising (control characters to spaces, whitespace runs to one space, ends stripped)
  changes a text exactly when it holds a control character, a BOM or a whitespace
  character other than the space (UNPLAIN: their UTF-8 starts with a byte below 0x20,
  0x7F, 0xC2, 0xE1, 0xE2, 0xE3 or 0xEF, and numpy finds those bytes and decodes what they
  start), two spaces in a row or a space at either end. A line with none of these is
  `plain`: it is its normalised text, words separated by single spaces.
- A plain line has at least k tokens exactly when it has k − 1 spaces, and its non-space
  characters are its length in characters minus its spaces.
- The URL or e-mail pattern can only match a text holding `@`, `://` or `www.` in some
  ASCII case (under `(?i)`, only `W` and `w` fold to `w`): it runs on those lines only.
- `identical` compares the sides' letters (lowercased, without non-word characters, digits
  and underscores). The first of them is the lowercase of the text's first character that
  is (or lowercases to) a letter, because lowercasing turns no other character into a
  letter and starts the lowercase of each such character with a letter; so when both
  sides start with a letter and their lowercase differ, they are not identical. Nor are
  they when one side is ASCII and the other has a letter beyond ASCII (NON_ASCII_LETTER),
  whose letters are not all ASCII. Only the other pairs are compared in full.

tests/unit/corpus/test_pair_filters.py checks each of these on every code point.
"""

from __future__ import annotations

import codecs
import functools
import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from xlsent.corpus.lines import Block

FILTERS = ("invalid_utf8", "empty", "url_or_email", "too_short", "identical")

# Control characters (C0, DEL, C1) and the byte-order mark; not format characters in
# general: ZWJ/ZWNJ carry meaning in Persian and Indic scripts.
CONTROL = r"[\p{Cc}\x{FEFF}]"
URL_OR_EMAIL = r"(?i)(?:\b(?:https?|ftp)://|\bwww\.)\S+|[\w.+-]+@[\w-]+\.[\w.-]*\w"
NOT_LETTER = r"[\W\d_]"  # what `identical` ignores: non-word characters, digits, underscores
# Two capitals (U+A7D2, U+A7D4) that polars' lowercasing knows and its regex tables do not
# yet: not word characters themselves, their lowercase forms are.
LETTER_WHEN_LOWERCASED = r"[^\W\d_]|[\x{A7D2}\x{A7D4}]"
# Characters beyond ASCII whose letters are not all ASCII (the Kelvin sign lowercases to k).
NON_ASCII_LETTER = r"[[^\W\d_\x00-\x7F]--\x{212A}]|[\x{A7D2}\x{A7D4}]"
# What normalising changes in a text: a control character, a BOM, a whitespace character
# other than the space (all in the Basic Multilingual Plane).
UNPLAIN = r"[[\p{Cc}\x{FEFF}\s]--\x20]"
_GROUP = 1 << 20  # bytes of lines whose facts are computed together


def line_facts(block: Block) -> dict[str, np.ndarray]:
    """What the filters need to know of each line of a block, from its bytes:

    `utf8` (valid UTF-8), `plain` (normalising leaves it as it is: no UNPLAIN character, no
    two spaces in a row, no space at either end), `urlish` (holds `@`, `://` or `www.` in
    some ASCII case), `spaces` (how many), `first` (the code point of the lowercase of its
    first character if that is a letter in the Basic Multilingual Plane, else -1).

    Computed for groups of lines of about `_GROUP` bytes, whose arrays stay in cache.
    """
    starts, lengths = block.starts, block.lengths
    end = int(starts[-1] + lengths[-1]) if len(starts) else 0
    cuts = [0, *np.searchsorted(starts, np.arange(_GROUP, end, _GROUP)), len(starts)]
    groups = [
        _facts(block.data, starts[a:b], lengths[a:b], _tables())
        for a, b in itertools.pairwise(cuts)
        if b > a
    ]
    if not groups:
        return _facts(block.data, starts, lengths, _tables())
    return {name: np.concatenate([g[name] for g in groups]) for name in groups[0]}


def _facts(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, tables: _Tables
) -> dict[str, np.ndarray]:
    """`line_facts` of the lines `data[starts[i] : starts[i] + lengths[i]]`."""
    ends = starts + lengths
    begin, end = (int(starts[0]), int(ends[-1])) if len(starts) else (0, 0)
    span = data[begin:end]
    ascii = len(span) == 0 or int(span.max()) < 0x80

    # The bytes that can begin an UNPLAIN character or a URL's `@`, `://` or `www.`, found in
    # one pass; then the characters they begin (the block is padded: reading on is safe).
    spots = _spots(span, tables, ascii) + begin
    first, second, third = data[spots], data[spots + 1], data[spots + 2]
    code = _decode(*(byte.astype(np.int32) for byte in (first, second, third)))
    # A \n, and a \r before it, end a line: they are in no line.
    ending = (first == ord("\n")) | ((first == ord("\r")) & (second == ord("\n")))
    unplain = tables.unplain[code] & ~ending
    url = (first == ord("@")) | ((first == ord(":")) & (second == ord("/")) & (third == ord("/")))
    dots = np.flatnonzero((first == ord(".")) & (spots >= 3))
    www = (data[spots[dots, None] + np.arange(-3, 0)] | 0x20) == ord("w")
    url[dots[www.all(axis=1)]] = True

    # Spaces from each line's start to the next one's: no space lies between a line's end
    # and the next start. One byte past the span (a line end, or the block's zero padding)
    # keeps an empty last line's start inside the array that reduceat sums.
    space = data[begin : end + 1] == ord(" ")
    local = starts - begin
    spaces = np.add.reduceat(space.view(np.uint8), local, dtype=np.int32)
    doubled = np.flatnonzero(space[1:] & space[:-1]) + 1  # the second of two, from `begin`
    edge = (lengths > 0) & (
        (data[starts] == ord(" ")) | (data[np.maximum(ends - 1, 0)] == ord(" "))
    )
    plain = ~edge
    plain[_line(starts, spots[unplain])] = False
    plain[_line(local, doubled)] = False
    urlish = np.zeros(len(starts), dtype=bool)
    urlish[_line(starts, spots[url])] = True
    return {
        "utf8": np.ones(len(starts), dtype=bool) if ascii else _utf8(data, span, starts, begin),
        "plain": plain,
        "urlish": urlish,
        "spaces": spaces,
        "first": _first_letters(data, starts, lengths, tables.first_letter),
    }


def _line(starts: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The lines the byte positions are in."""
    return np.searchsorted(starts, positions, side="right") - 1


def _spots(data: np.ndarray, tables: _Tables, ascii: bool) -> np.ndarray:
    """Positions of bytes below 0x20 (line ends among them), the first bytes of the UTF-8 of
    the other UNPLAIN characters (of DEL only, in ASCII data), `@`, `:` and `.`."""
    spot = data < 0x20
    for low, high in (r for r in tables.lead_ranges if not ascii or r[0] < 0x80):
        spot |= (data - np.uint8(low)) <= (high - low) if high > low else data == low
    for value in (ord("@"), ord(":"), ord(".")):
        spot |= data == value
    return np.flatnonzero(spot)


def _decode(first: np.ndarray, second: np.ndarray, third: np.ndarray) -> np.ndarray:
    """The code points of characters of 1 to 3 bytes of UTF-8, from their bytes."""
    two = ((first & 0x1F) << 6) | (second & 0x3F)
    three = ((first & 0x0F) << 12) | ((second & 0x3F) << 6) | (third & 0x3F)
    return np.where(first < 0x80, first, np.where(first < 0xE0, two, three)) & 0xFFFF


@dataclass(frozen=True)
class _Tables:
    unplain: np.ndarray  # bool per BMP code point: an UNPLAIN character
    lead_ranges: tuple[tuple[int, int], ...]  # the first bytes (0x20 and up) of their UTF-8
    first_letter: np.ndarray  # per BMP code point: see `_first_letters`


@functools.cache
def _tables() -> _Tables:
    """Per code point of the Basic Multilingual Plane, from the polars kernels the filters use:
    whether it is UNPLAIN, and the code point its lowercase starts with if it is a letter
    (LETTER_WHEN_LOWERCASED), else -1."""
    chars = pl.Series([chr(c) if not 0xD800 <= c < 0xE000 else "" for c in range(0x10000)])
    unplain = chars.str.contains(UNPLAIN).to_numpy()
    leads = sorted({chr(c).encode()[0] for c in np.flatnonzero(unplain) if c >= 0x20})
    ranges = [[leads[0], leads[0]]]  # as runs of consecutive bytes: one test a run
    for lead in leads[1:]:
        if lead == ranges[-1][1] + 1:
            ranges[-1][1] = lead
        else:
            ranges.append([lead, lead])
    letter = chars.str.contains(f"^(?:{LETTER_WHEN_LOWERCASED})$").to_numpy()
    lowered = chars.str.to_lowercase().str.head(1).to_list()
    first = np.array([ord(c) if c else -1 for c in lowered], dtype=np.int32)
    lead_ranges = tuple((low, high) for low, high in ranges)
    return _Tables(unplain, lead_ranges, np.where(letter, first, -1))


def _utf8(data: np.ndarray, span: np.ndarray, starts: np.ndarray, begin: int) -> np.ndarray:
    """Which lines (from `begin`, spanning `span`, not all ASCII) are valid UTF-8: all when
    their bytes are (one check); else the bytes are decoded once, resuming at the next line
    after each error (a line end, ASCII, never belongs to a multi-byte sequence, so errors
    are found per line)."""
    valid = np.ones(len(starts), dtype=bool)
    whole = pa.Array.from_buffers(
        pa.large_binary(),
        1,
        [None, pa.py_buffer(np.array([0, len(span)], dtype=np.int64)), pa.py_buffer(span)],
    )
    try:
        pl.from_arrow(whole).cast(pl.String)
        return valid
    except pl.exceptions.ComputeError:
        pass
    view = memoryview(data)[: begin + len(span)]
    position = begin
    while position < len(view):
        try:
            codecs.utf_8_decode(view[position:], "strict", True)
            break
        except UnicodeDecodeError as err:
            row = int(np.searchsorted(starts, position + err.start, side="right")) - 1
            valid[row] = False
            position = int(starts[row + 1]) if row + 1 < len(starts) else len(view)
    return valid


def _first_letters(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, table: np.ndarray
) -> np.ndarray:
    """The lowercase first letter (a code point) of each line that starts with a letter of
    the Basic Multilingual Plane, else -1; from the UTF-8 of its first character."""
    lead = data[starts]
    code = lead.astype(np.int32)
    for size, low, high in ((2, 0xC0, 0xE0), (3, 0xE0, 0xF0)):  # (0xF0 on: beyond the BMP)
        rows = np.flatnonzero((lead >= low) & (lead < high))
        value = code[rows] & (0xFF >> (size + 1))
        for i in range(1, size):
            value = (value << 6) | (data[starts[rows] + i] & 0x3F)
        code[rows] = value
    return np.where((lengths > 0) & (lead < 0xF0), table[code & 0xFFFF], -1)


@dataclass
class Filtered:
    """A batch after the per-pair filters."""

    # int8 per pair: 0 if kept, else 1 + the index of its filter in the FILTERS of the
    # module that filtered it (this one's, or `xlsent.corpus.dap_filters`')
    reason: np.ndarray
    en: pl.Series  # cleaned text (null where not UTF-8)
    xx: pl.Series
    # bool per pair: the character cleanup changed either side (here: a control character
    # became a space)
    changed: np.ndarray


class Verdicts:
    """Each pair's first failed filter, as the filters of a style run in order: `drop` marks
    the pairs still `alive` that a filter hits with 1 + its index in `filters`."""

    def __init__(self, pairs: int, filters: tuple[str, ...]):
        self.filters = filters
        self.reason = np.zeros(pairs, dtype=np.int8)
        self.alive = np.ones(pairs, dtype=bool)

    def drop(self, hit: np.ndarray, name: str) -> None:
        hit = hit & self.alive
        self.reason[hit] = 1 + self.filters.index(name)
        self.alive[hit] = False


def filter_pairs(
    en: pa.StructArray, xx: pa.StructArray, unspaced: bool, min_tokens: int
) -> Filtered:
    """Run filters 1–5 on the lines (with their `line_facts`) of a batch; `unspaced`: the
    foreign side is written without spaces."""
    en_side, xx_side = _Side(en), _Side(xx)
    verdicts = Verdicts(len(en), FILTERS)
    drop, alive = verdicts.drop, verdicts.alive
    drop(~(en_side.utf8 & xx_side.utf8), "invalid_utf8")
    drop((en_side.lengths == 0) | (xx_side.lengths == 0), "empty")
    drop(en_side.url_or_email(alive) | xx_side.url_or_email(alive), "url_or_email")
    drop(
        en_side.too_short(False, min_tokens) | xx_side.too_short(unspaced, min_tokens),
        "too_short",
    )
    drop(_identical(alive, en_side, xx_side), "identical")
    return Filtered(verdicts.reason, en_side.text, xx_side.text, en_side.control | xx_side.control)


class _Side:
    """One side of a batch: its normalised text, and its facts made true of that text (the
    lines that are not plain are normalised, and their facts computed from the result)."""

    def __init__(self, lines: pa.StructArray):
        self.utf8 = fact(lines, "utf8")
        self.text = decode(lines.field("line"), self.utf8)
        self.lengths = self.text.str.len_bytes().fill_null(0).to_numpy()
        self.spaces, self.first, self.urlish = (
            fact(lines, name) for name in ("spaces", "first", "urlish")
        )
        self.control = np.zeros(len(lines), dtype=bool)
        rows = np.flatnonzero(~fact(lines, "plain") & self.utf8)  # recomputed from the text
        if len(rows) == 0:
            return
        self.lengths, self.spaces, self.first, self.urlish = (
            np.array(a) for a in (self.lengths, self.spaces, self.first, self.urlish)
        )
        normalised, self.control[rows] = normalise(self.text.gather(rows))
        self.text = self.text.scatter(rows, normalised)
        self.lengths[rows] = normalised.str.len_bytes().to_numpy()
        self.spaces[rows] = normalised.str.count_matches(" ", literal=True).to_numpy()
        # Normalising may change the first character; it makes no `@`, `://` or `www.`
        # (it turns characters into spaces, never removes one between two others).
        self.first[rows] = -1  # unknown: `identical` compares these in full

    def url_or_email(self, alive: np.ndarray) -> np.ndarray:
        found = np.zeros(len(alive), dtype=bool)
        rows = np.flatnonzero(alive & self.urlish)
        if len(rows):
            found[rows] = _bools(self.text.gather(rows).str.contains(URL_OR_EMAIL))
        return found

    def too_short(self, unspaced: bool, min_tokens: int) -> np.ndarray:
        """Fewer than `min_tokens` tokens: words, or for a script written without spaces,
        characters other than spaces."""
        if unspaced:
            characters = self.text.str.len_chars().fill_null(0).to_numpy()
            return characters - self.spaces < min_tokens
        return self.spaces + 1 < min_tokens


def fact(lines: pa.StructArray, name: str) -> np.ndarray:
    """One of the `line_facts` of a batch's lines, as a read-only view."""
    # The facts are bools (stored as bytes) and int32s: the buffer viewed as the numpy type,
    # with no copy.
    field = lines.field(name)
    dtype = np.bool_ if field.type == pa.uint8() else np.int32
    values = np.frombuffer(field.buffers()[1], dtype=dtype)
    return values[field.offset : field.offset + len(field)]


def decode(lines: pa.Array, utf8: np.ndarray) -> pl.Series:
    """The lines as text, null where not valid UTF-8 (`utf8` says which)."""
    if utf8.all():  # known valid: a zero-copy view
        return pl.from_arrow(lines.view(pa.string_view()))
    raw, valid = pl.from_arrow(lines), pl.Series(utf8)
    text = pl.select(pl.when(valid).then(raw).otherwise(pl.lit(b""))).to_series()
    return pl.select(pl.when(valid).then(text.cast(pl.String))).to_series()


def normalise(text: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """Control characters to spaces, whitespace runs to one space, ends stripped; and which
    texts had a control character."""
    control = _bools(text.str.contains(CONTROL))
    rewritten = text.str.replace_all(CONTROL, " ").str.replace_all(r"\s+", " ")
    return rewritten.str.strip_chars(), control


def letters(text: pl.Series) -> pl.Series:
    return text.str.to_lowercase().str.replace_all(NOT_LETTER + "+", "")


def _identical(alive: np.ndarray, en: _Side, xx: _Side) -> np.ndarray:
    """The sides are equal once lowercased and without non-word characters, digits and
    underscores (an untranslated copy). Compared in full only where neither the first
    letters nor the letters' scripts (ASCII or not) tell them apart."""
    differ = (en.first >= 0) & (xx.first >= 0) & (en.first != xx.first)
    rows = np.flatnonzero(alive & ~differ)
    unknown = np.flatnonzero((en.first[rows] < 0) | (xx.first[rows] < 0))
    if len(unknown):  # a side starts with no letter, or was normalised: polars finds it
        first_en = _first_letter(en.text.gather(rows[unknown]))
        first_xx = _first_letter(xx.text.gather(rows[unknown]))
        rows = np.setdiff1d(rows, rows[unknown[~_bools(first_en.eq_missing(first_xx))]])
    en_text, xx_text = en.text.gather(rows), xx.text.gather(rows)
    en_ascii, xx_ascii = _ascii(en_text), _ascii(xx_text)
    maybe = np.ones(len(rows), dtype=bool)
    for ascii_side, other_text in ((en_ascii, xx_text), (xx_ascii, en_text)):
        check = np.flatnonzero(ascii_side & maybe)
        other = other_text.gather(check).str.contains(NON_ASCII_LETTER)
        maybe[check[_bools(other)]] = False
    same = np.zeros(len(alive), dtype=bool)
    same[rows[maybe]] = _bools(letters(en_text.filter(maybe)) == letters(xx_text.filter(maybe)))
    return same


def _ascii(text: pl.Series) -> np.ndarray:
    return _bools(text.str.len_bytes() == text.str.len_chars())


def _first_letter(text: pl.Series) -> pl.Series:
    # Only its first character: a capital may lowercase to two (İ to i and a combining dot).
    return text.str.extract(f"({LETTER_WHEN_LOWERCASED})").str.to_lowercase().str.head(1)


def _bools(series: pl.Series, missing: bool = False) -> np.ndarray:
    return series.fill_null(missing).to_numpy()
