# Hard-negative stage (train.hard_negatives above 0): the training pool (every language's
# pairs, one after another) encoded by the model a run starts from, shard by shard, then each
# pair's hardest English negatives mined per language (xlsent.hard_negatives). The train jobs
# of those runs read them. Names and input functions: hard_negatives_inputs.smk.


rule hard_negatives_encode:
    input:
        unpack(hard_negative_encode_inputs),
    output:
        layout.HARD_NEGATIVE_SHARD,
    log:
        layout.log("hard_negatives/{start}/{pool}/vectors-{shard}"),
    benchmark:
        layout.benchmark("hard_negatives/encode/{start}/{pool}/vectors-{shard}")
    priority: PRIORITY["to_fine_tuning"]
    conda:
        "../../envs/gpu.yaml"
    # The fan-out unit on a cluster: `shard_size` pairs of the pool, whichever languages they
    # are; a GPU where hard_negatives.encode gives one (its device auto takes it), else the
    # threads.
    threads: HARD_NEGATIVES["encode"]["threads"]
    resources:
        gpu=HARD_NEGATIVES["encode"]["gpus"],
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: 4 * 60 * attempt,
    params:
        # How it encodes; its GPUs and threads are resources: a changed count reruns nothing.
        settings=as_json(
            program_settings("hard_negatives.encode", HARD_NEGATIVES["encode"])
        ),
        shard_size=HARD_NEGATIVES["shard_size"],
        subwords=hard_negative_encode_args,
        max_pairs=lambda w: (
            "" if pool_cap(w.pool) is None else f"--max-pairs {pool_cap(w.pool)}"
        ),
    shell:
        "xlsent hard-negatives-encode --settings {params.settings:q}"
        " --subwords {params.subwords} --index {wildcards.shard}"
        " --shard-size {params.shard_size} {params.max_pairs} --model {input.model}"
        " --tokenizer {input.tokenizer} --threads {threads} --out {output} 2> {log}"


rule hard_negatives:
    # The search over a language's English sentences (faiss, exact) and the filters; its
    # manifest, written last, lists the shards and what the filters left out.
    input:
        shards=hard_negative_shards,
        corpus=layout.TRAIN_PAIRS,
    output:
        negatives=layout.HARD_NEGATIVES_FILE,
        manifest=layout.HARD_NEGATIVES_MANIFEST,
    log:
        layout.log("hard_negatives/{start}/{pool}/{lang}/mine"),
    benchmark:
        layout.benchmark("hard_negatives/mine/{start}/{pool}/{lang}")
    priority: PRIORITY["to_fine_tuning"]
    conda:
        "../../envs/gpu.yaml"
    threads: HARD_NEGATIVES["encode"]["threads"]
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    params:
        settings=as_json(HARD_NEGATIVES["mine"]),
    shell:
        "xlsent hard-negatives --settings {params.settings:q} --lang {wildcards.lang}"
        " --corpus {input.corpus}"
        " --threads {threads} --out {output.negatives} --manifest {output.manifest}"
        " {input.shards} 2> {log}"
