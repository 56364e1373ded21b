# Corpus stage: source -> clean (all pairs) -> sample (train/dev) per language.


rule opus_download:
    output:
        zip=layout.OPUS_ZIP,
        record=f"{layout.OPUS_ZIP}.json",
    log:
        layout.log("opus_download/{corpus}/{lang}"),
    # On the login node: cluster compute nodes often have no internet access.
    localrule: True
    conda:
        "../../envs/corpus.yaml"
    threads: 1
    resources:
        mem_mb=1000,
    params:
        manifest=shipped(CORPUS["opus"]["manifest"]),
        base_url=(
            f"--base-url {CORPUS['opus']['base_url']}"
            if CORPUS["opus"]["base_url"]
            else ""
        ),
        retries=CORPUS["opus"]["retries"],
    shell:
        "xlsent download-opus --lang {wildcards.lang} --corpus {wildcards.corpus}"
        " --manifest {params.manifest} {params.base_url} --retries {params.retries}"
        " --out {output.zip} 2> {log}"


rule clean:
    input:
        # The raw files; with corpus.clean.style dap also the model directory (fetch_model)
        # whose tokenizer counts DAP's tokens.
        unpack(corpus_inputs),
    output:
        corpus=layout.CLEAN,
        stats=layout.CLEAN_STATS,
    log:
        layout.log("clean/{lang}"),
    benchmark:
        layout.benchmark("clean/{lang}")
    priority: PRIORITY["to_training"]
    # Cluster: the corpus stage of a language (clean, sample, words) is one Slurm job, and
    # the profile's group-components packs several languages into it.
    group:
        "corpus"
    conda:
        "../../envs/corpus.yaml"
    # Streams the raw files; memory holds a hash and a ratio per pair (about 50 bytes with
    # the deduplication: 8 GB for ~150M pairs, more on a retry). Polars (and with style dap
    # the tokenizer) uses the 2nd core.
    threads: 2
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: 240 * attempt,
    params:
        source=CORPUS["source"],
        identity=source_identity,
        # The corpus.clean settings its style reads (xlsent.config.clean_settings); the
        # tokenizer, with style dap, is an input's directory.
        settings=as_json(clean_settings(config)),
        args=source_args,
        tokenizer=clean_tokenizer_args,
    shell:
        "xlsent clean --lang {wildcards.lang} --source {params.source} {params.args}"
        " --settings {params.settings:q} {params.tokenizer}"
        " --out {output.corpus} --stats {output.stats} 2> {log}"


# A checkpoint: the number of alignment shards of a language follows from its sample.
checkpoint sample:
    input:
        layout.CLEAN,
    output:
        train=layout.TRAIN_PAIRS,
        dev=layout.DEV_PAIRS,
        # Pairs held out for the offline mining set (corpus.mining_pairs; empty with 0).
        mining=layout.MINING_PAIRS,
        stats=layout.SAMPLE_STATS,
    log:
        layout.log("sample/{lang}"),
    benchmark:
        layout.benchmark("sample/{lang}")
    priority: PRIORITY["to_training"]
    group:
        "corpus"
    conda:
        "../../envs/corpus.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    params:
        # The corpus block less the sources and the cleaning (xlsent.config.NOT_PROGRAM_SETTINGS).
        settings=as_json(program_settings("corpus", CORPUS)),
    shell:
        "xlsent sample --lang {wildcards.lang} --settings {params.settings:q}"
        " --clean {input} --train {output.train} --dev {output.dev}"
        " --stats {output.stats} --mining {output.mining} 2> {log}"


rule demo_testset:
    # The demo's Tatoeba-style test set: held-out embedded pairs in the LASER layout.
    output:
        expand(
            f"{layout.DEMO_TATOEBA}/{{name}}",
            name=[Path(p).name for p in tatoeba_files(EVAL_LANGS)],
        ),
    log:
        layout.log("demo_testset"),
    group:
        "corpus"
    conda:
        "../../envs/corpus.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 30 * attempt,
    params:
        langs=EVAL_LANGS,
        out_dir=lambda w, output: Path(output[0]).parent,
        heldout_fraction=CORPUS["demo"]["heldout_fraction"],
        max_pairs=CORPUS["demo"]["heldout_max_pairs"],
        provenance=lambda w: demo.provenance(),
    shell:
        "xlsent demo-testset --langs {params.langs} --out-dir {params.out_dir}"
        " --heldout-fraction {params.heldout_fraction} --max-pairs {params.max_pairs}"
        " 2> {log}"
