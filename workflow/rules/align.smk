# Align stage: one job per shard of a language's training pairs, then a manifest that joins
# them. A finished shard is never recomputed; a killed one leaves no file that looks done.


rule fetch_aligner:
    # A local checkpoint's files are inputs, as fetch_model's: a changed one copies it again.
    input:
        local_files(ALIGN["wspalign"]["model"]),
    output:
        directory(layout.WSPALIGN),
    log:
        layout.log("fetch_aligner/wspalign"),
    # On the login node: hub downloads need the internet, which compute nodes may lack.
    localrule: True
    conda:
        "../../envs/gpu.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        path=ALIGN["wspalign"]["model"],
    shell:
        "xlsent fetch-model --path {params.path} --out {output} 2> {log}"


rule eflomal_download:
    # PyPI's source of eflomal 2.0.0, checked against the SHA-256 that
    # xlsent.align.eflomal_build pins. Without the internet, place that file here by hand.
    output:
        EFLOMAL_SDIST,
    log:
        layout.log("eflomal_download"),
    # On the login node: compute nodes may have no internet access.
    localrule: True
    conda:
        "../../envs/cpp.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    shell:
        "xlsent eflomal-download --out {output} 2> {log}"


rule eflomal_build:
    # eflomal with our seed patch (csrc/eflomal/README.md): unpack, patch, one C compiler
    # call; redone when the patch changes.
    input:
        sdist=EFLOMAL_SDIST,
        patch=EFLOMAL_PATCH,
    output:
        layout.EFLOMAL_BINARY,
    log:
        layout.log("eflomal_build"),
    benchmark:
        layout.benchmark("eflomal_build")
    conda:
        "../../envs/cpp.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 1000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    shell:
        "xlsent eflomal-build --sdist {input.sdist} --patch {input.patch} --out {output}"
        " 2> {log}"


rule align_shard:
    input:
        unpack(align_inputs),
    output:
        shard=layout.ALIGN_SHARD,
        stats=layout.ALIGN_SHARD_STATS,
    log:
        layout.log("align/{aligner}/{lang}/shard-{shard}"),
    benchmark:
        layout.benchmark("align/{aligner}/{lang}/shard-{shard}")
    priority: PRIORITY["to_fine_tuning"]
    conda:
        "../../envs/gpu.yaml"
    # The fan-out unit on a cluster: one job per shard, never grouped. WSPAlign: a GPU, the
    # main thread and a tokenising one; SimAlign: a GPU, or the threads on a CPU; eflomal:
    # three samplers (its links depend on align.eflomal.seed, not on the threads it gets).
    threads: 4
    resources:
        gpu=align_gpus,
        mem_mb=lambda w, attempt: 16000 * attempt,
        runtime=lambda w, attempt: 4 * 60 * attempt,
    params:
        # The aligner's settings; its GPUs are a resource, not a param: a changed count
        # reruns no shard.
        settings=lambda w: as_json(align_settings(w)),
        shard_size=ALIGN["shard_size"],
        total=lambda w: train_pairs(w.lang),
        model=lambda w, input: (
            f"--model {input.model}" if "model" in input.keys() else ""
        ),
        # eflomal's flags: its build, and where a small shard borrows pairs beyond the cap.
        binary=eflomal_args,
    shell:
        "xlsent align-shard --method {wildcards.aligner} --settings {params.settings:q}"
        " --corpus {input.corpus} --words {input.words} --index {wildcards.shard}"
        " --shard-size {params.shard_size} --total {params.total} {params.model}"
        " {params.binary} --threads {threads} --out {output.shard} --stats {output.stats}"
        " 2> {log}"


rule align_manifest:
    input:
        shards=align_shard_files,
        stats=lambda w: align_shard_files(w, "json"),
    output:
        layout.ALIGN_MANIFEST,
    log:
        layout.log("align/{aligner}/{lang}/manifest"),
    priority: PRIORITY["to_fine_tuning"]
    # Seconds each (reads the shards' JSON): packed many to a Slurm job.
    group:
        "align_manifest"
    conda:
        "../../envs/corpus.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 1000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        settings=lambda w: as_json(align_record(w)),
    shell:
        "xlsent align-manifest --method {wildcards.aligner} --lang {wildcards.lang}"
        " --settings {params.settings:q} --out {output} {input.stats} 2> {log}"


rule align_pharaoh:
    # For inspection (not part of `all`): one line of `en-xx` links per training pair.
    input:
        layout.ALIGN_MANIFEST,
    output:
        layout.ALIGN_PHARAOH,
    log:
        layout.log("align/{aligner}/{lang}/pharaoh"),
    conda:
        "../../envs/corpus.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    shell:
        "xlsent align-pharaoh --manifest {input} --out {output} 2> {log}"
