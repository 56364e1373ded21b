# Tokenize stage: spaCy words (for the aligner and Bi-Sent2vec) and the encoder's subwords.


rule words:
    input:
        layout.CORPUS,
    output:
        layout.WORDS,
    log:
        layout.log("words/{lang}/{split}"),
    benchmark:
        layout.benchmark("words/{lang}/{split}")
    priority: PRIORITY["to_fine_tuning"]
    group:
        "corpus"
    conda:
        "../../envs/corpus.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 120 * attempt,
    shell:
        "xlsent words --lang {wildcards.lang} --corpus {input} --out {output} 2> {log}"


rule fetch_model:
    # A local directory's files, and a bundled model's release (params.source): a change
    # fetches again and reruns everything that read the model. A hub id is fetched once.
    input:
        pretrained_files,
    output:
        directory(layout.PRETRAINED),
    log:
        layout.log("fetch_model/{model}"),
    priority: PRIORITY["to_training"]
    # On the login node: hub downloads need the internet, which compute nodes may lack.
    localrule: True
    conda:
        "../../envs/gpu.yaml"
    threads: 1
    resources:
        mem_mb=4000,
    params:
        path=lambda w: model_spec(w.model)["path"],
        source=model_source,
    shell:
        "xlsent fetch-model --path {params.path} --out {output} 2> {log}"


rule tokenizer:
    input:
        unpack(tokenizer_inputs),
    output:
        directory(layout.TOKENIZER),
    log:
        layout.log("tokenizer/{model}"),
    benchmark:
        layout.benchmark("tokenizer/{model}")
    priority: PRIORITY["to_training"]
    conda:
        "../../envs/gpu.yaml"
    threads: 4
    resources:
        mem_mb=lambda w, attempt: 16000 * attempt,
        runtime=lambda w, attempt: 120 * attempt,
    params:
        spec=lambda w: as_json(tokenizer_spec(w.model)),
        args=tokenizer_args,
        seed=CORPUS["seed"],
    shell:
        "xlsent tokenizer {params.args} --seed {params.seed} --threads {threads}"
        " --out {output} 2> {log}"


rule subwords:
    # A language's training and dev splits in one job (one process, one tokenizer load).
    input:
        corpus=expand(layout.CORPUS, split=SPLITS, allow_missing=True),
        tokenizer=layout.TOKENIZER,
    output:
        expand(layout.SUBWORDS, split=SPLITS, allow_missing=True),
    log:
        layout.log("subwords/{model}/{lang}"),
    benchmark:
        layout.benchmark("subwords/{model}/{lang}")
    priority: PRIORITY["to_training"]
    # Minutes each (a fast tokenizer over one language's splits): packed many to a Slurm job.
    group:
        "subwords"
    conda:
        "../../envs/gpu.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    params:
        corpus=lambda w, input: " ".join(
            f"{split}={path}" for split, path in zip(SPLITS, input.corpus)
        ),
        out=lambda w, output: " ".join(
            f"{split}={path}" for split, path in zip(SPLITS, output)
        ),
        prefix=prefix_args,
    shell:
        "xlsent subwords --corpus {params.corpus} --tokenizer {input.tokenizer}"
        " {params.prefix} --out {params.out} 2> {log}"
