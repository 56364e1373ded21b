#!/usr/bin/env bash
# The WACSE experiment's CPU runs (docs/results.md, "WACSE given a fair test on me5"), made by
# the workflow's own table commands from the files kept beside this script, at the paths the
# workflow wrote them. Run from anywhere: `bash docs/evidence/wacse/tables.sh`.
set -euo pipefail
cd "$(dirname "$0")"
export LC_ALL=C # the globs' order, hence the tables' rows
groups=(low4 low5 low8 laser14 dap28 xtreme36)
stats=(results/corpus/*/sample_stats.json)
models=()
for dir in results/models/*/seed*; do
  models+=("${dir#results/models/}=$dir")
done

xlsent tables --groups "${groups[@]}" --corpus-stats "${stats[@]}" --language-directions mean \
  --out results/tables/tatoeba.csv results/eval/tatoeba/*/seed*.parquet
xlsent tables-bucc --out results/tables/bucc.csv --results results/eval/bucc/*/seed*.parquet
xlsent tables-dev --out results/tables/dev.csv --models "${models[@]}" --corpus-stats "${stats[@]}"
# As in ../recipe/tables.sh: the training benchmark files are newer than the trainer's
# attempts.json where Snakemake leaves them; a checkout gives files its own times. The
# alignment shards' records (results/align/eflomal/LANG/shard-0000.json: the pairs eflomal
# estimated on, beyond the cap) are kept beside their benchmark files.
touch results/benchmarks/train/*/seed*.tsv
xlsent tables-cost --benchmarks results/benchmarks --checkpoints results/checkpoints \
  --vectors results/vectors --models results/models --gpus --out results/tables/cost.csv
