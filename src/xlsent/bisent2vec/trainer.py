"""One Bi-Sent2vec training run: the settings, the subprocess, the model directory.

A model directory holds (all written under a temporary name, published when complete):

- `model.bin`: the binary model, with settings, vocabulary, input and output matrices
  (`model.py` reads it; the format is in `csrc/bisent2vec/src/model_io.h`);
- `vectors.{lang}.vec`: fastText text vectors of each language's words, without tags;
- `ngrams.bin`: the n-gram bucket rows (only with `word_ngrams` > 1);
- `stats.json`: settings, corpus and vocabulary counts, updates, loss per epoch, speed and
  the trainer's peak resident memory.

The trainer's progress lines go to this module's logger as they come (in a Snakemake job,
to the rule's log file).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import subprocess
import time
from pathlib import Path
from typing import Any, TypeVar

from xlsent.arguments import settings_object
from xlsent.bisent2vec import Bisent2vecError
from xlsent.defaults import schema_defaults
from xlsent.failures.kill_points import kill_point
from xlsent.io import atomic_path, read_json, write_json

T = TypeVar("T")

log = logging.getLogger(__name__)

MODEL_FILE = "model.bin"
NGRAMS_FILE = "ngrams.bin"
STATS_FILE = "stats.json"


def vectors_file(lang: str) -> str:
    return f"vectors.{lang}.vec"


@dataclasses.dataclass(frozen=True)
@schema_defaults("bisent2vec")
class Bisent2vecSettings:
    """The trainer's settings: all but `lowercase` (the pairs writer's) are the binary's
    required flags (`flags`; it has no defaults of its own).

    The workflow's config schema validates them (ranges included) and holds their defaults
    (the reference trainer's; the paper ran dim 300); tests/unit/config/test_schema.py checks that
    these defaults are the schema's.

    `word_ngrams` 1 trains unigrams only, 2 adds bigrams (the paper's "uni." and "uni. + bi.");
    `bucket` hash rows hold the n-grams (none are allocated for unigrams only);
    `dropout_k` tokens per context lose the n-grams that span them; `t` is the subsampling
    threshold; `max_vocab_size` 0 keeps every word seen `min_count` times; `lowercase` is
    applied to tokens before training and lookup.
    """

    dim: int
    lr: float
    neg: int
    min_count: int
    max_vocab_size: int
    word_ngrams: int
    bucket: int
    dropout_k: int
    epoch: int
    t: float
    seed: int = 0
    lr_update_rate: int
    lowercase: bool

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Bisent2vecSettings:
        """Settings from a mapping (e.g. the workflow's `--settings` JSON); unknown keys fail."""
        return checked_settings(cls, values, "bisent2vec")

    def flags(self) -> list[str]:
        """The trainer's command-line flags for these settings."""
        return [
            *("-dim", str(self.dim), "-lr", repr(self.lr), "-neg", str(self.neg)),
            *("-minCount", str(self.min_count), "-maxVocabSize", str(self.max_vocab_size)),
            *("-wordNgrams", str(self.word_ngrams), "-bucket", str(self.bucket)),
            *("-dropoutK", str(self.dropout_k), "-epoch", str(self.epoch), "-t", repr(self.t)),
            *("-seed", str(self.seed), "-lrUpdateRate", str(self.lr_update_rate)),
        ]


def checked_settings(cls: type[T], values: dict[str, Any], block: str) -> T:
    """`cls` (a settings dataclass) from `values`, as every command builds its settings
    (`xlsent.arguments.settings_object`), failing as this stage's error."""
    return settings_object(cls, values, block, Bisent2vecError)


def run_logged(args: list[str], what: str) -> dict[str, Any]:
    """Run a command, logging each stderr line as it comes; its wall-clock seconds.

    Raises Bisent2vecError with the command's last error lines when it fails.
    """
    started = time.perf_counter()
    tail: collections.deque[str] = collections.deque(maxlen=20)
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace"
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            line = line.rstrip("\n")
            tail.append(line)
            log.info("%s: %s", what, line)
            kill_point(f"{what}_train")  # while the trainer (a child process) runs
        proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    if proc.returncode != 0:
        errors = [line for line in tail if "error" in line] or list(tail)
        message = errors[-1].removeprefix("bisent2vec: error: ") if errors else "no output"
        raise Bisent2vecError(f"{what} failed (exit {proc.returncode}): {message}")
    return {"wall_seconds": time.perf_counter() - started}


def train(
    binary: str | os.PathLike[str],
    pairs: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    lang: str,
    settings: Bisent2vecSettings | None = None,
    *,
    threads: int = 1,
    resume: str | os.PathLike[str] | None = None,
    extra_stats: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train an en-`lang` model on a pairs file (`data.write_pairs`) into `out_dir`.

    `resume`: a model directory (or its `model.bin`) to continue from. Returns the stats
    written to `stats.json` (`extra_stats` are added, e.g. the data writer's counts).
    """
    settings = settings or Bisent2vecSettings()
    if threads < 1:
        raise Bisent2vecError(f"threads must be at least 1, not {threads}")
    if not Path(binary).is_file():
        raise Bisent2vecError(
            f"the trainer binary {binary} does not exist: build it first "
            "(`xlsent bisent2vec-build --build-dir DIR`)"
        )
    if not Path(pairs).is_file():
        raise FileNotFoundError(f"training pairs file {pairs} not found")
    langs = ("en", lang)
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        prefix = tmp / "model"
        args = [
            str(binary),
            "train",
            *("-input", str(pairs), "-output", str(prefix)),
            *("-lang1", langs[0], "-lang2", langs[1], "-thread", str(threads)),
            *settings.flags(),
        ]
        if resume is not None:
            resume_bin = Path(resume) / MODEL_FILE if Path(resume).is_dir() else Path(resume)
            args += ["-resume", str(resume_bin)]
        log.info("training bisent2vec en-%s: %s", lang, " ".join(args))
        process = run_logged(args, "bisent2vec")
        reported = read_json(f"{prefix}.json")
        Path(f"{prefix}.json").unlink()
        os.replace(f"{prefix}.bin", tmp / MODEL_FILE)
        for code in langs:
            os.replace(f"{prefix}.{code}.vec", tmp / vectors_file(code))
        if reported["ngram_rows"] > 0:  # a resumed model keeps its own shape
            os.replace(f"{prefix}.ngrams.bin", tmp / NGRAMS_FILE)
        stats = {
            "method": "bisent2vec",
            "langs": list(langs),
            "settings": dataclasses.asdict(settings),
            "threads": threads,
            "pairs_file": str(pairs),
            "trainer_flags": reported.pop("settings"),  # as the binary understood them
            **reported,
            **process,
            **(extra_stats or {}),
        }
        write_json(tmp / STATS_FILE, stats)
    log.info(
        "en-%s: vocabulary %s, loss by epoch %s, %.0f words/s/thread",
        lang,
        stats["vocabulary"],
        ", ".join(f"{x:.4f}" for x in stats["loss_by_epoch"]),
        stats["words_per_sec_per_thread"],
    )
    return stats
