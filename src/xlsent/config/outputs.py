"""What the workflow makes of a config, read off it: the final outputs (`rule all`'s targets:
the tables, plots and alignments), the results each table gathers, the sentence sources an
encoder run's evaluations read vectors of, the BLI test dictionaries and the papers' figures,
with their defaults resolved. Pure functions of a validated config: the rules ask them, and
unit tests can."""

from __future__ import annotations

from dataclasses import dataclass

from xlsent import languages, layout
from xlsent.config.runs import (
    BLI_DIRECTIONS,
    retrieval_languages,
    run_seeds,
    runs_of,
    tatoeba_languages,
    train_settings,
    transfer_pivots,
)
from xlsent.failures.errors import ConfigError
from xlsent.methods import ENCODER_METHODS, SENTENCE_ENCODER_METHODS, WORD_VECTOR_METHODS

# What `xlsent.config` re-exports of this module (its `__getattr__`).
__all__ = [
    "FIGURE_DEFAULTS",
    "VECTOR_TASKS",
    "BliDictionary",
    "Figure",
    "bli_dictionaries",
    "bli_results",
    "bucc_results",
    "compare_models",
    "compare_results",
    "figures",
    "final_outputs",
    "mteb_results",
    "mteb_runs",
    "retrieval_results",
    "table_outputs",
    "vector_source",
    "vector_sources",
]

# The evaluations of an encoder run that read its sentence vectors (`xlsent.evaluate.vectors`).
VECTOR_TASKS = ("tatoeba", "retrieval", "bucc")


def vector_source(config: dict, task: str) -> str:
    """The source (`xlsent.evaluate.vectors.SOURCES`) of the sentences an encoder run's
    evaluation `task` (one of `VECTOR_TASKS`) reads: the Tatoeba files, the corpus's held-out
    `mining` split, or BUCC 2018's files."""
    evaluate = config["evaluate"]
    if task == "tatoeba":
        return "tatoeba"
    if task == "retrieval":
        held_out_from = evaluate["retrieval"]["from"]
    elif task == "bucc":
        if evaluate["bucc"]["source"] == "bucc2018":
            return "bucc2018"
        held_out_from = evaluate["bucc"]["heldout"]["from"]
    else:
        raise ValueError(f"task is one of {', '.join(VECTOR_TASKS)}, not {task!r}")
    return "tatoeba" if held_out_from == "tatoeba" else "mining"


def vector_sources(config: dict) -> dict[str, list[str]]:
    """{source: the languages its encode job encodes}: those of every evaluation that reads
    the source, each once, in the order the evaluations name them (Tatoeba's first)."""
    tasks = {
        "tatoeba": tatoeba_languages(config),
        "retrieval": retrieval_languages(config),
        "bucc": languages.resolve(config["evaluate"]["bucc"]["languages"]),
    }
    sources: dict[str, list[str]] = {}
    for task, langs in tasks.items():
        if langs:
            merged = sources.setdefault(vector_source(config, task), [])
            merged += [lang for lang in langs if lang not in merged]
    return sources


@dataclass(frozen=True)
class BliDictionary:
    """One test dictionary of `evaluate.bli.dictionaries`, for one language and direction.

    `kind` is `muse` (a local file), `url` (a MUSE file to download) or `freedict` (a dictd
    dictionary to convert); `reverse` swaps its pairs (xx2en from an en→xx dictionary).
    """

    lang: str
    direction: str
    kind: str
    location: str
    reverse: bool


def _dictionary(lang: str, direction: str, source: str, reverse: bool) -> BliDictionary:
    if source.startswith("freedict:"):
        return BliDictionary(lang, direction, "freedict", source.removeprefix("freedict:"), reverse)
    if source.startswith(("http://", "https://")):
        return BliDictionary(lang, direction, "url", source, reverse)
    return BliDictionary(lang, direction, "muse", source, reverse)


def bli_dictionaries(config: dict) -> list[BliDictionary]:
    """Every (language, direction) with a test dictionary, in config order."""
    out = []
    for lang, source in config["evaluate"]["bli"]["dictionaries"].items():
        if isinstance(source, str):
            out.append(_dictionary(lang, "en2xx", source, reverse=False))
            out.append(_dictionary(lang, "xx2en", source, reverse=True))
        else:
            for direction in BLI_DIRECTIONS:
                if direction in source:
                    out.append(_dictionary(lang, direction, source[direction], reverse=False))
    return out


