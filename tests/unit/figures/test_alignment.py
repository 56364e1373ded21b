"""The papers' figures (WACSE Figure 1, DAP Figure 1): which points are drawn, how they are
computed and projected, and what is handed to matplotlib; on the demo corpus (German and
Kazakh), its eflomal alignment and tiny encoders built from an XLM-R config."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
import torch
import yaml
from docutils.core import publish_parts
from jinja2 import Template
from matplotlib.colors import to_rgba
from support import ROOT
from transformers import AutoTokenizer

from xlsent.config import ConfigError, Figure, figures, load, validate
from xlsent.figures import alignment as fig
from xlsent.figures.plots import save_png
from xlsent.languages import get
from xlsent.models.encoder import add_language_embeddings, build
from xlsent.models.sentence import SentenceSettings
from xlsent.ragged import Ragged, offsets_of
from xlsent.train.collate import collate, word_pooling
from xlsent.train.objectives import word_vectors

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
MAX_LENGTH = 32
SHAPE = {
    "hidden_size": 16,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 32,
}


@pytest.fixture(scope="module")
def models(tmp_path_factory, small_tokenizer) -> dict[str, Path]:
    """Two runs' model directories: tiny scratch encoders (different weights) and the
    tokenizer, saved as the train stage saves them."""
    out = {}
    for seed, run in enumerate(("tr", "wacse")):
        torch.manual_seed(seed)
        path = tmp_path_factory.mktemp("models") / run
        build("scratch", small_tokenizer, max_length=MAX_LENGTH, shape=SHAPE).save_pretrained(path)
        AutoTokenizer.from_pretrained(small_tokenizer).save_pretrained(path)
        out[run] = path
    return out


def _manifest(spans: Path) -> Path:
    return spans.parent / "_SUCCESS"  # the conftest's alignment, beside its word spans


# -- which word pairs --------------------------------------------------------------------------


def _alignment() -> pl.DataFrame:
    """Four sentences: "house"-"үй" linked three times (once as "House"), "red"-"қызыл" once,
    and punctuation linked in each."""
    link = [{"en": 0, "xx": 0, "score": 1.0}, {"en": 1, "xx": 1, "score": 1.0}]
    return pl.DataFrame(
        {
            "id": [10, 11, 12, 13],
            "en_words": [["house", "."], ["House", "."], ["house", "."], ["red", "."]],
            "xx_words": [["үй", "."], ["үй", "."], ["үй", "."], ["қызыл", "."]],
            "links": [link] * 4,
        }
    )


def test_word_pairs_are_distinct_words_drawn_by_frequency():
    aligned = _alignment()
    drawn = fig.draw_word_pairs(aligned, seed=0, lang="kk")
    # Punctuation is no word; "House" and "house" are one pair, shown in one of its sentences.
    assert sorted(zip(drawn["en_word"].str.to_lowercase(), drawn["xx_word"], strict=True)) == [
        ("house", "үй"),
        ("red", "қызыл"),
    ]
    for row in drawn.iter_rows(named=True):
        sentence = aligned.row(by_predicate=pl.col("id") == row["id"], named=True)
        assert sentence["en_words"][row["en_index"]] == row["en_word"]
        assert sentence["xx_words"][row["xx_index"]] == row["xx_word"]
    assert drawn.equals(fig.draw_word_pairs(aligned, seed=0, lang="kk"))
    # "house" holds 3 of the 4 word links, so it is drawn first with probability 3/4 (400 seeds:
    # standard error 0.022), and its sentence is each of its three with probability 1/3.
    draws = [fig.draw_word_pairs(aligned, seed, "kk").row(0, named=True) for seed in range(400)]
    first = [d["id"] for d in draws if d["xx_word"] == "үй"]
    assert len(first) / 400 == pytest.approx(0.75, abs=0.07)
    assert {i: first.count(i) / len(first) for i in (10, 11, 12)} == pytest.approx(
        dict.fromkeys((10, 11, 12), 1 / 3), abs=0.08
    )


def test_selected_pairs_are_the_first_drawn_that_the_tokenize_stage_gives_subwords(
    small_word_spans, small_corpus, models
):
    aligned = fig.read_alignment(_manifest(small_word_spans["kk"]))
    candidates = fig.draw_word_pairs(aligned, seed=3, lang="kk")
    encoder = fig.Encoder.load(models["tr"], MAX_LENGTH)
    chosen = fig.select_word_pairs(candidates, aligned, small_corpus["kk"]["train"], [encoder], 25)

    # What the tokenize stage found for the same words: a subword of their own, and within the
    # 30 subwords the length limit leaves.
    spans = pl.read_parquet(small_word_spans["kk"]).select(
        "id", "en_starts", "en_ends", "xx_starts", "xx_ends"
    )
    rows = candidates.join(spans, on="id", maintain_order="left").to_dicts()

    def usable(row: dict) -> bool:
        return all(
            row[f"{side}_starts"][row[f"{side}_index"]]
            < row[f"{side}_ends"][row[f"{side}_index"]]
            <= MAX_LENGTH - 2
            for side in ("en", "xx")
        )

    expected = [(r["id"], r["en_index"], r["xx_index"]) for r in rows if usable(r)][:25]
    assert list(chosen.select("id", "en_index", "xx_index").iter_rows()) == expected
    assert len(rows) > len(expected)  # some were passed over
    for row in chosen.iter_rows(named=True):
        assert row["en_words"][row["en_index"]] == row["en_word"] and row["en_word"] in row["en"]
        assert row["xx_words"][row["xx_index"]] == row["xx_word"] and row["xx_word"] in row["xx"]
    other = fig.select_word_pairs(
        fig.draw_word_pairs(aligned, seed=4, lang="kk"),
        aligned,
        small_corpus["kk"]["train"],
        [encoder],
        25,
    )
    assert set(other["id"]) != set(chosen["id"])


def test_word_vectors_are_those_wtr_trains(small_word_spans, small_corpus, models):
    """A figure's word vector is WTR's: the training collate's pooling of the last layer over
    the word spans' subword span (`xlsent.train.objectives.word_vectors`)."""
    aligned = fig.read_alignment(_manifest(small_word_spans["kk"]))
    encoder = fig.Encoder.load(models["wacse"], MAX_LENGTH)
    chosen = fig.select_word_pairs(
        fig.draw_word_pairs(aligned, 0, "kk"), aligned, small_corpus["kk"]["train"], [encoder], 6
    )
    vectors = fig.word_vectors(encoder, chosen, "kk")
    spans = pl.read_parquet(small_word_spans["kk"])
    tok = encoder.tokenizer
    for i, row in enumerate(chosen.iter_rows(named=True)):
        pair = spans.row(by_predicate=pl.col("id") == row["id"], named=True)
        for side in ("en", "xx"):
            ids, mask = collate(
                [np.array(pair[f"{side}_ids"][: MAX_LENGTH - 2])],
                tok.cls_token_id,
                tok.sep_token_id,
                tok.pad_token_id,
            )
            word = row[f"{side}_index"]
            starts = Ragged(np.array([pair[f"{side}_starts"][word]]), offsets_of(np.array([1])))
            ends = Ragged(np.array([pair[f"{side}_ends"][word]]), offsets_of(np.array([1])))
            pool, valid = word_pooling(starts, ends, ids.shape[1])
            with torch.no_grad():
                hidden = encoder.model(input_ids=ids, attention_mask=mask).last_hidden_state
            assert valid.all()
            expected = word_vectors(hidden, pool)[0, 0].numpy()
            np.testing.assert_allclose(vectors[side][i], expected, rtol=1e-5, atol=1e-6)


