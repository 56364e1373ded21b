"""Helpers the tests share: paths of the checkout, and running the real Snakemake workflow.

Plain functions and constants only; fixtures live in the conftest.py of their directory.
`[tool.pytest.ini_options] pythonpath` puts tests/ on sys.path, so every test module can
`from support import ...`.

A workflow run works in its own directory (`--directory`), with the repository's Snakefile
and a config file written there, so `results/` and `logs/` of the checkout are never touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import snakemake_fork
import yaml

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
DEMO_CONFIG = ROOT / "resources" / "demo" / "config.yaml"
# The JUnit report's property of a test's CPU seconds (tests/conftest.py, tests/durations.py).
CPU_PROPERTY = "cpu_seconds"


def tiny_shape(layers: int = 1, **overrides: float) -> dict:
    """The scratch encoder of the unit tests (32 wide, 2 heads), with `layers` layers;
    `overrides` are more XLM-R config keys (dropout, say)."""
    return {
        "hidden_size": 32,
        "num_hidden_layers": layers,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        **overrides,
    }


def tiny_encoder(layers: int = 3, kind: str = "xlm-roberta"):
    """A tiny seeded XLM-R (positions from padding_idx + 1), or BERT (multilingual-e5's and
    mBERT's architecture, whose embeddings keep no padding index and number positions from
    0), without dropout, in eval mode."""
    import torch
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(0)
    config_class, model_class = {
        "xlm-roberta": (XLMRobertaConfig, XLMRobertaModel),
        "bert": (BertConfig, BertModel),
    }[kind]
    config = config_class(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=40,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=1,
    )
    return model_class(config).eval()


def scratch_objectives(tokenizer_dir: Path, shape: dict, **settings):
    """A method's training objectives over a seeded scratch encoder of `shape` (`tiny_shape`)
    with the tokenizer of `tokenizer_dir`; `settings` are TrainSettings' (method, weights)."""
    import torch

    from xlsent.models import encoder
    from xlsent.train.collate import Tokens
    from xlsent.train.objectives import Objectives
    from xlsent.train.settings import TrainSettings

    torch.manual_seed(0)
    model = encoder.build("scratch", tokenizer_dir, max_length=16, shape=shape)
    return Objectives(model, TrainSettings(seed=0, **settings), Tokens.read(tokenizer_dir))


def save_tiny_model(directory: Path, kind: str = "xlm-roberta") -> Path:
    """A local pretrained model directory as save_pretrained writes one: a one-layer
    `tiny_encoder` (config.json, model.safetensors) and a word-level fast tokenizer over its
    first ids (tokenizer.json, tokenizer_config.json). Returns `directory`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tiny_encoder(layers=1, kind=kind).save_pretrained(directory)
    special = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>", "mask": "<mask>"}
    words = [*special.values(), "the", "cat", "die", "katze"]
    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(words)}, "<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, **{f"{role}_token": token for role, token in special.items()}
    ).save_pretrained(directory)
    return directory


def train_settings(**settings) -> dict:
    """The TrainSettings keys of a unit test's training: TR on the CPU, a few steps of a small
    batch over the unit tests' corpus (`small_subwords`), evaluated on 100 dev pairs a
    language; `settings` replace these keys or add others."""
    return {
        "seed": 7,
        "max_length": 16,
        "lr": 1e-3,
        "batch_size": 32,
        "micro_batch_size": 16,
        "max_steps": 24,
        "eval_every": 8,
        "checkpoint_every": 4,
        "log_every": 4,
        "dev_max_pairs": 100,
        "device": "cpu",
        **settings,
    }


def scratch_trainer(
    subwords: dict,
    tokenizer: Path,
    checkpoints: Path,
    settings: dict,
    *,
    shape: dict | None = None,
    train: dict | None = None,
):
    """A Trainer of `settings` (`train_settings`) that starts a scratch encoder of `shape`
    (`tiny_shape()` unless given) with the tokenizer of `tokenizer`, trains on the training
    splits of `subwords` ({lang: {"train": path, "dev": path}}, the `small_subwords` fixture)
    or on `train`, evaluates on its dev splits and keeps its checkpoints in `checkpoints`."""
    from xlsent.train.loop import Trainer
    from xlsent.train.settings import ModelSpec, TrainSettings

    return Trainer(
        TrainSettings(**settings),
        ModelSpec("scratch", tokenizer, shape=tiny_shape() if shape is None else shape),
        {lang: p["train"] for lang, p in subwords.items()} if train is None else train,
        {lang: p["dev"] for lang, p in subwords.items()},
        checkpoints,
    )


def tiny_qa_model(tokenizer, layers: int = 1, max_positions: int = 128 + 128 + 4 + 2):
    """A tiny randomly initialised XLM-R question-answering model (seed 0), a WSPAlign-style
    aligner over `tokenizer`'s vocabulary: arbitrary but fixed, non-trivial answers; in eval
    mode. The positions hold a question and a context of 128 subwords each, their special
    tokens and XLM-R's offset of the padding index."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForQuestionAnswering

    torch.manual_seed(0)
    config = XLMRobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return XLMRobertaForQuestionAnswering(config).eval()