# The papers' figures (`figures:`) and what each shows where its settings are null: WACSE
# Figure 1 sets TR beside WACSE on en-kk and en-te, DAP Figure 1 TR beside DAP on ar-en.
FIGURE_DEFAULTS = {
    "aligned_words": (("tr", "wacse"), ("kk", "te")),
    "tatoeba_tokens": (("tr", "dap"), ("ar",)),
}


@dataclass(frozen=True)
class Figure:
    """A figure of `figures:` as it is drawn: the runs side by side and the languages shown."""

    runs: tuple[str, ...]
    langs: tuple[str, ...]


def figures(config: dict) -> dict[str, Figure]:
    """The figures a validated `config` draws, by name; a figure without runs is not drawn.

    Null `runs` are the paper's two runs when both are encoder runs of `runs` (no figure
    otherwise), so that a config without them needs no `figures` block; null `languages` are
    the paper's of those the figure can draw from (`languages` for the aligned training words,
    the Tatoeba languages for the test pairs), else as many of the first of them. Runs and
    languages given explicitly must exist: the ConfigError names the key.
    """
    encoders = runs_of(config, ENCODER_METHODS)
    tatoeba = config["evaluate"]["tatoeba"]["languages"] or config["languages"]
    sources = {
        "aligned_words": (languages.resolve(config["languages"]), "`languages`"),
        "tatoeba_tokens": (languages.resolve(tatoeba), "the Tatoeba languages"),
    }
    out = {}
    for name, (paper_runs, paper_langs) in FIGURE_DEFAULTS.items():
        settings = config["figures"][name]
        runs = settings["runs"]
        if runs is None:
            runs = list(paper_runs) if set(paper_runs) <= set(encoders) else []
        for run in runs:
            if run not in encoders:
                raise ConfigError(
                    f"config key `figures.{name}.runs`: {run!r} is not an encoder run of `runs` "
                    f"(those are: {', '.join(encoders) or 'none'}); name encoder runs, or [] "
                    "for no figure"
                )
        if not runs:
            continue
        available, where = sources[name]
        if settings["languages"] is None:
            langs = [lang for lang in paper_langs if lang in available]
            langs = langs or available[: len(paper_langs)]
        else:
            key = f"figures.{name}.languages"
            try:
                langs = languages.resolve(settings["languages"])
            except languages.UnknownLanguageError as err:
                raise ConfigError(f"config key `{key}`: {err}") from None
            missing = [lang for lang in langs if lang not in available]
            if missing:
                raise ConfigError(
                    f"config key `{key}`: {', '.join(missing)} not among {where} "
                    f"({', '.join(available)}), which the figure draws from: name some of "
                    "those, or null for the paper's"
                )
        if settings["pairs"] < len(langs):
            raise ConfigError(
                f"config key `figures.{name}.pairs` ({settings['pairs']}) is shared by "
                f"{len(langs)} languages: give each at least one"
            )
        out[name] = Figure(tuple(runs), tuple(langs))
    return out


# -- the results each table gathers, and the final outputs -------------------------------------


def _results(config: dict, task: str, methods: tuple[str, ...]) -> list[str]:
    """`layout.EVAL` of `task` for every run × seed of `methods`."""
    runs = set(runs_of(config, methods))
    return [
        layout.EVAL.format(task=task, run=rs.run, seed=rs.seed)
        for rs in run_seeds(config)
        if rs.run in runs
    ]


def bucc_results(config: dict) -> list[str]:
    """Every mining result: sentence-encoder run × seed, when languages are to be mined."""
    if not config["evaluate"]["bucc"]["languages"]:
        return []
    return _results(config, "bucc", SENTENCE_ENCODER_METHODS)


