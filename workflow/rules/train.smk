# Train stage: one job per (run, seed); checkpoints live outside the output, so a rerun of a
# killed or preempted job resumes from the last one.


rule word_spans:
    # The word-level batches of WACSE, prepared once per language: subword span of every word
    # and the alignment links, read from the align stage's shards through their manifest.
    input:
        corpus=layout.TRAIN_PAIRS,
        manifest=layout.ALIGN_MANIFEST,
        tokenizer=layout.TOKENIZER,
    output:
        spans=layout.WORD_SPANS,
        stats=layout.WORD_SPAN_STATS,
    log:
        layout.log("word_spans/{model}/{aligner}/{lang}"),
    benchmark:
        layout.benchmark("word_spans/{model}/{aligner}/{lang}")
    priority: PRIORITY["to_fine_tuning"]
    group:
        "word_spans"
    conda:
        "../../envs/gpu.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    params:
        # The subwords carry the model's prefix, as the subwords rule's do.
        prefix=prefix_args,
    shell:
        "xlsent word-spans --corpus {input.corpus} --manifest {input.manifest}"
        " --tokenizer {input.tokenizer} {params.prefix} --out {output.spans}"
        " --stats {output.stats} 2> {log}"


rule train:
    input:
        unpack(train_inputs),
    output:
        directory(layout.MODEL),
    log:
        layout.log("train/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("train/{run}/seed{seed}")
    wildcard_constraints:
        run=names_regex(ENCODER_RUNS),
    priority: PRIORITY["training"]
    conda:
        "../../envs/gpu.yaml"
    threads: lambda w: train_settings_of(w)["threads"]
    resources:
        nodes=train_resources("nodes"),
        gpu=train_resources("gpu"),
        gres=train_resources("gres"),
        tasks=train_resources("tasks"),
        tasks_per_gpu=train_resources("tasks_per_gpu"),
        mpi=train_resources("mpi"),
        mem_mb=train_mem_mb,
        runtime=lambda w, attempt: 24 * 60 * attempt,
    params:
        # The program's settings and its processes; threads only decide where it runs: no
        # reason to retrain.
        settings=train_identity,
        model=start_spec,
        args=train_args,
        checkpoints=layout.CHECKPOINTS,
        launcher=train_launcher,
    # The log appended to, and named: a job refused while an orphaned one of an earlier run
    # still trains puts that one's log back (Snakemake removed it) and appends its refusal.
    shell:
        "{params.launcher} train --settings {params.settings:q} --model {params.model:q}"
        " --tokenizer {input.tokenizer} {params.args} --checkpoints {params.checkpoints}"
        " --threads {threads} --out {output} --log {log} 2>> {log}"


rule train_dualpivot:
    # Dual-pivot transfer: a head over a frozen encoder (the run's model, or the model of the
    # run init_from names) trained on the pivot language's pairs with English; one job per
    # run and seed, the frozen encoder's pooled states cached in memory.
    input:
        unpack(dualpivot_inputs),
    output:
        directory(layout.MODEL),
    log:
        layout.log("train_dualpivot/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("train_dualpivot/{run}/seed{seed}")
    wildcard_constraints:
        run=names_regex(DUALPIVOT_RUNS),
    conda:
        "../../envs/gpu.yaml"
    threads: lambda w: dualpivot_of(w)["threads"]
    resources:
        gpu=lambda w: dualpivot_of(w)["gpus"],
        mem_mb=lambda w, attempt: 16000 * attempt,
        runtime=lambda w, attempt: 4 * 60 * attempt,
    params:
        settings=lambda w: as_json(program_settings("dualpivot", dualpivot_of(w))),
        model=start_spec,
    shell:
        "xlsent train-dualpivot --settings {params.settings:q} --encoder {input.encoder}"
        " --model {params.model:q} --tokenizer {input.tokenizer}"
        " --train {input.train} --dev {input.dev}"
        " --threads {threads} --out {output} 2> {log}"
