"""The papers' pictures of alignment: where each run's encoder puts translations.

- `aligned_words_figure`: WACSE Figure 1 (Miao et al. 2024, arXiv:2404.02490, §1 and §4.3):
  t-SNE of aligned word pairs, English red and the low-resource language blue, a model
  trained with TR alone beside one trained with WACSE's word-level objectives. The paper
  samples "500 words from the training dataset based on their frequencies"; we draw distinct
  (English, xx) word pairs from the aligner's links of the training pairs, each with
  probability proportional to how often it is linked (`draw_word_pairs`), and take a word's
  vector in its sentence as WTR does: the mean of its subwords' last-layer states
  (`xlsent.train.objectives.word_vectors`), the sentence read after the model's prefix as in
  training.
- `tatoeba_tokens_figure`: DAP Figure 1 (Li et al. 2023, arXiv:2305.09148, §1): PCA of the
  last-layer token representations of 100 Tatoeba translation pairs (ar-en), a model trained
  with TR alone beside one trained with TR + RTL (the sentence's tokens, read after the
  model's prefix; the prefix's own tokens are not drawn).

Each model is projected on its own (a panel per run), from unit-length vectors: cosine is the
similarity the models are trained and evaluated with. What the eye reads off a panel is also
measured in the model's own space, before projection: the share of each point's nearest
neighbours that lie on the other side (English or not; `cross_lingual_neighbours`).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import torch

from xlsent.align.shards import iter_shards
from xlsent.evaluate.tatoeba import read_pairs
from xlsent.failures.errors import XlsentError
from xlsent.failures.unreadable import reading
from xlsent.figures.plots import pyplot, save_png
from xlsent.io import write_json
from xlsent.models.sentence import Prefix, SentenceSettings, prefix_of
from xlsent.tokenize import prefixed
from xlsent.train.collate import collate
from xlsent.train.word_spans import text_spans

log = logging.getLogger(__name__)

ENGLISH_COLOUR, OTHER_COLOUR = "tab:red", "tab:blue"  # as in WACSE Figure 1
MARKERS = "o^sDvP*X"  # one per non-English language
NEIGHBOURS = 10


class FigureError(XlsentError):
    """Inputs a figure cannot be drawn from; the message names the file or key and the fix."""


# -- the points -----------------------------------------------------------------------------


def read_alignment(manifest: Path) -> pl.DataFrame:
    """A language's aligned training pairs (`id, en_words, xx_words, links`), every shard of
    its `_SUCCESS` manifest in order."""
    return pl.from_arrow(pa.concat_tables(iter_shards(manifest)))


def draw_word_pairs(aligned: pl.DataFrame, seed: int, lang: str) -> pl.DataFrame:
    """Every distinct linked (English word, xx word) pair, in the order of a seeded draw by
    frequency: `id, en_index, xx_index, en_word, xx_word`, the first row the first drawn.

    The pairs are the distinct (lower-cased) word pairs in the order in which a seeded shuffle
    of all link occurrences first meets them: each next pair is thus drawn with probability
    proportional to its number of links among the pairs not drawn yet, and shown in the
    sentence of one of its occurrences, drawn uniformly. Links with a side that holds no
    letter (punctuation, numbers: alike in every language) are left out.
    """
    links = (
        aligned.select(
            "id",
            en_index=pl.col("links").list.eval(pl.element().struct.field("en")),
            xx_index=pl.col("links").list.eval(pl.element().struct.field("xx")),
            en_words="en_words",
            xx_words="xx_words",
        )
        .select(
            "id",
            "en_index",
            "xx_index",
            en_word=pl.col("en_words").list.gather("en_index"),
            xx_word=pl.col("xx_words").list.gather("xx_index"),
        )
        .explode("en_index", "xx_index", "en_word", "xx_word")
        .drop_nulls()
        .filter(pl.col("en_word").str.contains(r"\p{L}") & pl.col("xx_word").str.contains(r"\p{L}"))
    )
    rng = np.random.default_rng([seed, zlib.crc32(lang.encode())])
    shuffled = links[rng.permutation(links.height)]
    keys = [pl.col("en_word").str.to_lowercase(), pl.col("xx_word").str.to_lowercase()]
    return (
        shuffled.with_columns(en_key=keys[0], xx_key=keys[1])
        .unique(subset=["en_key", "xx_key"], keep="first", maintain_order=True)
        .drop("en_key", "xx_key")
    )


def share(total: int, parts: int) -> list[int]:
    """`total` split into `parts` counts as equal as can be, the first ones larger."""
    return [total // parts + (i < total % parts) for i in range(parts)]


@dataclass
class Encoder:
    """A trained run's encoder and tokenizer (its model directory), read token by token, each
    sentence after the model's `prefix` (as it was trained and is evaluated)."""

    model: torch.nn.Module
    tokenizer: object
    max_length: int
    languages: dict[str, int] | None  # token type ids of an encoder with language embeddings
    prefix: Prefix = ""

    @classmethod
    def load(cls, model_dir: Path, max_length: int) -> Encoder:
        from transformers import AutoModel, AutoTokenizer

        from xlsent.models.encoder import language_ids

        model = AutoModel.from_pretrained(model_dir).eval()
        return cls(
            model,
            AutoTokenizer.from_pretrained(model_dir),
            max_length,
            language_ids(model),
            SentenceSettings.read(model.config).prefix,
        )

    @property
    def limit(self) -> int:
        """Subwords kept per sentence: the length limit less CLS and </s>."""
        return self.max_length - 2

    def _offsets(self, texts: list[str], before: str) -> list[list[tuple[int, int]]]:
        """Each subword's character offsets in `before + text` (no special tokens)."""
        return self.tokenizer(
            prefixed(texts, before),
            add_special_tokens=False,
            return_offsets_mapping=True,
            verbose=False,
        )["offset_mapping"]

    def word_spans(
        self, texts: list[str], words: list[list[str]], index: list[int], lang: str
    ) -> np.ndarray:
        """The [start, end) subword positions (no special tokens counted, the prefix's
        subwords counted) of word `index[i]` of sentence i in `lang`, as the tokenize stage's
        word spans (`xlsent.train.word_spans`) find them; (0, 0) where the word has no
        subword of its own."""
        before = prefix_of(self.prefix, lang)
        offsets = self._offsets(texts, before)
        spans = np.zeros((len(texts), 2), dtype=np.int64)
        for row, (text, sentence, word) in enumerate(zip(texts, words, index, strict=True)):
            found = text_spans(text, sentence, offsets[row], before)
            if found is not None:
                spans[row] = found[word]
        return spans

    def prefix_pieces(self, texts: list[str], lang: str) -> list[int]:
        """How many leading subwords of each sentence are its prefix's: those that start in
        it (a subword belongs to what holds its first character, as in `text_spans`)."""
        before = prefix_of(self.prefix, lang)
        if not before:
            return [0] * len(texts)
        return [
            sum(start < len(before) for start, _ in row) for row in self._offsets(texts, before)
        ]

    @torch.inference_mode()
    def states(self, texts: list[str], lang: str, batch_size: int = 64) -> list[np.ndarray]:
        """Each sentence's last-layer states of its subwords, the prefix's first (CLS and </s>
        left out: the positions of `word_spans`), truncated to `limit` subwords as in
        training and evaluation."""
        tok = self.tokenizer
        if self.languages is not None and lang not in self.languages:
            raise FigureError(
                f"the encoder has language embeddings for {sorted(self.languages)}, not {lang!r}"
            )
        # Untruncated (truncated below, as training does): no warning about the length.
        before = prefix_of(self.prefix, lang)
        rows = tok(prefixed(texts, before), add_special_tokens=False, verbose=False)["input_ids"]
        out = []
        for start in range(0, len(rows), batch_size):
            batch = [
                np.asarray(r[: self.limit], dtype=np.int64)
                for r in rows[start : start + batch_size]
            ]
            ids, mask = collate(batch, tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
            types = None if self.languages is None else torch.full_like(ids, self.languages[lang])
            hidden = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types)
            hidden = hidden.last_hidden_state.float().numpy()
            out += [hidden[i, 1 : len(row) + 1] for i, row in enumerate(batch)]
        return out


