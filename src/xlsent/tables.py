"""Result tables: per-run evaluation Parquet files in, paper-style CSV and Markdown out.

Each run's evaluation lives in `results/eval/{task}/{run}/seed{seed}.parquet` (columns
`task, run, seed, lang, direction, metric, value, n`). Seeds are averaged first, per run,
language and direction, then languages are averaged over the groups of the papers.
Every evaluation writes its file with `write_results`, beside the reader, so the columns
have one definition.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import polars as pl

from xlsent.io import atomic_path, write_parquet
from xlsent.languages import LANGUAGES
from xlsent.readback import reading

COLUMNS = ("task", "run", "seed", "lang", "direction", "metric", "value", "n")
DIRECTIONS = ("xx2en", "en2xx")
# What the Markdown tables print for a value that is missing (a group with a language not run).
BLANK = "–"


def write_results(
    rows: Sequence[dict], task: str, run: str, seed: int, out: str | os.PathLike[str]
) -> None:
    """One run's evaluation rows (lang, direction, metric, value, n) as its results Parquet.

    Every task (tatoeba, bli) writes through here, so `load_results` finds `COLUMNS` with the
    same types whatever wrote them: `value` a float and `n` an integer even when a task's
    rows hold integral accuracies or float counts.
    """
    frame = pl.DataFrame(rows).select(
        task=pl.lit(task),
        run=pl.lit(run),
        seed=pl.lit(seed, dtype=pl.Int64),
        lang=pl.col("lang"),
        direction=pl.col("direction"),
        metric=pl.col("metric"),
        value=pl.col("value").cast(pl.Float64),
        n=pl.col("n").cast(pl.Int64),
    )
    write_parquet(out, frame.to_arrow())


def load_results(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> pl.DataFrame:
    """Concatenate evaluation results given as data frames or Parquet paths."""
    parts = []
    for frame in frames:
        if isinstance(frame, pl.DataFrame):
            df = frame
        else:
            with reading(frame):
                df = pl.read_parquet(frame)
        missing = [c for c in COLUMNS if c not in df.columns]
        if missing:
            source = "a data frame" if isinstance(frame, pl.DataFrame) else str(frame)
            raise ValueError(f"{source} lacks the result columns {missing}; expected {COLUMNS}")
        parts.append(df.select(COLUMNS))
    if not parts:
        raise ValueError("no evaluation results to tabulate")
    return pl.concat(parts, how="vertical_relaxed")


def _refuse_duplicates(results: pl.DataFrame, key: list[str]) -> None:
    """Stop when two rows fill the same cell (`key` starts with run and seed)."""
    duplicated = results.filter(pl.struct(key).is_duplicated())
    if not duplicated.is_empty():
        first = duplicated.row(0, named=True)
        cell = " ".join(str(first[column]) for column in key[2:])
        raise ValueError(
            f"run {first['run']!r} seed {first['seed']} has more than one {cell} result: was a "
            "result file passed twice?"
        )


def _seed_means(results: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Accuracy averaged over seeds per (run, lang, direction), and each run's seed count.

    Refuses duplicated results and languages missing for some of a run's seeds: averaging
    those would silently weight seeds unequally across languages.
    """
    acc = results.filter(pl.col("metric") == "accuracy")
    if acc.is_empty():
        raise ValueError("the results hold no 'accuracy' rows")
    tasks = acc["task"].unique().to_list()
    if len(tasks) > 1:
        raise ValueError(f"results of several tasks were mixed into one table: {sorted(tasks)}")
    _refuse_duplicates(acc, ["run", "seed", "lang", "direction", "metric"])
    seeds = dict(acc.group_by("run", maintain_order=True).agg(pl.col("seed").n_unique()).rows())
    cells = acc.group_by("run", "lang", "direction", maintain_order=True).agg(
        pl.col("value").mean(), pl.col("seed").n_unique().alias("seeds")
    )
    partial = [(run, lang) for run, lang, _, _, n in cells.rows() if n < seeds[run]]
    if partial:
        run = partial[0][0]
        langs = ", ".join(dict.fromkeys(lang for r, lang in partial if r == run))
        raise ValueError(
            f"run {run!r} has results for {langs} from only some of its {seeds[run]} seeds: "
            "evaluate every seed of a run on the same languages"
        )
    return cells.drop("seeds"), seeds


def _mean(values: list[float | None]) -> float | None:
    """The average, or None when a value is missing (a partial group is not averaged)."""
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)


