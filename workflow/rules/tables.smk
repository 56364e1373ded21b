# Tables stage: gather every run's results into the papers' tables.


rule tables_tatoeba:
    input:
        results=[
            f"results/eval/tatoeba/{rs.run}/seed{rs.seed}.parquet" for rs in RUN_SEEDS
        ],
        # Languages that trained on fewer pairs than the minimum are marked.
        corpus_stats=expand("results/corpus/{lang}/sample_stats.json", lang=LANGS),
    output:
        csv=report(
            "results/tables/tatoeba.csv",
            caption="../report/tatoeba.rst",
            category="Tables",
            labels={"table": "Tatoeba, language groups"},
        ),
        md="results/tables/tatoeba.md",
        langs_csv=report(
            "results/tables/tatoeba_langs.csv",
            caption="../report/tatoeba_langs.rst",
            category="Tables",
            labels={"table": "Tatoeba, per language"},
        ),
        langs_md="results/tables/tatoeba_langs.md",
    log:
        "logs/tables/tatoeba.log",
    benchmark:
        "results/benchmarks/tables/tatoeba.tsv"
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        groups=config["tables"]["groups"],
        directions=config["tables"]["language_directions"],
    shell:
        "xlsent tables --groups {params.groups} --corpus-stats {input.corpus_stats}"
        " --language-directions {params.directions} --out {output.csv} {input.results}"
        " 2> {log}"


rule tables_ablation:
    input:
        results=[
            f"results/eval/tatoeba/{rs.run}/seed{rs.seed}.parquet"
            for rs in RUN_SEEDS
            if rs.run in config["tables"]["ablation"]["runs"]
        ],
        corpus_stats=expand("results/corpus/{lang}/sample_stats.json", lang=LANGS),
    output:
        csv=report(
            "results/tables/ablation.csv",
            caption="../report/ablation.rst",
            category="Tables",
            labels={"table": "Ablation (WACSE Table 10)"},
        ),
        md="results/tables/ablation.md",
    log:
        "logs/tables/ablation.log",
    benchmark:
        "results/benchmarks/tables/ablation.tsv"
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        runs=config["tables"]["ablation"]["runs"],
        groups=config["tables"]["ablation"]["groups"],
    shell:
        "xlsent tables-ablation --runs {params.runs} --groups {params.groups}"
        " --corpus-stats {input.corpus_stats} --out {output.csv} {input.results} 2> {log}"


rule plots:
    input:
        summary="results/tables/tatoeba.csv",
        # The encoder runs' training records (word-vector runs have none).
        models=[
            f"results/models/{rs.run}/seed{rs.seed}"
            for rs in RUN_SEEDS
            if rs.run in ENCODER_RUNS
        ],
    output:
        bars=report(
            "results/plots/tatoeba_groups.png",
            caption="../report/tatoeba_groups.rst",
            category="Figures",
        ),
        curves=report(
            "results/plots/dev_curves.png",
            caption="../report/dev_curves.rst",
            category="Figures",
        ),
    log:
        "logs/plots.log",
    benchmark:
        "results/benchmarks/plots.tsv"
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        groups=config["tables"]["groups"],
        logs=[
            f"{rs.run}/seed{rs.seed}=results/models/{rs.run}/seed{rs.seed}/train_log.jsonl"
            for rs in RUN_SEEDS
            if rs.run in ENCODER_RUNS
        ],
    shell:
        "xlsent plots --summary {input.summary} --groups {params.groups}"
        " --logs {params.logs} --bars {output.bars} --curves {output.curves} 2> {log}"


rule tables_bli:
    # Word translation of the word-vector runs: one row per run, P@1/5/10 by NN and CSLS per
    # language and direction, seeds averaged.
    input:
        bli_results(),
    output:
        csv=report(
            "results/tables/bli.csv",
            caption="../report/bli.rst",
            category="Tables",
            labels={"table": "Word translation (BLI)"},
        ),
        md="results/tables/bli.md",
    log:
        "logs/tables/bli.log",
    benchmark:
        "results/benchmarks/tables/bli.tsv"
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    shell:
        "xlsent tables-bli --out {output.csv} {input} 2> {log}"


rule tables_cost:
    # What each stage and run cost, from every job's benchmark file; after the other tables
    # and plots, so that theirs are counted too.
    input:
        tables=cost_table_after(),
    output:
        csv=report(
            "results/tables/cost.csv",
            caption="../report/cost.rst",
            category="Tables",
            labels={"table": "Cost per stage and run"},
        ),
        md="results/tables/cost.md",
    log:
        "logs/tables/cost.log",
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        gpus=gpus_per_job(),
    shell:
        "xlsent tables-cost --benchmarks results/benchmarks --gpus {params.gpus}"
        " --out {output.csv} {input.tables} 2> {log}"
