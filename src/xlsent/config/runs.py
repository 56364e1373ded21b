"""Looking things up in a validated config: the runs by method, each run's settings as its
job gets them, the run a run starts from, the languages and groups evaluated."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xlsent import defaults, languages
from xlsent.methods import DUALPIVOT_METHODS, ENCODER_METHODS, LINKED_METHODS, METHODS

# What `xlsent.config` re-exports of this module (its `__getattr__`).
__all__ = [
    "BLI_DIRECTIONS",
    "NOT_PROGRAM_SETTINGS",
    "RunSeed",
    "aligner_settings",
    "aligners",
    "bisent2vec_settings",
    "bisent2vec_trainer_settings",
    "clean_settings",
    "dualpivot_settings",
    "encoding_settings",
    "gpus_per_job",
    "group_arguments",
    "init_source",
    "mapped_settings",
    "max_positions",
    "processes_per_node",
    "program_settings",
    "retrieval_groups",
    "retrieval_languages",
    "run_aligner",
    "run_max_length",
    "run_seeds",
    "runs_of",
    "tatoeba_languages",
    "train_request",
    "train_settings",
    "training_processes",
    "transfer_pivots",
]

# The keys of a settings block that the program its job runs does not take, by block (the
# schema's `x-program: false`): the job's resources, which the scheduler gives it (threads;
# gpus and nodes, whose processes the train command starts), inputs the rule passes as files
# (an aligner's model, the BLI dictionaries), and settings of other jobs (bisent2vec.tfidf is
# the Tatoeba evaluation's; the corpus block's sources and cleaning are the download and
# clean jobs', the rest the sample job's). A block whose program takes every key is not
# listed. The one table the rules, the commands and the tests use.
NOT_PROGRAM_SETTINGS = defaults.not_program_settings()
# Keys whose default is the behaviour from before they existed and the program's own default
# (the schema's `x-left-out-at-default: true`), with that default, by block: a job's settings
# leave them out at that default, so that a version adding one plans no finished job again (a
# rule's params decide its reruns).
LEFT_OUT_AT_DEFAULT = defaults.left_out_at_default()
BLI_DIRECTIONS = ("en2xx", "xx2en")


def table_groups(config: dict, made_only: bool = False) -> dict[str, list[str]]:
    """The group names of each `groups` key of the tables, by config key; with `made_only`,
    of the tables this config makes (the ablation table with `tables.ablation.runs`, the
    transfer table with dual-pivot runs)."""
    tables = config["tables"]
    groups = {"tables.groups": tables["groups"]}
    if tables["ablation"]["runs"] or not made_only:
        groups["tables.ablation.groups"] = tables["ablation"]["groups"]
    if runs_of(config, DUALPIVOT_METHODS) or not made_only:
        groups["tables.transfer.groups"] = tables["transfer"]["groups"]
    return groups


def group_languages(config: dict, names: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The languages of each group of `names`, built-in or defined in the config
    (`tables.group_languages`; validated by `config.checks`)."""
    return languages.members(names, languages.define_groups(config["tables"]["group_languages"]))


def group_arguments(config: dict, names: Sequence[str]) -> list[str]:
    """`names` as a table command's `--groups` arguments (`languages.group_arguments`)."""
    defined = languages.define_groups(config["tables"]["group_languages"])
    return languages.group_arguments(names, defined)


def listed(codes: Sequence[str], shown: int = 8) -> str:
    """`codes` for a message: the first `shown`, then how many more."""
    more = f" and {len(codes) - shown} more" if len(codes) > shown else ""
    return ", ".join(codes[:shown]) + more


def tatoeba_languages(config: dict) -> list[str]:
    """The languages the encoder runs are evaluated on in Tatoeba (default: `languages`)."""
    return languages.resolve(config["evaluate"]["tatoeba"]["languages"] or config["languages"])


def retrieval_languages(config: dict) -> list[str]:
    """The languages of the sentence retrieval table (`evaluate.retrieval.languages`), in
    order; [] when there is none."""
    return languages.resolve(config["evaluate"]["retrieval"]["languages"])


def retrieval_groups(config: dict) -> list[str]:
    """The groups of `tables.groups` whose every language is retrieved: the retrieval table's
    group columns besides `all` (a group it could only leave blank is not shown)."""
    retrieved = set(retrieval_languages(config))
    groups = group_languages(config, config["tables"]["groups"])
    return [name for name, codes in groups.items() if set(codes) <= retrieved]


def multiples_near(value: int, unit: int) -> str:
    """The multiples of `unit` either side of `value` ("768 or 1024"), for a message."""
    below = value // unit * unit
    return " or ".join(str(n) for n in (below, below + unit) if n)


