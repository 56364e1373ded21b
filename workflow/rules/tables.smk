# Tables stage: gather every run's results into the papers' tables.


rule tables_tatoeba:
    input:
        results=tatoeba_results(),
        # Languages that trained on fewer pairs than the minimum are marked.
        corpus_stats=expand(layout.SAMPLE_STATS, lang=LANGS),
    output:
        csv=report(
            layout.table("tatoeba"),
            caption="../report/tatoeba.rst",
            category="Tables",
            labels={"table": "Tatoeba, language groups"},
        ),
        md=layout.table("tatoeba", "md"),
        langs_csv=report(
            layout.table("tatoeba_langs"),
            caption="../report/tatoeba_langs.rst",
            category="Tables",
            labels={"table": "Tatoeba, per language"},
        ),
        langs_md=layout.table("tatoeba_langs", "md"),
    log:
        layout.log("tables/tatoeba"),
    benchmark:
        layout.benchmark("tables/tatoeba")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        groups=group_arguments(config, config["tables"]["groups"]),
        directions=config["tables"]["language_directions"],
    shell:
        "xlsent tables --groups {params.groups} --corpus-stats {input.corpus_stats}"
        " --language-directions {params.directions} --out {output.csv} {input.results}"
        " 2> {log}"


rule tables_ablation:
    input:
        results=tatoeba_results(config["tables"]["ablation"]["runs"]),
        corpus_stats=expand(layout.SAMPLE_STATS, lang=LANGS),
    output:
        csv=report(
            layout.table("ablation"),
            caption="../report/ablation.rst",
            category="Tables",
            labels={"table": "Ablation (WACSE Table 10)"},
        ),
        md=layout.table("ablation", "md"),
    log:
        layout.log("tables/ablation"),
    benchmark:
        layout.benchmark("tables/ablation")
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
        groups=group_arguments(config, config["tables"]["ablation"]["groups"]),
    shell:
        "xlsent tables-ablation --runs {params.runs} --groups {params.groups}"
        " --corpus-stats {input.corpus_stats} --out {output.csv} {input.results} 2> {log}"


rule tables_compare:
    # Run against run (tables.compare.pairs): per group and language, the difference of the
    # seed means, each run's seed range, and the languages above, below and level; on dev
    # too, from the trained runs' kept checkpoints.
    input:
        results=COMPARE_RESULTS,
        models=list(COMPARE_MODELS.values()),
    output:
        csv=report(
            layout.table("compare"),
            caption="../report/compare.rst",
            category="Tables",
            labels={"table": "Run against run, per group and language"},
        ),
        md=layout.table("compare", "md"),
    log:
        layout.log("tables/compare"),
    benchmark:
        layout.benchmark("tables/compare")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        pairs=[f"{a}:{b}" for a, b in config["tables"]["compare"]["pairs"]],
        groups=group_arguments(config, config["tables"]["groups"]),
        models=[f"{label}={model}" for label, model in COMPARE_MODELS.items()],
    shell:
        "xlsent tables-compare --pairs {params.pairs} --groups {params.groups}"
        " --out {output.csv} --results {input.results} --models {params.models} 2> {log}"


rule tables_transfer:
    # Dual-pivot transfer: Tatoeba on each run's pivot language and over the others.
    input:
        tatoeba_results(TRANSFER),
    output:
        csv=report(
            layout.table("transfer"),
            caption="../report/transfer.rst",
            category="Tables",
            labels={"table": "Transfer from one pivot pair (dual-pivot)"},
        ),
        md=layout.table("transfer", "md"),
    log:
        layout.log("tables/transfer"),
    benchmark:
        layout.benchmark("tables/transfer")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        pivots=[f"{run}={pivot}" for run, pivot in TRANSFER.items()],
        trained=LANGS,
        groups=group_arguments(config, config["tables"]["transfer"]["groups"]),
    shell:
        "xlsent tables-transfer --pivots {params.pivots} --trained {params.trained}"
        " --groups {params.groups} --out {output.csv} {input} 2> {log}"


rule tables_dev:
    # Each encoder run's dev P@1 at every evaluation: the curves' numbers, and the step kept.
    input:
        models=list(ENCODER_MODELS.values()),
        # Languages whose dev split is below the minimum are left out of one column.
        corpus_stats=expand(layout.SAMPLE_STATS, lang=LANGS),
    output:
        csv=report(
            layout.table("dev"),
            caption="../report/dev.rst",
            category="Tables",
            labels={"table": "Dev P@1 along training"},
        ),
        md=layout.table("dev", "md"),
    log:
        layout.log("tables/dev"),
    benchmark:
        layout.benchmark("tables/dev")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        models=[f"{label}={model}" for label, model in ENCODER_MODELS.items()],
    shell:
        "xlsent tables-dev --out {output.csv} --models {params.models}"
        " --corpus-stats {input.corpus_stats} 2> {log}"