def test_an_encoder_with_language_embeddings_reads_each_side_in_its_language(
    small_tokenizer, small_corpus, tmp_path
):
    torch.manual_seed(0)
    model = build("scratch", small_tokenizer, max_length=MAX_LENGTH, shape=SHAPE)
    add_language_embeddings(model, ["kk", "de"])
    model.save_pretrained(tmp_path / "m")
    AutoTokenizer.from_pretrained(small_tokenizer).save_pretrained(tmp_path / "m")
    encoder = fig.Encoder.load(tmp_path / "m", MAX_LENGTH)
    assert encoder.languages == {"en": 0, "de": 1, "kk": 2}
    texts = pl.read_parquet(small_corpus["kk"]["dev"])["xx"].head(3).to_list()
    tok = encoder.tokenizer
    rows = [
        np.array(ids[: MAX_LENGTH - 2]) for ids in tok(texts, add_special_tokens=False)["input_ids"]
    ]
    ids, mask = collate(rows, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    with torch.no_grad():
        hidden = encoder.model(
            input_ids=ids, attention_mask=mask, token_type_ids=torch.full_like(ids, 2)
        ).last_hidden_state.numpy()
    for i, states in enumerate(encoder.states(texts, "kk")):
        np.testing.assert_allclose(states, hidden[i, 1 : len(rows[i]) + 1], atol=1e-6)
    assert not np.allclose(encoder.states(texts, "en")[0], encoder.states(texts, "kk")[0])
    with pytest.raises(
        fig.FigureError, match=r"language embeddings for \['de', 'en', 'kk'\], not 'te'"
    ):
        encoder.states(texts, "te")


def test_a_prefixed_encoder_reads_the_prefix_and_draws_only_the_sentences_subwords(
    small_tokenizer, tmp_path
):
    """As in training: each sentence is read after the model's prefix (which its config
    records), word spans count the prefix's subwords, and a figure's token points are the
    sentence's own subwords, not the prefix's."""
    torch.manual_seed(0)
    model = build("scratch", small_tokenizer, max_length=MAX_LENGTH, shape=SHAPE)
    prefix = {"en": "query: ", "xx": "passage: "}
    SentenceSettings("cls", prefix).record(model.config)
    model.save_pretrained(tmp_path / "m")
    AutoTokenizer.from_pretrained(small_tokenizer).save_pretrained(tmp_path / "m")
    encoder = fig.Encoder.load(tmp_path / "m", MAX_LENGTH)
    assert encoder.prefix == prefix
    plain = dataclasses.replace(encoder, prefix="")
    texts, words = ["Central Time", "Enter a valid email address."], [["Central", "Time"]] * 2
    head = len(encoder.tokenizer("passage: ", add_special_tokens=False)["input_ids"])
    assert encoder.prefix_pieces(texts, "kk") == [head, head]
    spans = encoder.word_spans(texts[:1], words[:1], [1], "kk")
    assert spans.tolist() == (plain.word_spans(texts[:1], words[:1], [1], "kk") + head).tolist()
    states, plain_states = encoder.states(texts, "kk"), plain.states(texts, "kk")
    assert [len(s) - head for s in states] == [len(s) for s in plain_states]
    points = fig.token_vectors(encoder, texts, "kk")
    np.testing.assert_array_equal(points, np.concatenate([s[head:] for s in states]))
    assert points.shape == fig.token_vectors(plain, texts, "kk").shape


# -- projections and the measure -------------------------------------------------------------


def test_pca_of_points_on_a_line_by_hand():
    # Centred, the points are (-1.5, -1.5), (-0.5, -0.5), (0.5, 0.5), (1.5, 1.5): all the
    # variance lies along (1, 1)/√2, on which they sit at -1.5√2, -0.5√2, 0.5√2, 1.5√2.
    points, variance = fig.pca(np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]))
    first = points[:, 0] * np.sign(points[-1, 0])
    np.testing.assert_allclose(first, np.array([-1.5, -0.5, 0.5, 1.5]) * np.sqrt(2))
    np.testing.assert_allclose(points[:, 1], 0, atol=1e-12)
    np.testing.assert_allclose(variance, [1.0, 0.0], atol=1e-12)


