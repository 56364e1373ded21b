# Names and input functions of the tables stage (tables.smk, which holds only its rules): what
# each table gathers (xlsent.config.outputs: empty where the config makes no such table), and
# the papers' figures.
from xlsent.config import (
    bli_results,
    bucc_results,
    compare_models,
    compare_results,
    figures,
    gpus_per_job,
    group_arguments,
    mteb_results,
    retrieval_groups,
    retrieval_results,
    table_outputs,
    train_settings,
    transfer_pivots,
)

# The encoder runs' models by run and seed, whose training records the dev table and the dev
# curves read.
ENCODER_MODELS = {
    layout.RUN_SEED.format(run=rs.run, seed=rs.seed): layout.MODEL.format(
        run=rs.run, seed=rs.seed
    )
    for rs in RUN_SEEDS
    if rs.run in ENCODER_RUNS
}
# The rows of the transfer table (dual-pivot) and each one's pivot language.
TRANSFER = transfer_pivots(config)
BLI_RESULTS = bli_results(config)
BUCC_RESULTS = bucc_results(config)
COMPARE_RESULTS = compare_results(config)
COMPARE_MODELS = compare_models(config)
RETRIEVAL_RESULTS = retrieval_results(config)
MTEB_RESULTS = mteb_results(config)
# The retrieval table's groups: those of tables.groups that it holds whole.
RETRIEVAL_GROUPS = retrieval_groups(config)


def tatoeba_results(runs=None):
    """The Tatoeba results of every run × seed (of `runs`, where given)."""
    return [
        layout.EVAL.format(task="tatoeba", run=rs.run, seed=rs.seed)
        for rs in RUN_SEEDS
        if runs is None or rs.run in runs
    ]


# -- figures -----------------------------------------------------------------------------------

# The papers' figures this config draws, by name (layout.plot), with their runs and languages,
# null settings resolved (xlsent.config.figures).
FIGURES = figures(config)


def figure_models(name):
    """{run: model directory} of a figure's runs, each its first seed, in panel order."""
    return {
        run: layout.MODEL.format(run=run, seed=config["runs"][run]["seeds"][0])
        for run in FIGURES[name].runs
    }


def figure_max_length(name):
    """The subwords per sentence that every run of a figure was evaluated at."""
    return min(
        config["evaluate"]["max_length"] or train_settings(config, run, 0)["max_length"]
        for run in FIGURES[name].runs
    )


def figure_model_args(name):
    """`run=model` arguments of a figure's command, in panel order."""
    items = figure_models(name).items()
    return " ".join(shlex.quote(f"{run}={path}") for run, path in items)
