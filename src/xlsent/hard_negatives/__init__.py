"""The hard-negative stage: for each training pair, the English sentences of its language's
pairs that the model a run starts from finds nearest its foreign sentence, without the ones
that are translations of it; TR then ranks them beside the batch's (`train.hard_negatives`,
`xlsent.losses.tr`).

Guo et al. (2018), "Effective Parallel Corpus Mining using Bilingual Sentence Embeddings",
arXiv:1807.11906, trained dual encoders on such negatives, mined by a first model; LaBSE
(Feng et al. 2022, arXiv:2007.01852) tried them over a pretrained encoder and reports no gain
beside its other ingredients; sentence-transformers' `mine_hard_negatives` is the usual tool
for a retrieval model's. Two jobs, as the align stage (`xlsent.align`):

1. `encode` (one job per shard of the pool, `hard_negatives.shard_size` pairs: every language's
   pairs one after another, `xlsent.hard_negatives.pool`): both sides of its pairs encoded by
   the starting model, as training reads them (the subwords, cut at
   `hard_negatives.encode.max_length`), block by block: a killed job resumes at its first
   missing block (`xlsent.align.blocks`), and writes the shard's vectors.
2. `mine` (one job per language): its rows of the shards that hold its pairs joined, each
   foreign sentence's nearest English sentences searched with faiss, the false negatives left
   out (the pair's own English text, and whatever is above the similarity ceiling), the
   `mined` hardest written, as rows of the language's training pairs, and a manifest
   (`_SUCCESS`) that lists the shards and the counts.

A language's pool is its training pairs, or the seeded share of them a run's
`train.max_pairs` keeps (`xlsent.train.data.subset_rows`): the pairs its batches draw from.
Files (results/hard_negatives/{start}/{pool}/, `start` the model's directory under results/,
`pretrained/{model}` or `models/{run}/seed{seed}`, and `pool` `all` or `maxN`):
`vectors-{i:04d}.arrow` (lang, id, xx, en), and per language `{lang}/negatives.parquet` (id,
negatives, scores, positive: `xlsent.hard_negatives.mine`) and `{lang}/_SUCCESS`.
"""
