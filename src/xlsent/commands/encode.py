"""Encode stage: a run's vectors of every distinct sentence of one evaluation source, written
once for every evaluation that reads them (`xlsent.evaluate.vectors`); and the arguments of
every command that loads a sentence encoder or reads the Tatoeba files.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import TYPE_CHECKING

from xlsent.arguments import settings_object
from xlsent.commands import Subparsers, lang_paths, log, require, resolve_device
from xlsent.evaluate import TATOEBA_TEXTS, EncodingSettings

if TYPE_CHECKING:
    from xlsent.evaluate.encoding import Encoder


def register(sub: Subparsers) -> None:
    """Add encode."""
    _add_encode(sub)


def add_encoder_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of a command that loads a sentence encoder run (`loaded_encoder`)."""
    p.add_argument("--model", required=True, help="the run's model directory")
    p.add_argument(
        "--encoding",
        required=True,
        help="JSON of max_length, batch_size, device (auto, cpu, cuda or cuda:N) and "
        "precision (fp32 or bf16; fp32 if absent), as xlsent.config.encoding_settings gives "
        "them for the run",
    )
    p.add_argument("--threads", type=int, required=True, help="the job's CPU threads")


def parsed_encoding(args: argparse.Namespace) -> EncodingSettings:
    """The `--encoding` settings object."""
    return settings_object(EncodingSettings, json.loads(args.encoding), "encoding")


def loaded_encoder(args: argparse.Namespace, encoding: EncodingSettings | None = None) -> Encoder:
    """The encoder of `--model` as `--encoding` says (or `encoding`, already parsed), torch
    limited to the job's `--threads`."""
    import torch

    from xlsent.models.load import load_encoder

    torch.set_num_threads(args.threads)
    encoding = encoding or parsed_encoding(args)
    device = resolve_device(encoding.device)
    return load_encoder(
        args.model, encoding.max_length, encoding.batch_size, device, encoding.precision
    )


def encoding_devices(args: argparse.Namespace, encoding: EncodingSettings) -> dict[str, object]:
    """What the encoder of `--model` computes on as `encoding` says (`encoded_on`), and what
    that model trained on (`trained_on`; `xlsent.devices`): the records of every evaluation,
    whose tables say them on every row."""
    from xlsent.devices import device_record, model_trained_on

    return {
        "encoded_on": device_record(resolve_device(encoding.device), encoding.precision),
        "trained_on": model_trained_on(args.model),
    }


def add_tatoeba_text_argument(p: argparse.ArgumentParser, when: str = "") -> None:
    """How a line of the Tatoeba files is read (`evaluate.tatoeba.text`): every job that
    reads them is passed the one setting, so that the encode job stores each vector under
    the text the evaluations look it up by."""
    p.add_argument(
        "--tatoeba-text",
        choices=TATOEBA_TEXTS,
        required=not when,
        help="how a Tatoeba line is read: laser (as it stands) or dap (DAP's quotes removed)"
        + (f"; {when}" if when else ""),
    )


def _add_encode(sub: Subparsers) -> None:
    p = sub.add_parser(
        "encode", help="a run's vectors of every distinct sentence of one evaluation source"
    )
    p.add_argument("--source", choices=["tatoeba", "mining", "bucc2018"], required=True)
    p.add_argument("--dir", help="tatoeba, bucc2018: the folder of the files")
    p.add_argument("--langs", nargs="+", help="tatoeba, bucc2018: the languages")
    p.add_argument("--splits", nargs="+", help="bucc2018: the splits")
    p.add_argument("--pairs", nargs="+", help="mining: LANG=PATH of each held-out split")
    add_tatoeba_text_argument(p, "tatoeba")
    add_encoder_arguments(p)
    p.add_argument("--out", required=True, help="the vector file (Arrow IPC)")
    p.set_defaults(handler=encode)


def encode(args: argparse.Namespace) -> None:
    from xlsent.evaluate import vectors
    from xlsent.io import sha256_tree
    from xlsent.models.load import TRAINING_RECORDS

    encoding = parsed_encoding(args)
    # The sentences before the encoder: a missing or damaged file fails in seconds.
    if args.source == "tatoeba":
        require(args, "with --source tatoeba", "dir", "langs", "tatoeba_text")
        sentences = vectors.tatoeba_sentences(args.dir, args.langs, args.tatoeba_text)
    elif args.source == "mining":
        require(args, "with --source mining", "pairs")
        sentences = vectors.mining_sentences(lang_paths(args.pairs))
    else:
        require(args, "with --source bucc2018", "dir", "langs", "splits")
        sentences = vectors.bucc_sentences(args.dir, args.langs, args.splits)
    table = vectors.encode_sentences(loaded_encoder(args, encoding), sentences)
    metadata = {
        "source": args.source,
        "model": args.model,
        # What the encoder reads: the training records hold times, which differ run to run.
        "model_sha256": sha256_tree(args.model, skip=TRAINING_RECORDS),
        # The keys the job passed, in the settings' order: one left out at its default
        # (precision) stays out, so the vectors of a run encoded before it existed are the
        # same bytes.
        "encoding": {
            key: value
            for key, value in dataclasses.asdict(encoding).items()
            if key in json.loads(args.encoding)
        },
        # The evaluations pass both to their results.
        **encoding_devices(args, encoding),
    }
    vectors.write(args.out, table, metadata)
    log.info("wrote %d sentence vectors to %s", len(table), args.out)
