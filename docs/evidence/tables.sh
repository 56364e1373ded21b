#!/usr/bin/env bash
# An experiment's tables (docs/results.md), made by the workflow's own table commands from the
# files kept in its directory here, at the paths the workflow wrote them, into its
# results/tables/: `bash docs/evidence/tables.sh docs/evidence/EXPERIMENT`. The runs compared
# language by language are the directory's `compare.pairs` (A:B ..., each run against the
# one it adds to), where it has one; its Tatoeba groups are those of its `groups` file where it
# has one (an experiment whose runs were evaluated on all 112 languages adds tatoeba112).
set -euo pipefail
cd "$1"
export LC_ALL=C # the globs' order, hence the tables' rows
groups=(low4 low5 low8 laser14 dap28 xtreme36)
if [[ -f groups ]]; then
  read -ra groups <groups
fi
stats=(results/corpus/*/sample_stats.json)
models=()
for dir in results/models/*/seed*; do
  models+=("${dir#results/models/}=$dir")
done

xlsent tables --groups "${groups[@]}" --corpus-stats "${stats[@]}" --language-directions mean \
  --out results/tables/tatoeba.csv results/eval/tatoeba/*/seed*.parquet
xlsent tables-bucc --out results/tables/bucc.csv --results results/eval/bucc/*/seed*.parquet
xlsent tables-dev --out results/tables/dev.csv --models "${models[@]}" --corpus-stats "${stats[@]}"
# The same curves without the languages whose dev split is below the minimum (jv's 15 pairs and
# sw's 3 in the l10n corpus move the 36 languages' mean far more than their pairs warrant).
xlsent tables-dev --out results/tables/dev_without_small_dev.csv --models "${models[@]}" \
  --corpus-stats "${stats[@]}" --without-small-dev
# The encodings' records of their device sit in their vectors, which are not kept (large): the
# cost table's eval/encode rows take them from the evaluations that scored each source.
# Snakemake writes a job's benchmark file as the job ends, after the trainer's attempts.json,
# and tables-cost reads a training's benchmark file only where it is the newer of the two (else
# the trainer's own record, without peak memory); a checkout gives files its own times.
touch results/benchmarks/train/*/seed*.tsv
xlsent tables-cost --benchmarks results/benchmarks --checkpoints results/checkpoints \
  --vectors results/vectors --models results/models --evaluations results/eval \
  --sources tatoeba=tatoeba bucc=mining --gpus --out results/tables/cost.csv
if [[ -f compare.pairs ]]; then
  read -ra pairs <compare.pairs
  xlsent tables-compare --pairs "${pairs[@]}" --groups "${groups[@]}" \
    --out results/tables/compare.csv --results results/eval/{tatoeba,bucc}/*/seed*.parquet \
    --models "${models[@]}"
fi
