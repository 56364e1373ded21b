# Names and input functions of the align stage (align.smk, which holds only its rules).
from xlsent.align import eflomal_build
from xlsent.align.shards import shard_count
from xlsent.config import aligner_settings

EFLOMAL_PATCH = str(Path(workflow.basedir) / "csrc" / "eflomal" / "seed.patch")
EFLOMAL_SDIST = layout.EFLOMAL_SDIST.format(sdist=eflomal_build.SDIST_NAME)


def align_shard_files(wildcards, kind="arrow"):
    """A language's shards (`kind` arrow) or their stats (json), once its sample exists."""
    n = shard_count(train_pairs(wildcards.lang), ALIGN["shard_size"])
    pattern = {"arrow": layout.ALIGN_SHARD, "json": layout.ALIGN_SHARD_STATS}[kind]
    return [
        pattern.format(aligner=wildcards.aligner, lang=wildcards.lang, shard=f"{i:04d}")
        for i in range(n)
    ]


def align_inputs(wildcards):
    """A shard's pairs and what aligns them: WSPAlign's checkpoint, SimAlign's model
    directory (fetch_model's: a changed model realigns), or eflomal's build, with the
    language's cleaned pairs and its other splits where a small shard borrows pairs beyond
    the cap to estimate on (`borrows_beyond_cap`)."""
    lang = wildcards.lang
    inputs = {
        "corpus": layout.TRAIN_PAIRS.format(lang=lang),
        "words": layout.WORDS.format(lang=lang, split="train"),
    }
    if wildcards.aligner == "wspalign":
        inputs["model"] = layout.WSPALIGN
    elif wildcards.aligner == "simalign":
        inputs["model"] = layout.PRETRAINED.format(model=ALIGN["simalign"]["model"])
    else:
        inputs["binary"] = layout.EFLOMAL_BINARY
        if borrows_beyond_cap(lang):
            # The sample always writes the mining split (empty with corpus.mining_pairs 0).
            inputs["clean"] = layout.CLEAN.format(lang=lang)
            inputs["dev"] = layout.DEV_PAIRS.format(lang=lang)
            inputs["mining"] = layout.MINING_PAIRS.format(lang=lang)
    return inputs


def borrows_beyond_cap(lang):
    """Whether a language's eflomal shards may estimate on its cleaned pairs beyond the
    cap (xlsent.align.estimation), once its sample exists: it left clean pairs out of
    every split, and its training pairs are fewer than align.eflomal.min_estimation_pairs
    (more are enough on their own). Only then are those files a shard's inputs: a corpus
    without such pairs (the demo's) keeps its shards' inputs and commands: no rerun."""
    stats = json.loads(Path(checkpoints.sample.get(lang=lang).output.stats).read_text())
    beyond = stats["available"] - stats["train"] - stats["dev"] - stats["mining"]
    return beyond > 0 and stats["train"] < ALIGN["eflomal"]["min_estimation_pairs"]


def eflomal_args(wildcards, input):
    """eflomal's flags: its build, and the pairs beyond the cap (the inputs clean, dev
    and mining, when a shard has them); nothing for the other aligners. One placeholder of
    the shell command, whose text is then that of the commands before these flags: a
    finished shard of any aligner is not rerun for a changed command."""
    if "binary" not in input.keys():
        return ""
    args = ["--binary", input.binary]
    if "clean" in input.keys():
        args += ["--lang", wildcards.lang, "--clean", input.clean, "--dev", input.dev]
        args += ["--mining", input.mining]
    return shlex.join(args)


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
