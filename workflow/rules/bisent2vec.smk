# Bi-Sent2vec stage: the C++ trainer built once, then one CPU job per (run, seed, language):
# an en-xx word-vector model trained on the tokenize stage's words (method bisent2vec, the
# fastText CBOW baseline, method fasttext-cbow, or fastText on each side mapped into one
# space, method mapped).


rule bisent2vec_build:
    # CMake + a C++17 compiler; the build directory keeps CMake's cache, so a changed source
    # recompiles only what it touches. The C++ unit tests run after the build.
    input:
        **bisent2vec_sources(),
    output:
        layout.BISENT2VEC_BINARY,
    log:
        layout.log("bisent2vec_build"),
    benchmark:
        layout.benchmark("bisent2vec_build")
    conda:
        "../../envs/cpp.yaml"
    threads: 2
    resources:
        mem_mb=lambda w, attempt: 2000 * attempt,
        runtime=lambda w, attempt: 30 * attempt,
    params:
        source=lambda w, input: Path(input.cmake).parent,
        build_dir=lambda w, output: Path(output[0]).parent,
    shell:
        "xlsent bisent2vec-build --source {params.source} --build-dir {params.build_dir}"
        " --jobs {threads} --test 2> {log}"


rule bisent2vec_train:
    # One model per language pair, as the paper: its directory (layout.WORD_VECTOR_MODEL) holds
    # model.bin (bisent2vec), vectors.{en,xx}.vec and stats.json. The run's seed is the
    # trainer's; one thread trains bit-for-bit reproducibly, more run Hogwild.
    input:
        unpack(bisent2vec_train_inputs),
    output:
        directory(layout.WORD_VECTOR_MODEL),
    log:
        layout.log("bisent2vec_train/{run}/seed{seed}/{lang}"),
    benchmark:
        layout.benchmark("bisent2vec_train/{run}/seed{seed}/{lang}")
    wildcard_constraints:
        run=names_regex(WORD_VECTOR_RUNS),
    # 36 languages × runs × seeds: a few per Slurm job (group-components in the profile).
    group:
        "bisent2vec"
    conda:
        "../../envs/cpp.yaml"
    threads: lambda w: bisent2vec_settings(config, w.run)["threads"]
    resources:
        mem_mb=bisent2vec_mem_mb,
        runtime=lambda w, attempt: 4 * 60 * attempt,
    params:
        method=lambda w: run_method(w.run),
        settings=lambda w: as_json(
            bisent2vec_trainer_settings(config, w.run, int(w.seed))
        ),
        binary=lambda w, input: (
            f"--binary {input.binary}" if "binary" in input.keys() else ""
        ),
        mapped=mapped_args,
        seed_dictionary=mapped_seed_args,
    shell:
        "xlsent bisent2vec-train --method {params.method} --lang {wildcards.lang}"
        " --words {input.words} {params.binary} {params.mapped} {params.seed_dictionary}"
        " --settings {params.settings:q}"
        " --threads {threads} --out {output} 2> {log}"