def test_pca_is_the_svd_of_the_centred_vectors():
    vectors = np.random.default_rng(0).normal(size=(12, 5)) * [5.0, 3.0, 1.0, 0.5, 0.1]
    centred = vectors - vectors.mean(axis=0)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    expected = centred @ components[:2].T
    points, variance = fig.pca(vectors)
    signs = np.sign((points * expected).sum(axis=0))  # a component's sign is a convention
    np.testing.assert_allclose(points * signs, expected, atol=1e-10)
    np.testing.assert_allclose(variance, singular[:2] ** 2 / (singular**2).sum())


def test_cross_lingual_neighbours_by_hand():
    # English a, b; other c, d. Cosines: ab .8, ac .6, ad 0, bc .96, bd .6, cd .8. Nearest:
    # a→b (same side), b→c (other), c→b (other), d→c (same): 2 of 4. Two nearest: a→b,c;
    # b→c,a; c→b,d; d→c,b: one of two on the other side each.
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]])
    english = np.array([True, True, False, False])
    assert fig.cross_lingual_neighbours(vectors, english, k=1) == 0.5
    assert fig.cross_lingual_neighbours(vectors * [[3], [1], [2], [5]], english, k=1) == 0.5
    assert fig.cross_lingual_neighbours(vectors, english, k=2) == 0.5
    # Two clouds far apart: no neighbour crosses.
    apart = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
    assert fig.cross_lingual_neighbours(apart, english, k=1) == 0.0


