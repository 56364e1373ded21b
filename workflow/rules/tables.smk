# Tables stage: gather every run's results into the papers' tables.


rule tables_tatoeba:
    input:
        [f"results/eval/tatoeba/{rs.run}/seed{rs.seed}.parquet" for rs in RUN_SEEDS],
    output:
        csv="results/tables/tatoeba.csv",
        md="results/tables/tatoeba.md",
        langs_csv="results/tables/tatoeba_langs.csv",
        langs_md="results/tables/tatoeba_langs.md",
    log:
        "logs/tables/tatoeba.log",
    conda:
        "../../envs/eval.yaml"
    params:
        groups=config["tables"]["groups"],
    shell:
        "xlsent tables --groups {params.groups} --out {output.csv} {input} 2> {log}"