rule plots:
    input:
        summary=layout.table("tatoeba"),
        # The encoder runs' training records (word-vector runs have none).
        models=list(ENCODER_MODELS.values()),
    output:
        bars=report(
            layout.plot("tatoeba_groups"),
            caption="../report/tatoeba_groups.rst",
            category="Figures",
        ),
        curves=report(
            layout.plot("dev_curves"),
            caption="../report/dev_curves.rst",
            category="Figures",
        ),
    log:
        layout.log("plots"),
    benchmark:
        layout.benchmark("plots")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        groups=group_arguments(config, config["tables"]["groups"]),
        logs=[
            f"{label}={model}/train_log.jsonl"
            for label, model in ENCODER_MODELS.items()
        ],
    shell:
        "xlsent plots --summary {input.summary} --groups {params.groups}"
        " --logs {params.logs} --bars {output.bars} --curves {output.curves} 2> {log}"


if "aligned_words" in FIGURES:

    rule figure_aligned_words:
        # WACSE Figure 1: t-SNE of aligned word pairs of the training pairs, a panel per run
        # (figures.aligned_words). Seconds on CPU: a few hundred sentences per run.
        input:
            models=list(figure_models("aligned_words").values()),
            corpora=expand(
                layout.TRAIN_PAIRS,
                lang=FIGURES["aligned_words"].langs,
            ),
            alignments=expand(
                layout.ALIGN_MANIFEST,
                aligner=ALIGN["method"],
                lang=FIGURES["aligned_words"].langs,
            ),
        output:
            png=report(
                layout.plot("aligned_words"),
                caption="../report/aligned_words.rst",
                category="Figures",
            ),
            stats=layout.plot("aligned_words", "json"),
        log:
            layout.log("figures/aligned_words"),
        benchmark:
            layout.benchmark("figures/aligned_words")
        group:
            "tables"
        conda:
            "../../envs/eval.yaml"
        threads: 2
        resources:
            mem_mb=lambda w, attempt: 4000 * attempt,
            runtime=lambda w, attempt: 30 * attempt,
        params:
            runs=list(FIGURES["aligned_words"].runs),
            langs=list(FIGURES["aligned_words"].langs),
            models=figure_model_args("aligned_words"),
            corpora=lang_args(layout.TRAIN_PAIRS, FIGURES["aligned_words"].langs),
            alignments=lang_args(
                layout.ALIGN_MANIFEST,
                FIGURES["aligned_words"].langs,
                aligner=ALIGN["method"],
            ),
            pairs=config["figures"]["aligned_words"]["pairs"],
            seed=config["figures"]["seed"],
            max_length=figure_max_length("aligned_words"),
        shell:
            "xlsent figure-aligned-words --models {params.models}"
            " --alignments {params.alignments} --corpora {params.corpora}"
            " --pairs {params.pairs} --seed {params.seed} --max-length {params.max_length}"
            " --threads {threads} --out {output.png} --stats {output.stats} 2> {log}"


if "tatoeba_tokens" in FIGURES:

    rule figure_tatoeba_tokens:
        # DAP Figure 1: PCA of the token states of Tatoeba translation pairs, a panel per run
        # (figures.tatoeba_tokens).
        input:
            models=list(figure_models("tatoeba_tokens").values()),
            data=tatoeba_files(FIGURES["tatoeba_tokens"].langs),
        output:
            png=report(
                layout.plot("tatoeba_tokens"),
                caption="../report/tatoeba_tokens.rst",
                category="Figures",
            ),
            stats=layout.plot("tatoeba_tokens", "json"),
        log:
            layout.log("figures/tatoeba_tokens"),
        benchmark:
            layout.benchmark("figures/tatoeba_tokens")
        group:
            "tables"
        conda:
            "../../envs/eval.yaml"
        threads: 2
        resources:
            mem_mb=lambda w, attempt: 4000 * attempt,
            runtime=lambda w, attempt: 30 * attempt,
        params:
            runs=list(FIGURES["tatoeba_tokens"].runs),
            langs=list(FIGURES["tatoeba_tokens"].langs),
            models=figure_model_args("tatoeba_tokens"),
            dir=lambda w, input: Path(input.data[0]).parent,
            text=TATOEBA["text"],
            pairs=config["figures"]["tatoeba_tokens"]["pairs"],
            seed=config["figures"]["seed"],
            max_length=figure_max_length("tatoeba_tokens"),
        shell:
            "xlsent figure-tatoeba-tokens --models {params.models} --dir {params.dir}"
            " --langs {params.langs} --tatoeba-text {params.text} --pairs {params.pairs}"
            " --seed {params.seed}"
            " --max-length {params.max_length} --threads {threads} --out {output.png}"
            " --stats {output.stats} 2> {log}"


