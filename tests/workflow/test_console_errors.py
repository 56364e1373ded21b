"""A job that fails on bad input says why on the console, not only in its log.

Every rule's command writes its stderr to the job's `log:` file (`2> {log}`); the Snakefile's
`onerror` prints the failed job's own ERROR line (xlsent.failures.failed_jobs) after Snakemake's
"non-zero exit status". Each run fails at its first jobs, in seconds.
"""

from __future__ import annotations

import gzip

import pytest
from support import demo_config, snakemake, write_config

pytestmark = pytest.mark.workflow


def _local_corpus(tmp_path, kk_pairs: int, truncate_kk: bool = False):
    """A config reading a local Moses corpus of de (fine) and kk (`kk_pairs` pairs, its kk
    side cut in half when `truncate_kk`); returns (config file, kk side's path)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sides = {
        "de-en.en": [f"This is sentence number {i} of the corpus." for i in range(1000)],
        "de-en.de": [f"Das ist Satz Nummer {i} des Korpus." for i in range(1000)],
        "en-kk.en": [f"This is sentence number {i} of the corpus." for i in range(kk_pairs)],
        "en-kk.kk": [f"Бұл корпустың {i} нөмірлі сөйлемі." for i in range(kk_pairs)],
    }
    for name, lines in sides.items():
        data = gzip.compress("".join(f"{line}\n" for line in lines).encode())
        if truncate_kk and name == "en-kk.kk":
            data = data[: len(data) // 2]
        (corpus / f"l10n.{name}.gz").write_bytes(data)
    config = demo_config()
    config["languages"] = ["de", "kk"]
    config["corpus"] = {"source": "local", "local": {"dir": str(corpus)}}
    config["evaluate"]["bucc"] = {"languages": []}  # the demo mines languages left out here
    return write_config(tmp_path / "config.yaml", config), corpus / "l10n.en-kk.kk.gz"


def _failed_run(tmp_path, configfile, target: str) -> str:
    proc = snakemake(
        tmp_path, target, "--cores", "1", "--configfile", str(configfile), should_fail=True
    )
    return proc.stdout + proc.stderr


def test_a_truncated_gzip_is_named_on_the_console(tmp_path):
    configfile, kk = _local_corpus(tmp_path, kk_pairs=3000, truncate_kk=True)
    out = _failed_run(tmp_path, configfile, "results/corpus/kk/clean.parquet")
    assert "The failed jobs' logs say:\nlogs/clean/kk.log:\n    ERROR xlsent: " in out
    assert f"{kk}: the gzip stream ends early after line " in out
    assert f"(the file is truncated or corrupt: copy or download it again; `gzip -t {kk}`" in out
    # The line, not the whole log: the progress bar's updates stay in logs/clean/kk.log.
    assert "clean kk:" in (tmp_path / "logs/clean/kk.log").read_text()
    assert "clean kk:" not in out


def test_a_language_below_the_pair_minimum_is_named_on_the_console(tmp_path):
    configfile, _ = _local_corpus(tmp_path, kk_pairs=100)
    out = _failed_run(tmp_path, configfile, "results/corpus/kk/train.parquet")
    said = out.split("The failed jobs' logs say:\n")[1]
    assert said.startswith("logs/sample/kk.log:\n    ERROR xlsent: kk: 100 clean pairs give ")
    assert "fewer than the minimum of 500 (corpus.min_train_pairs)" in said
    assert "set corpus.min_pairs_action: warn" in said
