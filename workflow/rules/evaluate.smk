# Evaluate stage: one job per (task, run, seed).
TATOEBA = config["evaluate"]["tatoeba"]
TATOEBA_DIR = TATOEBA["dir"] or "results/data/tatoeba"


def tatoeba_files(langs):
    return [
        f"{TATOEBA_DIR}/tatoeba.{iso3}-eng.{side}"
        for iso3 in (languages.get(lang).iso3 for lang in langs)
        for side in (iso3, "eng")
    ]


def eval_max_length(wildcards):
    return config["evaluate"]["max_length"] or settings_of(wildcards)["max_length"]


if TATOEBA["dir"] and not TATOEBA["dir"].startswith("results/"):
    # A user's directory: say which file is missing and how to fix it before anything runs.
    for path in tatoeba_files(EVAL_LANGS):
        if not Path(path).is_file():
            raise WorkflowError(
                f"Tatoeba file {path} is missing. Put it there, point evaluate.tatoeba.dir at "
                "a directory in the LASER layout, or leave the language out of "
                "evaluate.tatoeba.languages."
            )


rule fetch_tatoeba:
    # On the login node: compute nodes may have no internet access.
    localrule: True
    output:
        tatoeba_files(EVAL_LANGS) if not TATOEBA["dir"] else "results/data/tatoeba/.unused",
    params:
        url=TATOEBA["url"],
    log:
        "logs/fetch_tatoeba.log",
    shell:
        "xlsent fetch-tatoeba --url {params.url} --dir {TATOEBA_DIR} --langs {EVAL_LANGS} 2> {log}"


rule eval_tatoeba:
    input:
        model="results/models/{run}/seed{seed}",
        data=tatoeba_files(EVAL_LANGS),
    output:
        "results/eval/tatoeba/{run}/seed{seed}.parquet",
    params:
        max_length=eval_max_length,
        batch_size=config["evaluate"]["batch_size"],
        device=config["evaluate"]["device"],
    log:
        "logs/eval/tatoeba/{run}/seed{seed}.log",
    benchmark:
        "results/benchmarks/eval/tatoeba/{run}/seed{seed}.tsv"
    threads: 4
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
    shell:
        "xlsent eval-tatoeba --model {input.model} --dir {TATOEBA_DIR} --langs {EVAL_LANGS}"
        " --run {wildcards.run} --seed {wildcards.seed} --max-length {params.max_length}"
        " --batch-size {params.batch_size} --device {params.device} --threads {threads}"
        " --out {output} 2> {log}"