def scarce_languages(stats: Sequence[str | os.PathLike[str]]) -> dict[str, str]:
    """The languages that trained on fewer pairs than the minimum (the sample stage let them
    through with `corpus.min_pairs_action: warn`), from their sample statistics, as
    {lang: "train 32 < 500, dev 4 < 50"}."""
    scarce = {}
    for path in stats:
        record = json.loads(Path(path).read_text())
        if record.get("below_min"):
            scarce[record["lang"]] = ", ".join(
                f"{split} {n} < {minimum}" for split, (n, minimum) in record["below_min"].items()
            )
    return scarce


def tatoeba_tables(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    groups: Mapping[str, Sequence[str]],
    scarce: dict[str, str] | None = None,
    language_directions: Sequence[str] = ("mean",),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(summary, per_language) Tatoeba tables, one row per run in order of appearance.

    `groups`: each group's languages by name (`languages.members`). Summary columns: `run`,
    `seeds`; per group of `groups` (and `all`, every evaluated
    language) the average over its languages of the mean of both directions (WACSE Table 3),
    then the per-direction averages `{group}_xx2en` and `{group}_en2xx` (DAP Table 1);
    `missing`, the languages of `groups` the run lacks (their groups are null), or null; and
    `scarce`, the evaluated languages of `scarce` (`scarce_languages`: trained on fewer pairs
    than the minimum), or null. Per-language: `run` and, per language, the accuracy of each of
    `language_directions` (`mean`: the column `{lang}`; `xx2en`, `en2xx`: `{lang}_{direction}`,
    DAP Tables 7–8).
    """
    cells, seeds = _seed_means(load_results(frames))
    value = {(run, lang, d): v for run, lang, d, v in cells.rows()}
    needed = list(dict.fromkeys(lang for codes in groups.values() for lang in codes))
    # Language columns in the order of the language table (order seen for any code outside it).
    langs = sorted(
        cells["lang"].unique(maintain_order=True),
        key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
    )

    language_columns = [
        (c if d == "mean" else f"{c}_{d}", c, d) for c in langs for d in language_directions
    ]
    summary, per_language = [], []
    for run, n_seeds in seeds.items():
        evaluated = [lang for lang in langs if (run, lang, "mean") in value]
        members = {**groups, "all": evaluated}
        row: dict = {"run": run, "seeds": n_seeds}
        for direction, suffix in (("mean", ""), *((d, f"_{d}") for d in DIRECTIONS)):
            for name, codes in members.items():
                row[name + suffix] = _mean([value.get((run, c, direction)) for c in codes])
        row["missing"] = " ".join(c for c in needed if c not in evaluated) or None
        row["scarce"] = " ".join(c for c in evaluated if c in (scarce or {})) or None
        summary.append(row)
        per_language.append(
            {"run": run, **{name: value.get((run, c, d)) for name, c, d in language_columns}}
        )

    names = [*groups, "all"]
    score_columns = [*names, *(f"{g}_{d}" for d in DIRECTIONS for g in names)]
    summary_schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        **dict.fromkeys(score_columns, pl.Float64),
        "missing": pl.String,
        "scarce": pl.String,
    }
    language_schema = {
        "run": pl.String,
        **dict.fromkeys((name for name, _, _ in language_columns), pl.Float64),
    }
    return (
        pl.DataFrame(summary, schema=summary_schema),
        pl.DataFrame(per_language, schema=language_schema),
    )


def _cell(value: object, digits: int) -> str:
    if value is None:
        return BLANK
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value).replace("|", r"\|")


def markdown(
    df: pl.DataFrame, *, digits: int = 1, caption: str | None = None, notes: Sequence[str] = ()
) -> str:
    """A Markdown table of `df` (floats with `digits` decimals, nulls as "–"), then `notes`."""
    numeric = [dtype.is_numeric() for dtype in df.dtypes]
    lines = [f"{caption}\n"] if caption else []
    lines.append("| " + " | ".join(df.columns) + " |")
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines += ["| " + " | ".join(_cell(v, digits) for v in row) + " |" for row in df.rows()]
    for note in notes:
        lines += ["", note]  # a blank line apart, or Markdown runs the notes together
    return "\n".join(lines) + "\n"


def write_table(
    df: pl.DataFrame,
    out_csv: Path,
    *,
    digits: int = 1,
    caption: str | None = None,
    notes: Sequence[str] = (),
    shown: pl.DataFrame | None = None,
) -> None:
    """Write `df` to `out_csv` (full precision) and beside it a `.md` table, both atomically.

    `shown` is what the Markdown shows (default `df`): fewer columns, marked headers.
    """
    out_csv = Path(out_csv)
    with atomic_path(out_csv) as tmp:
        df.write_csv(tmp, check_extension=False)
    with atomic_path(out_csv.with_suffix(".md")) as tmp:
        tmp.write_text(
            markdown(df if shown is None else shown, digits=digits, caption=caption, notes=notes)
        )


# Marks a language (and every average over it) that trained on fewer pairs than the minimum.
SCARCE = "*"


def scarce_note(scarce: dict[str, str]) -> list[str]:
    """The footnote of the languages `scarce_languages` found, if any."""
    if not scarce:
        return []
    detail = "; ".join(f"{lang}: {text}" for lang, text in scarce.items())
    return [
        f"{SCARCE} Trained on fewer pairs than the minimum ({detail}; corpus.min_train_pairs, "
        "corpus.min_dev_pairs): kept because corpus.min_pairs_action is warn. Their numbers "
        "and the averages over them say little."
    ]


def _marked(
    df: pl.DataFrame, columns: dict[str, list[str]], scarce: Collection[str], mark: str = SCARCE
) -> dict:
    """Markdown headers: a column over a scarce language (a language, or a group holding one)
    gets the mark. `columns` maps each column to the languages it covers."""
    return {
        name: f"{name}{mark}" if any(lang in scarce for lang in langs) else name
        for name, langs in columns.items()
        if name in df.columns
    }


def write_tables(
    summary: pl.DataFrame,
    per_language: pl.DataFrame,
    out_csv: Path,
    groups: Mapping[str, Sequence[str]],
    *,
    digits: int = 1,
    scarce: dict[str, str] | None = None,
) -> list[Path]:
    """Write the Tatoeba tables: `out_csv` (e.g. tatoeba.csv), `{stem}_langs.csv`, both `.md`.

    Returns the four paths written. `groups`: the summary's groups and their languages, as
    `tatoeba_tables` took them. `scarce` (`scarce_languages`): languages whose columns and
    group averages the Markdown marks, with a footnote.
    """
    out_csv = Path(out_csv)
    scarce = scarce or {}
    langs_csv = out_csv.with_name(f"{out_csv.stem}_langs.csv")
    # The Markdown turns the `missing` column into footnotes under the table.
    notes = [
        f"{BLANK} Run `{run}` has no Tatoeba result for {missing.replace(' ', ', ')}; group "
        "averages that need a missing language are left blank rather than taken over fewer "
        "languages."
        for run, missing in summary.select("run", "missing").rows()
        if missing
    ]
    used = {lang for text in summary["scarce"].drop_nulls() for lang in text.split()}
    scarce = {lang: text for lang, text in scarce.items() if lang in used}
    covered = {
        column: groups[column.split("_")[0]]
        for column in summary.columns
        if column.split("_")[0] in groups
    }
    for column in summary.columns:  # `all` and its directions: every language of the run
        if column.split("_")[0] == "all":
            covered[column] = sorted(used)
    shown = summary.select(c for c in summary.columns if c not in ("missing", "scarce"))
    write_table(
        summary,
        out_csv,
        digits=digits,
        caption="Tatoeba accuracy (%), seeds averaged. Group columns average both directions "
        "over the group's languages; `_xx2en` and `_en2xx` are single directions; `all` is "
        "every language evaluated for the run.",
        notes=notes + scarce_note(scarce),
        shown=shown.rename(_marked(shown, covered, scarce)),
    )
    languages = {c: [c.split("_")[0]] for c in per_language.columns if c != "run"}
    write_table(
        per_language,
        langs_csv,
        digits=digits,
        caption="Tatoeba accuracy (%) per language, seeds averaged: `xx` the mean of both "
        "directions, `xx_xx2en` and `xx_en2xx` single directions where asked for. "
        f"{BLANK}: not evaluated.",
        notes=scarce_note(scarce),
        shown=per_language.rename(_marked(per_language, languages, scarce)),
    )
    return [out_csv, out_csv.with_suffix(".md"), langs_csv, langs_csv.with_suffix(".md")]


RETRIEVAL_DIRECTIONS = ("mean", *DIRECTIONS)


def retrieval_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    groups: Mapping[str, Sequence[str]],
    scarce: dict[str, str] | None = None,
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3): one row per run, in order
    of appearance, and the pairs of each language.

    Columns: `run`, `seeds`; per group of `groups` and `all` (every language retrieved for
    the run) the average of the languages' mean of both directions, then `{group}_xx2en`
    and `{group}_en2xx` (as `tatoeba_tables`' summary); per language (language-table order)
    `{lang}` (the mean of both directions), `{lang}_xx2en` and `{lang}_en2xx`; `missing` and
    `scarce` as in `tatoeba_tables`. P@1 in percent, seeds averaged. The pairs: {lang: n},
    the largest count of any run (every run retrieves among the same pairs).
    """
    results = load_results(frames)
    tasks = results["task"].unique().to_list()
    if tasks != ["retrieval"]:
        raise ValueError(f"expected retrieval results (task 'retrieval'), got {sorted(tasks)}")
    summary, per_language = tatoeba_tables([results], groups, scarce, RETRIEVAL_DIRECTIONS)
    scores = [c for c in summary.columns if c not in ("missing", "scarce")]
    table = summary.select(scores).join(per_language, on="run", how="left", maintain_order="left")
    table = table.hstack(summary.select("missing", "scarce"))
    most = dict(results.group_by("lang").agg(pl.col("n").max()).rows())
    return table, {lang: most[lang] for lang in table.columns if lang in most}


def write_retrieval_table(
    table: pl.DataFrame,
    pairs: Mapping[str, int],
    out_csv: Path,
    groups: Mapping[str, Sequence[str]],
    *,
    digits: int = 1,
    scarce: dict[str, str] | None = None,
) -> None:
    """Write the retrieval table (`retrieval_table`) to `out_csv` (every column) and its
    `.md`: the group averages and each language's mean of both directions, marked where a
    language trained on fewer pairs than the minimum, with the pairs per language as a note."""
    used = {lang for text in table["scarce"].drop_nulls() for lang in text.split()}
    scarce = {lang: text for lang, text in (scarce or {}).items() if lang in used}
    names = [*groups, "all"]
    langs = [c for c in table.columns if c in pairs]
    shown = table.select("run", "seeds", *names, "all_xx2en", "all_en2xx", *langs)
    covered: dict[str, list[str]] = {name: list(groups[name]) for name in groups}
    covered.update({name: sorted(used) for name in ("all", "all_xx2en", "all_en2xx")})
    covered.update({lang: [lang] for lang in langs})
    notes = [
        f"{BLANK} Run `{run}` has no result for {missing.replace(' ', ', ')}."
        for run, missing in table.select("run", "missing").rows()
        if missing
    ]
    notes.append(
        "Held-out pairs n per language (each sentence a query among the other side's n): "
        + ", ".join(f"{lang} {n}" for lang, n in pairs.items())
        + "."
    )
    write_table(
        table,
        out_csv,
        digits=digits,
        caption="Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3): P@1 (%) of each "
        "sentence's translation among the other side's held-out sentences, the mean of xx→en "
        "and en→xx (the CSV has each direction), seeds averaged. Word-vector runs: the "
        "tf-idf-weighted average of their word vectors; encoder runs: their sentence vectors.",
        notes=notes + scarce_note(scarce),
        shown=shown.rename(_marked(shown, covered, scarce)),
    )


def ablation_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    runs: list[str],
    groups: Mapping[str, Sequence[str]],
) -> pl.DataFrame:
    """WACSE Table 10: one row per run of `runs` (in that order), the mean of both directions
    averaged over each group of `groups` (name → languages), then each of their languages."""
    summary, per_language = tatoeba_tables(frames, groups)
    absent = [run for run in runs if run not in summary["run"].to_list()]
    if absent:
        raise ValueError(f"no Tatoeba results for the ablation runs {absent}")
    langs = [c for c in per_language.columns if c != "run" and any(c in g for g in groups.values())]
    order = pl.DataFrame({"run": runs})
    return order.join(summary.select("run", "seeds", *groups), on="run", how="left").join(
        per_language.select("run", *langs), on="run", how="left"
    )


