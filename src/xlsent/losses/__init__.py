"""Training objectives, one per module: pure tensor functions, each with its paper's equation,
how it relates to the others ("Relations:") and a worked example ("Example:", run as a
doctest by `tests/unit/losses/test_losses.py`).

Sentence encoders (`xlsent.train.objectives` weighs these per method):
- `tr`: translation ranking, in-batch negatives over sentence vectors (WACSE eq. 9–10, DAP
  eq. 5): all of `tr`, and the first term of `wacse`, `dap` and `tr-tlm`. Its cached twin,
  `xlsent.train.cached_tr` (`negatives: batch`), computes it over the whole batch.
- `awp`: aligned word prediction, MLM predictions of aligned words (WACSE eq. 4–5).
- `wtr`: word translation ranking, word vectors rank their pair's words (WACSE eq. 6–8).
- `rtl`: representation translation, the English sentence rebuilt by DAP's head (DAP eq. 6).
- `mlm`: masked and translation language modelling (BERT, XLM): `mlm`, `tlm`, `tr-tlm`.

Dual-pivot heads over a frozen encoder (`xlsent.train.dualpivot`):
- `triplet`: bidirectional triplet ranking, the hardest and random negatives (L_sup).
- `cycle`: the round trips F∘G and G∘F ranked by `triplet`'s h (unsupervised, L_cycle).
- `critic`: the Wasserstein critic's L_disc, which the head raises (unsupervised).

Batches are built in `xlsent.train.collate`; `xlsent.train.objectives` encodes and weighs.
"""
