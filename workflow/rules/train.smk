# Train stage: one job per (run, seed); checkpoints outside the output so a rerun resumes.


def train_inputs(wildcards):
    model = model_of(wildcards.run)
    inputs = {
        "tokenizer": f"results/tokenizers/{model}",
        "train": expand("results/subwords/{model}/{lang}/train.parquet", model=model, lang=LANGS),
        "dev": expand("results/subwords/{model}/{lang}/dev.parquet", model=model, lang=LANGS),
    }
    if model_spec(model)["init"] == "pretrained":
        inputs["pretrained"] = f"results/pretrained/{model}"
    return inputs


def settings_of(wildcards):
    return train_settings(config, wildcards.run, int(wildcards.seed))


rule train:
    input:
        unpack(train_inputs),
    output:
        directory("results/models/{run}/seed{seed}"),
    params:
        settings=lambda w: as_json(settings_of(w)),
        model=lambda w: as_json(model_spec(model_of(w.run))),
        pretrained=lambda w, input: f"--pretrained {input.pretrained}" if "pretrained" in input.keys() else "",
        train=lambda w: lang_args("results/subwords/{model}/{lang}/train.parquet", LANGS, model=model_of(w.run)),
        dev=lambda w: lang_args("results/subwords/{model}/{lang}/dev.parquet", LANGS, model=model_of(w.run)),
        checkpoints="results/checkpoints/{run}/seed{seed}",
    log:
        "logs/train/{run}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{run}/seed{seed}.tsv"
    threads: lambda w: settings_of(w)["threads"]
    resources:
        gpu=lambda w: settings_of(w)["gpus"],
        mem_mb=lambda w, attempt: 32000 * attempt,
        runtime=lambda w, attempt: 24 * 60 * attempt,
    shell:
        "xlsent train --settings {params.settings:q} --model {params.model:q}"
        " --tokenizer {input.tokenizer} {params.pretrained}"
        " --train {params.train} --dev {params.dev} --checkpoints {params.checkpoints}"
        " --threads {threads} --out {output} 2> {log}"
