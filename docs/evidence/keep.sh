#!/usr/bin/env bash
# Keep one run's small files as evidence (docs/evidence/README.md), at the paths the workflow
# wrote them: `bash docs/evidence/keep.sh EXPERIMENT_DIR docs/evidence/EXPERIMENT RUN SEED
# [ALIGNER]`, EXPERIMENT_DIR being the workflow's directory the run was made in (the one
# holding results/). With ALIGNER, the alignment shards' records and benchmark files too.
# Then run tables.sh on the evidence directory and commit the files and tables together.
set -euo pipefail
if (($# < 4)); then
  echo "usage: $0 EXPERIMENT_DIR EVIDENCE_DIR RUN SEED [ALIGNER]" >&2
  exit 2
fi
dst=$(realpath "$2") run=$3 seed=$4 aligner=${5:-}
cd "$1"
# What the tables are made from: a run without them is not kept.
needed=(results/eval/tatoeba/$run/seed$seed.parquet
  results/models/$run/seed$seed/{train_log.jsonl,best.json,run.json})
# The rest of its record, where the run has it (mining, a resumed training's attempts, costs).
wanted=(results/eval/bucc/$run/seed$seed.parquet
  results/checkpoints/$run/seed$seed/{attempts.json,earlier_attempts.json}
  results/benchmarks/train/$run/seed$seed.tsv
  results/benchmarks/eval/{tatoeba,bucc}/$run/seed$seed.tsv
  results/benchmarks/eval/encode/$run/seed$seed/{tatoeba,mining}.tsv)
for f in "${needed[@]}"; do
  [[ -f $f ]] || { echo "$PWD/$f is missing: the run is not made (or not here); nothing kept" >&2; exit 1; }
done
for f in "${wanted[@]}"; do
  [[ -f $f ]] || echo "not there, not kept: $f" >&2
done
for f in "${needed[@]}" "${wanted[@]}"; do
  if [[ -f $f ]]; then cp -p --parents "$f" "$dst"; fi
done
# The checkpoint's training log is the model's (tables-cost reads the speed there).
if [[ -d $dst/results/checkpoints/$run/seed$seed ]]; then
  ln -sfn "../../../models/$run/seed$seed/train_log.jsonl" \
    "$dst/results/checkpoints/$run/seed$seed/train_log.jsonl"
fi
for f in results/corpus/*/sample_stats.json; do cp -p --parents "$f" "$dst"; done
if [[ -n $aligner ]]; then
  for f in results/align/"$aligner"/*/shard-*.json results/benchmarks/align/"$aligner"/*/shard-*.tsv; do
    cp -p --parents "$f" "$dst"
  done
fi
echo "kept $run seed $seed in $dst"