def transfer_table(
    frames: Sequence[pl.DataFrame | str | os.PathLike[str]],
    pivots: dict[str, str],
    trained: list[str],
    groups: Mapping[str, Sequence[str]],
) -> pl.DataFrame:
    """The dual-pivot paper's transfer (its Tables 3–4): one row per run of `pivots` (in that
    order), Tatoeba accuracy (both directions averaged, seeds averaged) on the run's pivot
    language, and averaged over the other languages: those trained on (`trained`, the
    corpus's languages, pivot excepted) and those of each of `groups` (name → languages;
    pivot excepted). A column whose languages were not all evaluated for the run is blank."""
    cells, seeds = _seed_means(load_results(frames))
    value = {(run, lang): v for run, lang, d, v in cells.rows() if d == "mean"}
    absent = [run for run in pivots if run not in seeds]
    if absent:
        raise ValueError(f"no Tatoeba results for the transfer runs {absent}")
    rows = []
    for run, pivot in pivots.items():
        row = {
            "run": run,
            "seeds": seeds[run],
            "pivot": pivot,
            "pivot_acc": value.get((run, pivot)),
        }
        for name, codes in {"trained": trained, **groups}.items():
            row[name] = _mean([value.get((run, c)) for c in codes if c != pivot])
        rows.append(row)
    schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        "pivot": pl.String,
        **dict.fromkeys(["pivot_acc", "trained", *groups], pl.Float64),
    }
    return pl.DataFrame(rows, schema=schema)


