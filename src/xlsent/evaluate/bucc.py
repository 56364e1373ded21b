"""Bitext mining in the BUCC shared task's layout (Zweigenbaum et al., 2017 and 2018).

Per language xx and split (BUCC 2018: `sample`, `training`, `test`), three files:

    {xx}-en.{split}.{xx}    one `id<TAB>sentence` a line (ids such as de-000000001)
    {xx}-en.{split}.en      the same for English
    {xx}-en.{split}.gold    one `xx_id<TAB>en_id` a line: the translation pairs among them

directly in a directory, or in its `{xx}-en/` folder as BUCC's tarballs unpack. The test
split's gold was never published, so evaluation follows XTREME (Hu et al., 2020,
arXiv:2003.11080), which renames `sample` to dev and `training` to test: the threshold is
chosen on the gold of one split (`sample`) and applied to the other (`training`).

Each split is mined by margin as LASER mines (`xlsent.evaluate.mining`). What a sentence that
stands on several lines of its side (several ids, one text) is, the evaluations the papers
ran do not agree, so it is a setting (`evaluate.bucc.mining.repeated`, `mine_split`):

- `drop`: each side's distinct sentences are mined, and a repeated one is left out of every
  candidate, its gold pairs counted as missed: LASER's `bucc.py` maps a sentence to an id
  only when it has one, and XTREME's `bucc_eval` and the dual-pivot authors' code
  (cctien/bimultialign, `interlens/evaluation/util_retriever.py`) copy it.
- `keep`: every line is a sentence of its own, in the neighbourhoods and among the
  candidates, a repeated text with one vector on each of its lines: DAP's `eval_bucc.py`
  mines the lines as its reader gives them, and mSimCSE's evaluation (WACSE Table 6) hands
  XTREME's `mine_bitext` the id files as its "texts", so that nothing is unified. Lines of
  one text tie: which of them a sentence proposes is the search's order (faiss's here,
  `torch.topk`'s in DAP's code), and of candidates with equal scores the first proposed wins.
"""

from __future__ import annotations

import logging
import math
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xlsent.evaluate import mining
from xlsent.evaluate.bucc_files import file_name, split_files
from xlsent.evaluate.encoding import Encoder, embed
from xlsent.failures.errors import XlsentError
from xlsent.io import atomic_path, utf8_lines

log = logging.getLogger(__name__)

BUCC2018_URL = "https://comparable.limsi.fr/bucc2018"