def select_word_pairs(
    candidates: pl.DataFrame,
    aligned: pl.DataFrame,
    corpus: Path,
    encoders: Sequence[Encoder],
    n: int,
) -> pl.DataFrame:
    """The first `n` of `candidates` (in draw order) whose two words every encoder reads:
    each has a subword of its own within the length limit. Adds the sentences (`en, xx`,
    from the corpus split the alignment was made of) and their words."""
    with reading(corpus):
        text = pl.read_parquet(corpus, columns=["id", "en", "xx"])
    words = aligned.select("id", "en_words", "xx_words")
    kept, position = [], 0
    while sum(len(chunk) for chunk in kept) < n and position < candidates.height:
        chunk = (
            candidates.slice(position, 2 * n)
            .join(words, on="id", how="left", maintain_order="left")
            .join(text, on="id", how="left", maintain_order="left")
        )
        position += 2 * n
        usable = np.ones(chunk.height, dtype=bool)
        for encoder in encoders:
            for side in ("en", "xx"):
                spans = encoder.word_spans(
                    chunk[side].to_list(),
                    chunk[f"{side}_words"].to_list(),
                    chunk[f"{side}_index"].to_list(),
                    side,  # the prefix of English, or of the other language
                )
                usable &= (spans[:, 1] > spans[:, 0]) & (spans[:, 1] <= encoder.limit)
        kept.append(chunk.filter(pl.Series(usable)))
    return pl.concat(kept).head(n) if kept else candidates.head(0)


