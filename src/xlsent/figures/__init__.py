"""Every figure the workflow draws (PNG, for the report and the papers), one module per kind.

- `plots`: the Tatoeba table's accuracy per language group and the dev curves of the training
  records (the `plots` rule), and what every figure shares: matplotlib without a display,
  each run's style, the PNG writer;
- `alignment`: the papers' pictures of alignment, WACSE Figure 1 (aligned word pairs, the
  `figure_aligned_words` rule) and DAP Figure 1 (Tatoeba pairs' tokens,
  `figure_tatoeba_tokens`), from each run's encoder.

The commands that draw them are the tables stage's (`xlsent.commands.tables`).
"""