class BuccError(XlsentError):
    """A BUCC-layout file that cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class BuccSplit:
    """One split of one language: both sides' ids and sentences, and the gold id pairs."""

    lang: str
    split: str
    xx_ids: list[str]
    xx: list[str]
    en_ids: list[str]
    en: list[str]
    gold: list[tuple[str, str]]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without its line end) of a UTF-8 file; errors name file and line."""
    if not path.is_file():
        raise BuccError(
            f"BUCC file {path} not found: put the shared task's files there (evaluate.bucc.dir "
            "names the folder; {xx}-en.{split}.{xx|en|gold}), or leave evaluate.bucc.dir "
            "null to download them"
        )
    yield from utf8_lines(
        path, BuccError, "the BUCC files are UTF-8; replace this one with the original"
    )


def read_sentences(path: str | Path) -> tuple[list[str], list[str]]:
    """The (ids, sentences) of a sentence file, in file order; ids must be unique."""
    path = Path(path)
    ids, texts, seen = [], [], set()
    for lineno, line in _lines(path):
        sentence_id, tab, text = line.partition("\t")
        if not tab or not sentence_id:
            raise BuccError(
                f"{path}:{lineno} is not `id<TAB>sentence`: a BUCC sentence file holds one "
                "sentence a line after its id; replace the file with the original"
            )
        if sentence_id in seen:
            raise BuccError(f"{path}:{lineno}: id {sentence_id!r} appears twice; ids are unique")
        seen.add(sentence_id)
        ids.append(sentence_id)
        texts.append(text)
    return ids, texts


def read_gold(path: str | Path, xx_ids: set[str], en_ids: set[str]) -> list[tuple[str, str]]:
    """The gold (xx id, en id) pairs of a gold file; each id must be a sentence of its side."""
    path = Path(path)
    pairs = []
    for lineno, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != 2:
            raise BuccError(
                f"{path}:{lineno} is not `xx_id<TAB>en_id`: a BUCC gold file holds one id pair "
                "a line, the foreign id first"
            )
        xx_id, en_id = fields
        unknown = [i for i, ids in ((xx_id, xx_ids), (en_id, en_ids)) if i not in ids]
        if unknown:
            raise BuccError(
                f"{path}:{lineno}: {', '.join(map(repr, unknown))} is not a sentence id of the "
                "split's sentence files: the gold file belongs to another split or language"
            )
        pairs.append((xx_id, en_id))
    if not pairs:
        raise BuccError(f"{path} holds no gold pair: a threshold cannot be chosen or scored")
    return pairs


def read_split(directory: str | Path, lang: str, split: str) -> BuccSplit:
    """Read one split of `lang` from `directory` (`bucc_files.bucc_path` finds its files)."""
    xx_path, en_path, gold_path = split_files(directory, lang, split)
    xx_ids, xx = read_sentences(xx_path)
    en_ids, en = read_sentences(en_path)
    gold = read_gold(gold_path, set(xx_ids), set(en_ids))
    return BuccSplit(lang, split, xx_ids, xx, en_ids, en, gold)


def write_split(split: BuccSplit, directory: str | Path) -> list[Path]:
    """Write `split` into `directory` in the layout (flat), each file atomically."""
    sides = (
        (split.lang, zip(split.xx_ids, split.xx, strict=True)),
        ("en", zip(split.en_ids, split.en, strict=True)),
        ("gold", split.gold),
    )
    paths = []
    for side, rows in sides:
        path = Path(directory) / file_name(split.lang, split.split, side)
        with atomic_path(path) as tmp:
            tmp.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
        paths.append(path)
    return paths


# -- BUCC 2018's files ---------------------------------------------------------------------------


def archive_name(lang: str, split: str) -> str:
    """The tarball of a split with its gold, e.g. `bucc2018-de-en.training-gold.tar.bz2`."""
    return f"bucc2018-{lang}-en.{split}-gold.tar.bz2"


def extract_archive(
    archive: str | Path, lang: str, split: str, directory: str | Path
) -> list[Path]:
    """Copy a split's three files out of a BUCC 2018 tarball into `directory` (flat)."""
    wanted = {file_name(lang, split, side): side for side in (lang, "en", "gold")}
    written = []
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                name = Path(member.name).name
                if member.isfile() and name in wanted:
                    source = tar.extractfile(member)
                    assert source is not None  # a regular file
                    with atomic_path(Path(directory) / name) as tmp:
                        tmp.write_bytes(source.read())
                    written.append(Path(directory) / name)
    except tarfile.TarError as err:
        raise BuccError(f"{archive} is not a readable tarball ({err}): download it again") from err
    missing = sorted(set(wanted) - {path.name for path in written})
    if missing:
        raise BuccError(
            f"{archive} lacks {', '.join(missing)}: is it the {split} tarball of {lang}-en?"
        )
    return written


def fetch(
    base_url: str,
    directory: str | Path,
    langs: Sequence[str],
    splits: Sequence[str],
    download_dir: str | Path,
) -> list[Path]:
    """Download the tarball of each language and split (e.g. from `BUCC2018_URL`) into
    `download_dir` and unpack its files into `directory`."""
    from xlsent.download import download  # only this function needs the network code

    written = []
    for lang in langs:
        for split in splits:
            name = archive_name(lang, split)
            archive = Path(download_dir) / name
            download(f"{base_url.rstrip('/')}/{name}", archive)
            written += extract_archive(archive, lang, split, directory)
    return written


# -- evaluation ----------------------------------------------------------------------------------


