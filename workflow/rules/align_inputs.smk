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
    directory (fetch_model's: a changed model realigns), or eflomal's build."""
    inputs = {
        "corpus": layout.TRAIN_PAIRS.format(lang=wildcards.lang),
        "words": layout.WORDS.format(lang=wildcards.lang, split="train"),
    }
    if wildcards.aligner == "wspalign":
        inputs["model"] = layout.WSPALIGN
    elif wildcards.aligner == "simalign":
        inputs["model"] = layout.PRETRAINED.format(model=ALIGN["simalign"]["model"])
    else:
        inputs["binary"] = layout.EFLOMAL_BINARY
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
