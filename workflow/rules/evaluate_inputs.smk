# Names and input functions of the evaluate stage (evaluate.smk, which holds only its rules):
# the sentence vectors of an encoder run, Tatoeba, retrieval, BLI, mining and MTEB.
from xlsent.config import (
    encoding_settings,
    mteb_runs,
    retrieval_languages,
    vector_source,
    vector_sources,
)
from xlsent.evaluate import bucc_files as bucc_layout
from xlsent.evaluate.bucc_files import files_directory as bucc_dir
from xlsent.evaluate.mining_sizes import SPLITS as MINING_SET_SPLITS


def encoding_of(wildcards):
    return as_json(encoding_settings(config, wildcards.run))


# -- sentence vectors: an encoder run's, per source, that its evaluations read -----------------

# {source: languages} of the encode jobs (xlsent.config.vector_sources).
VECTOR_SOURCES = vector_sources(config)


def vectors_of(task):
    """The input function of an evaluation `task`'s sentence vectors (the run's, its source's)."""
    source = vector_source(config, task)
    return lambda w: layout.VECTORS.format(run=w.run, seed=w.seed, source=source)


def encode_inputs(wildcards):
    """The model, and the files whose sentences the source's encode job encodes."""
    langs = VECTOR_SOURCES[wildcards.source]
    files = {
        "tatoeba": lambda: tatoeba_files(langs),
        "mining": lambda: expand(layout.MINING_PAIRS, lang=langs),
        "bucc2018": lambda: bucc_files(langs),
    }[wildcards.source]()
    return {
        "model": layout.MODEL.format(run=wildcards.run, seed=wildcards.seed),
        "sentences": files,
    }


def encode_args(wildcards, input):
    """The flags of `xlsent encode` that say where the source's sentences are."""
    langs = VECTOR_SOURCES[wildcards.source]
    if wildcards.source == "mining":
        return f"--pairs {lang_args(layout.MINING_PAIRS, langs)}"
    if wildcards.source == "tatoeba":
        directory = str(Path(input.sentences[0]).parent)
        return shlex.join(
            ["--dir", directory, "--langs", *langs, "--tatoeba-text", TATOEBA["text"]]
        )
    return shlex.join(
        [
            "--dir",
            bucc_dir(input.sentences),
            "--langs",
            *langs,
            "--splits",
            *BUCC_SPLITS,
        ]
    )


# -- the word-vector runs' Tatoeba: a model per language pair ----------------------------------

# The languages a word-vector run is evaluated on in Tatoeba: those it has a pair model of.
BISENT2VEC_EVAL_LANGS = [lang for lang in EVAL_LANGS if lang in LANGS]
# The words the tf-idf weights are counted on: the training split's, which hold every word
# that has a vector (docs/methods.md, Bi-Sent2vec's retrieval vector).
BISENT2VEC_IDF_WORDS = layout.fill(layout.WORDS, split="train")


def bisent2vec_idf_words(wildcards):
    """The words files the tf-idf weights are counted on, if the run uses them."""
    if not bisent2vec_settings(config, wildcards.run)["tfidf"]:
        return []
    return expand(BISENT2VEC_IDF_WORDS, lang=BISENT2VEC_EVAL_LANGS)


def bisent2vec_eval_args(wildcards):
    models = lang_args(
        layout.WORD_VECTOR_MODEL,
        BISENT2VEC_EVAL_LANGS,
        run=wildcards.run,
        seed=wildcards.seed,
    )
    args = f"--models {models}"
    if bisent2vec_settings(config, wildcards.run)["tfidf"]:
        idf = lang_args(BISENT2VEC_IDF_WORDS, BISENT2VEC_EVAL_LANGS)
        args += f" --idf {idf}"
    return args


# -- BLI: the dictionaries (`BLI`, common.smk), their seed and test parts ---------------------

BLI_SPLIT = config["evaluate"]["bli"]


def bli_source(wildcards):
    wanted = (wildcards.lang, wildcards.direction)
    found = [d for d in BLI if (d.lang, d.direction) == wanted]
    if not found:
        raise WorkflowError(
            f"no BLI dictionary for {wildcards.lang} {wildcards.direction} in "
            "evaluate.bli.dictionaries"
        )
    return found[0]


def bli_dictionary_inputs(wildcards):
    """The local files a dictionary is made of (a changed file re-makes it); none for a URL."""
    source = bli_source(wildcards)
    if source.kind == "url":
        return []
    if source.kind == "freedict":
        dict_path = shipped(source.location)
        stem = Path(dict_path).name.removesuffix(".dz").removesuffix(".dict")
        return [dict_path, str(Path(dict_path).with_name(f"{stem}.index"))]
    return [shipped(source.location)]


def bli_dictionary_args(wildcards, input):
    source = bli_source(wildcards)
    if source.kind == "freedict":
        args = ["--freedict", input[0], "--index", input[1]]
    elif source.kind == "url":
        # A directory per dictionary: two jobs may download the same URL (en2xx, xx2en).
        where = layout.BLI_DOWNLOAD.format(
            lang=wildcards.lang, direction=wildcards.direction
        )
        args = ["--muse", source.location, "--download-dir", where]
    else:
        args = ["--muse", input[0]]
    return shlex.join(args + (["--reverse"] if source.reverse else []))


