"""Where the workflow's files are: every path pattern under `results/` (and the logs), once.

The rules (`workflow/rules/*.smk`), `xlsent.config.outputs` (what `rule all` and each table
read), `xlsent.status`, the failure checks and the commands that find files by their place
read these names; nothing else spells a results path. A pattern's `{name}` parts are the
rules' wildcards (each constrained in `workflow/rules/common.smk`, or where the stage that
introduces it declares its own: `hard_negatives_inputs.smk`, the `encode` rule), or fields
that the code fills in before Snakemake sees the pattern (`fill`): `{source}` of a download,
`{program}` of a build, `{task}` of an evaluation.

Imports nothing of the package (the lowest layer of `[tool.importlinter]`), so that every
layer may read it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

_FIELD = re.compile(r"\{(\w+)\}")


def fill(pattern: str, **values: object) -> str:
    """`pattern` with the named fields replaced by `values`, the others left for Snakemake
    (as `expand(..., allow_missing=True)` leaves them): `fill(CORPUS, split="train")` is
    `results/corpus/{lang}/train.parquet`."""
    return _FIELD.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], pattern)


def wildcards(pattern: str) -> tuple[str, ...]:
    """The fields of `pattern`, each once, in order."""
    return tuple(dict.fromkeys(_FIELD.findall(pattern)))


def to_glob(pattern: str) -> str:
    """`pattern` with each field a `*`: the files it names, for `Path.glob`."""
    return _FIELD.sub("*", pattern)


def lang_args(pattern: str, langs: Iterable[str], **values: object) -> str:
    """`lang=path` arguments of a command, one per language, quoted for the shell: `pattern`
    filled with each language and `values`."""
    return " ".join(shlex.quote(f"{lang}={pattern.format(lang=lang, **values)}") for lang in langs)


def names_regex(names: Iterable[str]) -> str:
    """A wildcard constraint that matches exactly these names; nothing when there are none.

    Rules that write the same output pattern for different kinds of runs (eval_tatoeba and
    eval_tatoeba_bisent2vec) are kept apart by constraining {run} to the names of each kind.
    """
    return "|".join(re.escape(name) for name in names) or "(?!)"


# -- the roots ---------------------------------------------------------------------------------

RESULTS = "results"
"""Everything the workflow makes (`rm -rf results` starts over)."""

LOGS = "logs"
"""Each job's log (its stderr): `log(name)`."""

BENCHMARKS = "results/benchmarks"
"""Each job's benchmark file (Snakemake's TSV: wall time, peak RSS), which the cost table
reads (`xlsent.tables.cost`): `benchmark(name)`."""


def log(name: str) -> str:
    """A job's log: `logs/{name}.log` (`name` a rule's own pattern, e.g. `clean/{lang}`)."""
    return f"{LOGS}/{name}.log"


def benchmark(name: str) -> str:
    """A job's benchmark file: `results/benchmarks/{name}.tsv`; its first part is the stage
    the cost table counts it under (`xlsent.tables.cost.RUN_PART`: where the run's name is)."""
    return f"{BENCHMARKS}/{name}.tsv"


RUN_SEED = "{run}/seed{seed}"
"""A run and seed's part of the paths of its model, checkpoints, vectors and results."""

# -- downloads and builds ----------------------------------------------------------------------

DOWNLOADS = "results/downloads/{source}"
"""What a download rule fetches from the internet, per source (a corpus source of
`xlsent.corpus.sources`, `eflomal`, `bli`, `bucc2018`): on the login node."""

OPUS_ZIP = fill(DOWNLOADS, source="opus") + "/{corpus}/{lang}.zip"
"""A language's OPUS archive of one corpus (`opus_download`; beside it, `.json` its record).
`xlsent.corpus.sources.opus` names the same file below the source's `DOWNLOADS`."""

EFLOMAL_SDIST = fill(DOWNLOADS, source="eflomal") + "/{sdist}"
"""eflomal's source archive from PyPI (`{sdist}`: `xlsent.align.eflomal_build.SDIST_NAME`)."""

