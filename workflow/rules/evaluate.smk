# Evaluate stage: one job per (task, run, seed); an encoder run's sentences are encoded once
# per source (encode), and its Tatoeba, retrieval and mining jobs read the vectors.


if not TATOEBA["dir"]:

    rule fetch_tatoeba:
        output:
            tatoeba_files(EVAL_LANGS),
        log:
            layout.log("fetch_tatoeba"),
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


rule encode:
    # A run's vectors of every distinct sentence of one source (xlsent.evaluate.vectors): the
    # Tatoeba files, the held-out mining split, or BUCC 2018's files, of every language an
    # evaluation reads from it. The only job of an evaluation that loads the encoder; the
    # evaluations look their sentences up and search and score on CPUs.
    input:
        unpack(encode_inputs),
    output:
        layout.VECTORS,
    log:
        layout.log("eval/encode/{run}/seed{seed}/{source}"),
    benchmark:
        layout.benchmark("eval/encode/{run}/seed{seed}/{source}")
    wildcard_constraints:
        run=names_regex(SENTENCE_ENCODER_RUNS),
        source="|".join(VECTOR_SOURCES) or "none",
    conda:
        "../../envs/eval.yaml"
    # Minutes for xlm-roberta-base on the CPU for Tatoeba's ~1000 pairs a language; BUCC
    # 2018's training split is ~400K sentences a side per language: hours on the CPU, where
    # evaluate.gpus gives it a GPU (evaluate.device auto takes it).
    threads: 4
    resources:
        gpu=config["evaluate"]["gpus"],
        mem_mb=lambda w, attempt: 8000 * attempt,
        runtime=lambda w, attempt: (480 if w.source == "bucc2018" else 60) * attempt,
    params:
        sentences=encode_args,
        encoding=encoding_of,
    shell:
        "xlsent encode --source {wildcards.source} {params.sentences} --model {input.model}"
        " --encoding {params.encoding:q} --threads {threads} --out {output} 2> {log}"


