"""The mapping baseline (`method: mapped`): Procrustes, MUSE's refinement, the induced lexicon,
and the whole training on a small real corpus (fastText on each side).

MUSE: Conneau, Lample et al. 2018, arXiv:1710.04087 (Procrustes eq. 2, CSLS eq. 6).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from xlsent.bisent2vec import Bisent2vecError
from xlsent.bisent2vec.mapped import (
    MappedSettings,
    csls_best,
    fit_mapping,
    induce_lexicon,
    mutual_csls_pairs,
    procrustes,
    seed_rows,
    unit_rows,
)
from xlsent.search import retrieve


def random_rotation(dim: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    return q * np.sign(np.diag(r))  # a uniformly random orthogonal matrix


def test_procrustes_recovers_a_rotation() -> None:
    rng = np.random.default_rng(0)
    rotation = random_rotation(20, 1)
    x = rng.normal(size=(200, 20))
    w = procrustes(x, x @ rotation)
    np.testing.assert_allclose(w, rotation, atol=1e-5)
    np.testing.assert_allclose(w @ w.T, np.eye(20), atol=1e-5)  # orthogonal
    # With noise on the targets it is still the rotation, to within the noise.
    noisy = x @ rotation + rng.normal(scale=0.05, size=x.shape)
    assert np.abs(procrustes(x, noisy) - rotation).max() < 0.05


def test_procrustes_is_the_best_orthogonal_map() -> None:
    # Against other orthogonal maps (and the rotation itself) on noisy data, Procrustes' W has
    # the least squared error: what eq. 2 minimises.
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 8))
    y = x @ random_rotation(8, 4) + rng.normal(scale=0.3, size=(50, 8))
    w = procrustes(x, y)
    best = np.linalg.norm(x @ w - y)
    for seed in range(20):
        assert best <= np.linalg.norm(x @ random_rotation(8, seed) - y) + 1e-6


def test_procrustes_refuses_mismatched_sides() -> None:
    with pytest.raises(ValueError, match="two n × d matrices"):
        procrustes(np.zeros((3, 4)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="at least one pair"):
        procrustes(np.zeros((0, 4)), np.zeros((0, 4)))


def test_csls_best_demotes_a_hub() -> None:
    """Worked example (k=1): sources at 0° and 20°, targets at 18° (a hub near both) and
    -20°. Both sources' nearest target is the hub. CSLS(x, y) = 2 cos(x, y) - r_T(x) - r_S(y),
    r_T(0°) the same for both targets; r_S(hub) = cos 2° (the 20° source), r_S(-20°) =
    cos 20°: for the 0° source, 2 cos 18° - cos 2° = 0.903 < 2 cos 20° - cos 20° = 0.940."""
    src = np.array([_at(0), _at(20)])
    tgt = np.array([_at(18), _at(-20)])
    assert (src @ tgt.T).argmax(axis=1).tolist() == [0, 0]
    best, cosine = csls_best(src, tgt, k=1)
    assert best.tolist() == [1, 0]
    np.testing.assert_allclose(cosine, [np.cos(np.radians(20)), np.cos(np.radians(2))], rtol=1e-6)


def _at(degrees: float) -> np.ndarray:
    return np.array([np.cos(np.radians(degrees)), np.sin(np.radians(degrees))])


def test_mutual_nearest_neighbours_are_mutual() -> None:
    rng = np.random.default_rng(6)
    src, tgt = unit_rows(rng.normal(size=(40, 5))), unit_rows(rng.normal(size=(50, 5)))
    pairs = mutual_csls_pairs(src, tgt, k=5)
    s2t, _ = csls_best(src, tgt, 5)
    t2s, _ = csls_best(tgt, src, 5)
    assert pairs and all(s2t[i] == j and t2s[j] == i for i, j in pairs)
    assert len(pairs) == sum(t2s[j] == i for i, j in enumerate(s2t))


def test_refinement_recovers_a_rotation_from_a_small_noisy_seed() -> None:
    # 500 "foreign" words are a rotated, noisy copy of 500 "English" ones (same frequency
    # order). A seed of 36 pairs, a third of them wrong, gives a poor first fit (76 % of the
    # words translated); MUSE's refinement on mutual CSLS neighbours finds the rotation
    # (every word), and its criterion rises with it.
    rng = np.random.default_rng(7)
    dim = 10
    en = unit_rows(rng.normal(size=(500, dim)))
    rotation = random_rotation(dim, 8)
    foreign = unit_rows(en @ rotation.T + rng.normal(scale=0.05, size=en.shape))
    wrong = [(100 + i, 100 + (i + 1) % 12) for i in range(12)]
    seed = [(i, i) for i in range(24)] + wrong

    def accuracy(w: np.ndarray) -> float:
        return float((csls_best(foreign @ w, en, 10)[0] == np.arange(500)).mean())

    assert accuracy(rotation) == 1.0
    w0, _ = fit_mapping(foreign, en, seed, refinement=0)
    assert 0.6 < accuracy(w0) < 0.9
    w, history = fit_mapping(foreign, en, seed, refinement=3, max_rank=400, csls_k=10)
    assert [h["iteration"] for h in history] == [0, 1, 2, 3]
    assert history[0]["pairs"] == 36 and history[-1]["pairs"] == 400  # max_rank
    assert history[-1]["criterion"] > history[0]["criterion"] + 0.05
    assert accuracy(w) == 1.0
    assert np.abs(w - rotation).max() < 0.05


def test_no_seed_pair_in_the_vocabularies_is_an_error() -> None:
    with pytest.raises(Bisent2vecError, match="no seed pair"):
        fit_mapping(np.eye(3, dtype=np.float32), np.eye(3, dtype=np.float32), [])


def test_induced_lexicon_by_mutual_dice() -> None:
    # Pairs containing each word: the 4, house 4, car 2, a 2; das 4, haus 4, auto 2, ein 2.
    # Shared pairs and Dice = 2 c(e, x) / (c(e) + c(x)):
    #   the-das 4: 8/8 = 1     the-haus 2: 4/8 = .5    the-auto 2: 4/6 = .67
    #   house-haus 4: 1        house-das 2: .5         house-ein 2: .67
    #   car-auto 2: 4/4 = 1    car-das 2: .67          a-ein 2: 1    a-haus 2: .67
    # Every word's best partner is the one at Dice 1, and the choice is mutual; English words
    # come in frequency order (house, the: 4; a, car: 2; ties alphabetical).
    lines = ["the house\tdas haus"] * 2 + ["the car\tdas auto"] * 2 + ["a house\tein haus"] * 2
    assert induce_lexicon(lines, min_count=2) == [
        ("house", "haus"),
        ("the", "das"),
        ("a", "ein"),
        ("car", "auto"),
    ]
    # min_count 3: car, a, auto, ein (2 pairs each) are left out.
    assert induce_lexicon(lines, min_count=3) == [("house", "haus"), ("the", "das")]
    # A best partner that is not mutual is dropped: "dog" and "cat" both occur only with
    # "hund", whose best is "cat" (a tie at Dice 2/3, to the earlier word: alphabetical at
    # equal counts), so dog-hund is not mutual.
    lines = ["dog\thund", "dog\thund", "cat\thund", "cat\thund"]
    assert induce_lexicon(lines, min_count=2) == [("cat", "hund")]


def test_seed_rows_keep_pairs_with_both_words_in_the_vocabularies() -> None:
    pairs = [("house", "haus"), ("cat", "katze"), ("dog", "hund"), ("house", "haus")]
    rows = seed_rows(pairs, ["the", "house", "cat"], ["haus", "die", "katze"])
    assert rows == [(0, 1), (2, 2)]  # (xx row, en row); dog is not in the vocabularies


def test_mapped_settings_refuse_unknown_keys() -> None:
    assert MappedSettings.from_dict({"model": "cbow"}).model == "cbow"
    with pytest.raises(Bisent2vecError, match="did you mean 'refinement'"):
        MappedSettings.from_dict({"refinment": 3})
    with pytest.raises(Bisent2vecError, match="skipgram or cbow"):
        MappedSettings.from_dict({"model": "glove"})


@pytest.mark.slow  # fastText on both sides of 2,000 pairs
def test_train_mapped_on_real_pairs(tmp_path) -> None:
    # Real parallel text (CLDR's names via Babel, as the demo uses): numbers, month and day
    # names in English and German; the mapping must put translations near each other.
    pytest.importorskip(
        "fasttext", reason="the mapped baseline needs the bisent2vec extra (make setup)"
    )
    babel = pytest.importorskip("babel", reason="the demo source needs the demo extra (make setup)")
    from xlsent.bisent2vec.mapped import train_mapped
    from xlsent.bisent2vec.model import SentenceModel
    from xlsent.bisent2vec.trainer import Bisent2vecSettings

    en, de = babel.Locale("en"), babel.Locale("de")
    lines = []
    for table in ("territories", "languages", "currencies"):
        en_names, de_names = getattr(en, table), getattr(de, table)
        for key in sorted(set(en_names) & set(de_names)):
            lines.append(f"{en_names[key].lower()}\t{de_names[key].lower()}")
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("\n".join(lines * 3) + "\n")
    # Subsampling at 1e-3: on 2,000 short pairs, 1e-4 would drop nearly every occurrence.
    settings = Bisent2vecSettings(dim=20, min_count=2, epoch=20, lr=0.05, t=1e-3)
    out = tmp_path / "model"
    stats = train_mapped(pairs, out, "de", settings, MappedSettings(refinement=2))
    assert stats["seed"]["source"] == "induced" and stats["seed"]["pairs_in_vocab"] > 50
    assert [h["iteration"] for h in stats["refinement"]] == [0, 1, 2]
    assert json.loads((out / "stats.json").read_text())["method"] == "mapped"
    model = SentenceModel.load(out)
    en_words, en_vectors = model.word_vectors("en")
    de_words, de_vectors = model.word_vectors("de")
    assert stats["vocabulary"] == {"en": len(en_words), "de": len(de_words)}
    # Unit vectors, but for words no update reached (every occurrence subsampled away).
    norms = np.linalg.norm(de_vectors, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-4) | (norms == 0))
    assert (norms == 0).sum() == stats["zero_vectors"]["de"] < len(de_words) / 10
    # The induced seed's own pairs are translated by the mapping (it was fitted on them) far
    # above chance (1 in the English vocabulary); monolingual vectors of 2,000 short names
    # are far from isomorphic, so not often (the synthetic tests above check the mapping).
    seed = [line.split("\t") for line in (out / "seed.txt").read_text().splitlines()]
    assert len(seed) == stats["seed"]["pairs_in_vocab"]
    en_index, de_index = (
        {w: i for i, w in enumerate(en_words)},
        {w: i for i, w in enumerate(de_words)},
    )
    q = de_vectors[[de_index[d] for _, d in seed]]
    top = retrieve(q, de_vectors, en_vectors, "csls", k=1)[:, 0]
    hits = np.mean([top[i] == en_index[e] for i, (e, _) in enumerate(seed)])
    assert hits > 10 / len(en_words)


# -- the config ----------------------------------------------------------------------------------
def mapped_config(text: str) -> dict:
    import yaml
    from support import ROOT

    from xlsent.config import validate

    return validate(yaml.safe_load(text), ROOT / "workflow" / "schemas" / "config.schema.yaml")


def test_mapped_runs_take_global_settings_and_their_overrides() -> None:
    from xlsent.config import bisent2vec_trainer_settings, mapped_settings

    config = mapped_config(
        """
        mapped: {refinement: 3}
        bisent2vec: {dim: 40}
        runs:
          sg: {method: mapped, seeds: [42]}
          cbow: {method: mapped, mapped: {model: cbow, window: 2}, bisent2vec: {lr: 0.05}}
          b2v: {method: bisent2vec}
        """
    )
    assert mapped_settings(config, "sg") == {**MappedSettings(refinement=3).__dict__}
    assert mapped_settings(config, "cbow")["model"] == "cbow"
    assert mapped_settings(config, "cbow")["window"] == 2
    assert bisent2vec_trainer_settings(config, "cbow", 0)["lr"] == 0.05
    assert bisent2vec_trainer_settings(config, "cbow", 0)["dim"] == 40
    assert "mapped" not in config["runs"]["b2v"]
    with pytest.raises(ValueError, match="not a mapped run"):
        mapped_settings(config, "b2v")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "runs: {m: {method: mapped, mapped: {refinment: 2}}}",
            "`runs.m.mapped.refinment` (did you mean `refinement`?) is not a mapped setting",
        ),
        ("runs: {m: {method: mapped, mapped: {model: glove}}}", "`runs.m.mapped.model`"),
        ("runs: {b: {method: bisent2vec, mapped: {model: cbow}}}", "mapped runs only"),
        (
            "runs: {m: {method: mapped, bisent2vec: {word_ngrams: 2}}}",
            "`runs.m.bisent2vec.word_ngrams`: a mapped run trains fastText's unsupervised word "
            "vectors, which take no word n-grams: set it to 1",
        ),
        ("runs: {m: {method: mapped, model: xlmr}}", "take no `model`"),
        ("evaluate: {bli: {seed_share: 1.0}}", "`evaluate.bli.seed_share`"),
        (
            "languages: [de]\nruns: {m: {method: mapped}}\n"
            "evaluate: {bli: {seed_share: 0, dictionaries: {de: de.txt}}}",
            "`evaluate.bli.seed_share` is 0, but the mapped runs (m) fit on the seed part of "
            "the BLI dictionaries: give a share above 0, or set `mapped.seed_dictionary: "
            "induced`",
        ),
    ],
)
def test_mapped_config_errors_name_the_key_and_the_fix(text: str, message: str) -> None:
    from xlsent.config import ConfigError

    with pytest.raises(ConfigError) as err:
        mapped_config(text)
    assert message in str(err.value)


def test_without_a_seed_pair_in_the_vocabularies_the_vectors_stay_unmapped(tmp_path) -> None:
    # l10n's jv and sw have a few dozen pairs: no seed pair survives the vocabulary, and the
    # run's other languages must still be evaluated.
    pytest.importorskip(
        "fasttext", reason="the mapped baseline needs the bisent2vec extra (make setup)"
    )
    from xlsent.bisent2vec.mapped import train_mapped
    from xlsent.bisent2vec.model import read_vec
    from xlsent.bisent2vec.trainer import Bisent2vecSettings

    pairs = tmp_path / "pairs.txt"
    pairs.write_text("the house is red\tnyumba ni nyekundu\n" * 20)
    settings = Bisent2vecSettings(dim=4, min_count=2, epoch=1)
    out = tmp_path / "model"
    stats = train_mapped(pairs, out, "sw", settings, MappedSettings(induced_min_count=100))
    assert stats["seed"] == {"source": "induced", "file": None, "pairs": 0, "pairs_in_vocab": 0}
    assert stats["refinement"] == [] and stats["best_iteration"] is None
    words, vectors = read_vec(out / "vectors.sw.vec")
    assert words and vectors.shape == (len(words), 4)