BLI_DOWNLOAD = fill(DOWNLOADS, source="bli") + "/{lang}.{direction}"
"""The directory a BLI dictionary given as a URL is downloaded to (one per direction)."""

BUILD = "results/build/{program}/{program}"
"""A C/C++ program the workflow compiles (`eflomal`, `bisent2vec`), in its build directory."""

EFLOMAL_BINARY = BUILD.format(program="eflomal")
BISENT2VEC_BINARY = BUILD.format(program="bisent2vec")

# -- corpus ------------------------------------------------------------------------------------

CORPUS = "results/corpus/{lang}/{split}.parquet"
"""A language's pairs: `clean` (every pair the source gives, cleaned), its sample's `train`
and `dev` splits, and `mining` (held out for the offline mining set and retrieval)."""

CLEAN = fill(CORPUS, split="clean")
TRAIN_PAIRS = fill(CORPUS, split="train")
DEV_PAIRS = fill(CORPUS, split="dev")
MINING_PAIRS = fill(CORPUS, split="mining")

CORPUS_STATS = "results/corpus/{lang}/{step}_stats.json"
"""What a corpus step (`clean`, `sample`) kept and dropped of a language."""

CLEAN_STATS = fill(CORPUS_STATS, step="clean")
SAMPLE_STATS = fill(CORPUS_STATS, step="sample")

DEMO_TATOEBA = "results/demo/tatoeba"
"""The demo's Tatoeba-style test set (`demo_testset`: held-out embedded pairs, LASER layout);
the demo config's `evaluate.tatoeba.dir`."""

# -- tokenize ----------------------------------------------------------------------------------

WORDS = "results/words/{lang}/{split}.parquet"
"""A split's pairs as spaCy words (for the aligners, Bi-Sent2vec, and the tf-idf weights)."""

PRETRAINED = "results/pretrained/{model}"
"""A pretrained model of `models` fetched or converted (`fetch_model`)."""

TOKENIZER = "results/tokenizers/{model}"
"""A model's tokenizer (the pretrained model's, or trained on the corpus)."""

SUBWORDS = "results/subwords/{model}/{lang}/{split}.parquet"
"""A split's pairs as the model's subword ids (what training reads)."""

# -- align -------------------------------------------------------------------------------------

WSPALIGN = "results/aligners/wspalign"
"""WSPAlign's checkpoint, fetched (`fetch_aligner`)."""

ALIGNMENTS = "results/align/{aligner}/{lang}"
"""A language's word alignments by an aligner: shards, and the manifest that joins them."""

ALIGN_SHARD = ALIGNMENTS + "/shard-{shard}.arrow"
ALIGN_SHARD_STATS = ALIGNMENTS + "/shard-{shard}.json"
ALIGN_MANIFEST = ALIGNMENTS + "/_SUCCESS"
"""Written last, listing the shards (`xlsent.align.shards`): what readers go through."""
ALIGN_PHARAOH = ALIGNMENTS + "/links.pharaoh"
"""One line of `en-xx` links per training pair, for inspection (`align_pharaoh`)."""

WORD_SPANS = "results/wordspans/{model}/{aligner}/{lang}.parquet"
"""WACSE's word-level batches of a language: each word's subword span and the links."""
WORD_SPAN_STATS = WORD_SPANS.removesuffix(".parquet") + ".json"

# -- hard negatives ----------------------------------------------------------------------------

HARD_NEGATIVE_POOL = "results/hard_negatives/{start}/{pool}"
"""A training pool's hard-negative stage: {start} the model the runs start from as its
directory below `results/` (`pretrained/{model}` or `models/{run}/seed{seed}`), {pool} the
pairs they are mined among (`all`, or `maxN` for train.max_pairs N)."""

