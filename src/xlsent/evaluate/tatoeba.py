"""The Tatoeba bitext-retrieval evaluation on the LASER test set (Artetxe and Schwenk, 2019).

The LASER layout is two line-aligned files per language, named with LASER's 3-letter codes:
`tatoeba.{xxx}-eng.{xxx}` and `tatoeba.{xxx}-eng.eng`. Each foreign sentence retrieves its
nearest English sentence by cosine similarity and vice versa; a retrieval is correct when it
returns the sentence on the same line. Accuracy is reported in percent, as the papers do.

How a line becomes a test sentence is `evaluate.tatoeba.text` (`TATOEBA_TEXTS`): `laser` takes it as
the file holds it (LASER's, XTREME's and mSimCSE's evaluations; the files have no tab and no
space at either end), `dap` as DAP's `data/gen_tatoeba_pair.py` writes its test pairs
(`dap_text`), which its Tables 1, 7 and 8 were measured on. One reader (`read_pairs`) serves
every job that reads the files (the encode job and each evaluation), so that they agree on
the text a vector is looked up by.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from xlsent.evaluate import TATOEBA_TEXTS
from xlsent.evaluate.encoding import Encoder
from xlsent.failures.errors import XlsentError
from xlsent.failures.kill_points import kill_point
from xlsent.io import utf8_lines
from xlsent.languages import ENGLISH, UnknownLanguageError, get
from xlsent.search import p_at_1

LASER_URL = "https://raw.githubusercontent.com/facebookresearch/LASER/main/data/tatoeba/v1"


class TatoebaError(XlsentError):
    """A Tatoeba file that cannot be evaluated; the message names the file and the fix."""


def _paths(directory: Path, lang: str) -> tuple[Path, Path]:
    language = get(lang)
    if language == ENGLISH:
        raise UnknownLanguageError("Tatoeba pairs every language with English; 'en' has no file")
    stem = f"tatoeba.{language.iso3}-eng"
    return Path(directory) / f"{stem}.{language.iso3}", Path(directory) / f"{stem}.eng"


def tatoeba_files(directory: Path, lang: str) -> tuple[Path, Path]:
    """The (foreign, English) files of `lang` (a code of `xlsent.languages`) in `directory`,
    which must exist."""
    paths = _paths(directory, lang)
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(
                f"Tatoeba test file for {lang!r} not found: expected {path}. Put the LASER file "
                f"there (or set evaluate.tatoeba.dir to the folder that holds it), or remove "
                f"{lang!r} from evaluate.tatoeba.languages."
            )
    return paths


def _read_lines(path: Path) -> list[str]:
    fix = "the LASER files are UTF-8: re-download this one or convert it"
    return [text for _, text in utf8_lines(path, TatoebaError, fix)]


def dap_text(line: str) -> str:
    """A line as DAP's `data/gen_tatoeba_pair.py` writes it into its test TSV: the ends
    stripped, a tab made a space (the TSV's separator), then every ASCII double quote removed
    (its CSV reader would take them for quoting). Only the quotes go, the spaces beside them
    stay: `"Wer ist es?" "Es ist deine Mutter."` is `Wer ist es? Es ist deine Mutter.`, and a
    line that ends ` "` ends in a space, which XLM-R's tokenizer reads as one more piece."""
    return line.strip().replace("\t", " ").replace('"', "")


def read_pairs(directory: Path, lang: str, text: str = "laser") -> tuple[list[str], list[str]]:
    """The (foreign, English) sentences of `lang`, read as `text` says (`laser`, the
    lines as they stand; `dap`, `dap_text`); line i of one translates line i of the other."""
    if text not in TATOEBA_TEXTS:
        raise ValueError(f"text is one of {', '.join(TATOEBA_TEXTS)}, not {text!r}")
    xx_path, en_path = tatoeba_files(directory, lang)
    xx, en = _read_lines(xx_path), _read_lines(en_path)
    if text == "dap":
        xx, en = [dap_text(line) for line in xx], [dap_text(line) for line in en]
    if len(xx) != len(en):
        raise TatoebaError(
            f"{xx_path} has {len(xx)} lines but {en_path} has {len(en)}: line i of one must "
            "translate line i of the other. Replace both files with the LASER originals."
        )
    if not xx:
        raise TatoebaError(f"{xx_path} and {en_path} are empty: there is nothing to evaluate")
    return xx, en


def _embed(encode: Encoder, sentences: list[str], lang: str) -> np.ndarray:
    vectors = np.asarray(encode(sentences, lang))
    if vectors.ndim != 2 or len(vectors) != len(sentences):
        raise ValueError(
            f"the encoder returned shape {vectors.shape} for {len(sentences)} sentences; "
            "it must return one row per sentence"
        )
    return vectors


def evaluate(encode: Encoder, directory: Path, langs: list[str], text: str = "laser") -> list[dict]:
    """Top-1 retrieval accuracy (%) per language: rows for `xx2en`, `en2xx` and their `mean`,
    the sentences read as `text` says (`read_pairs`).

    Each row is `{"lang", "direction", "metric": "accuracy", "value", "n"}` with `n` the
    number of sentence pairs.
    """
    # Read every language before encoding any, so a missing file fails in seconds rather than
    # after the encoder has run over the languages before it.
    pairs = {lang: read_pairs(directory, lang, text) for lang in langs}
    rows = []
    # Progress in the job's log: all 112 languages take a 12-layer encoder tens of CPU-minutes.
    for lang, (xx, en) in tqdm(pairs.items(), desc="tatoeba", unit="lang", mininterval=30):
        rows += retrieval_rows(encode, lang, xx, en)
        kill_point("eval_tatoeba")
    return rows


def retrieval_rows(encode: Encoder, lang: str, xx: list[str], en: list[str]) -> list[dict]:
    """Top-1 accuracy (%) of retrieving line i of one side by line i of the other among all
    lines: rows for `xx2en`, `en2xx` and their `mean`, with `n` the number of pairs."""
    xx_vectors, en_vectors = _embed(encode, xx, lang), _embed(encode, en, "en")
    accuracy = {
        "xx2en": 100 * p_at_1(xx_vectors, en_vectors),
        "en2xx": 100 * p_at_1(en_vectors, xx_vectors),
    }
    accuracy["mean"] = (accuracy["xx2en"] + accuracy["en2xx"]) / 2
    return [
        {"lang": lang, "direction": d, "metric": "accuracy", "value": v, "n": len(xx)}
        for d, v in accuracy.items()
    ]


def fetch(base_url: str, directory: Path, langs: list[str]) -> list[Path]:
    """Download the files of `langs` missing from `directory` (base_url: e.g. `LASER_URL`)."""
    from xlsent.download import download  # only this function needs the network code

    fetched = []
    for lang in langs:
        for path in _paths(directory, lang):
            if not path.is_file():
                download(f"{base_url.rstrip('/')}/{path.name}", path)
                fetched.append(path)
    return fetched