def compare_results(config: dict) -> list[str]:
    """What the comparison table reads: the Tatoeba results of every run × seed of
    `tables.compare.pairs`, then the mining results of those of them that are mined."""
    compared = {run for pair in config["tables"]["compare"]["pairs"] for run in pair}
    mined = (
        runs_of(config, SENTENCE_ENCODER_METHODS) if config["evaluate"]["bucc"]["languages"] else []
    )
    return [
        layout.EVAL.format(task=task, run=rs.run, seed=rs.seed)
        for task, runs in (("tatoeba", compared), ("bucc", compared & set(mined)))
        for rs in run_seeds(config)
        if rs.run in runs
    ]


def compare_models(config: dict) -> dict[str, str]:
    """The models whose kept checkpoints the comparison table's dev task reads: {"run/seedN":
    `layout.MODEL`} of every run × seed of `tables.compare.pairs` that the workflow's trainer
    exports (its `best.json` holds the dev P@1 per language)."""
    compared = {run for pair in config["tables"]["compare"]["pairs"] for run in pair}
    trained = compared & set(runs_of(config, ENCODER_METHODS))
    return {
        layout.RUN_SEED.format(run=rs.run, seed=rs.seed): layout.MODEL.format(
            run=rs.run, seed=rs.seed
        )
        for rs in run_seeds(config)
        if rs.run in trained
    }


def retrieval_results(config: dict) -> list[str]:
    """Every retrieval result: run × seed, when evaluate.retrieval.languages names any."""
    if not retrieval_languages(config):
        return []
    return _results(config, "retrieval", SENTENCE_ENCODER_METHODS + WORD_VECTOR_METHODS)


def bli_results(config: dict) -> list[str]:
    """Every BLI result: word-vector run × seed × dictionary (language and direction)."""
    words = set(runs_of(config, WORD_VECTOR_METHODS))
    return [
        layout.EVAL_BLI.format(run=rs.run, seed=rs.seed, lang=d.lang, direction=d.direction)
        for rs in run_seeds(config)
        if rs.run in words
        for d in bli_dictionaries(config)
    ]


def mteb_runs(config: dict) -> list[str]:
    """The sentence-encoder runs MTEB evaluates. MTEB names a subset's languages, not each
    text's (STS17 en-de, Tatoeba kaz-eng): an encoder with language embeddings cannot be told
    which text is in which language, so its runs are left out (their Tatoeba and BUCC numbers
    are in those tables)."""
    encoders = set(runs_of(config, ENCODER_METHODS))
    return [
        run
        for run in runs_of(config, SENTENCE_ENCODER_METHODS)
        if run not in encoders or not train_settings(config, run, 0)["language_embeddings"]
    ]


def mteb_results(config: dict) -> dict[str, str]:
    """Every MTEB result directory by `RUN/seedSEED` (the table's labels); none without tasks."""
    if not config["evaluate"]["mteb"]["tasks"]:
        return {}
    runs = set(mteb_runs(config))
    return {
        layout.RUN_SEED.format(run=rs.run, seed=rs.seed): layout.EVAL_MTEB.format(
            run=rs.run, seed=rs.seed
        )
        for rs in run_seeds(config)
        if rs.run in runs
    }


def table_outputs(config: dict) -> list[str]:
    """The tables and plots the config makes: the Tatoeba table and its plot, the papers'
    figures it draws, and each table whose results it has (what the cost table waits for)."""
    made = {
        "dev": runs_of(config, ENCODER_METHODS),
        "ablation": config["tables"]["ablation"]["runs"],
        "compare": config["tables"]["compare"]["pairs"],
        "transfer": transfer_pivots(config),
        "retrieval": retrieval_results(config),
        "bli": bli_results(config),
        "bucc": bucc_results(config),
        "mteb": mteb_results(config),
    }
    return [
        layout.table("tatoeba"),
        layout.plot("tatoeba_groups"),
        *(layout.plot(name) for name in figures(config)),
        *(layout.table(name) for name, results in made.items() if results),
    ]


def final_outputs(config: dict) -> list[str]:
    """What `snakemake` with no target makes (`rule all`): every table and plot, the cost
    table, and the word alignments of `align.method` for every language."""
    langs = languages.resolve(config["languages"])
    method = config["align"]["method"]
    return [
        *table_outputs(config),
        layout.table("cost"),
        *(layout.ALIGN_MANIFEST.format(aligner=method, lang=lang) for lang in langs),
    ]
