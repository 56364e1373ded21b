# Names and input functions of the train stage (train.smk, which holds only its rules:
# word_spans, train, train_dualpivot); hard_negatives_inputs.smk reads start_weights and
# train_settings_of too.
from xlsent.config import (
    dualpivot_settings,
    encoding_settings,
    init_source,
    processes_per_node,
    run_aligner,
    train_request,
    train_settings,
)
from xlsent.train.memory import job_mem_mb


def train_pattern(run):
    """What a run trains on per language: subwords, or word spans + links (a method that
    reads the aligner's links: wacse)."""
    if method_of(run).needs_links:
        return layout.fill(layout.WORD_SPANS, aligner=run_aligner(config, run))
    return layout.fill(layout.SUBWORDS, split="train")


def start_weights(wildcards):
    """The model directory a run starts from (or freezes): the model of the run `init_from`
    names (trained first, so a change there retrains this run), the pretrained model, or
    none for a scratch model."""
    source = init_source(config, wildcards.run, int(wildcards.seed))
    if source is not None:
        return layout.MODEL.format(run=source.run, seed=source.seed)
    model = model_of(wildcards.run)
    if model_spec(model)["init"] == "pretrained":
        return layout.PRETRAINED.format(model=model)
    return None


def start_spec(wildcards):
    """The run's model entry as its trainer builds it: from a run's model, a pretrained
    one (`init_from` makes a scratch model's run start from trained weights)."""
    spec = dict(model_spec(model_of(wildcards.run)))
    source = init_source(config, wildcards.run, int(wildcards.seed))
    if source is not None:
        init_from = layout.RUN_SEED.format(run=source.run, seed=source.seed)
        spec.update(init="pretrained", init_from=init_from)
    return as_json(spec)


def train_inputs(wildcards):
    model = model_of(wildcards.run)
    inputs = {
        "tokenizer": layout.TOKENIZER.format(model=model),
        "train": expand(train_pattern(wildcards.run), model=model, lang=LANGS),
        "dev": expand(layout.SUBWORDS, model=model, lang=LANGS, split="dev"),
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
        f" --dev {lang_args(layout.SUBWORDS, LANGS, model=model, split='dev')}"
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
    """The Slurm request `resources: {name}` of a training job, from its settings
    (xlsent.config.train_request: its GPUs on one node, or srun over several); None: unset.
    """
    return lambda wildcards: train_request(train_settings_of(wildcards))[name]


def dualpivot_of(wildcards):
    return dualpivot_settings(config, wildcards.run, int(wildcards.seed))


def dualpivot_inputs(wildcards):
    """The frozen encoder, its tokenizer, and the pivot's train and dev subwords."""
    model = model_of(wildcards.run)
    pivot = dualpivot_of(wildcards)["pivot"]
    return {
        "encoder": start_weights(wildcards),
        "tokenizer": layout.TOKENIZER.format(model=model),
        "train": layout.SUBWORDS.format(model=model, lang=pivot, split="train"),
        "dev": layout.SUBWORDS.format(model=model, lang=pivot, split="dev"),
    }