def write_transfer_table(table: pl.DataFrame, out_csv: Path, *, digits: int = 1) -> None:
    write_table(
        table,
        out_csv,
        digits=digits,
        caption="Transfer from one pivot pair (dual-pivot, Tien and Steinert-Threlkeld 2022): "
        "Tatoeba accuracy (%), both directions and seeds averaged, on the pivot language "
        "(`pivot_acc`) and over the other languages: those trained on (`trained`) and each "
        f"group's, the pivot left out. {BLANK}: a language of the column was not evaluated.",
    )


BLI_METRICS = tuple(f"p@{k}_{method}" for method in ("nn", "csls") for k in (1, 5, 10))
BLI_DIRECTIONS = ("en2xx", "xx2en")


def bli_table(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> tuple[pl.DataFrame, dict]:
    """Word translation (BLI): one row per run, in order of appearance, and the query counts.

    Columns: `run`, `seeds`, then per language (language-table order) and direction (en2xx,
    xx2en) the P@k of each retrieval, `{lang}_{direction}_{metric}` with metric `p@1_nn`,
    `p@5_nn`, `p@10_nn`, `p@1_csls`, … (percent, seeds averaged; null where the run was not
    evaluated), then `{lang}_{direction}_n`, the test words the run kept after the vocabulary
    filter. The counts: {(run, lang, direction): queries} (dictionary source words with a
    translation in both vocabularies; seeds averaged).
    Refuses duplicated results and cells that only some of a run's seeds have.
    """
    results = load_results(frames)
    tasks = results["task"].unique().to_list()
    if tasks != ["bli"]:
        raise ValueError(f"expected BLI results (task 'bli'), got tasks {sorted(tasks)}")
    _refuse_duplicates(results, ["run", "seed", "lang", "direction", "metric"])
    seeds = dict(results.group_by("run", maintain_order=True).agg(pl.col("seed").n_unique()).rows())
    cells = results.group_by("run", "lang", "direction", "metric", maintain_order=True).agg(
        pl.col("value").mean(), pl.col("n").mean(), pl.col("seed").n_unique().alias("seeds")
    )
    for run, lang, direction, _, _, _, n_seeds in cells.rows():
        if n_seeds < seeds[run]:
            raise ValueError(
                f"run {run!r} has {lang} {direction} BLI results from only some of its "
                f"{seeds[run]} seeds: evaluate every seed of a run on the same dictionaries"
            )
    value = {(r, lang, d, m): v for r, lang, d, m, v, _, _ in cells.rows()}
    queries = {(r, lang, d): n for r, lang, d, _, _, n, _ in cells.rows()}
    langs = sorted(
        cells["lang"].unique(maintain_order=True),
        key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
    )
    metrics = [m for m in BLI_METRICS if m in set(cells["metric"])]
    metrics += sorted(set(cells["metric"]) - set(metrics))
    columns = [
        (lang, d, m)
        for lang in langs
        for d in BLI_DIRECTIONS
        if any((r, lang, d) in queries for r in seeds)
        for m in [*metrics, "n"]
    ]
    rows = [
        {
            "run": run,
            "seeds": n_seeds,
            **{
                f"{lang}_{d}_{m}": queries.get((run, lang, d))
                if m == "n"
                else value.get((run, lang, d, m))
                for lang, d, m in columns
            },
        }
        for run, n_seeds in seeds.items()
    ]
    schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        **{f"{lang}_{d}_{m}": pl.Float64 for lang, d, m in columns},
    }
    return pl.DataFrame(rows, schema=schema), queries