def clean_demo(lang: str, out: Path, **config) -> dict:
    """`lang`'s pairs of the embedded demo data (the training part: a fifth held out) cleaned
    to `out`, every pair of a token or more kept; `config` are more CleanConfig keys. Returns
    the cleaning's stats."""
    from xlsent.corpus.clean import clean
    from xlsent.corpus.clean_base import CleanConfig
    from xlsent.corpus.readers import demo

    return clean(demo.bitexts(lang, 0.2), lang, out, CleanConfig(min_tokens=1, **config))


# corpus.clean as the clean rule passes it (xlsent.config.clean_settings).
CLEAN_SETTINGS = json.dumps({"max_length_ratio": 3.0, "min_tokens": 4, "style": "words"})


def clean_kk_args(corpus: Path, out: Path) -> list[str]:
    """The arguments of kk's clean job (`xlsent clean ...`) over the local corpus files in
    `corpus`, writing clean.parquet and stats.json in `out`."""
    return [
        *("clean", "--lang", "kk", "--source", "local", "--local-dir", str(corpus)),
        *("--settings", CLEAN_SETTINGS),
        *("--out", str(out / "clean.parquet"), "--stats", str(out / "stats.json")),
    ]


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Inside: this process's writes beyond `limit` bytes fail with EFBIG (no SIGXFSZ)."""
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old_limit[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)


def ragged(rows: list[list[int]]):
    """Token ids by row as the training data holds them (int32)."""
    import numpy as np

    from xlsent.ragged import Ragged

    return Ragged.from_rows([np.array(r, dtype=np.int32) for r in rows])


def tatoeba_results(run: str, seed: int, accuracy: dict[str, tuple[float, float]]):
    """One seed's Tatoeba evaluation file as the tables read it: xx2en, en2xx and their mean
    per language, from {lang: (xx2en, en2xx)}."""
    from xlsent.evaluate.results import results_frame

    rows = [
        {"lang": lang, "direction": direction, "metric": "accuracy", "value": value, "n": 1000}
        for lang, (xx2en, en2xx) in accuracy.items()
        for direction, value in (("xx2en", xx2en), ("en2xx", en2xx), ("mean", (xx2en + en2xx) / 2))
    ]
    return results_frame(rows, "tatoeba", run, seed)


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """The command line of Snakemake on the repository's workflow in `workdir`."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(ROOT / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]


# A hang guard, not a budget: a run still going after this long has hung. The Slurm demo was
# once killed at 25 of 26 steps by a 540 s limit on a CI machine where `make test` took 53 min
# (27 at the landing before), so no test sets a tighter limit on a whole workflow run.
HANG_LIMIT_S = 1800


def snakemake_env(**extra: str) -> dict[str, str]:
    """The environment of a Snakemake run: the venv's commands (xlsent) first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return dict(os.environ, PATH=path, **extra)


