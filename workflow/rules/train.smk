# Train stage: one job per (run, seed); checkpoints live outside the output, so a rerun of a
# killed or preempted job resumes from the last one.


rule train:
    input:
        unpack(train_inputs),
    output:
        directory("results/models/{run}/seed{seed}"),
    log:
        "logs/train/{run}/seed{seed}.log",
    benchmark:
        "results/benchmarks/train/{run}/seed{seed}.tsv"
    conda:
        "../../envs/gpu.yaml"
    threads: lambda w: settings_of(w)["threads"]
    resources:
        gpu=lambda w: settings_of(w)["gpus"],
        mem_mb=lambda w, attempt: 32000 * attempt,
        runtime=lambda w, attempt: 24 * 60 * attempt,
    params:
        settings=lambda w: as_json(settings_of(w)),
        model=lambda w: as_json(model_spec(model_of(w.run))),
        args=train_args,
        checkpoints="results/checkpoints/{run}/seed{seed}",
    shell:
        "xlsent train --settings {params.settings:q} --model {params.model:q}"
        " --tokenizer {input.tokenizer} {params.args} --checkpoints {params.checkpoints}"
        " --threads {threads} --out {output} 2> {log}"
