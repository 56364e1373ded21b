"""The offline mining set built from held-out pairs (`xlsent.evaluate.mining_set`): gold pairs
planted among distractors, and real held-out pairs mined with character n-grams (the
config check's bound on k against the sets built here: test_mining_sizes.py)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
from support import SHARED

from xlsent.cli import main
from xlsent.evaluate import mining_set
from xlsent.evaluate.bucc import BuccSplit, evaluate, read_split
from xlsent.evaluate.mining import MiningSettings
from xlsent.evaluate.mining_sizes import MiningSetSettings

L10N = SHARED / "l10n"


HELDOUT = [(f"sentence {i}", f"Satz {i}") for i in range(40)]


def _texts(split: BuccSplit) -> tuple[dict[str, str], dict[str, str]]:
    return dict(zip(split.xx_ids, split.xx, strict=True)), dict(
        zip(split.en_ids, split.en, strict=True)
    )


def _settings(distractors: float, threshold_share: float, seed: int):
    return MiningSetSettings(distractors, threshold_share, seed)


def test_mining_set_plants_gold_pairs_among_distractors():
    # 40 pairs: 20 per split; 10 of each split lose a side (5 their English, 5 their German).
    splits, stats = mining_set.build(HELDOUT, "de", _settings(0.5, 0.5, 0))
    assert list(splits) == ["dev", "test"]
    translation = {xx: en for en, xx in HELDOUT}
    seen: set[str] = set()
    for name, split in splits.items():
        assert stats["splits"][name] == {
            "gold": 10,
            "xx_only": 5,
            "en_only": 5,
            "xx_sentences": 15,
            "en_sentences": 15,
        }
        xx, en = _texts(split)
        for xx_id, en_id in split.gold:  # every gold pair is a held-out pair
            assert translation[xx[xx_id]] == en[en_id]
        gold_xx = {xx_id for xx_id, _ in split.gold}
        gold_en = {en_id for _, en_id in split.gold}
        # A distractor's translation is on neither side of its split.
        for xx_id, text in xx.items():
            if xx_id not in gold_xx:
                assert translation[text] not in en.values()
        for en_id, text in en.items():
            if en_id not in gold_en:
                assert text not in {translation[t] for t in xx.values()}
        assert split.xx_ids[0] == "de-000000001" and split.en_ids[-1] == "en-000000015"
        assert not seen & set(xx.values())  # the two splits share no pair
        seen |= set(xx.values())
    assert len(seen) == 30
    # The same pairs and seed give the same set; another seed another one.
    assert mining_set.build(HELDOUT, "de", _settings(0.5, 0.5, 0))[0] == splits
    assert mining_set.build(HELDOUT, "de", _settings(0.5, 0.5, 1))[0] != splits


def test_ambiguous_pairs_are_dropped_before_the_split():
    pairs = [("Save", "Speichern"), ("save ", "Sichern"), ("Open", "Open"), ("Close", "speichern")]
    assert mining_set.unambiguous(pairs) == [("Save", "Speichern")]
    _, stats = mining_set.build(HELDOUT + pairs, "de", _settings(0.5, 0.5, 0))
    assert (stats["pairs"], stats["ambiguous"]) == (44, 3)


def test_too_few_pairs_for_a_gold_pair_is_an_error():
    # 4 pairs, 2 per split, 90 % distractors: round(1.8) = 2 of each split lose a side.
    message = r"without a gold pair.*corpus\.mining_pairs"
    with pytest.raises(mining_set.MiningSetError, match=message):
        mining_set.build(HELDOUT[:4], "kk", _settings(0.9, 0.5, 0))


def test_mining_set_command_from_a_tatoeba_folder(tmp_path):
    tatoeba = tmp_path / "tatoeba"
    tatoeba.mkdir()
    (tatoeba / "tatoeba.kaz-eng.kaz").write_text("".join(f"{xx}\n" for _, xx in HELDOUT))
    (tatoeba / "tatoeba.kaz-eng.eng").write_text("".join(f"{en}\n" for en, _ in HELDOUT))
    out = tmp_path / "mining"
    main(
        [
            *("mining-set", "--from", "tatoeba", "--pairs", f"kk={tatoeba}"),
            *("--tatoeba-text", "laser"),
            "--settings",
            json.dumps({"distractors": 0.25, "threshold_share": 0.25, "seed": 0}),
            *("--out-dir", str(out), "--stats", str(tmp_path / "stats.json")),
        ]
    )
    dev, test = read_split(out, "kk", "dev"), read_split(out, "kk", "test")
    # 10 pairs for dev (0.25 of 40), 30 for test; a quarter of each loses a side.
    assert (len(dev.gold), len(test.gold)) == (8, 22)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["kk"]["splits"]["test"]["gold"] == 22


@pytest.mark.shared
@pytest.mark.skipif(not L10N.is_dir(), reason=f"the l10n corpus is not at {L10N}")
def test_real_held_out_pairs_mined_with_character_ngrams(tmp_path):
    """600 real en-de interface strings as a mining set, mined with a character n-gram tf-idf
    encoder (names and cognates match across the two languages): far above chance."""
    with gzip.open(L10N / "l10n.de-en.de.gz", "rt") as f:
        de = f.read().splitlines()[:600]
    with gzip.open(L10N / "l10n.de-en.en.gz", "rt") as f:
        en = f.read().splitlines()[:600]
    splits, stats = mining_set.build(list(zip(en, de, strict=True)), "de", _settings(0.5, 0.5, 0))
    mining_set.write(splits, tmp_path)
    hashing = HashingVectorizer(analyzer="char_wb", ngram_range=(2, 4), n_features=4096)
    tfidf = TfidfTransformer().fit(hashing.transform(de + en))

    def ngrams(texts, lang):
        return tfidf.transform(hashing.transform(texts)).toarray().astype(np.float32)

    rows = evaluate(ngrams, tmp_path, ["de"], "dev", "test", MiningSettings())
    f1 = {r["direction"]: r["value"] for r in rows if r["metric"] == "f1"}
    print(stats["splits"], f1)
    # Chance: extracting n of ~220 candidates at random, about 1 in 225 is right.
    assert 20 < f1["test"] <= f1["test_oracle"] < 100
