"""Training objectives, one per module: pure tensor functions, each with its paper's equation.

- `tr`: translation ranking, in-batch negatives over sentence vectors (WACSE eq. 9–10).
- `awp`: aligned word prediction, MLM predictions of aligned words (WACSE eq. 4–5).
- `wtr`: word translation ranking, word vectors rank their pair's words (WACSE eq. 6–8).
- `rtl`: representation translation, the English sentence rebuilt by DAP's head (DAP eq. 6).

Batches are built in `xlsent.train.collate`; `xlsent.train.objectives` encodes and weighs.
"""
