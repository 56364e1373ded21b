"""The monolingual baseline: fastText CBOW on the same tokens, through the same evaluation.

fastText has no cross-lingual objective, so the baseline trains CBOW on each pair written as
one line, the English tokens then the foreign ones, each tagged with its language
(`file_en … datei_de`): the tokens, the vocabulary threshold and the settings Bi-Sent2vec
gets, with a monolingual objective. Cross-lingual signal reaches it only where a CBOW window
spans both sides of a pair. Character n-grams are off (`minn` = `maxn` = 0), since
Bi-Sent2vec has none. Its vectors are written per language, untagged, in the layout of a
Bi-Sent2vec model directory, so `SentenceModel.load` and the BLI code read both alike.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from xlsent.bisent2vec import Bisent2vecError
from xlsent.bisent2vec.trainer import STATS_FILE, Bisent2vecSettings, vectors_file
from xlsent.io import atomic_path, write_json

log = logging.getLogger(__name__)

EOS = "</s>"  # fastText's end-of-line token, a word of its vocabulary


def tagged_line(line: str, langs: tuple[str, str]) -> str:
    """A trainer input line (`en tokens<TAB>xx tokens`) as one tagged CBOW sentence."""
    sides = line.rstrip("\n").split("\t")
    if len(sides) != 2:
        raise Bisent2vecError(f"expected one tab in a pairs line, got {line[:80]!r}")
    return " ".join(
        f"{token}_{lang}" for side, lang in zip(sides, langs, strict=True) for token in side.split()
    )


def _write_vec(path: Path, words: list[str], vectors: np.ndarray) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{len(words)} {vectors.shape[1]}\n")
        for word, row in zip(words, vectors, strict=True):
            f.write(word + " " + " ".join(f"{x:.6g}" for x in row) + "\n")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM) in MiB, or -1 off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return -1.0


def expected_updates(counts: np.ndarray, t: float) -> float:
    """CBOW updates in one epoch: every token kept by subsampling (keep p = √(t/f) + t/f)."""
    f = counts / counts.sum()
    keep = np.minimum(1.0, np.sqrt(t / f) + t / f)
    return float((counts * keep).sum())


def fasttext_model(
    corpus: Path, settings: Bisent2vecSettings, model: str, window: int, threads: int
) -> Any:
    """fastText (`model`: cbow or skipgram) on one text file with the word-vector runs'
    settings: the tokens as given, no character n-grams (Bi-Sent2vec has none), one word a
    token. The Python API takes no seed: fastText's own default (0) holds, and one thread is
    deterministic."""
    try:
        import fasttext
    except ImportError:
        raise Bisent2vecError(
            "the fastText baselines need the fasttext package: pip install 'xlsent[bisent2vec]'"
        ) from None
    return fasttext.train_unsupervised(
        str(corpus),
        model=model,
        dim=settings.dim,
        lr=settings.lr,
        neg=settings.neg,
        minCount=settings.min_count,
        epoch=settings.epoch,
        t=settings.t,
        ws=window,
        minn=0,
        maxn=0,
        wordNgrams=1,
        lrUpdateRate=settings.lr_update_rate,
        thread=threads,
        verbose=0,
    )


def train_cbow(
    pairs: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    lang: str,
    settings: Bisent2vecSettings | None = None,
    *,
    threads: int = 1,
    window: int = 5,
) -> dict[str, Any]:
    """Train the fastText CBOW baseline on a pairs file into a model directory; its stats."""
    settings = settings or Bisent2vecSettings()
    langs = ("en", lang)
    with tempfile.TemporaryDirectory(prefix="xlsent-cbow-") as scratch:
        corpus = Path(scratch) / "cbow.txt"
        with open(pairs, encoding="utf-8") as src, open(corpus, "w", encoding="utf-8") as dst:
            for line in src:
                dst.write(tagged_line(line, langs) + "\n")
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        model = fasttext_model(corpus, settings, "cbow", window, threads)
        seconds = time.perf_counter() - started
        cpu_seconds = _cpu_seconds() - cpu_started
    words, counts = model.get_words(include_freq=True)
    counts = np.asarray(counts, dtype=np.float64)
    matrix = model.get_input_matrix()[: len(words)]
    tokens_per_epoch = float(counts.sum())  # in-vocabulary tokens, </s> included, as fastText
    per_lang: dict[str, list[int]] = {code: [] for code in langs}
    for i, word in enumerate(words):
        base, _, code = word.rpartition("_")
        if code in per_lang and base:
            per_lang[code].append(i)
    stats = {
        "method": "fasttext-cbow",
        "langs": list(langs),
        "settings": dataclasses.asdict(settings),
        "window": window,
        "threads": threads,
        "pairs_file": str(pairs),
        "vocabulary": {code: len(rows) for code, rows in per_lang.items()},
        "tokens_per_epoch": int(tokens_per_epoch),
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,  # all threads', vocabulary and training
        "words_per_sec_per_thread": tokens_per_epoch * settings.epoch / seconds / threads,
        "updates_estimated": math.floor(expected_updates(counts, settings.t) * settings.epoch),
        # The whole Python process's peak: meaningful when it ran for this training alone
        # (`xlsent bisent2vec-train --method fasttext-cbow`).
        "peak_rss_mb": peak_rss_mb(),
    }
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        for code, rows in per_lang.items():
            _write_vec(
                tmp / vectors_file(code),
                [words[i].rpartition("_")[0] for i in rows],
                matrix[rows],
            )
        write_json(tmp / STATS_FILE, stats)
    log.info(
        "fastText CBOW en-%s: vocabulary %s, %.1f s, %.0f words/s/thread",
        lang,
        stats["vocabulary"],
        seconds,
        stats["words_per_sec_per_thread"],
    )
    return stats