def bli_split_inputs(wildcards):
    """Every dictionary of the language: the split covers all of its directions."""
    return {
        d.direction: layout.BLI_DICTIONARY.format(lang=d.lang, direction=d.direction)
        for d in BLI
        if d.lang == wildcards.lang
    }


def bli_split_files(wildcards, input):
    """`--dictionaries` of a split job: DIRECTION=FILE per dictionary of the language. (The
    split's settings are params of their own: params that read `input` are not recorded,
    so they would not rerun the split when changed.)"""
    return shlex.join([f"{direction}={path}" for direction, path in input.items()])


# -- mining ------------------------------------------------------------------------------------

BUCC = config["evaluate"]["bucc"]
BUCC_HELDOUT = BUCC["heldout"]
BUCC_LANGS = languages.resolve(BUCC["languages"])  # known: xlsent.config checked them
# The BUCC-layout directory the encoder runs are mined on, and its (threshold, test) splits:
# the shared task's files (given, or downloaded), or the mining set built from held-out pairs.
if BUCC["source"] == "heldout":
    BUCC_DIR = layout.MINING_SET_DIR
    BUCC_SPLITS = list(MINING_SET_SPLITS)
else:
    BUCC_DIR = BUCC["bucc2018"]["dir"] or layout.BUCC2018_DIR
    BUCC_SPLITS = [BUCC["bucc2018"]["threshold_split"], BUCC["bucc2018"]["test_split"]]


def bucc_files(langs):
    """Every file the mining evaluation reads: per language and split, both sides and gold."""
    return [
        str(path)
        for lang in langs
        for split in BUCC_SPLITS
        for path in bucc_layout.split_files(BUCC_DIR, lang, split)
    ]


def mining_set_files():
    """The offline set's splits of every mined language (the outputs of mining_set)."""
    return [
        str(path)
        for lang in BUCC_LANGS
        for split in MINING_SET_SPLITS
        for path in bucc_layout.split_files(layout.MINING_SET_DIR, lang, split)
    ]


def mining_set_inputs(wildcards):
    """The held-out pairs the mining set is built from, per language."""
    if BUCC_HELDOUT["from"] == "corpus":
        return expand(layout.MINING_PAIRS, lang=BUCC_LANGS)
    return tatoeba_files(BUCC_LANGS)


def mining_set_pairs(wildcards):
    """`lang=PATH` arguments of `xlsent mining-set`: a corpus split, or the Tatoeba folder."""
    pattern = layout.MINING_PAIRS if BUCC_HELDOUT["from"] == "corpus" else TATOEBA_DIR
    return lang_args(pattern, BUCC_LANGS)


# -- retrieval ---------------------------------------------------------------------------------

# Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3), every run: its languages
# (checked by xlsent.config) and where their pairs come from.
RETRIEVAL = config["evaluate"]["retrieval"]
RETRIEVAL_LANGS = retrieval_languages(config)


def tatoeba_text_args(source):
    """`--tatoeba-text` of a job that reads held-out pairs from `source` (corpus or tatoeba):
    the Tatoeba files are read as every other job reads them (evaluate.tatoeba.text), and a
    job reading the corpus's pairs gets nothing, so that the setting reruns it not."""
    return f"--tatoeba-text {TATOEBA['text']}" if source == "tatoeba" else ""


def retrieval_pair_files():
    """The held-out pairs retrieved: the corpus stage's mining split, or the Tatoeba files."""
    if RETRIEVAL["from"] == "corpus":
        return expand(layout.MINING_PAIRS, lang=RETRIEVAL_LANGS)
    return tatoeba_files(RETRIEVAL_LANGS)


def retrieval_pairs(wildcards):
    """`LANG=PATH` arguments of `--pairs`: a corpus split, or the Tatoeba folder."""
    pattern = layout.MINING_PAIRS if RETRIEVAL["from"] == "corpus" else TATOEBA_DIR
    return lang_args(pattern, RETRIEVAL_LANGS)


def retrieval_models(wildcards):
    """`LANG=DIR` arguments of `--models`: the word-vector run's model of each pair."""
    return lang_args(
        layout.WORD_VECTOR_MODEL,
        RETRIEVAL_LANGS,
        run=wildcards.run,
        seed=wildcards.seed,
    )


# -- mteb --------------------------------------------------------------------------------------

MTEB = config["evaluate"]["mteb"]
# The languages whose subsets (with English) MTEB evaluates.
MTEB_LANGS = languages.resolve(MTEB["languages"] or EVAL_LANGS)
# The runs MTEB evaluates (not those with language embeddings: xlsent.config.mteb_runs).
MTEB_RUNS = mteb_runs(config)


def mteb_inputs(wildcards):
    """The model, and the LASER files when LocalTatoeba reads them."""
    inputs = {"model": layout.MODEL.format(run=wildcards.run, seed=wildcards.seed)}
    if "LocalTatoeba" in MTEB["tasks"]:
        inputs["tatoeba"] = tatoeba_files(MTEB_LANGS)
    return inputs


def mteb_args(wildcards, input):
    """The flags of `xlsent eval-mteb` that only some configurations pass."""
    args = []
    if "tatoeba" in input.keys():
        args += ["--tatoeba-dir", str(Path(input.tatoeba[0]).parent)]
    if MTEB["cache_dir"]:
        args += ["--cache-dir", MTEB["cache_dir"]]
    return shlex.join(args)
