# xlsent: parallel corpora -> word alignment -> cross-lingual sentence encoders -> paper tables.
#
#   snakemake --cores 8 results/tables/tatoeba.csv                        # the paper setup
#   snakemake --cores 2 --configfile resources/demo/config.yaml           # the offline demo
#
# A --configfile replaces config.yaml (keys it leaves out take the schema's defaults).
from pathlib import Path

from snakemake.utils import min_version

import xlsent.config

min_version("8.20")


if not workflow.config_settings.configfiles:

    configfile: "config.yaml"


try:
    xlsent.config.validate(
        config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
    )
except xlsent.config.ConfigError as err:
    raise WorkflowError(str(err)) from None


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/align.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/bisent2vec.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"


rule all:
    input:
        "results/tables/tatoeba.csv",
        "results/plots/tatoeba_groups.png",
        (
            ["results/tables/ablation.csv"]
            if config["tables"]["ablation"]["runs"]
            else []
        ),
        # Word translation: when dictionaries are configured and there are word-vector runs.
        ["results/tables/bli.csv"] if bli_results() else [],
        expand(
            "results/align/{aligner}/{lang}/_SUCCESS",
            aligner=ALIGN["method"],
            lang=LANGS,
        ),