def train_key(config: dict, run: str, name: str) -> str:
    """The key a run's training setting comes from: its own override or the global block."""
    return f"runs.{run}.train.{name}" if name in config["runs"][run]["train"] else f"train.{name}"


def init_source(config: dict, run: str, seed: int) -> RunSeed | None:
    """The run and seed whose model `run` at `seed` starts from (`init_from`), if any."""
    source = config["runs"][run]["init_from"]
    if source is None:
        return None
    if isinstance(source, str):
        return RunSeed(source, seed)
    return RunSeed(source["run"], source["seed"])


def max_positions(config: dict, run: str) -> int | None:
    """The most subword tokens per sentence that the model a run starts from takes: for a
    scratch model trained by the run `init_from` names, the train.max_length it was trained
    at (its position embeddings); None when the run builds its own model or starts from a
    checkpoint's."""
    spec = config["runs"][run]
    source = spec["init_from"]
    if source is None or config["models"][spec["model"]]["init"] != "scratch":
        return None
    target = source if isinstance(source, str) else source["run"]
    return train_settings(config, target, 0)["max_length"]


def transfer_pivots(config: dict) -> dict[str, str]:
    """The rows of the transfer table and each one's pivot language (`tables.transfer.runs`;
    by default every dual-pivot run and the runs they start from); {} without dual-pivot
    runs (no table)."""
    runs = config["runs"]
    dualpivot = runs_of(config, DUALPIVOT_METHODS)
    if not dualpivot:
        return {}
    chosen = config["tables"]["transfer"]["runs"]
    if chosen is None:
        sources = [init_source(config, run, 0) for run in dualpivot]
        chosen = list(dict.fromkeys([*(s.run for s in sources if s), *dualpivot]))
    return {
        run: dualpivot_settings(config, run, 0)["pivot"]
        if runs[run]["method"] in DUALPIVOT_METHODS
        else config["dualpivot"]["pivot"]
        for run in chosen
    }


def block_key(config: dict, run: str, block: str, name: str) -> str:
    """The key a run's setting of `block` comes from: its own override or the global block."""
    return f"runs.{run}.{block}.{name}" if name in config["runs"][run][block] else f"{block}.{name}"


@dataclass(frozen=True)
class RunSeed:
    run: str
    seed: int


def run_seeds(config: dict) -> Iterator[RunSeed]:
    for run, spec in config["runs"].items():
        for seed in spec["seeds"]:
            yield RunSeed(run, seed)


def train_settings(config: dict, run: str, seed: int) -> dict:
    """The run's training settings: the global `train` block, the run's overrides, the seed."""
    spec = config["runs"][run]
    return {**config["train"], **spec["train"], "method": spec["method"], "seed": seed}


def processes_per_node(settings: dict) -> int:
    """The training processes on each node of a job with training `settings`: one per GPU,
    or `gpus` processes on a CPU; one without a GPU."""
    return max(1, settings["gpus"])


def training_processes(settings: dict) -> int:
    """All the training processes of a job (each takes a micro-batch of every pass)."""
    return processes_per_node(settings) * settings["nodes"]


def train_request(settings: dict) -> dict[str, int | str | None]:
    """The Slurm request of a training job with training `settings` (the train rule's
    resources; None: unset): on one node, its GPUs (`--gpus=N`) and `--nodes=1`, so that they
    are not spread over nodes; on several, one task a node with the GPUs of each
    (`--gres=gpu:N`), and the job run as it is, not wrapped in the executor's own srun
    (`mpi`): the rule's command is the srun."""
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
    }


def gpus_per_job(config: dict) -> list[str]:
    """`STAGE=N` / `STAGE/RUN=N`: the GPUs each job of a stage (or of a run's) holds, for the
    cost table's GPU hours: a training's, an aligner's, the hard-negative encoding's and the
    encoder evaluations'."""
    held = [
        f"train/{run}={train_settings(config, run, 0)['gpus']}"
        for run in runs_of(config, ENCODER_METHODS)
    ]
    held += [
        f"train_dualpivot/{run}={dualpivot_settings(config, run, 0)['gpus']}"
        for run in runs_of(config, DUALPIVOT_METHODS)
    ]
    held += [
        f"align/{aligner}={config['align'][aligner].get('gpus', 0)}" for aligner in aligners(config)
    ]
    held.append(f"hard_negatives/encode={config['hard_negatives']['encode']['gpus']}")
    held += [f"eval/{stage}={config['evaluate']['gpus']}" for stage in ("encode", "mteb")]
    return held


def dualpivot_settings(config: dict, run: str, seed: int) -> dict:
    """A dual-pivot run's settings: the global `dualpivot` block, the run's overrides, the
    method and the seed."""
    spec = config["runs"][run]
    return {**config["dualpivot"], **spec["dualpivot"], "method": spec["method"], "seed": seed}


