# Tables stage: gather every run's results into the papers' tables.


rule tables_tatoeba:
    input:
        [f"results/eval/tatoeba/{rs.run}/seed{rs.seed}.parquet" for rs in RUN_SEEDS],
    output:
        csv="results/tables/tatoeba.csv",
        md="results/tables/tatoeba.md",
        langs_csv="results/tables/tatoeba_langs.csv",
        langs_md="results/tables/tatoeba_langs.md",
    log:
        "logs/tables/tatoeba.log",
    conda:
        "../../envs/eval.yaml"
    params:
        groups=config["tables"]["groups"],
    shell:
        "xlsent tables --groups {params.groups} --out {output.csv} {input} 2> {log}"


rule tables_ablation:
    input:
        [
            f"results/eval/tatoeba/{rs.run}/seed{rs.seed}.parquet"
            for rs in RUN_SEEDS
            if rs.run in config["tables"]["ablation"]["runs"]
        ],
    output:
        csv="results/tables/ablation.csv",
        md="results/tables/ablation.md",
    log:
        "logs/tables/ablation.log",
    conda:
        "../../envs/eval.yaml"
    params:
        runs=config["tables"]["ablation"]["runs"],
        groups=config["tables"]["ablation"]["groups"],
    shell:
        "xlsent tables-ablation --runs {params.runs} --groups {params.groups}"
        " --out {output.csv} {input} 2> {log}"


rule plots:
    input:
        summary="results/tables/tatoeba.csv",
        models=[f"results/models/{rs.run}/seed{rs.seed}" for rs in RUN_SEEDS],
    output:
        bars="results/plots/tatoeba_groups.png",
        curves="results/plots/dev_curves.png",
    log:
        "logs/plots.log",
    conda:
        "../../envs/eval.yaml"
    params:
        groups=config["tables"]["groups"],
        logs=[
            f"{rs.run}/seed{rs.seed}=results/models/{rs.run}/seed{rs.seed}/train_log.jsonl"
            for rs in RUN_SEEDS
        ],
    shell:
        "xlsent plots --summary {input.summary} --groups {params.groups}"
        " --logs {params.logs} --bars {output.bars} --curves {output.curves} 2> {log}"