HARD_NEGATIVE_SHARD = HARD_NEGATIVE_POOL + "/vectors-{shard}.arrow"
"""A shard of the pool's pairs (every language's, one after another) and their vectors."""
HARD_NEGATIVES = HARD_NEGATIVE_POOL + "/{lang}"
"""A language's hard negatives, mined among its pairs of the pool."""
HARD_NEGATIVES_FILE = HARD_NEGATIVES + "/negatives.parquet"
HARD_NEGATIVES_MANIFEST = HARD_NEGATIVES + "/_SUCCESS"

# -- train -------------------------------------------------------------------------------------

MODEL = f"results/models/{RUN_SEED}"
"""A run's trained model at a seed (an encoder's, a dual-pivot head's); a word-vector run's
models are one per language below it (`WORD_VECTOR_MODEL`)."""

MODELS = MODEL.split("{")[0]
"""`results/models/`: what a path below it is (a trained model, or part of one)."""

WORD_VECTOR_MODEL = MODEL + "/{lang}"
"""A word-vector run's en-xx model (Bi-Sent2vec, fastText, mapped) of one language."""

CHECKPOINTS = f"results/checkpoints/{RUN_SEED}"
"""A training's checkpoints, its pool and its live log: not an output (Snakemake never removes
them), what a killed or preempted job resumes from."""

CHECKPOINTS_ROOT = CHECKPOINTS.split("/{")[0]

# -- evaluate ----------------------------------------------------------------------------------

VECTORS = f"results/vectors/{RUN_SEED}/{{source}}.arrow"
"""An encoder run's vectors of every distinct sentence of one source (`encode`), which its
evaluations look up."""

VECTORS_ROOT = VECTORS.split("/{")[0]

DATA = "results/data/{name}"
"""Test data the workflow downloads or builds: `tatoeba` (LASER's files, unless
evaluate.tatoeba.dir names a directory), `bucc2018`, `mining` (the offline mining set), `bli`."""

TATOEBA_DIR = DATA.format(name="tatoeba")
BUCC2018_DIR = DATA.format(name="bucc2018")
MINING_SET_DIR = DATA.format(name="mining")
MINING_SET_STATS = MINING_SET_DIR + "/stats.json"
BLI_DIR = DATA.format(name="bli")

BLI_DICTIONARY = BLI_DIR + "/{lang}.{direction}.txt"
"""A test dictionary of evaluate.bli.dictionaries in MUSE format."""
BLI_SEED = BLI_DIR + "/{lang}.seed.txt"
"""The seed part of a language's dictionaries (the mapped runs fit on it)."""
BLI_SEED_STATS = BLI_DIR + "/{lang}.seed.json"
BLI_TEST = BLI_DIR + "/{lang}.{direction}.test.txt"
"""A direction's test part (no word shared with the seed part)."""
BLI_TEST_STATS = BLI_DIR + "/{lang}.{direction}.test.json"

EVAL = f"results/eval/{{task}}/{RUN_SEED}.parquet"
"""A run's results of an evaluation {task} (`tatoeba`, `retrieval`, `bucc`): the columns of
`xlsent.evaluate.results`."""

EVAL_BLI = f"results/eval/bli/{RUN_SEED}/{{lang}}.{{direction}}.parquet"
"""A word-vector run's word translation results of one language and direction."""
EVAL_BLI_STATS = EVAL_BLI.removesuffix(".parquet") + ".json"

EVAL_MTEB = f"results/eval/mteb/{RUN_SEED}"
"""MTEB's result JSON of each task, as MTEB writes them."""

# -- tables and figures ------------------------------------------------------------------------

TABLES = "results/tables"
PLOTS = "results/plots"


def table(name: str, suffix: str = "csv") -> str:
    """A table: `results/tables/{name}.csv` (and its `.md`)."""
    return f"{TABLES}/{name}.{suffix}"


def plot(name: str, suffix: str = "png") -> str:
    """A figure: `results/plots/{name}.png` (and a figure's `.json` of what it drew)."""
    return f"{PLOTS}/{name}.{suffix}"
