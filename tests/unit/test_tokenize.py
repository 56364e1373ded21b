import hashlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
from support import save_tiny_model
from transformers import AutoTokenizer

from xlsent.tokenize import subwords, word_tokenizer, words


def test_spacy_blank_tokenizer_splits_clitics_and_punctuation():
    tokenize = word_tokenizer("en")
    assert next(iter(tokenize(["It's not here, is it?"]))) == [
        "It",
        "'s",
        "not",
        "here",
        ",",
        "is",
        "it",
        "?",
    ]
    french = word_tokenizer("fr")
    assert next(iter(french(["J'ai quelqu'un."]))) == ["J'", "ai", "quelqu'", "un", "."]


def test_a_word_tokenizer_loads_no_torch_and_leaves_it_importable():
    """A word tokenization job never imports torch (thinc would, a second of each job), and
    a process that needs torch after spaCy still gets it. A fresh interpreter: this one has
    torch already."""
    code = (
        "import sys; from xlsent.tokenize import word_tokenizer; "
        "words = next(iter(word_tokenizer('de')(['Das ist gut.']))); "
        "print(words, 'torch' in sys.modules); import torch; print(torch.ones(2).sum().item())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["['Das', 'ist', 'gut', '.'] False", "2.0"]


def test_language_without_spacy_support_falls_back_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        kazakh = word_tokenizer("kk")
    assert "kk" in caplog.text and "multi-language" in caplog.text
    assert next(iter(kazakh(["Қазақстан Республикасы, 1991."]))) == [
        "Қазақстан",
        "Республикасы",
        ",",
        "1991",
        ".",
    ]


def test_unspaced_script_fallback_splits_characters(caplog):
    # Thai needs PyThaiNLP in spaCy; without it, characters (as spaCy does for Chinese).
    with caplog.at_level(logging.WARNING):
        thai = word_tokenizer("th")
    tokens = next(iter(thai(["ภาษาไทย"])))
    assert "".join(tokens) == "ภาษาไทย"
    assert len(tokens) == len("ภาษาไทย")


def test_words_writes_one_row_per_pair(small_corpus, tmp_path):
    out = tmp_path / "words.parquet"
    stats = words(small_corpus["de"]["train"], "de", out)
    table = pq.read_table(out)
    corpus = pq.read_table(small_corpus["de"]["train"])
    assert table.column_names == ["id", "en_words", "xx_words"]
    assert table.column("id").to_pylist() == corpus.column("id").to_pylist()
    assert stats["pairs"] == corpus.num_rows
    row = table.slice(0, 1).to_pylist()[0]
    source = corpus.slice(0, 1).to_pylist()[0]
    assert "".join(row["xx_words"]) == source["xx"].replace(" ", "")


def test_scratch_tokenizer_has_the_xlmr_layout(small_tokenizer):
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    assert (tokenizer.cls_token_id, tokenizer.pad_token_id, tokenizer.sep_token_id) == (0, 1, 2)
    assert tokenizer.unk_token_id == 3
    assert tokenizer.mask_token_id == len(tokenizer) - 1
    ids = tokenizer("Deutschland")["input_ids"]
    assert ids[0] == 0 and ids[-1] == 2 and 3 not in ids
    # Every SentencePiece piece survives the conversion, the most frequent ones included.
    assert len(tokenizer) == 1000
    assert {"▁", "a", "e"} <= set(tokenizer.get_vocab())


# The tokenizer rule's copy of a pretrained tokenizer and a trained model's export, of MODEL
# into OUT/tokenizer and OUT/export.
SAVE_TOKENIZERS = """
import sys
from pathlib import Path
from transformers import AutoModel
from xlsent.models import encoder
from xlsent.models.tokenizer import save_pretrained_tokenizer
model, out = Path(sys.argv[1]), Path(sys.argv[2])
save_pretrained_tokenizer(model, out / "tokenizer")
encoder.save(AutoModel.from_pretrained(model), model, out / "export", 40)
"""


def _digests(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_saved_tokenizers_are_the_same_bytes_with_or_without_offline_mode(tmp_path):
    """transformers 5 writes `local_files_only` into tokenizer_config.json: True where
    HF_HUB_OFFLINE was set when the tokenizer was loaded. A tokenizer directory's bytes (the
    trainer fingerprints every file of it) must not follow an environment variable."""
    model = save_tiny_model(tmp_path / "model")
    online = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    outs = {}
    for name, env in (("online", online), ("offline", {**online, "HF_HUB_OFFLINE": "1"})):
        outs[name] = tmp_path / name
        proc = subprocess.run(
            [sys.executable, "-c", SAVE_TOKENIZERS, str(model), str(outs[name])],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert (outs["online"] / "export" / "tokenizer_config.json").is_file()
    assert _digests(outs["offline"]) == _digests(outs["online"])


def test_subwords_are_the_encoders_ids_without_special_tokens(
    small_subwords, small_tokenizer, small_corpus
):
    """The subword stage reads tokenizer.json with `tokenizers` alone; training and
    evaluation encode with transformers' tokenizer: every id of every pair must agree."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    for lang, splits in small_subwords.items():
        for split, path in splits.items():
            ids = pq.read_table(path)
            text = pq.read_table(small_corpus[lang][split])
            assert ids.column("id").to_pylist() == text.column("id").to_pylist()
            for side in ("en", "xx"):
                expected = tokenizer(text.column(side).to_pylist(), add_special_tokens=False)
                assert ids.column(f"{side}_ids").to_pylist() == expected["input_ids"]


def test_prefixed_subwords_start_with_the_prefixs_tokens(
    small_subwords, small_tokenizer, small_corpus, tmp_path
):
    """The model's prefix goes before every sentence, the en prefix on the English side and
    the xx prefix on the other: the ids are those of `prefix + sentence`, as every evaluation
    tokenizes it, which are the prefix's tokens and then the sentence's own."""
    tokenizer = AutoTokenizer.from_pretrained(small_tokenizer)
    out = tmp_path / "prefixed.parquet"
    subwords(small_corpus["kk"]["dev"], small_tokenizer, out, {"en": "query: ", "xx": "passage: "})
    prefixed, plain = pq.read_table(out), pq.read_table(small_subwords["kk"]["dev"])
    text = pq.read_table(small_corpus["kk"]["dev"])
    for side, before in (("en", "query: "), ("xx", "passage: ")):
        head = tokenizer(before, add_special_tokens=False)["input_ids"]
        assert len(head) > 1
        rows = prefixed.column(f"{side}_ids").to_pylist()
        assert rows == [head + row for row in plain.column(f"{side}_ids").to_pylist()]
        texts = [before + sentence for sentence in text.column(side).to_pylist()]
        assert rows == tokenizer(texts, add_special_tokens=False)["input_ids"]
