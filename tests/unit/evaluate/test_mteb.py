"""The MTEB bridge: our encoders under MTEB's evaluators, LocalTatoeba against our Tatoeba, and
MTEB's result JSON into the table.

Importing mteb takes about 7 s (torch, datasets, scikit-learn), so every test here is slow and
imports the bridge inside, keeping the fast loop's collection quick.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support import SHARED

TATOEBA = SHARED / "tatoeba" / "v1"
needs_tatoeba = pytest.mark.skipif(
    not TATOEBA.is_dir(), reason=f"the LASER Tatoeba files are not at {TATOEBA}"
)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def xm():
    from xlsent.evaluate import mteb

    return mteb


def write_laser(directory: Path, iso3: str, xx: list[str], en: list[str]) -> None:
    (directory / f"tatoeba.{iso3}-eng.{iso3}").write_text("".join(f"{s}\n" for s in xx))
    (directory / f"tatoeba.{iso3}-eng.eng").write_text("".join(f"{s}\n" for s in en))


def circle_encoder(angles: dict[str, float]):
    """Each sentence at its angle on the unit circle: cosine similarity ranks by angle gap."""

    def encode(sentences, lang):
        radians = np.deg2rad([angles[s] for s in sentences])
        return np.stack([np.cos(radians), np.sin(radians)], axis=1)

    return encode


# -- languages -----------------------------------------------------------------------------------


def test_our_table_holds_the_languages_of_mtebs_tatoeba(xm):
    from mteb.tasks.bitext_mining.multilingual.tatoeba_bitext_mining import _LANGUAGES

    from xlsent import languages

    theirs = {subset.split("-")[0]: scripts[0] for subset, scripts in _LANGUAGES.items()}
    ours = {languages.get(c).iso3: languages.get(c) for c in languages.GROUPS["tatoeba112"]}
    assert set(ours) == set(theirs)
    # Where the scripts differ, ours is the files' (test_languages checks it against them).
    differ = {iso3 for iso3, lang in ours.items() if f"{iso3}-{lang.script}" != theirs[iso3]}
    assert differ == {"ber", "max", "srp"}


def test_subsets_of_one_language_name_it_pairs_do_not(xm, tmp_path):
    import mteb

    sts22, xnli = mteb.get_task("STS22.v2"), mteb.get_task("XNLI")
    assert xm.subset_language(sts22.metadata, "de") == "de"
    assert xm.subset_language(sts22.metadata, "de-en") is None
    assert xm.subset_language(xnli.metadata, "zh") == "zh"  # zho-Hans: the macrolanguage
    write_laser(tmp_path, "ang", ["Hwæt"], ["Lo"])
    local = xm.LocalTatoeba.over(tmp_path, ["ang"]).metadata
    assert xm.subset_language(local, "ang-eng") is None
    # Flores encodes a parallel dataset's columns, named language_Script.
    assert xm.subset_language(local, "kaz_Cyrl") == "kk"
    assert xm.subset_language(local, "zho_Hant") == "zh"
    assert xm.subset_language(local, "ace_Arab") is None  # Acehnese: not in our table


def test_tasks_keep_the_subsets_of_english_and_the_evaluated_languages(xm, tmp_path):
    # MTEB's task metadata only: nothing is downloaded.
    tatoeba, sts17, flores = xm.tasks(["Tatoeba", "STS17", "FloresBitextMining"], ["zh"], None)
    assert tatoeba.hf_subsets == ["cmn-eng"]  # LASER's Mandarin code
    assert sorted(sts17.hf_subsets) == ["en-en"]  # no Chinese STS17 pair
    # Flores' pairs among English and Chinese (the macrolanguage zho, both scripts).
    assert len(flores.hf_subsets) == 6
    assert {lang for s in flores.hf_subsets for lang in s.split("-")} == {
        "eng_Latn",
        "zho_Hans",
        "zho_Hant",
    }
    with pytest.raises(xm.MtebError, match=r"'STS71' not found. Did you mean: 'STS17'"):
        xm.tasks(["STS71"], ["de"], None)
    with pytest.raises(xm.MtebError, match=r"BUCC.v2 has no subset in English and .* \(kk\)"):
        xm.tasks(["BUCC.v2"], ["kk"], None)
    with pytest.raises(xm.MtebError, match="LocalTatoeba reads the LASER files of"):
        xm.tasks(["LocalTatoeba"], ["kk"], None)


# -- the encoder ---------------------------------------------------------------------------------

TINY_SHAPE = {
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
}


def test_mteb_encodes_with_the_saved_model_and_the_subsets_language(xm, small_tokenizer, tmp_path):
    import torch
    from datasets import Dataset
    from torch.utils.data import DataLoader

    from xlsent.models import encoder
    from xlsent.models.load import load_encoder

    torch.manual_seed(0)
    model = encoder.build("scratch", small_tokenizer, max_length=16, shape=TINY_SHAPE)
    encoder.add_language_embeddings(model, ["kk", "de"])
    encoder.save(model, small_tokenizer, tmp_path / "model", max_length=16)
    ours = load_encoder(tmp_path / "model", max_length=16, batch_size=2)
    wrapped = xm.XlsentEncoder(ours, "tiny", "seed0", needs_language=True, max_tokens=16)

    texts = ["Сәлем!", "Рақмет.", "Қош келдіңіз."]
    # As MTEB hands texts to an encoder: batches of {"text": [...]}.
    batches = DataLoader(Dataset.from_dict({"text": texts}), batch_size=2)
    write_laser(tmp_path, "kaz", texts, ["Hello!", "Thanks.", "Welcome."])
    metadata = xm.LocalTatoeba.over(tmp_path, ["kk"]).metadata
    vectors = wrapped.encode(batches, task_metadata=metadata, hf_split="test", hf_subset="kaz_Cyrl")
    assert vectors.shape == (3, 16)
    np.testing.assert_array_equal(vectors, ours(texts, "kk"))
    assert not np.allclose(vectors, ours(texts, "de"))  # the language embedding counts
    with pytest.raises(xm.MtebError, match="subset 'kaz-eng', which pairs two languages"):
        wrapped.encode(batches, task_metadata=metadata, hf_split="test", hf_subset="kaz-eng")
    with pytest.raises(xm.MtebError, match="has language embeddings for \\['de', 'en', 'kk'\\]"):
        wrapped.encode(batches, task_metadata=metadata, hf_split="test", hf_subset="tel_Telu")


def test_eval_mteb_writes_mtebs_json_and_where_it_ran(xm, small_tokenizer, tmp_path):
    """The command the eval_mteb rule runs: MTEB's JSON of each task and, beside it, what the
    model trained on (its run.json's `trained_on`) and what encoded the task (here the CPU)."""
    from xlsent.cli import main
    from xlsent.models import encoder

    model = encoder.build("scratch", small_tokenizer, max_length=16, shape=TINY_SHAPE)
    encoder.save(model, small_tokenizer, tmp_path / "model", max_length=16)
    trained_on = [{"device": "cuda", "device_name": "NVIDIA H200", "precision": "bf16"}]
    (tmp_path / "model/run.json").write_text(json.dumps({"trained_on": trained_on}))
    (tmp_path / "laser").mkdir()
    write_laser(tmp_path / "laser", "kaz", ["Сәлем!", "Рақмет."], ["Hello!", "Thanks."])
    out = tmp_path / "mteb"
    encoding = {"batch_size": 2, "device": "auto", "max_length": 16}
    main(["eval-mteb", "--tasks", "LocalTatoeba", "--langs", "kk", "--tatoeba-dir",
          str(tmp_path / "laser"), "--model", str(tmp_path / "model"), "--encoding",
          json.dumps(encoding), "--threads", "1", "--run", "tiny", "--seed", "0", "--out",
          str(out)])  # fmt: skip
    assert sorted(p.name for p in out.iterdir()) == ["LocalTatoeba.json", xm.DEVICES_FILE]
    assert [row["subset"] for row in xm.read_results(out)] == ["kaz-eng"]
    # `auto` resolved: the device the job encoded on, not the one asked for.
    assert xm.read_devices(out) == {
        "train": trained_on,
        "eval": {"device": "cpu", "precision": "fp32"},
    }


# -- LocalTatoeba ----------------------------------------------------------------------------------


@needs_tatoeba
@pytest.mark.shared
def test_mteb_tatoeba_accuracy_is_our_xx2en_accuracy(xm, tmp_path):
    """MTEB's `accuracy` on LocalTatoeba is our Tatoeba `xx2en` accuracy over 100: the foreign
    sentence (MTEB's sentence1) retrieves among the English ones (sentence2) by cosine."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from xlsent.evaluate import tatoeba

    # Dutch, Low German and Old English (the last two only evaluated, never trained). An
    # encoder with real accuracies and no near ties: character 2-4-gram tf-idf, fitted on
    # all their sentences. Its top two similarities differ by 4e-6 at least for every query
    # (5e-6 the other way), far above float32 rounding, so faiss and torch rank alike; an
    # untrained transformer's CLS vectors are nearly parallel (cosine 0.99999, top two apart
    # by 1e-10), and there rounding picks the neighbour.
    langs = ["nl", "nds", "ang"]
    pairs = {lang: tatoeba.read_pairs(TATOEBA, lang) for lang in langs}
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4))
    vectorizer.fit([s for xx, en in pairs.values() for s in [*xx, *en]])

    def encode(sentences, lang):
        return vectorizer.transform(sentences).toarray().astype(np.float32)

    ours = {
        (r["lang"], r["direction"]): round(r["value"] * r["n"] / 100)
        for r in tatoeba.evaluate(encode, TATOEBA, langs)
    }
    wrapped = xm.XlsentEncoder(encode, "tfidf", "seed0")
    out = tmp_path / "mteb"
    [result] = xm.run(wrapped, xm.tasks(["LocalTatoeba"], langs, str(TATOEBA)), out, 64)

    scores = {s["hf_subset"]: s for s in result.scores["test"]}
    assert sorted(scores) == ["ang-eng", "nds-eng", "nld-eng"]
    written = json.loads((out / "LocalTatoeba.json").read_text())["scores"]["test"]
    for lang in langs:
        subset = xm.LocalTatoeba.subset(lang)
        n = len(pairs[lang][0])
        mteb_correct = scores[subset]["accuracy"] * n
        assert mteb_correct == pytest.approx(ours[(lang, "xx2en")], abs=1e-6)
        # Correct retrievals: nl 309 of 1000 (en2xx 292), nds 247 (249), ang 69 of 134 (56):
        # the two directions differ, so the match says which direction MTEB's is.
        assert ours[(lang, "xx2en")] != ours[(lang, "en2xx")]
        # MTEB's JSON keeps 6 decimals.
        [on_disk] = [s for s in written if s["hf_subset"] == subset]
        assert on_disk["accuracy"] == pytest.approx(scores[subset]["accuracy"], abs=1e-6)


# -- the table -------------------------------------------------------------------------------------

# A GPU's part of a device record (`xlsent.devices.device_record`).
H200 = {"device": "cuda", "device_name": "NVIDIA H200"}
# Two languages of three pairs each; the encoders below put every sentence on a circle.
KK = (["bir", "eki", "üsh"], ["one", "two", "three"])
TE = (["okati", "rendu", "mudu"], ["uno", "dos", "tres"])
ENGLISH = {"one": 0, "two": 60, "three": -60, "uno": 0, "dos": 90, "tres": 180}
# kk→en: 10°→0° (right), 40°→60° (right), 70°→60° (wrong, predicts "two"): predictions
# [0, 1, 1], accuracy 2/3, weighted F1 (MTEB's main score) (1 + 2/3 + 0) / 3 = 5/9.
KK_TWO_RIGHT = {"bir": 10, "eki": 40, "üsh": 70}
KK_ALL_RIGHT = {"bir": 5, "eki": 55, "üsh": -55}  # F1 1
TE_ALL_RIGHT = {"okati": 5, "rendu": 95, "mudu": 185}  # F1 1
# te→en: 95°→90° "dos" (wrong), 5°→0° "uno" (wrong), 185°→180° "tres" (right): predictions
# [1, 0, 2]; classes 0 and 1 each predicted once and wrongly, class 2 right: F1 1/3.
TE_ONE_RIGHT = {"okati": 95, "rendu": 5, "mudu": 185}


def test_mteb_json_becomes_the_table(xm, tmp_path):
    import polars as pl

    from xlsent.cli import main
    from xlsent.tables import mteb as mteb_tables
    from xlsent.tables.devices import COLUMNS as DEVICE_COLUMNS

    laser = tmp_path / "laser"
    laser.mkdir()
    write_laser(laser, "kaz", *KK)
    write_laser(laser, "tel", *TE)
    runs = {
        "a/seed1": {**KK_TWO_RIGHT, **TE_ALL_RIGHT},  # (5/9 + 1) / 2 = 7/9
        "a/seed2": {**KK_ALL_RIGHT, **TE_ALL_RIGHT},  # 1
        "b/seed1": {**KK_TWO_RIGHT, **TE_ONE_RIGHT},  # (5/9 + 1/3) / 2 = 4/9
    }
    # Where each seed ran, as eval-mteb records it beside MTEB's JSON: a's seeds on a CPU in
    # fp32 and on a GPU in bf16 (a model trained on the CPU); b's results predate the record.
    cpu, gpu = {"device": "cpu", "precision": "fp32"}, {**H200, "precision": "bf16"}
    devices = {
        "a/seed1": {"train": [cpu], "eval": cpu},
        "a/seed2": {"train": [cpu], "eval": gpu},
        "b/seed1": None,
    }
    results = []
    for label, angles in runs.items():
        out = tmp_path / "eval" / label
        encode = circle_encoder({**angles, **ENGLISH})
        wrapped = xm.XlsentEncoder(encode, label.split("/")[0], label.split("/")[1])
        tasks = xm.tasks(["LocalTatoeba"], ["kk", "te"], str(laser))
        xm.run(wrapped, tasks, out, 2, devices[label])
        results.append(f"{label}={out}")
    assert xm.read_devices(tmp_path / "eval/a/seed2") == devices["a/seed2"]
    assert xm.read_devices(tmp_path / "eval/b/seed1") is None
    assert sorted(p.name for p in (tmp_path / "eval/a/seed1").iterdir()) == [
        "LocalTatoeba.json",
        xm.DEVICES_FILE,
    ]

    csv = tmp_path / "tables" / "mteb.csv"
    main(["tables-mteb", "--out", str(csv), "--results", *results])

    summary = pl.read_csv(csv)
    assert summary.columns == ["run", "seeds", "LocalTatoeba", *DEVICE_COLUMNS]
    # a's two seeds' encodings, joined; b's row blank.
    assert summary.select(DEVICE_COLUMNS).rows() == [
        ("cpu", "fp32", "cpu, cuda (NVIDIA H200)", "bf16, fp32"),
        (None, None, None, None),
    ]
    assert summary["run"].to_list() == ["a", "b"]
    assert summary["seeds"].to_list() == [2, 1]
    # a: kk (5/9 + 1) / 2 = 7/9 over its seeds, te 1: 8/9; b: 4/9 (the JSON rounds to 1e-6).
    assert summary["LocalTatoeba"].to_list() == pytest.approx([800 / 9, 400 / 9], abs=1e-3)
    subsets = pl.read_csv(tmp_path / "tables" / "mteb_subsets.csv")
    assert subsets.columns == ["run", "task", "split", "subset", "metric", "value", *DEVICE_COLUMNS]
    assert subsets.filter(run="a")["eval_device"].to_list() == ["cpu, cuda (NVIDIA H200)"] * 2
    b = subsets.filter(run="b")
    assert b.select("task", "split", "subset", "metric").rows() == [
        ("LocalTatoeba", "test", "kaz-eng", "f1"),
        ("LocalTatoeba", "test", "tel-eng", "f1"),
    ]
    assert b["value"].to_list() == pytest.approx([500 / 9, 100 / 3], abs=1e-3)
    markdown = csv.with_suffix(".md").read_text()
    assert "| a | 2 | 88.9 | cpu | fp32 | cpu, cuda (NVIDIA H200) | bf16, fp32 |" in markdown
    assert "Main scores: LocalTatoeba f1." in markdown
    assert "A row without devices" in markdown  # b's, beside a's

    # A run whose seeds were evaluated on different subsets is refused, not averaged.
    rows = [{"run": "a", "seed": 1, **r} for r in xm.read_results(tmp_path / "eval/a/seed1")]
    rows += [{"run": "a", "seed": 2, **r} for r in xm.read_results(tmp_path / "eval/a/seed2")]
    with pytest.raises(ValueError, match="tel-eng from only some of its 2 seeds"):
        mteb_tables.mteb_table(
            [r for r in rows if not (r["seed"] == 2 and r["subset"] == "tel-eng")]
        )