rule tables_retrieval:
    # Sentence retrieval among held-out pairs: one row per run (encoders and word vectors),
    # P@1 per language and direction, group averages; seeds averaged.
    input:
        results=RETRIEVAL_RESULTS,
        corpus_stats=expand(layout.SAMPLE_STATS, lang=LANGS),
    output:
        csv=report(
            layout.table("retrieval"),
            caption="../report/retrieval.rst",
            category="Tables",
            labels={"table": "Sentence retrieval, held-out pairs"},
        ),
        md=layout.table("retrieval", "md"),
    log:
        layout.log("tables/retrieval"),
    benchmark:
        layout.benchmark("tables/retrieval")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        groups=group_arguments(config, RETRIEVAL_GROUPS),
    shell:
        "xlsent tables-retrieval --groups {params.groups}"
        " --corpus-stats {input.corpus_stats} --out {output.csv} {input.results} 2> {log}"


rule tables_bli:
    # Word translation of the word-vector runs: one row per run, P@1/5/10 by NN and CSLS per
    # language and direction, seeds averaged.
    input:
        BLI_RESULTS,
    output:
        csv=report(
            layout.table("bli"),
            caption="../report/bli.rst",
            category="Tables",
            labels={"table": "Word translation (BLI)"},
        ),
        md=layout.table("bli", "md"),
    log:
        layout.log("tables/bli"),
    benchmark:
        layout.benchmark("tables/bli")
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


rule tables_bucc:
    # Bitext mining of the sentence-encoder runs: one row per run, P/R/F1 per mined language
    # on the test split (and F1 at the split's own and at the pivot's threshold), seeds
    # averaged.
    input:
        results=BUCC_RESULTS,
    output:
        csv=report(
            layout.table("bucc"),
            caption="../report/bucc.rst",
            category="Tables",
            labels={"table": "Bitext mining (BUCC)"},
        ),
        md=layout.table("bucc", "md"),
    log:
        layout.log("tables/bucc"),
    benchmark:
        layout.benchmark("tables/bucc")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    shell:
        "xlsent tables-bucc --out {output.csv} --results {input.results} 2> {log}"


rule tables_mteb:
    # MTEB's main score of each task per run, from MTEB's own result JSON (seeds averaged),
    # and every subset's beside it.
    input:
        results=list(MTEB_RESULTS.values()),
    output:
        csv=report(
            layout.table("mteb"),
            caption="../report/mteb.rst",
            category="Tables",
            labels={"table": "MTEB"},
        ),
        md=layout.table("mteb", "md"),
        subsets=layout.table("mteb_subsets"),
    log:
        layout.log("tables/mteb"),
    benchmark:
        layout.benchmark("tables/mteb")
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        results=[f"{label}={path}" for label, path in MTEB_RESULTS.items()],
    shell:
        "xlsent tables-mteb --out {output.csv} --results {params.results} 2> {log}"


rule tables_cost:
    # What each stage and run cost, from every job's benchmark file; after the other tables
    # and plots, so that theirs are counted too.
    input:
        tables=table_outputs(config),
    output:
        csv=report(
            layout.table("cost"),
            caption="../report/cost.rst",
            category="Tables",
            labels={"table": "Cost per stage and run"},
        ),
        md=layout.table("cost", "md"),
    log:
        layout.log("tables/cost"),
    group:
        "tables"
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        gpus=gpus_per_job(config),
        # Read whole, not inputs: every job's benchmark file and checkpoint record, and what
        # each encoding and training ran on (the rows' device and precision).
        benchmarks=layout.BENCHMARKS,
        checkpoints=layout.CHECKPOINTS_ROOT,
        vectors=layout.VECTORS_ROOT,
        models=layout.MODELS,
    shell:
        "xlsent tables-cost --benchmarks {params.benchmarks}"
        " --checkpoints {params.checkpoints} --vectors {params.vectors}"
        " --models {params.models} --gpus {params.gpus}"
        " --out {output.csv} {input.tables} 2> {log}"
