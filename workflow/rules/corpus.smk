# Corpus stage: source -> clean (all pairs) -> sample (train/dev) per language.
from xlsent.corpus import demo, local, opus

CORPUS = config["corpus"]


def opus_archives(lang):
    manifest = opus.load_manifest(shipped(CORPUS["opus"]["manifest"]))
    return opus.archives(manifest, lang, CORPUS["opus"]["corpora"])


def corpus_inputs(wildcards):
    """The raw files of a language (named), so that a changed file re-runs its cleaning."""
    lang = wildcards.lang
    if CORPUS["source"] == "local":
        bitexts = local.discover(CORPUS["local"]["dir"], lang, CORPUS["local"]["corpora"])
        return {
            f"{b.corpus}.{side}": path
            for b in bitexts
            for side, path in (("en", b.en_origin), (lang, b.xx_origin))
        }
    if CORPUS["source"] == "opus":
        return {
            a.corpus: f"results/downloads/opus/{a.corpus}/{lang}.zip"
            for a in opus_archives(lang)
        }
    return {}


def source_args(wildcards, input):
    source = CORPUS["source"]
    if source == "local":
        corpora = CORPUS["local"]["corpora"]
        args = ["--local-dir", CORPUS["local"]["dir"]]
        return shlex.join(args + (["--corpora", *corpora] if corpora else []))
    if source == "opus":
        zips = [f"{name}={path}" for name, path in input.items()]
        return shlex.join(["--manifest", shipped(CORPUS["opus"]["manifest"]), "--zip", *zips])
    return shlex.join(["--heldout-fraction", str(CORPUS["demo"]["heldout_fraction"])])


def source_params(wildcards):
    """What, besides input files, decides a language's raw pairs."""
    source = CORPUS["source"]
    if source == "demo":
        # The embedded data comes from installed packages: their versions are its identity.
        return {"demo": CORPUS["demo"]["heldout_fraction"], "provenance": demo.provenance()}
    return {source: CORPUS[source]}


rule opus_download:
    # On the login node: cluster compute nodes often have no internet access.
    localrule: True
    output:
        zip="results/downloads/opus/{corpus}/{lang}.zip",
        record="results/downloads/opus/{corpus}/{lang}.zip.json",
    params:
        manifest=shipped(CORPUS["opus"]["manifest"]),
        base_url=f"--base-url {CORPUS['opus']['base_url']}" if CORPUS["opus"]["base_url"] else "",
        retries=CORPUS["opus"]["retries"],
    log:
        "logs/opus_download/{corpus}/{lang}.log",
    shell:
        "xlsent download-opus --lang {wildcards.lang} --corpus {wildcards.corpus}"
        " --manifest {params.manifest} {params.base_url} --retries {params.retries}"
        " --out {output.zip} 2> {log}"


rule clean:
    input:
        unpack(corpus_inputs),
    output:
        corpus="results/corpus/{lang}/clean.parquet",
        stats="results/corpus/{lang}/clean_stats.json",
    params:
        source=source_params,
        clean=CORPUS["clean"],
        args=source_args,
    log:
        "logs/clean/{lang}.log",
    benchmark:
        "results/benchmarks/clean/{lang}.tsv"
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
        runtime=lambda w, attempt: 120 * attempt,
    shell:
        "xlsent clean --lang {wildcards.lang} --source {CORPUS[source]} {params.args}"
        " --min-tokens {params.clean[min_tokens]}"
        " --max-length-ratio {params.clean[max_length_ratio]}"
        " --out {output.corpus} --stats {output.stats} 2> {log}"


rule sample:
    input:
        "results/corpus/{lang}/clean.parquet",
    output:
        train="results/corpus/{lang}/train.parquet",
        dev="results/corpus/{lang}/dev.parquet",
        stats="results/corpus/{lang}/sample_stats.json",
    params:
        max_pairs=CORPUS["max_pairs"],
        dev_pairs=CORPUS["dev_pairs"],
        dev_fraction=CORPUS["dev_fraction"],
        seed=CORPUS["seed"],
    log:
        "logs/sample/{lang}.log",
    benchmark:
        "results/benchmarks/sample/{lang}.tsv"
    resources:
        mem_mb=lambda w, attempt: 4000 * attempt,
    shell:
        "xlsent sample --lang {wildcards.lang} --clean {input} --train {output.train}"
        " --dev {output.dev} --stats {output.stats} --max-pairs {params.max_pairs}"
        " --dev-pairs {params.dev_pairs} --dev-fraction {params.dev_fraction}"
        " --seed {params.seed} 2> {log}"


rule demo_testset:
    # The demo's Tatoeba-style test set: held-out embedded pairs in the LASER layout.
    output:
        expand(
            "results/demo/tatoeba/tatoeba.{iso3}-eng.{side}",
            zip,
            iso3=[languages.get(l).iso3 for l in EVAL_LANGS for _ in (0, 1)],
            side=[s for l in EVAL_LANGS for s in (languages.get(l).iso3, "eng")],
        ),
    params:
        heldout_fraction=CORPUS["demo"]["heldout_fraction"],
        max_pairs=CORPUS["demo"]["heldout_max_pairs"],
        provenance=lambda w: demo.provenance(),
    log:
        "logs/demo_testset.log",
    shell:
        "xlsent demo-testset --langs {EVAL_LANGS} --out-dir results/demo/tatoeba"
        " --heldout-fraction {params.heldout_fraction} --max-pairs {params.max_pairs} 2> {log}"