def test_a_figure_with_few_points_counts_fewer_neighbours_and_says_so(caplog):
    assert fig.neighbour_count(fig.NEIGHBOURS + 1) == fig.NEIGHBOURS
    assert not caplog.records
    assert fig.neighbour_count(4) == 3
    assert "4 points: cross-lingual neighbours counted among the 3 others, not 10" in caplog.text
    with pytest.raises(ValueError, match="4 neighbours among 4 points"):
        fig.cross_lingual_neighbours(np.eye(4), np.array([True, True, False, False]), k=4)


# -- drawing -----------------------------------------------------------------------------------


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def test_the_panels_points_are_what_matplotlib_draws(tmp_path):
    rng = np.random.default_rng(1)
    lang = np.array(["kk", "kk", "te", "te"] * 2)
    english = np.array([True] * 4 + [False] * 4)
    panels = [fig.Panel(run, rng.normal(size=(8, 2)), lang, english) for run in ("tr", "wacse")]
    figure = fig.draw(panels)
    for ax, panel in zip(figure.axes, panels, strict=True):
        assert ax.get_title() == panel.title
        # Per language (a marker each), English (red) then the other side (blue).
        drawn = [(c.get_offsets().data, tuple(c.get_facecolor()[0])) for c in ax.collections]
        expected = [
            (panel.points[(lang == code) & (english == side)], to_rgba(colour, 0.6))
            for code in ("kk", "te")
            for side, colour in ((True, "tab:red"), (False, "tab:blue"))
        ]
        assert len(drawn) == len(expected)
        for (points, colour), (want, want_colour) in zip(drawn, expected, strict=True):
            np.testing.assert_array_equal(points, want)
            assert colour == pytest.approx(want_colour)
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert labels == ["en (en-kk)", "kk", "en (en-te)", "te"]
    # One legend, below the panels: over no point of either, and within the figure.
    (legend,) = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == labels
    figure.draw_without_rendering()
    box = legend.get_window_extent()
    assert not any(box.overlaps(ax.get_window_extent()) for ax in figure.axes)
    assert figure.bbox.x0 <= box.x0 and box.x1 <= figure.bbox.x1 and figure.bbox.y0 <= box.y0
    save_png(figure, tmp_path / "two.png")
    assert _png_size(tmp_path / "two.png") == (1260, 690)  # 2 × 4.2 by 4.6 inches at 150 dpi


# -- the figures, end to end -----------------------------------------------------------------


def _capture_panels(monkeypatch: pytest.MonkeyPatch) -> list[fig.Panel]:
    """The panels the figures hand to `draw`, which still draws them."""
    drawn: list[fig.Panel] = []
    draw = fig.draw

    def capture(panels):
        drawn.extend(panels)
        return draw(panels)

    monkeypatch.setattr(fig, "draw", capture)
    return drawn