def write_bli_table(table: pl.DataFrame, queries: dict, out_csv: Path, *, digits: int = 1) -> None:
    """Write the BLI table (`bli_table`) to `out_csv` and its `.md`, the query counts as notes."""
    notes = [
        "Test words kept after the vocabulary filter (`_n`: test dictionary source words with "
        "a translation, both in the run's vocabularies): "
        + "; ".join(f"{run} {lang} {d} {n:.0f}" for (run, lang, d), n in queries.items())
        + "."
    ]
    write_table(
        table,
        out_csv,
        digits=digits,
        caption="Word translation (BLI, MUSE protocol): P@k (%) by nearest neighbour (`nn`) "
        "and CSLS (`csls`), per language and direction (`en2xx`: English words query the "
        "foreign vocabulary); seeds averaged.",
        notes=notes,
    )


# -- bitext mining (BUCC) -----------------------------------------------------------------------
# The test split's scores: at the threshold chosen on the threshold split (the protocol's),
# at its own best threshold (XTREME's, DAP Table 2), at the pivot's (dual-pivot Table 6).
BUCC_SCHEMES = {"test": "", "test_oracle": "_oracle", "test_pivot": "_pivot"}


def bucc_table(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> pl.DataFrame:
    """Bitext mining: one row per run, in order of appearance.

    Columns: `run`, `seeds`, then per language (language-table order) `{lang}_p`, `{lang}_r`
    and `{lang}_f1` on the test split at the threshold chosen on the threshold split (DAP
    Table 3), `{lang}_f1_oracle` at the test split's own best threshold, and `{lang}_f1_pivot`
    at the pivot language's threshold where evaluated; then `avg_f1`, `avg_f1_oracle` (and
    `avg_f1_pivot`) over the languages, null for a run that lacks one. Percent, seeds
    averaged; refuses duplicated results and cells that only some of a run's seeds have.
    """
    results = load_results(frames)
    tasks = results["task"].unique().to_list()
    if tasks != ["bucc"]:
        raise ValueError(f"expected mining results (task 'bucc'), got tasks {sorted(tasks)}")
    _refuse_duplicates(results, ["run", "seed", "lang", "direction", "metric"])
    seeds = dict(results.group_by("run", maintain_order=True).agg(pl.col("seed").n_unique()).rows())
    cells = results.group_by("run", "lang", "direction", "metric", maintain_order=True).agg(
        pl.col("value").mean(), pl.col("seed").n_unique().alias("seeds")
    )
    for run, lang, direction, _, _, n_seeds in cells.rows():
        if n_seeds < seeds[run]:
            raise ValueError(
                f"run {run!r} has {lang} {direction} mining results from only some of its "
                f"{seeds[run]} seeds: evaluate every seed of a run on the same languages"
            )
    value = {(r, lang, d, m): v for r, lang, d, m, v, _ in cells.rows()}
    langs = sorted(
        cells["lang"].unique(maintain_order=True),
        key=lambda c: list(LANGUAGES).index(c) if c in LANGUAGES else len(LANGUAGES),
    )
    schemes = [d for d in BUCC_SCHEMES if d in set(cells["direction"])]
    columns = []  # (name, lang, direction, metric)
    for lang in langs:
        columns += [(f"{lang}_{m[0]}", lang, "test", m) for m in ("precision", "recall")]
        columns += [(f"{lang}_f1{BUCC_SCHEMES[d]}", lang, d, "f1") for d in schemes]
    rows = []
    for run, n_seeds in seeds.items():
        row: dict = {"run": run, "seeds": n_seeds}
        row.update({name: value.get((run, lang, d, m)) for name, lang, d, m in columns})
        for d in schemes:
            row[f"avg_f1{BUCC_SCHEMES[d]}"] = _mean([value.get((run, c, d, "f1")) for c in langs])
        rows.append(row)
    schema = {
        "run": pl.String,
        "seeds": pl.Int64,
        **{name: pl.Float64 for name, _, _, _ in columns},
        **{f"avg_f1{BUCC_SCHEMES[d]}": pl.Float64 for d in schemes},
    }
    return pl.DataFrame(rows, schema=schema)


# Marks a mined language (and the averages over it) whose margin read fewer neighbours than k.
LOWERED_K = "†"


def bucc_lowered(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> list[str]:
    """The languages of a split whose margin read fewer neighbours than
    `evaluate.bucc.mining.k` (fewer sentences than k on a side), for any run."""
    lowered = load_results(frames).filter(pl.col("metric") == "k")
    return sorted(lowered["lang"].unique())


def bucc_notes(frames: Sequence[pl.DataFrame | str | os.PathLike[str]]) -> list[str]:
    """The mining table's footnote on the splits whose margin read fewer neighbours than
    `evaluate.bucc.mining.k` (fewer sentences than k on a side), with the k used."""
    results = load_results(frames)
    lowered = results.filter(pl.col("metric") == "k").sort("run", "lang", "direction")
    if lowered.is_empty():
        return []
    cells = ", ".join(
        f"{run} {lang} {direction} k = {int(k)}"
        for run, lang, direction, k in lowered.select("run", "lang", "direction", "value")
        .unique(maintain_order=True)
        .rows()
    )
    return [
        f"{LOWERED_K} Fewer sentences than the margin's k on a side, so every sentence was a "
        f"neighbour: {cells}. Lower evaluate.bucc.mining.k or mine larger sets."
    ]


def write_bucc_table(
    table: pl.DataFrame,
    out_csv: Path,
    *,
    digits: int = 1,
    notes: Sequence[str] = (),
    lowered: Collection[str] = (),
) -> None:
    """Write the mining table (`bucc_table`) to `out_csv` and its `.md`, with `notes`
    (`bucc_notes`); the Markdown marks the columns of the `lowered` languages (`bucc_lowered`)
    and the averages over them."""
    langs = [c.split("_")[0] for c in table.columns if c not in ("run", "seeds")]
    covered = {c: [c.split("_")[0]] if c.split("_")[0] != "avg" else langs for c in table.columns}
    write_table(
        table,
        out_csv,
        digits=digits,
        notes=notes,
        shown=table.rename(_marked(table, covered, lowered, LOWERED_K)),
        caption="Bitext mining (BUCC protocol): precision, recall and F1 (%) per language on "
        "the test split, at the margin threshold chosen on the threshold split's gold; "
        "`_f1_oracle` at the test split's own best threshold (XTREME's and DAP Table 2's "
        "numbers), `_f1_pivot` at the pivot language's threshold (dual-pivot Table 6); "
        "seeds averaged.",
    )


# -- MTEB ----------------------------------------------------------------------------------------
MTEB_SCHEMA = {
    "run": pl.String,
    "seed": pl.Int64,
    "task": pl.String,
    "split": pl.String,
    "subset": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
}


def mteb_table(rows: Sequence[dict]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(summary, per_subset) tables of MTEB's main scores (×100), seeds averaged.

    `rows`: {run, seed, task, split, subset, metric, value (a fraction, as MTEB writes it)},
    e.g. `xlsent.evaluate.mteb.read_results` of each run's seed directory. Summary: one row
    per run in order of appearance, `run`, `seeds`, then per task (in order of appearance) its
    main score averaged over the task's splits and subsets, as MTEB's
    `TaskResult.get_score` averages them; null for a run without the task. Per subset: `run`,
    `task`, `split`, `subset`, `metric` (the task's main score: cosine_spearman, f1, ...),
    `value`. Refuses duplicated results and cells that only some of a run's seeds have.
    """
    if not rows:
        raise ValueError("no MTEB results to tabulate")
    results = pl.DataFrame(rows, schema=MTEB_SCHEMA)
    _refuse_duplicates(results, ["run", "seed", "task", "split", "subset"])
    seeds = dict(results.group_by("run", maintain_order=True).agg(pl.col("seed").n_unique()).rows())
    per_subset = results.group_by(
        "run", "task", "split", "subset", "metric", maintain_order=True
    ).agg((pl.col("value").mean() * 100).alias("value"), pl.col("seed").n_unique().alias("seeds"))
    for run, task, split, subset, _, _, n_seeds in per_subset.rows():
        if n_seeds < seeds[run]:
            raise ValueError(
                f"run {run!r} has MTEB results for {task} {split} {subset} from only some of "
                f"its {seeds[run]} seeds: evaluate every seed of a run on the same tasks"
            )
    per_subset = per_subset.drop("seeds")
    means = {
        (run, task): value
        for run, task, value in per_subset.group_by("run", "task", maintain_order=True)
        .agg(pl.col("value").mean())
        .rows()
    }
    tasks = per_subset["task"].unique(maintain_order=True).to_list()
    summary = pl.DataFrame(
        [
            {"run": run, "seeds": n, **{task: means.get((run, task)) for task in tasks}}
            for run, n in seeds.items()
        ],
        schema={"run": pl.String, "seeds": pl.Int64, **dict.fromkeys(tasks, pl.Float64)},
    )
    return summary, per_subset


def write_mteb_tables(summary: pl.DataFrame, per_subset: pl.DataFrame, out_csv: Path) -> list[Path]:
    """Write the MTEB summary (`mteb_table`) to `out_csv` and its `.md`, the task's metrics as
    a note, and the per-subset scores to `{stem}_subsets.csv`. Returns the paths written."""
    out_csv = Path(out_csv)
    metrics = dict(per_subset.select("task", "metric").unique(maintain_order=True).rows())
    write_table(
        summary,
        out_csv,
        caption="MTEB (Muennighoff et al., 2023): each task's main score (×100) averaged over "
        "its evaluated subsets and splits (subsets of English and the evaluated languages), "
        "seeds averaged; per subset in the `_subsets.csv` beside it.",
        notes=["Main scores: " + ", ".join(f"{task} {m}" for task, m in metrics.items()) + "."],
    )
    subsets_csv = out_csv.with_name(f"{out_csv.stem}_subsets.csv")
    with atomic_path(subsets_csv) as tmp:
        per_subset.write_csv(tmp, check_extension=False)
    return [out_csv, out_csv.with_suffix(".md"), subsets_csv]


# -- cost ----------------------------------------------------------------------------------------
# Where a run's name sits in a rule's benchmark path (results/benchmarks/{rule}/...): the jobs
# of these rules are one run's; every other rule's jobs serve all runs.
RUN_PART = {"train": 1, "train_dualpivot": 1, "eval": 2, "bisent2vec_train": 1}


def cost_table(
    benchmarks: str | os.PathLike[str],
    gpus: dict[str, int],
    earlier: Mapping[str, Sequence[dict]] | None = None,
) -> pl.DataFrame:
    """What each stage cost, from the `benchmark:` files under `benchmarks` (Snakemake's TSV
    of one job each: wall seconds, peak RSS, CPU seconds).

    One row per stage (the rule; `eval/{task}` for evaluations, `align/{aligner}` for the
    alignment shards) and run (empty for the stages every run shares): jobs, attempts (the
    jobs, and the earlier jobs of a resumed one), wall minutes (summed over jobs), CPU
    minutes, the largest peak RSS (GB), and GPU hours (wall × GPUs of the job: `gpus` maps a
    stage, or `stage/run`, to the GPUs each of its jobs held; 0 for the rest). `earlier` maps
    a benchmark file's path below `benchmarks`, without its suffix (`train/tr/seed42`), to the
    jobs that worked towards it before it resumed their work ({seconds, cpu_seconds} each, to
    its last checkpoint): their time is added to it.
    """
    root = Path(benchmarks)
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        job = path.relative_to(root).with_suffix("")
        parts = job.parts
        stage = "/".join(parts[:2]) if parts[0] in ("eval", "align") else parts[0]
        at = RUN_PART.get(parts[0])
        run = parts[at] if at is not None and len(parts) > at + 1 else ""
        record = pl.read_csv(path, separator="\t").row(-1, named=True)  # the last repeat
        before = (earlier or {}).get(job.as_posix(), ())
        wall = float(record["s"]) + sum(attempt["seconds"] for attempt in before)
        cpu = _number(record.get("cpu_time"))
        held = gpus.get(f"{stage}/{run}", gpus.get(stage, 0))
        rows.append(
            {
                "stage": stage,
                "run": run,
                "attempts": 1 + len(before),
                "wall_s": wall,
                "cpu_s": None if cpu is None else cpu + sum(a["cpu_seconds"] for a in before),
                "max_rss_mb": _number(record.get("max_rss")),
                "gpu_s": wall * held,
            }
        )
    if not rows:
        raise ValueError(f"no benchmark files under {root}")
    return (
        pl.DataFrame(rows)
        .group_by("stage", "run", maintain_order=True)
        .agg(
            pl.len().alias("jobs"),
            pl.col("attempts").sum(),
            (pl.col("wall_s").sum() / 60).alias("wall_min"),
            # null where no job of the stage could be measured (not 0)
            pl.when(pl.col("cpu_s").is_not_null().any())
            .then(pl.col("cpu_s").sum() / 60)
            .alias("cpu_min"),
            (pl.col("max_rss_mb").max() / 1024).alias("peak_rss_gb"),
            (pl.col("gpu_s").sum() / 3600).alias("gpu_h"),
        )
        .sort("stage", "run")
    )


def _number(value: object) -> float | None:
    """A benchmark cell as a number: Snakemake writes "-" where it could not measure."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def write_cost_table(table: pl.DataFrame, out_csv: Path) -> None:
    """Write the cost table (`cost_table`) and its Markdown, with the totals under it."""
    totals = table.select(pl.col("wall_min", "cpu_min", "gpu_h").sum()).row(0, named=True)
    write_table(
        table,
        out_csv,
        digits=2,
        caption="What each stage cost: jobs, wall and CPU minutes summed over its jobs, the "
        "largest peak resident memory (GB), GPU hours (wall × the job's GPUs). A stage with a "
        "run is that run's; the others serve every run. A training job that resumed the work "
        "of killed jobs counts their time too, up to their last checkpoint (`attempts`: the "
        "jobs counted).",
        notes=[
            f"Total: {totals['wall_min']:.1f} wall minutes (summed over jobs, not elapsed), "
            f"{totals['cpu_min']:.1f} CPU minutes, {totals['gpu_h']:.2f} GPU hours."
        ],
    )
