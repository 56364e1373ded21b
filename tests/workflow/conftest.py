"""Fixtures of the workflow tests: runs of the real Snakemake workflow in scratch directories.

The helpers that run Snakemake (`snakemake`, `planned_jobs`, `write_config`, ...) are in
tests/support.py; only fixtures live here.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from support import (
    L10N_LANGS,
    L10N_LINES,
    SHARED,
    demo_config,
    l10n_config,
    l10n_corpus_file,
    snakemake,
    write_config,
)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo DAG run once, from an empty directory, as `make demo` runs it: every target
    of `rule all` (the tables and the alignments)."""
    workdir = tmp_path_factory.mktemp("demo")
    configfile = write_config(workdir / "config.yaml", demo_config())
    snakemake(workdir, "--cores", "2", "--max-threads", "1", "--configfile", str(configfile))
    return workdir


@pytest.fixture(scope="session")
def l10n_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole DAG (`rule all`) of `support.l10n_config` on the first lines of the real
    l10n files of its languages, evaluated on the real Tatoeba files."""
    if not (SHARED / "l10n").is_dir() or not (SHARED / "tatoeba" / "v1").is_dir():
        pytest.skip(f"needs {SHARED}/l10n and {SHARED}/tatoeba/v1 beside the checkout")
    workdir = tmp_path_factory.mktemp("l10n")
    corpus = workdir / "corpus"
    corpus.mkdir()
    for lang in L10N_LANGS:
        for side in ("en", lang):
            name = l10n_corpus_file(lang, side)
            with gzip.open(SHARED / "l10n" / name) as f:
                lines = [line for _, line in zip(range(L10N_LINES), f, strict=False)]
            # mtime 0: the same bytes in every run (gzip records the time otherwise)
            (corpus / name).write_bytes(gzip.compress(b"".join(lines), mtime=0))
    configfile = write_config(workdir / "config.yaml", l10n_config())
    snakemake(workdir, "--cores", "2", "--max-threads", "1", "--configfile", str(configfile))
    return workdir