def distinct(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in order of appearance, and for each the row it stands on, or -1
    when it stands on several rows (LASER drops such a sentence from the candidates)."""
    first: dict[str, int] = {}
    repeated: set[str] = set()
    for row, text in enumerate(texts):
        if text in first:
            repeated.add(text)
        else:
            first[text] = row
    unique = list(first)
    rows = np.array([-1 if text in repeated else first[text] for text in unique], dtype=np.int64)
    return unique, rows


@dataclass(frozen=True)
class MinedSplit:
    """A split's candidates (best first), which of them are gold pairs, and the neighbours
    the margin read (`k`, fewer than asked when a side has fewer sentences)."""

    scores: np.ndarray
    correct: np.ndarray
    gold: int
    k: int


def every_line(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """The texts as they stand, each on its own row: `distinct`'s form for `repeated: keep`."""
    return texts, np.arange(len(texts), dtype=np.int64)


def mine_split(encode: Encoder, split: BuccSplit, settings: mining.MiningSettings) -> MinedSplit:
    """Mine one split, its candidates marked against its gold: between its distinct sentences,
    a repeated one left out (`repeated: drop`), or between all its lines (`keep`)."""
    rows_of = distinct if settings.repeated == "drop" else every_line
    xx_unique, xx_rows = rows_of(split.xx)
    en_unique, en_rows = rows_of(split.en)
    candidates = mining.mine(
        embed(encode, xx_unique, split.lang), embed(encode, en_unique, "en"), settings
    )
    src, trg = xx_rows[candidates.src], en_rows[candidates.trg]
    kept = (src >= 0) & (trg >= 0)
    xx_row = {sentence_id: row for row, sentence_id in enumerate(split.xx_ids)}
    en_row = {sentence_id: row for row, sentence_id in enumerate(split.en_ids)}
    n_en = len(split.en_ids)
    gold = np.array([xx_row[a] * n_en + en_row[b] for a, b in split.gold], dtype=np.int64)
    correct = np.isin(src[kept] * n_en + trg[kept], gold)
    k = min(settings.k, len(xx_unique), len(en_unique))
    return MinedSplit(candidates.score[kept], correct, len(set(split.gold)), k)


def _rows(lang: str, direction: str, result: mining.Extraction) -> list[dict]:
    metrics = {
        "precision": result.precision,
        "recall": result.recall,
        "f1": result.f1,
        "threshold": result.threshold,
    }
    return [
        {"lang": lang, "direction": direction, "metric": m, "value": v, "n": result.gold}
        for m, v in metrics.items()
    ]


def evaluate(
    encode: Encoder,
    directory: str | Path,
    langs: Sequence[str],
    threshold_split: str,
    test_split: str,
    settings: mining.MiningSettings,
    pivot: str | None = None,
) -> list[dict]:
    """Mining P/R/F1 (%) per language, the threshold chosen on `threshold_split`'s gold.

    Rows `{lang, direction, metric, value, n}` with metric precision, recall, f1 and
    threshold (the margin score cut), and `k` where a split had fewer sentences than the
    margin's neighbours (the k used), n the split's gold pairs, and direction:

    - `dev`: `threshold_split` at the threshold that is best on it;
    - `test`: `test_split` at that threshold (the protocol's result);
    - `test_oracle`: `test_split` at the threshold best on its own gold, which is what
      XTREME's `bucc_eval` reports (it optimises whenever a gold file exists) and what DAP's
      Table 2 and the dual-pivot paper's Tables 2 and 6 show;
    - `test_pivot` (with `pivot`): `test_split` at `pivot`'s `dev` threshold, the dual-pivot
      paper's Table 6 (one pivot pair's threshold for every pair).
    """
    if pivot is not None and pivot not in langs:
        raise ValueError(f"the pivot {pivot!r} must be one of the mined languages {list(langs)}")
    # Read every split before encoding any, so that a bad file fails in seconds.
    splits = {
        lang: (
            read_split(directory, lang, threshold_split),
            read_split(directory, lang, test_split),
        )
        for lang in langs
    }
    rows, thresholds, tests = [], {}, {}
    for lang, (dev_split, test_split_) in splits.items():
        dev = mine_split(encode, dev_split, settings)
        chosen = mining.best_threshold(dev.scores, dev.correct, dev.gold)
        tests[lang] = test = mine_split(encode, test_split_, settings)
        result = mining.extract(test.scores, test.correct, test.gold, chosen.threshold)
        oracle = mining.best_threshold(test.scores, test.correct, test.gold)
        thresholds[lang] = chosen.threshold
        rows += _rows(lang, "dev", chosen) + _rows(lang, "test", result)
        rows += _rows(lang, "test_oracle", oracle)
        # A k lowered to a split's size is recorded, for the table's footnote.
        rows += [
            {"lang": lang, "direction": name, "metric": "k", "value": mined.k, "n": mined.gold}
            for name, mined in (("dev", dev), ("test", test))
            if mined.k < settings.k
        ]
        log.info(
            "%s: threshold %.4f (dev F1 %.1f, %d gold); test P %.1f R %.1f F1 %.1f (%d gold, "
            "F1 %.1f at its own best threshold)",
            lang,
            chosen.threshold,
            chosen.f1,
            dev.gold,
            result.precision,
            result.recall,
            result.f1,
            test.gold,
            oracle.f1,
        )
    if pivot is not None:
        for lang, test in tests.items():
            result = mining.extract(test.scores, test.correct, test.gold, thresholds[pivot])
            rows += _rows(lang, "test_pivot", result)
            log.info("%s: test F1 %.1f at %s's threshold", lang, result.f1, pivot)
    if any(math.isinf(t) for t in thresholds.values()):
        log.warning(
            "no candidate of the threshold split was a gold pair for %s: nothing is extracted",
            ", ".join(lang for lang, t in thresholds.items() if math.isinf(t)),
        )
    return rows