def snakemake(
    workdir: Path,
    *args: str,
    timeout: float = HANG_LIMIT_S,
    should_fail: bool | None = False,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run Snakemake on the repository's workflow in `workdir`; fail the test with its output
    if it fails (or, with `should_fail`, if it does not; None: either is fine)."""
    env = env or snakemake_env()
    command = snakemake_command(workdir, *args)
    if snakemake_fork.forks(args, env):
        proc = snakemake_fork.run(command, env, timeout)
    else:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if should_fail is not None and (proc.returncode != 0) != should_fail:
        outcome = "succeeded" if should_fail else "failed"
        pytest.fail(
            f"snakemake {' '.join(args)} {outcome}:\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


def planned_jobs(
    workdir: Path, configfile: Path, *targets: str, env: dict[str, str] | None = None
) -> dict[str, int]:
    """The jobs a dry run would execute, as {rule: count} (empty: nothing to do); `env` as
    `snakemake`'s."""
    # Targets first: --configfile takes several values and would swallow them.
    args = (*targets, "--dry-run", "--configfile", str(configfile))
    out = snakemake(workdir, *args, env=env).stdout
    if "Nothing to be done" in out:
        return {}
    stats = out.split("Job stats:")[1]
    return {
        rule: int(count)
        for rule, count in re.findall(r"^(\w+)\s+(\d+)$", stats, flags=re.MULTILINE)
        if rule != "total"
    }


def write_config(path: Path, config: dict) -> Path:
    """`config` written as YAML to `path` (keys in their order); returns `path`."""
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def demo_config() -> dict:
    """A fresh copy of the embedded demo's config (resources/demo/config.yaml)."""
    return yaml.safe_load(DEMO_CONFIG.read_text())


# The real-data run of the workflow tests (the `l10n_run` fixture): English-centric
# localization strings of ../shared/data/l10n for four languages (sw has 36 pairs), the
# first L10N_LINES lines of each file copied into the run's own `corpus/` folder (so that a
# test can change a copy; each file stays under Snakemake's 1 MB checksum limit), evaluated
# on the real Tatoeba files.
L10N_LANGS = ["de", "kk", "te", "sw"]
L10N_LINES = 2000


def l10n_corpus_file(lang: str, side: str) -> str:
    """The name of `lang`'s file of `side` (en or lang) in the l10n folder."""
    pair = "-".join(sorted(("en", lang)))
    return f"l10n.{pair}.{side}.gz"


def l10n_config() -> dict:
    """The demo config on the l10n corpus: TR and WACSE (on eflomal links) from scratch, a
    few steps each, Tatoeba on the real test set."""
    config = demo_config()
    config["languages"] = L10N_LANGS
    config["corpus"] = {
        "source": "local",
        "local": {"dir": "corpus"},  # inside the work directory: copied with it
        # Interface strings are short (4-8 words); DAP's ≤3-token filter would drop most.
        "clean": {"min_tokens": 2},
        "max_pairs": 3000,
        "dev_pairs": 100,
        # sw has 36 pairs: below the minimum, kept (and marked) instead of stopping the run.
        "min_pairs_action": "warn",
    }
    config["align"]["shard_size"] = 1000  # two shards of each language but sw
    config["models"] = {"tiny": {**config["models"]["tiny"], "vocab_size": 1000}}
    config["runs"] = {run: {**config["runs"][run], "init_from": None} for run in ("tr", "wacse")}
    config["train"].update(
        max_steps=5,
        eval_every=5,
        checkpoint_every=5,
        warmup_steps=1,
        batch_size=32,
        micro_batch_size=32,
    )
    config["evaluate"] = {"tatoeba": {"dir": str(SHARED / "tatoeba" / "v1")}}
    config["tables"] = {"groups": ["low4"], "ablation": {"runs": []}}
    # WACSE Figure 1 from 40 word pairs, not 500: the t-SNE of 1,000 points was half of the
    # figure job's 12 CPU-s, paid again by each test that reruns the trainings.
    config["figures"] = {"aligned_words": {"pairs": 40}}
    return config


# Model weights and training checkpoints: 2.5 of the demo run's 2.6 GB (me5 three times).
WEIGHT_SUFFIXES = (".safetensors", ".pt")


def _copy_or_link(src: str, dst: str) -> None:
    if src.endswith(WEIGHT_SUFFIXES):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def copy_tree(src: Path, dst: Path, *, link_weights: bool = False) -> Path:
    """A copy of a finished run (results, logs, .snakemake metadata) for a test to change.

    With `link_weights`, its weight files are hard links to the original's, not copies: the
    workflow writes weights only into a new directory or under a temporary name that it
    renames (xlsent.io.atomic_path), so a run in the copy replaces a link and never writes
    through it. For the demo run (me5); a test must not change a linked file in place."""
    copy = _copy_or_link if link_weights else shutil.copy2
    shutil.copytree(src, dst, symlinks=True, copy_function=copy)
    return dst