def word_vectors(encoder: Encoder, pairs: pl.DataFrame, lang: str) -> dict[str, np.ndarray]:
    """{"en": N×d, "xx": N×d}: each pair's two words as WTR sees them, the mean of the word's
    subwords' last-layer states in its sentence (`select_word_pairs` rows)."""
    out = {}
    for side, code in (("en", "en"), ("xx", lang)):
        texts = pairs[side].to_list()
        spans = encoder.word_spans(
            texts, pairs[f"{side}_words"].to_list(), pairs[f"{side}_index"].to_list(), code
        )
        states = encoder.states(texts, code)
        out[side] = np.stack(
            [
                state[start:end].mean(axis=0)
                for state, (start, end) in zip(states, spans, strict=True)
            ]
        )
    return out


def token_vectors(encoder: Encoder, texts: list[str], lang: str) -> np.ndarray:
    """Every subword's last-layer state of `texts`, sentence after sentence (T×d); the
    prefix's subwords are not the sentence's and are left out."""
    skip = encoder.prefix_pieces(texts, lang)
    return np.concatenate(
        [state[n:] for state, n in zip(encoder.states(texts, lang), skip, strict=True)]
    )


# -- projections and what they show ----------------------------------------------------------


def unit(vectors: np.ndarray) -> np.ndarray:
    """The rows scaled to unit length (a zero row stays zero)."""
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def pca(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates of `vectors` on their first two principal components (scikit-learn's
    full SVD of the centred data), and the share of the variance each explains."""
    from sklearn.decomposition import PCA

    model = PCA(n_components=2, svd_solver="full")
    return model.fit_transform(vectors), model.explained_variance_ratio_


def tsne(vectors: np.ndarray, seed: int, threads: int = 1) -> np.ndarray:
    """t-SNE to two dimensions (scikit-learn: PCA start, perplexity 30, or a third of the
    points when fewer than 91, which t-SNE needs)."""
    from sklearn.manifold import TSNE

    perplexity = min(30.0, (len(vectors) - 1) / 3)
    return TSNE(
        n_components=2, perplexity=perplexity, init="pca", random_state=seed, n_jobs=threads
    ).fit_transform(vectors)


def cross_lingual_neighbours(
    vectors: np.ndarray, english: np.ndarray, k: int = NEIGHBOURS
) -> float:
    """The share of each point's `k` nearest neighbours (cosine; itself excluded) that are on
    the other side, English or not, averaged over the points: near 0 where the languages form
    separate clouds, about the other side's share of the points where they mix. `k` is below
    the number of points (`neighbour_count`)."""
    if not 0 < k < len(vectors):
        raise ValueError(f"{k} neighbours among {len(vectors)} points")
    similarity = unit(vectors) @ unit(vectors).T
    np.fill_diagonal(similarity, -np.inf)
    nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    return float((english[nearest] != english[:, None]).mean())


# -- drawing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    """One run's points: 2-D coordinates, each point's pair language and side."""

    title: str
    points: np.ndarray  # n×2
    lang: np.ndarray  # n: the non-English language of the point's pair
    english: np.ndarray  # n: the point is the English side
    xlabel: str = ""
    ylabel: str = ""


def draw(panels: Sequence[Panel]):
    """The panels side by side: English red, the other language blue, a marker per language
    (its English side too), one legend below them (never over a point). Returns the
    matplotlib figure."""
    plt = pyplot()
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.2 * len(panels), 4.6), squeeze=False, layout="constrained"
    )
    langs = list(dict.fromkeys(lang for panel in panels for lang in panel.lang))
    for ax, panel in zip(axes[0], panels, strict=True):
        for lang, marker in zip(langs, MARKERS, strict=False):
            for english, colour in ((True, ENGLISH_COLOUR), (False, OTHER_COLOUR)):
                keep = (panel.lang == lang) & (panel.english == english)
                label = ("en" if len(langs) == 1 else f"en (en-{lang})") if english else lang
                ax.scatter(
                    *panel.points[keep].T,
                    s=9,
                    c=colour,
                    marker=marker,
                    alpha=0.6,
                    linewidths=0,
                    label=label,
                )
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(panel.xlabel, fontsize=8)
        ax.set_ylabel(panel.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    # Rows of at most four entries a panel's width (two languages' en and xx side by side).
    columns = min(len(labels), 4 * len(panels))
    fig.legend(
        handles, labels, loc="outside lower center", ncols=columns, fontsize=7, markerscale=2
    )
    return fig


def neighbour_count(points: int) -> int:
    """`NEIGHBOURS`, or all the other points of a figure with fewer: the job's log warns, and
    the title and the stats name the count used."""
    k = min(NEIGHBOURS, points - 1)
    if k < NEIGHBOURS:
        log.warning(
            "%d points: cross-lingual neighbours counted among the %d others, not %d "
            "(draw more pairs for the paper's measure)",
            points,
            k,
            NEIGHBOURS,
        )
    return k


def _title(run: str, score: float, k: int) -> str:
    return f"{run}: {100 * score:.0f}% of {k} nearest neighbours cross-lingual"


# -- the figures -----------------------------------------------------------------------------


def aligned_words_figure(
    models: Mapping[str, Path],
    alignments: Mapping[str, Path],
    corpora: Mapping[str, Path],
    pairs: int,
    seed: int,
    max_length: int,
    out: Path,
    stats: Path,
    threads: int = 1,
) -> dict:
    """WACSE Figure 1 of the runs' encoders ({run: model directory}): t-SNE of `pairs` aligned
    word pairs, shared by the languages of `alignments` ({lang: _SUCCESS manifest}, the
    alignment of the training pairs `corpora[lang]`). Writes the PNG to `out` and what it
    shows (the pairs, each run's cross-lingual neighbours) to the JSON `stats`."""
    encoders = {run: Encoder.load(path, max_length) for run, path in models.items()}
    parts = {}
    for (lang, manifest), n in zip(alignments.items(), share(pairs, len(alignments)), strict=True):
        aligned = read_alignment(manifest)
        candidates = draw_word_pairs(aligned, seed, lang)
        parts[lang] = select_word_pairs(
            candidates, aligned, corpora[lang], list(encoders.values()), n
        )
        if parts[lang].height < n:
            raise FigureError(
                f"{manifest}: {lang} has {parts[lang].height} aligned word pairs to draw, fewer "
                f"than its {n}: lower figures.aligned_words.pairs"
            )
    lang = np.concatenate([np.full(2 * part.height, code) for code, part in parts.items()])
    english = np.concatenate([np.repeat([True, False], part.height) for part in parts.values()])
    panels, scores = [], {}
    for run, encoder in encoders.items():
        vectors = np.concatenate(
            [
                np.concatenate([v["en"], v["xx"]])
                for v in (word_vectors(encoder, part, code) for code, part in parts.items())
            ]
        )
        k = neighbour_count(len(vectors))
        scores[run] = cross_lingual_neighbours(vectors, english, k)
        panels.append(
            Panel(_title(run, scores[run], k), tsne(unit(vectors), seed, threads), lang, english)
        )
        log.info("%s: %.1f%% cross-lingual neighbours", run, 100 * scores[run])
    save_png(draw(panels), out)
    record = {
        "figure": "aligned_words",
        "seed": seed,
        "pairs": pl.concat(
            [
                part.select("id", "en_word", "xx_word").with_columns(lang=pl.lit(code))
                for code, part in parts.items()
            ]
        ).to_dicts(),
        "runs": {
            run: {"model": str(models[run]), "cross_lingual_neighbours": score, "neighbours": k}
            for run, score in scores.items()
        },
    }
    write_json(stats, record)
    return record


def tatoeba_tokens_figure(
    models: Mapping[str, Path],
    directory: Path,
    langs: Sequence[str],
    text: str,
    pairs: int,
    seed: int,
    max_length: int,
    out: Path,
    stats: Path,
) -> dict:
    """DAP Figure 1 of the runs' encoders ({run: model directory}): PCA of the token states of
    `pairs` Tatoeba translation pairs (LASER files in `directory`, read as `text` says, as
    the Tatoeba evaluation reads them), shared by `langs`, drawn with `seed`. Writes the PNG
    to `out` and what it shows to the JSON `stats`."""
    encoders = {run: Encoder.load(path, max_length) for run, path in models.items()}
    sentences, lines_of = {}, {}
    for lang, n in zip(langs, share(pairs, len(langs)), strict=True):
        xx, en = read_pairs(directory, lang, text)
        rng = np.random.default_rng([seed, zlib.crc32(lang.encode())])
        if len(xx) < n:
            log.warning("%s: %d Tatoeba pairs, fewer than its %d: all drawn", lang, len(xx), n)
        lines = np.sort(rng.choice(len(xx), size=min(n, len(xx)), replace=False))
        sentences[lang] = ([xx[i] for i in lines], [en[i] for i in lines])
        lines_of[lang] = lines.tolist()
    record = {"figure": "tatoeba_tokens", "seed": seed, "lines": lines_of, "runs": {}}
    panels = []
    for run, encoder in encoders.items():
        vectors, lang, english = [], [], []
        for code, (xx, en) in sentences.items():
            for side, texts in ((code, xx), ("en", en)):
                states = token_vectors(encoder, texts, side)
                vectors.append(states)
                lang.append(np.full(len(states), code))
                english.append(np.full(len(states), side == "en"))
        vectors, lang, english = map(np.concatenate, (vectors, lang, english))
        k = neighbour_count(len(vectors))
        score = cross_lingual_neighbours(vectors, english, k)
        points, variance = pca(unit(vectors))
        panels.append(
            Panel(
                _title(run, score, k),
                points,
                lang,
                english,
                xlabel=f"PC 1 ({100 * variance[0]:.0f}% of the variance)",
                ylabel=f"PC 2 ({100 * variance[1]:.0f}%)",
            )
        )
        record["runs"][run] = {
            "model": str(models[run]),
            "tokens": len(vectors),
            "cross_lingual_neighbours": score,
            "neighbours": k,
            "explained_variance": variance.tolist(),
        }
        log.info("%s: %.1f%% cross-lingual neighbours", run, 100 * score)
    save_png(draw(panels), out)
    write_json(stats, record)
    return record
