"""The demo and me5 shapes: the real `Trainer` stepped on the real demo corpus.

`prepare` runs the demo pipeline up to training (clean, sample, tokenizer, subwords, eflomal
links, word spans) in a directory; `interleaved` times each run's steps in this process, one
step of each in turn, so that load from other jobs falls on all alike; `isolated` runs each
one in its own process instead (its own peak memory), on data prepared once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

from training.record import Recorder, summary
from training.runs import described
from xlsent.models import encoder
from xlsent.models.sentence import SentenceSettings
from xlsent.train.loop import Trainer
from xlsent.train.settings import ModelSpec, TrainSettings

LANGS = ["de", "kk", "te", "zh"]


def prepare(
    workdir: Path,
    config: dict,
    langs: list[str],
    pretrained: Path | None = None,
    sentence: SentenceSettings | None = None,
) -> dict:
    """The demo pipeline up to training in `workdir`: corpus splits, tokenizer, subwords,
    word spans; returns their paths and the model's shape (`data`).

    `pretrained`: a pretrained model directory (`me5`), whose tokenizer encodes the corpus
    instead of one trained on it, each sentence after `sentence`'s prefix (as the tokenize
    stage's `xlsent subwords` / `word-spans` do for such a model)."""
    from xlsent.align import job
    from xlsent.align.shards import iter_shards, write_manifest
    from xlsent.corpus.clean import clean
    from xlsent.corpus.clean_base import CleanConfig
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
        "languages": langs,
        "tokenizer": tokenizer,
        "ids": {lang: workdir / f"{lang}.train.ids" for lang in langs},
        "spans": {lang: workdir / "align" / lang / "spans.parquet" for lang in langs},
        "dev": {lang: workdir / f"{lang}.dev.ids" for lang in langs},
        "shape": None if pretrained else {k: model[k] for k in encoder.SHAPE_KEYS},
        "pretrained": pretrained,
        "sentence": dataclasses.asdict(sentence),
    }


def save(data: dict, directory: Path) -> None:
    """`prepare`'s result as directory/data.json, for `isolated`'s children to `load`."""
    (directory / "data.json").write_text(json.dumps(data, default=str))


def load(directory: Path) -> dict:
    """The data `save` wrote into `directory`."""
    raw = json.loads((directory / "data.json").read_text())
    paths = {k: {lang: Path(p) for lang, p in raw[k].items()} for k in ("ids", "spans", "dev")}
    return {**raw, **paths, "tokenizer": Path(raw["tokenizer"])}


def trainer(workdir: Path, data: dict, settings: TrainSettings) -> Trainer:
    """The real trainer on the demo data, with its model: the demo config's scratch one, or
    the pretrained one it was tokenized for (`prepare`), with its pooling and prefix."""
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
    return Trainer(settings, spec, train, data["dev"], workdir / "ckpt")