def test_aligned_words_figure(small_word_spans, small_corpus, models, tmp_path, monkeypatch):
    drawn = _capture_panels(monkeypatch)
    record = fig.aligned_words_figure(
        models,
        {lang: _manifest(small_word_spans[lang]) for lang in ("kk", "de")},
        {lang: small_corpus[lang]["train"] for lang in ("kk", "de")},
        pairs=41,
        seed=0,
        max_length=MAX_LENGTH,
        out=tmp_path / "words.png",
        stats=tmp_path / "words.json",
    )
    assert json.loads((tmp_path / "words.json").read_text()) == record
    assert _png_size(tmp_path / "words.png") == (1260, 690)
    pairs = pl.DataFrame(record["pairs"])
    assert pairs["lang"].to_list() == ["kk"] * 21 + ["de"] * 20
    # The pairs of each language: the first that both runs' encoders read, the same for both.
    encoders = [fig.Encoder.load(path, MAX_LENGTH) for path in models.values()]
    for lang in ("kk", "de"):
        aligned = fig.read_alignment(_manifest(small_word_spans[lang]))
        chosen = fig.select_word_pairs(
            fig.draw_word_pairs(aligned, 0, lang),
            aligned,
            small_corpus[lang]["train"],
            encoders,
            21 if lang == "kk" else 20,
        )
        assert (
            pairs.filter(lang=lang).drop("lang").equals(chosen.select("id", "en_word", "xx_word"))
        )
    # Each panel: the pairs' English words, then their other words, language after language.
    assert [panel.title.split(":")[0] for panel in drawn] == ["tr", "wacse"]
    for panel, run in zip(drawn, ("tr", "wacse"), strict=True):
        assert panel.points.shape == (82, 2)
        assert panel.lang.tolist() == ["kk"] * 42 + ["de"] * 40
        assert panel.english.tolist() == [True] * 21 + [False] * 21 + [True] * 20 + [False] * 20
        share = record["runs"][run]["cross_lingual_neighbours"]
        assert panel.title == f"{run}: {100 * share:.0f}% of 10 nearest neighbours cross-lingual"
        assert 0 <= share <= 1
    assert not np.allclose(drawn[0].points, drawn[1].points)


def _tatoeba(directory: Path, corpus: Path, lang: str, n: int) -> tuple[list[str], list[str]]:
    """LASER-layout files of the first `n` real pairs of a corpus split."""
    pairs = pl.read_parquet(corpus).head(n)
    iso3 = get(lang).iso3
    (directory / f"tatoeba.{iso3}-eng.{iso3}").write_text("\n".join(pairs["xx"]) + "\n")
    (directory / f"tatoeba.{iso3}-eng.eng").write_text("\n".join(pairs["en"]) + "\n")
    return pairs["xx"].to_list(), pairs["en"].to_list()


def test_tatoeba_tokens_figure(small_corpus, models, tmp_path, monkeypatch):
    xx, en = _tatoeba(tmp_path, small_corpus["kk"]["dev"], "kk", 30)
    drawn = _capture_panels(monkeypatch)
    record = fig.tatoeba_tokens_figure(
        models, tmp_path, ["kk"], "laser", 7, 5, MAX_LENGTH, tmp_path / "t.png", tmp_path / "t.json"
    )
    assert json.loads((tmp_path / "t.json").read_text()) == record
    lines = record["lines"]["kk"]
    assert len(set(lines)) == 7 and lines == sorted(lines) and max(lines) < 30
    again = fig.tatoeba_tokens_figure(
        {"tr": models["tr"]},
        tmp_path,
        ["kk"],
        "laser",
        7,
        5,
        MAX_LENGTH,
        tmp_path / "u.png",
        tmp_path / "u.json",
    )
    assert again["lines"] == record["lines"]  # the seed decides the lines, not the runs

    tokenizer = AutoTokenizer.from_pretrained(models["tr"])

    def subwords(texts: list[str]) -> int:
        return sum(
            min(len(ids), MAX_LENGTH - 2)
            for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]
        )

    n_xx, n_en = subwords([xx[i] for i in lines]), subwords([en[i] for i in lines])
    for panel, run in zip(drawn[:2], ("tr", "wacse"), strict=True):
        assert panel.english.tolist() == [False] * n_xx + [True] * n_en
        assert set(panel.lang) == {"kk"}
        # The points are the PCA of the unit-length token states that the encoder gives.
        encoder = fig.Encoder.load(models[run], MAX_LENGTH)
        states = np.concatenate(
            [
                fig.token_vectors(encoder, [xx[i] for i in lines], "kk"),
                fig.token_vectors(encoder, [en[i] for i in lines], "en"),
            ]
        )
        points, variance = fig.pca(fig.unit(states))
        np.testing.assert_allclose(panel.points, points, atol=1e-5)
        assert record["runs"][run]["tokens"] == n_xx + n_en
        assert record["runs"][run]["explained_variance"] == pytest.approx(variance.tolist())
        assert panel.xlabel == f"PC 1 ({100 * variance[0]:.0f}% of the variance)"


