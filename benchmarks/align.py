"""Word aligners: throughput (pairs/s) and quality (AER against the hand-made gold links).

Throughput, on real l10n pairs (../shared/data/l10n, de-en, spaCy word tokens):
- `eflomal` (CPU), over `--pairs` pairs at once, as an alignment shard runs it;
- `wspalign` at a given shape (`tiny`, or `base` = the xlm-roberta-base shape WSPAlign
  fine-tunes) with random weights (no hub here: the speed does not depend on the weights),
  beside the raw forward throughput of the same model on the very batches the aligner built
  (timed inside): their ratio is the share of the time the device computes, the rest being
  the data path (question building, tokenisation, span decoding). On a GPU: `--device cuda`.
Quality, on ../shared/data/gold-align (de-en, fr-en): precision, recall and AER of the
diagonal baseline and of eflomal under each symmetrisation, estimated on the gold sentences
plus the rest of their Tatoeba files and 5,000 l10n pairs. (WSPAlign's quality needs its
released weights, which cannot be downloaded here.)

    .venv/bin/python benchmarks/align.py [--pairs 5000] [--wsp-shape tiny] [--device cpu]

Prints tables and writes benchmarks/out/align.json (git-ignored).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from itertools import islice
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaForQuestionAnswering

from xlsent.align.links import SentencePair
from xlsent.align.metrics import aer, diagonal_baseline, read_gold
from xlsent.align.statistical import EflomalAligner
from xlsent.align.symmetrize import METHODS
from xlsent.align.wspalign import WSPAlignConfig, WSPAligner
from xlsent.models.tokenizer import train_sentencepiece
from xlsent.tables import markdown
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


def timed(fn, *args) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


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


def wspalign_speed(pairs: list[SentencePair], shape: str, device: str, batch: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.parquet"
        pq.write_table(pa.table({"en": [p.en for p in pairs], "xx": [p.xx for p in pairs]}), corpus)
        train_sentencepiece({"de": corpus}, Path(tmp) / "tok", 8000)
        tokenizer = AutoTokenizer.from_pretrained(Path(tmp) / "tok")
    tokenizer.model_max_length = 512
    torch.manual_seed(0)
    model = XLMRobertaForQuestionAnswering(
        XLMRobertaConfig(
            vocab_size=len(tokenizer),
            max_position_embeddings=514,
            pad_token_id=tokenizer.pad_token_id,
            **SHAPES[shape],
        )
    ).to(device)
    timed_model = TimedForward(model)
    aligner = WSPAligner(timed_model, tokenizer, WSPAlignConfig(batch_size=batch, device=device))
    aligner.align(pairs[:50])  # warm-up
    timed_model.seconds = 0.0
    result, seconds = timed(aligner.align, pairs)
    questions = sum(
        len(p.en_words) + len(p.xx_words)
        for p, r in zip(pairs, result, strict=True)
        if r.status is None
    )
    return {
        "aligner": f"wspalign-{shape}",
        "device": device,
        "pairs": len(pairs),
        "seconds": seconds,
        "pairs_per_s": len(pairs) / seconds,
        "questions_per_s": questions / seconds,
        # The model alone on the same batches: what a data path with no cost would reach.
        "raw_forward_questions_per_s": questions / timed_model.seconds,
        "data_path_efficiency": timed_model.seconds / seconds,
    }


def eflomal_speed(pairs: list[SentencePair]) -> dict:
    _, seconds = timed(EflomalAligner().align, pairs)
    return {
        "aligner": "eflomal",
        "device": "cpu",
        "pairs": len(pairs),
        "seconds": seconds,
        "pairs_per_s": len(pairs) / seconds,
    }


def gold_quality() -> list[dict]:
    rows = []
    for lang, iso3, file in (("de", "deu", "deen.tsv"), ("fr", "fra", "fren.tsv")):
        gold = read_gold(SHARED / "gold-align" / file)
        pairs = [
            SentencePair(" ".join(g.en_tokens), " ".join(g.xx_tokens), g.en_tokens, g.xx_tokens)
            for g in gold
        ]
        lines = {g.line for g in gold}
        tatoeba = SHARED / "tatoeba/v1" / f"tatoeba.{iso3}-eng"
        en = Path(f"{tatoeba}.eng").read_text().splitlines()
        xx = Path(f"{tatoeba}.{iso3}").read_text().splitlines()
        extra = tokenized(
            [(e, x) for i, (e, x) in enumerate(zip(en, xx, strict=True)) if i not in lines], lang
        )
        extra += l10n_pairs(lang, 5000)
        fwd, rev = EflomalAligner().directional([*pairs, *extra])
        rows.append(
            {"pair": f"{lang}-en", "aligner": "diagonal", **aer(diagonal_baseline(gold), gold)}
        )
        for name, method in METHODS.items():
            predicted = [
                method(f, r) for f, r in zip(fwd[: len(gold)], rev[: len(gold)], strict=True)
            ]
            rows.append(
                {"pair": f"{lang}-en", "aligner": f"eflomal/{name}", **aer(predicted, gold)}
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--wsp-pairs", type=int, default=1000)
    parser.add_argument("--wsp-shape", choices=sorted(SHAPES), default="tiny")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    pairs = l10n_pairs("de", args.pairs)
    speed = [
        eflomal_speed(pairs),
        wspalign_speed(pairs[: args.wsp_pairs], args.wsp_shape, args.device, args.batch),
    ]
    quality = gold_quality()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "align.json").write_text(
        json.dumps({"speed": speed, "quality": quality}, indent=2) + "\n"
    )
    print(markdown(pl.DataFrame(speed), digits=2))
    print(
        markdown(
            pl.DataFrame(quality).select("pair", "aligner", "precision", "recall", "aer"), digits=3
        )
    )


if __name__ == "__main__":
    main()
