# Evaluate stage: one job per (task, run, seed).


if not TATOEBA["dir"]:

    rule fetch_tatoeba:
        output:
            tatoeba_files(EVAL_LANGS),
        log:
            "logs/fetch_tatoeba.log",
        # On the login node: compute nodes may have no internet access.
        localrule: True
        conda:
            "../../envs/eval.yaml"
        params:
            url=TATOEBA["url"],
            dir=lambda w, output: Path(output[0]).parent,
            langs=EVAL_LANGS,
        shell:
            "xlsent fetch-tatoeba --url {params.url} --dir {params.dir} --langs {params.langs}"
            " 2> {log}"


rule eval_tatoeba:
    input:
        model="results/models/{run}/seed{seed}",
        data=tatoeba_files(EVAL_LANGS),
    output:
        "results/eval/tatoeba/{run}/seed{seed}.parquet",
    log:
        "logs/eval/tatoeba/{run}/seed{seed}.log",
    benchmark:
        "results/benchmarks/eval/tatoeba/{run}/seed{seed}.tsv"
    conda:
        "../../envs/eval.yaml"
    threads: 4
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
    params:
        dir=lambda w, input: Path(input.data[0]).parent,
        langs=EVAL_LANGS,
        max_length=eval_max_length,
        batch_size=config["evaluate"]["batch_size"],
        device=config["evaluate"]["device"],
    shell:
        "xlsent eval-tatoeba --model {input.model} --dir {params.dir} --langs {params.langs}"
        " --run {wildcards.run} --seed {wildcards.seed} --max-length {params.max_length}"
        " --batch-size {params.batch_size} --device {params.device} --threads {threads}"
        " --out {output} 2> {log}"
