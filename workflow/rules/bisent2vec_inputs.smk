# Names and input functions of the Bi-Sent2vec stage (bisent2vec.smk, which holds only its
# rules); their evaluations' are in evaluate_inputs.smk.
from xlsent.bisent2vec import memory as bisent2vec_memory
from xlsent.config import (
    bisent2vec_settings,
    bisent2vec_trainer_settings,
    mapped_settings,
)

BISENT2VEC_SOURCE = Path(workflow.basedir) / "csrc" / "bisent2vec"


def bisent2vec_sources():
    """What the C++ build reads (xlsent.bisent2vec.build.source_digest's files), named: a
    change rebuilds the trainer."""
    root = BISENT2VEC_SOURCE
    files = [*(root / "src").rglob("*"), *(root / "tests").rglob("*")]
    return {
        "cmake": str(root / "CMakeLists.txt"),
        "sources": sorted(str(path) for path in files if path.is_file()),
    }


def bisent2vec_train_inputs(wildcards):
    inputs = {"words": layout.WORDS.format(lang=wildcards.lang, split="train")}
    if method_of(wildcards.run).binary:
        inputs["binary"] = layout.BISENT2VEC_BINARY
    if mapped_seed_dictionary(wildcards.run, wildcards.lang):
        inputs["seed_dictionary"] = layout.BLI_SEED.format(lang=wildcards.lang)
    return inputs


def mapped_seed_dictionary(run, lang):
    """Whether a mapped run fits on the language's BLI seed dictionary (else: induced)."""
    if "mapped" not in method_of(run).blocks:
        return False
    if mapped_settings(config, run)["seed_dictionary"] != "auto":
        return False
    return any(d.lang == lang for d in BLI)


def mapped_args(wildcards):
    """The mapping's settings flag of a mapped run's training job (nothing for the others).
    A function of the wildcards alone, so that Snakemake records it: a changed setting
    retrains (params that read `input` are not recorded)."""
    if "mapped" not in method_of(wildcards.run).blocks:
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
    """The trainer's matrices and the process, times the attempt (xlsent.bisent2vec.memory)."""
    settings = bisent2vec_settings(config, wildcards.run)
    return bisent2vec_memory.job_mem_mb(settings, attempt)
