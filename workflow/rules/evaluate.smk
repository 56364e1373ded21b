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
        threads: 1
        resources:
            mem_mb=1000,
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
    # Encoder runs; the word-vector runs have eval_tatoeba_bisent2vec.
    wildcard_constraints:
        run=names_regex(ENCODER_RUNS),
    conda:
        "../../envs/eval.yaml"
    # Encodes each language's ~1000 Tatoeba pairs on CPU (evaluate.device auto finds no GPU
    # in a CPU job): minutes for xlm-roberta-base; one job per run and seed.
    threads: 4
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
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


rule eval_tatoeba_bisent2vec:
    # The Bi-Sent2vec and fastText runs: each language with its own en-xx model, sentence
    # vectors averaged from the words of the tokenize stage's tokenizer (idf-weighted, the
    # idf counted on the dev split, when the run's bisent2vec.tfidf is set).
    input:
        models=lambda w: expand(
            BISENT2VEC_MODEL, run=w.run, seed=w.seed, lang=BISENT2VEC_EVAL_LANGS
        ),
        idf=bisent2vec_idf_words,
        data=tatoeba_files(BISENT2VEC_EVAL_LANGS),
    output:
        "results/eval/tatoeba/{run}/seed{seed}.parquet",
    log:
        "logs/eval/tatoeba/{run}/seed{seed}.log",
    benchmark:
        "results/benchmarks/eval/tatoeba/{run}/seed{seed}.tsv"
    wildcard_constraints:
        run=names_regex(WORD_VECTOR_RUNS),
    conda:
        "../../envs/cpp.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    params:
        dir=lambda w, input: Path(input.data[0]).parent,
        langs=BISENT2VEC_EVAL_LANGS,
        args=bisent2vec_eval_args,
    shell:
        "xlsent bisent2vec-eval-tatoeba {params.args} --dir {params.dir}"
        " --langs {params.langs} --run {wildcards.run} --seed {wildcards.seed}"
        " --out {output} 2> {log}"


rule bli_dictionary:
    # A test dictionary of evaluate.bli.dictionaries in MUSE format (source words first):
    # converted from FreeDict, copied from a MUSE file, or downloaded (hence on the login
    # node: seconds); reversed for xx2en when only an en→xx dictionary is given.
    input:
        bli_dictionary_inputs,
    output:
        BLI_DICTIONARY,
    log:
        "logs/bli_dictionary/{lang}.{direction}.log",
    benchmark:
        "results/benchmarks/bli_dictionary/{lang}.{direction}.tsv"
    localrule: True
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        args=bli_dictionary_args,
    shell:
        "xlsent bli-dictionary {params.args} --out {output} 2> {log}"


rule eval_bli:
    # Word translation P@1/5/10 by nearest neighbour and CSLS, one language and direction of
    # a word-vector run's en-xx model.
    input:
        model=BISENT2VEC_MODEL,
        dictionary=BLI_DICTIONARY,
    output:
        results="results/eval/bli/{run}/seed{seed}/{lang}.{direction}.parquet",
        stats="results/eval/bli/{run}/seed{seed}/{lang}.{direction}.json",
    log:
        "logs/eval/bli/{run}/seed{seed}/{lang}.{direction}.log",
    benchmark:
        "results/benchmarks/eval/bli/{run}/seed{seed}/{lang}.{direction}.tsv"
    wildcard_constraints:
        run=names_regex(WORD_VECTOR_RUNS),
    group:
        "bli"
    conda:
        "../../envs/cpp.yaml"
    # CSLS searches both vocabularies against each other (faiss, all threads of the job).
    threads: 4
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    shell:
        "xlsent eval-bli --model {input.model} --lang {wildcards.lang}"
        " --direction {wildcards.direction} --dictionary {input.dictionary}"
        " --run {wildcards.run} --seed {wildcards.seed} --out {output.results}"
        " --stats {output.stats} 2> {log}"