# -- configuration and report -----------------------------------------------------------------


def test_the_shipped_configs_draw_the_papers_figures():
    paper = figures(load(ROOT / "config.yaml", SCHEMA))
    assert paper == {
        "aligned_words": Figure(("tr", "wacse"), ("kk", "te")),
        "tatoeba_tokens": Figure(("tr", "dap"), ("ar",)),
    }
    demo = figures(load(ROOT / "resources" / "demo" / "config.yaml", SCHEMA))
    assert demo["aligned_words"] == Figure(("tr", "wacse"), ("kk", "te"))
    # The demo's Tatoeba set has no Arabic: its first language instead.
    assert demo["tatoeba_tokens"] == Figure(("tr", "dap"), ("de",))


def _config(**figures_block: object) -> dict:
    return {
        "languages": ["de", "kk"],
        "runs": {
            "tr": {"method": "tr", "model": "xlmr"},
            "wacse": {"method": "wacse", "model": "xlmr"},
            "b2v": {"method": "bisent2vec"},
        },
        "figures": figures_block,
    }


def test_null_runs_and_languages_are_the_papers_where_the_config_has_them():
    # No dap run: no DAP figure. Of kk and te only kk is trained.
    assert figures(validate(_config(), SCHEMA)) == {
        "aligned_words": Figure(("tr", "wacse"), ("kk",))
    }
    config = _config(aligned_words={"languages": "de"}, tatoeba_tokens={"runs": ["wacse"]})
    assert figures(validate(config, SCHEMA)) == {
        "aligned_words": Figure(("tr", "wacse"), ("de",)),
        "tatoeba_tokens": Figure(("wacse",), ("de",)),
    }
    assert figures(validate(_config(aligned_words={"runs": []}), SCHEMA)) == {}


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            {"aligned_words": {"runs": ["tr", "wacsee"]}},
            "config key `figures.aligned_words.runs`: 'wacsee' is not an encoder run of `runs` "
            "(those are: tr, wacse); name encoder runs, or [] for no figure",
        ),
        (
            {"tatoeba_tokens": {"runs": ["b2v"]}},
            "config key `figures.tatoeba_tokens.runs`: 'b2v' is not an encoder run",
        ),
        (
            {"aligned_words": {"languages": ["kk", "te"]}},
            "config key `figures.aligned_words.languages`: te not among `languages` (de, kk), "
            "which the figure draws from",
        ),
        (
            {"tatoeba_tokens": {"runs": ["tr"], "languages": ["kz"]}},
            "config key `figures.tatoeba_tokens.languages`: unknown language code or group 'kz'",
        ),
        (
            {"aligned_words": {"languages": ["de", "kk"], "pairs": 1}},
            "config key `figures.aligned_words.pairs`: 1 is less than the minimum of 2",
        ),
        (
            {"tatoeba_tokens": {"runs": ["tr"], "languages": ["de", "kk"], "pairs": 1}},
            "config key `figures.tatoeba_tokens.pairs` (1) is shared by 2 languages",
        ),
    ],
)
def test_runs_and_languages_that_do_not_exist_name_the_key(block, message):
    with pytest.raises(ConfigError) as info:
        validate(_config(**block), SCHEMA)
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["aligned_words", "tatoeba_tokens"])
def test_the_report_caption_renders_with_the_rules_settings(name):
    """Snakemake renders a caption with Jinja (the job's params and the config), then
    docutils: both must go through, and the caption must name what was drawn."""
    caption = (ROOT / "workflow" / "report" / f"{name}.rst").read_text()
    config = yaml.safe_load((ROOT / "resources" / "demo" / "config.yaml").read_text())
    params = SimpleNamespace(runs=["tr", "wacse"], langs=["kk", "te"], pairs=500, seed=0)
    text = Template(caption).render(snakemake=SimpleNamespace(params=params, config=config))
    html = publish_parts(text, writer="html", settings_overrides={"report_level": 1})["body"]
    assert "system-message" not in html
    assert "tr, wacse" in html and "kk, te" in html and "500" in html