rule eval_tatoeba:
    input:
        vectors=vectors_of("tatoeba"),
        data=tatoeba_files(EVAL_LANGS),
    output:
        layout.fill(layout.EVAL, task="tatoeba"),
    log:
        layout.log("eval/tatoeba/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("eval/tatoeba/{run}/seed{seed}")
    # Encoder and dual-pivot runs; the word-vector runs have eval_tatoeba_bisent2vec.
    wildcard_constraints:
        run=names_regex(SENTENCE_ENCODER_RUNS),
    conda:
        "../../envs/eval.yaml"
    # Exact search among each language's ~1000 pairs: seconds.
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 30 * attempt,
    params:
        dir=lambda w, input: Path(input.data[0]).parent,
        langs=EVAL_LANGS,
        text=TATOEBA["text"],
    shell:
        "xlsent eval-tatoeba --vectors {input.vectors} --dir {params.dir}"
        " --langs {params.langs} --tatoeba-text {params.text} --run {wildcards.run}"
        " --seed {wildcards.seed} --out {output} 2> {log}"


rule eval_tatoeba_bisent2vec:
    # The Bi-Sent2vec and fastText runs: each language with its own en-xx model, sentence
    # vectors averaged from the words of the tokenize stage's tokenizer (idf-weighted, the
    # idf counted on the dev split, when the run's bisent2vec.tfidf is set).
    input:
        models=lambda w: expand(
            layout.WORD_VECTOR_MODEL,
            run=w.run,
            seed=w.seed,
            lang=BISENT2VEC_EVAL_LANGS,
        ),
        idf=bisent2vec_idf_words,
        data=tatoeba_files(BISENT2VEC_EVAL_LANGS),
    output:
        layout.fill(layout.EVAL, task="tatoeba"),
    log:
        layout.log("eval/tatoeba/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("eval/tatoeba/{run}/seed{seed}")
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
        text=TATOEBA["text"],
        args=bisent2vec_eval_args,
    shell:
        "xlsent bisent2vec-eval-tatoeba {params.args} --dir {params.dir}"
        " --langs {params.langs} --tatoeba-text {params.text} --run {wildcards.run}"
        " --seed {wildcards.seed} --out {output} 2> {log}"


rule eval_retrieval:
    # Sentence retrieval among held-out pairs (Bi-Sent2vec §4.3; xlsent.evaluate.retrieval)
    # with an encoder's own sentence vectors: xx→en and en→xx P@1 per language of
    # evaluate.retrieval.languages.
    input:
        vectors=vectors_of("retrieval"),
        pairs=retrieval_pair_files(),
    output:
        layout.fill(layout.EVAL, task="retrieval"),
    log:
        layout.log("eval/retrieval/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("eval/retrieval/{run}/seed{seed}")
    wildcard_constraints:
        run=names_regex(SENTENCE_ENCODER_RUNS),
    conda:
        "../../envs/eval.yaml"
    # Exact search among up to corpus.mining_pairs pairs per language (as eval_tatoeba).
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 30 * attempt,
    params:
        source=RETRIEVAL["from"],
        pairs=retrieval_pairs,
        tatoeba=tatoeba_text_args(RETRIEVAL["from"]),
    shell:
        "xlsent eval-retrieval --from {params.source} --pairs {params.pairs} {params.tatoeba}"
        " --vectors {input.vectors} --run {wildcards.run} --seed {wildcards.seed}"
        " --out {output} 2> {log}"


rule eval_retrieval_bisent2vec:
    # The same retrieval for the word-vector runs, as the paper measures it: each language
    # with its own en-xx model, sentence vectors the tf-idf-weighted average of their words
    # (idf counted on the pair's training split, whatever bisent2vec.tfidf says).
    input:
        models=lambda w: expand(
            layout.WORD_VECTOR_MODEL, run=w.run, seed=w.seed, lang=RETRIEVAL_LANGS
        ),
        idf=expand(BISENT2VEC_IDF_WORDS, lang=RETRIEVAL_LANGS),
        pairs=retrieval_pair_files(),
    output:
        layout.fill(layout.EVAL, task="retrieval"),
    log:
        layout.log("eval/retrieval/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("eval/retrieval/{run}/seed{seed}")
    wildcard_constraints:
        run=names_regex(WORD_VECTOR_RUNS),
    conda:
        "../../envs/cpp.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 60 * attempt,
    params:
        source=RETRIEVAL["from"],
        pairs=retrieval_pairs,
        tatoeba=tatoeba_text_args(RETRIEVAL["from"]),
        models=retrieval_models,
        # The words the idf is counted on: the training split, as the Tatoeba tf-idf's.
        idf=lang_args(BISENT2VEC_IDF_WORDS, RETRIEVAL_LANGS),
    shell:
        "xlsent bisent2vec-eval-retrieval --models {params.models} --idf {params.idf}"
        " --from {params.source} --pairs {params.pairs} {params.tatoeba}"
        " --run {wildcards.run} --seed {wildcards.seed} --out {output} 2> {log}"


rule bli_dictionary:
    # A test dictionary of evaluate.bli.dictionaries in MUSE format (source words first):
    # converted from FreeDict, copied from a MUSE file, or downloaded (hence on the login
    # node: seconds); reversed for xx2en when only an en→xx dictionary is given.
    input:
        bli_dictionary_inputs,
    output:
        layout.BLI_DICTIONARY,
    log:
        layout.log("bli_dictionary/{lang}.{direction}"),
    benchmark:
        layout.benchmark("bli_dictionary/{lang}.{direction}")
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


rule bli_seed:
    # The seed part of a language's dictionaries (xlsent.dictionaries.split_dictionary): the
    # pairs of a seeded share of their English words, which the mapped runs fit on. Seconds.
    input:
        unpack(bli_split_inputs),
    output:
        seed=layout.BLI_SEED,
        stats=layout.BLI_SEED_STATS,
    log:
        layout.log("bli_seed/{lang}"),
    benchmark:
        layout.benchmark("bli_seed/{lang}")
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        files=bli_split_files,
        settings=as_json(program_settings("evaluate.bli", BLI_SPLIT)),
    shell:
        "xlsent bli-split --dictionaries {params.files} --settings {params.settings:q}"
        " --seed-out {output.seed} --stats {output.stats} 2> {log}"


rule bli_test:
    # A direction's test part: its pairs that share no word with the seed part (the same
    # split, made again from the same dictionaries). Seconds.
    input:
        unpack(bli_split_inputs),
    output:
        test=layout.BLI_TEST,
        stats=layout.BLI_TEST_STATS,
    log:
        layout.log("bli_test/{lang}.{direction}"),
    benchmark:
        layout.benchmark("bli_test/{lang}.{direction}")
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        files=bli_split_files,
        settings=as_json(program_settings("evaluate.bli", BLI_SPLIT)),
    shell:
        "xlsent bli-split --dictionaries {params.files} --settings {params.settings:q}"
        " --test {wildcards.direction} --out {output.test} --stats {output.stats} 2> {log}"


rule eval_bli:
    # Word translation P@1/5/10 by nearest neighbour and CSLS, one language and direction of
    # a word-vector run's en-xx model, on the test part of the dictionary.
    input:
        model=layout.WORD_VECTOR_MODEL,
        dictionary=layout.BLI_TEST,
    output:
        results=layout.EVAL_BLI,
        stats=layout.EVAL_BLI_STATS,
    log:
        layout.log("eval/bli/{run}/seed{seed}/{lang}.{direction}"),
    benchmark:
        layout.benchmark("eval/bli/{run}/seed{seed}/{lang}.{direction}")
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


if BUCC_LANGS and BUCC["source"] == "bucc2018" and not BUCC["bucc2018"]["dir"]:

    rule fetch_bucc:
        # BUCC 2018's tarballs of the threshold and test splits (with gold), unpacked.
        output:
            bucc_files(BUCC_LANGS),
        log:
            layout.log("fetch_bucc"),
        # On the login node: compute nodes may have no internet access.
        localrule: True
        conda:
            "../../envs/eval.yaml"
        threads: 1
        resources:
            mem_mb=1000,
        params:
            url=BUCC["bucc2018"]["url"],
            dir=lambda w, output: bucc_dir(output),
            langs=BUCC_LANGS,
            splits=BUCC_SPLITS,
        shell:
            "xlsent fetch-bucc --url {params.url} --dir {params.dir} --langs {params.langs}"
            " --splits {params.splits} --download-dir results/downloads/bucc2018 2> {log}"


rule mining_set:
    # The offline mining set in the BUCC layout: each mined language's held-out pairs (the
    # sample stage's mining split, or the Tatoeba test set), a share of them without their
    # translation, split into the threshold's split (dev) and the test split. Seconds.
    input:
        mining_set_inputs,
    output:
        mining_set_files(),
        stats=layout.MINING_SET_STATS,
    log:
        layout.log("mining_set"),
    benchmark:
        layout.benchmark("mining_set")
    conda:
        "../../envs/eval.yaml"
    threads: 1
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 10 * attempt,
    params:
        source=BUCC_HELDOUT["from"],
        pairs=mining_set_pairs,
        tatoeba=tatoeba_text_args(BUCC_HELDOUT["from"]),
        settings=as_json(program_settings("evaluate.bucc.heldout", BUCC_HELDOUT)),
        out_dir=lambda w, output: bucc_dir(output),
    shell:
        "xlsent mining-set --from {params.source} --pairs {params.pairs} {params.tatoeba}"
        " --settings {params.settings:q} --out-dir {params.out_dir} --stats {output.stats}"
        " 2> {log}"


rule eval_bucc:
    # Bitext mining of a sentence encoder (xlsent.evaluate.bucc): each split of each
    # language encoded and mined by margin (faiss kNN both ways, evaluate.bucc.mining), the
    # threshold chosen on the threshold split's gold, P/R/F1 on the test split.
    input:
        vectors=vectors_of("bucc"),
        data=bucc_files(BUCC_LANGS),
    output:
        layout.fill(layout.EVAL, task="bucc"),
    log:
        layout.log("eval/bucc/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("eval/bucc/{run}/seed{seed}")
    wildcard_constraints:
        run=names_regex(SENTENCE_ENCODER_RUNS),
    conda:
        "../../envs/eval.yaml"
    # BUCC 2018's training split is ~400K sentences a side per language: exact kNN both
    # ways is 2·n²·d multiply-adds (index: ivf or hnsw for less). Memory: both sides' float32
    # vectors, plus a copy for an approximate index.
    threads: 8
    resources:
        mem_mb=lambda w, attempt: 16000 * attempt,
        runtime=lambda w, attempt: 240 * attempt,
    params:
        dir=lambda w, input: bucc_dir(input.data),
        langs=BUCC_LANGS,
        threshold_split=BUCC_SPLITS[0],
        test_split=BUCC_SPLITS[1],
        pivot=BUCC["pivot"],
        settings=as_json(BUCC["mining"]),
    shell:
        "xlsent eval-bucc --vectors {input.vectors} --dir {params.dir}"
        " --langs {params.langs} --threshold-split {params.threshold_split}"
        " --test-split {params.test_split} --pivot {params.pivot}"
        " --settings {params.settings:q} --run {wildcards.run} --seed {wildcards.seed}"
        " --threads {threads} --out {output} 2> {log}"


rule eval_mteb:
    # MTEB's tasks (evaluate.mteb.tasks) through MTEB's evaluators (xlsent.evaluate.mteb):
    # one JSON per task, as MTEB writes it. Hub tasks download their data, or read the cache
    # of evaluate.mteb.cache_dir offline.
    input:
        unpack(mteb_inputs),
    output:
        directory(layout.EVAL_MTEB),
    log:
        layout.log("eval/mteb/{run}/seed{seed}"),
    benchmark:
        layout.benchmark("eval/mteb/{run}/seed{seed}")
    wildcard_constraints:
        run=names_regex(MTEB_RUNS),
    conda:
        "../../envs/eval.yaml"
    # Encoding dominates: XNLI's 15 languages alone are ~220K sentences, BUCC's and Flores'
    # corpora more; hours for xlm-roberta-base on CPU (evaluate.device auto takes a GPU the
    # job has: give the rule one in a site profile).
    threads: 8
    resources:
        gpu=config["evaluate"]["gpus"],
        mem_mb=lambda w, attempt: 16000 * attempt,
        runtime=lambda w, attempt: 480 * attempt,
    params:
        tasks=MTEB["tasks"],
        langs=MTEB_LANGS,
        args=mteb_args,
        encoding=encoding_of,
    shell:
        "xlsent eval-mteb --model {input.model} --tasks {params.tasks}"
        " --langs {params.langs} {params.args} --run {wildcards.run} --seed {wildcards.seed}"
        " --encoding {params.encoding:q} --threads {threads} --out {output} 2> {log}"