def _rss_mb() -> float:
    """This process's resident memory now, in MB."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def interleaved(
    workdir: Path,
    data: dict,
    settings: dict[str, TrainSettings],
    steps: int,
    warmup: int,
    threads: int,
    peak_tflops: float | None,
    shape: str,
    freeze: bool | None = None,
) -> dict:
    """Each run's (`settings`: run → its settings) steps on `data`, interleaved in this
    process after `warmup` untimed steps of each. `freeze` (`me5`): the runs'
    `freeze_word_embeddings`, added to their rows."""
    torch.set_num_threads(threads)
    trainers, recorders = {}, {}
    for run, run_settings in settings.items():
        trainers[run] = trainer(workdir / run, data, run_settings)
        recorders[run] = Recorder(trainers[run].objective)
        trainers[run].objective.collator = recorders[run]
    ready_rss = _rss_mb()
    for _ in range(warmup):  # allocator, first kernels
        for run_trainer in trainers.values():
            run_trainer.train_step()
    step_s = {run: [] for run in settings}
    cpu_s = {run: [] for run in settings}  # the process's CPU time, every thread's
    flops = {run: [] for run in settings}
    for recorder in recorders.values():
        recorder.reset()
    for _ in range(steps):
        for run, run_trainer in trainers.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            record = run_trainer.train_step()
            step_s[run].append(time.perf_counter() - start)
            cpu_s[run].append(time.process_time() - start_cpu)
            flops[run].append(record["flops"])
    # The real tokens of the 2N sentences (a step's own count adds TLM's sequences).
    tokens = {run: sum(recorders[run].tokens) for run in settings}
    first = next(iter(trainers.values()))
    model = first.model.config
    batch = first.settings.batch_size
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "shape": shape,
        "device": f"cpu x{threads} ({platform.processor() or platform.machine()})",
        "model": {k: getattr(model, k) for k in (*encoder.SHAPE_KEYS, "vocab_size")},
        "languages": data["languages"],
        "batch_pairs": batch,
        "micro_batch_pairs": first.settings.micro_batch_size,
        # Of this process (one run per process with `isolated`): the peak resident memory,
        # and how far it rose once the data and models were loaded (what training took).
        "peak_rss_mb": peak_rss,
        "training_rss_mb": peak_rss - ready_rss,
        "max_length": first.settings.max_length,
        "sentence": data["sentence"],  # the model's pooling and prefix
        "word_alignment": alignment_stats(trainers),
        "settings": {run: described(trainers[run].settings) for run in settings},
        "runs": [
            summary(
                run,
                step_s[run],
                tokens[run],
                batch,
                recorders[run],
                flops[run],
                peak_tflops,
                cpu_s[run],
            )
            | ({} if freeze is None else {"freeze": "on" if freeze else "off"})
            for run in settings
        ],
    }


def isolated(script: str, children: list[list[str]], data_dir: Path) -> dict:
    """Each of `children` (the options of one run of `script`, a training benchmark) in its
    own process, one after the other, on the data `save`d in `data_dir`: its own step time
    and memory (a process's peak memory is the only honest measure on a CPU). Each child
    writes `interleaved`'s result of its one run (`--json-out`); they are merged."""
    results = []
    for index, options in enumerate(children):
        out = data_dir / f"child-{index}.json"
        command = [sys.executable, script, *options, f"--data-dir={data_dir}", f"--json-out={out}"]
        subprocess.run(command, check=True)
        results.append(json.loads(out.read_text()))
    merged = {**results[0], "runs": [r["runs"][0] for r in results], "isolated": True}
    for result, run in zip(results, merged["runs"], strict=True):
        run["peak_rss_mb"] = result["peak_rss_mb"]
        run["training_rss_mb"] = result["training_rss_mb"]
    merged["settings"] = {
        row_name(run): v
        for r, run in zip(results, merged["runs"], strict=True)
        for v in r["settings"].values()
    }
    stats = [r["word_alignment"] for r in results if r["word_alignment"]]
    merged["word_alignment"] = stats[0] if stats else None
    return merged


def row_name(row: dict) -> str:
    """A row's run, and its freeze setting where it has one (`me5`)."""
    return row["run"] + (f" freeze={row['freeze']}" if "freeze" in row else "")


def alignment_stats(trainers: dict[str, Trainer]) -> dict | None:
    """Link density of the word-span data a word-level run trained on (per pair, means)."""
    for run_trainer in trainers.values():
        if run_trainer.words is not None:
            words, pairs = run_trainer.words, len(run_trainer.train_data)
            train = run_trainer.train_data
            return {
                "pairs": pairs,
                "links_per_pair": len(words.links.values) / pairs,
                "xx_words_per_sentence": len(words.xx_starts.values) / pairs,
                "en_words_per_sentence": len(words.en_starts.values) / pairs,
                "subwords_per_sentence": (len(train.xx.values) + len(train.en.values))
                / (2 * pairs),
            }
    return None