def run_max_length(config: dict, run: str) -> int:
    """Subword tokens per sentence of a sentence-encoder run (the evaluation's default)."""
    if config["runs"][run]["method"] in DUALPIVOT_METHODS:
        return dualpivot_settings(config, run, 0)["max_length"]
    return train_settings(config, run, 0)["max_length"]


def encoding_settings(config: dict, run: str) -> dict:
    """How the evaluations encode the run's sentences (`--encoding` of eval-tatoeba,
    eval-retrieval, eval-bucc and eval-mteb; `xlsent.evaluate.EncodingSettings`): the
    `evaluate` block's scalar keys, `max_length` null taking the run's own."""
    scalars = {k: v for k, v in config["evaluate"].items() if not isinstance(v, dict)}
    settings = program_settings("evaluate", scalars)
    return {**settings, "max_length": settings["max_length"] or run_max_length(config, run)}


def runs_of(config: dict, methods: Sequence[str]) -> list[str]:
    """The names of the runs whose method is one of `methods`, in config order."""
    return [run for run, spec in config["runs"].items() if spec["method"] in methods]


def bisent2vec_settings(config: dict, run: str) -> dict:
    """A word-vector run's settings: the global `bisent2vec` block and the run's overrides."""
    spec = config["runs"][run]
    if "bisent2vec" not in METHODS[spec["method"]].blocks:
        raise ValueError(f"run {run!r} ({spec['method']}) is not a Bi-Sent2vec or fastText run")
    return {**config["bisent2vec"], **spec["bisent2vec"]}


def mapped_settings(config: dict, run: str) -> dict:
    """A mapped run's mapping settings: the global `mapped` block and the run's overrides."""
    spec = config["runs"][run]
    if "mapped" not in METHODS[spec["method"]].blocks:
        raise ValueError(f"run {run!r} ({spec['method']}) is not a mapped run")
    return {**config["mapped"], **spec["mapped"]}


def program_settings(block: str, settings: dict) -> dict:
    """The settings of block `block` ("train", "bisent2vec", "corpus", "align.eflomal") that
    its program takes: all but `NOT_PROGRAM_SETTINGS[block]`, and `LEFT_OUT_AT_DEFAULT[block]`
    at their defaults."""
    left_out = NOT_PROGRAM_SETTINGS.get(block, ())
    defaults = LEFT_OUT_AT_DEFAULT.get(block, {})
    return {
        k: v
        for k, v in settings.items()
        if k not in left_out and not (k in defaults and v == defaults[k])
    }


def run_aligner(config: dict, run: str) -> str:
    """The aligner whose links a run of a method that reads them (wacse) reads: its own
    `aligner`, else `align.method`."""
    return config["runs"][run]["aligner"] or config["align"]["method"]


def aligners(config: dict) -> list[str]:
    """Every aligner the config runs: `align.method`, then those the runs that read links
    (wacse) name."""
    named = [run_aligner(config, run) for run in runs_of(config, LINKED_METHODS)]
    return list(dict.fromkeys([config["align"]["method"], *named]))


def aligner_settings(config: dict, method: str) -> dict:
    """What an alignment job of `method` takes (`xlsent align-shard --settings`): its
    `align.<method>` block less the model the rule passes as an input and the job's GPUs."""
    return program_settings(f"align.{method}", config["align"][method])


def clean_settings(config: dict) -> dict:
    """What the clean job takes (`xlsent clean --settings`): the `corpus.clean` settings its
    style reads. `max_length_ratio` with style words only, so that changing it does not rerun
    style dap's clean jobs (a rule's params decide its reruns); never `tokenizer`, a model's
    name, whose fetched directory the rule passes as `--tokenizer-dir` (an input). With style
    dap and a `corpus.per_source_cap`, that cap and `corpus.seed`: the clean job draws the cap
    before the token filters (`xlsent.corpus.capped`); without a cap, neither, so that no
    finished clean job without one reruns."""
    clean = config["corpus"]["clean"]
    keys = ["style", "min_tokens"] + (["max_length_ratio"] if clean["style"] == "words" else [])
    settings = {key: clean[key] for key in keys}
    if clean["style"] == "dap" and config["corpus"].get("per_source_cap") is not None:
        settings |= {key: config["corpus"][key] for key in ("per_source_cap", "seed")}
    return settings


def bisent2vec_trainer_settings(config: dict, run: str, seed: int) -> dict:
    """What the Bi-Sent2vec trainer takes (`xlsent bisent2vec-train --settings`): the run's
    program settings and the seed."""
    return {**program_settings("bisent2vec", bisent2vec_settings(config, run)), "seed": seed}
