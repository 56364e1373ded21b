"""Failures, expected and not, and what keeps a run going after them.

One module each:

- `errors`: `XlsentError`, the base of every expected failure (bad input, a missing file, a
  failed download), which the CLI prints as one line; `ConfigError`.
- `kill_points`: the named points where the recovery tests kill a job (`XLSENT_KILL_AT`).
- `failed_jobs`: the console's report of the jobs that failed, from their logs (the
  Snakefile's `onerror`).
- `end_of_run`: what the console says at the end of a run of the jobs that ran: a training
  that could not resume its latest checkpoint, the pairs each cleaning dropped.
- `rebuilt_outputs`: what a run removes as it starts, the outputs it rebuilds, so that a kill
  leaves none stale.
- `configfile_guard`: the config files the results were made with, and a run's refusal to
  remove them under others.
- `unreadable`: workflow files that no longer read back (a copy cut short): named, set aside
  as a run starts, remade.
- `locks`: the Snakemake lock a killed run leaves, released when stale, and one writer per
  training run's directory.
"""
