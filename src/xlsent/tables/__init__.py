"""Result tables: per-run evaluation Parquet files in, paper-style CSV and Markdown out.

Each table reads the runs' results (`xlsent.evaluate.results`), averages seeds first, per
run, language and direction (`seeds`), then languages over the groups of the papers. One
module per table rule of `workflow/rules/tables.smk`: `tatoeba` (and WACSE's ablation),
`compare` (run against run), `dev`, `transfer`, `retrieval`, `bli`, `bucc`, `mteb`, `cost`;
`write` writes each as CSV and Markdown; `devices` ends each row with what the run trained
and was encoded on (issue 48: rows of different devices are never compared unsaid).
"""
