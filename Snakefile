# xlsent: parallel corpora -> word alignment -> cross-lingual sentence encoders -> paper tables.
#
#   snakemake --cores 8 results/tables/tatoeba.csv                        # the paper setup
#   snakemake --cores 2 --configfile resources/demo/config.yaml           # the offline demo
#
# A --configfile replaces config.yaml (keys it leaves out take the schema's defaults).
import sys
from pathlib import Path

from snakemake.logging import logger
from snakemake.utils import min_version

import xlsent.config
import xlsent.failures.configfile_guard
import xlsent.failures.end_of_run
import xlsent.failures.failed_jobs
import xlsent.failures.locks
import xlsent.failures.rebuilt_outputs
import xlsent.failures.unreadable
import xlsent.scheduler
import xlsent.status

min_version("8.20")

# Snakemake's scheduler makes one pass more a second for every job that ended, each statting
# the inputs of every ready job: one timer suffices (xlsent.scheduler).
xlsent.scheduler.one_timer()


if not workflow.config_settings.configfiles:

    configfile: "config.yaml"


# Everything the config alone decides fails here, before any job runs. The files it names are
# checked by the process that plans the run: a cluster job's node may not see them, nor need to.
try:
    xlsent.config.validate(
        config, Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"
    )
    if workflow.is_main_process:
        xlsent.config.check_paths(config, workflow.basedir)
        for warning in xlsent.config.config_warnings(config):
            logger.warning(warning)
except xlsent.config.ConfigError as err:
    raise WorkflowError(str(err)) from None


report: "workflow/report/workflow.rst"


# A lock left by a local Snakemake that was killed (kill -9, a reboot) is released here, so
# that the plain command runs again; a live run's lock, or a cluster run's, is kept.
if workflow.is_main_process:
    released, why = xlsent.failures.locks.release_stale_lock(".snakemake")
    if why:
        logger.warning(
            f"{'Released' if released else 'Kept'} the lock of an earlier run: {why}."
        )
    # Files a run set aside as unreadable are missing until a job needs them again: say so,
    # with the command that remakes them (Snakemake's own answer is "Nothing to be done").
    for line in xlsent.failures.unreadable.still_set_aside(".snakemake", sys.argv):
        logger.warning(line)


onstart:
    # Now this process holds the lock; outputs that this run rebuilds because their inputs
    # change are removed before any job starts (xlsent.failures.rebuilt_outputs: why),
    # unless a file the run reads has broken since it was written: then it is set aside and
    # nothing runs (xlsent.failures.unreadable).
    xlsent.failures.locks.record_lock_owner(
        ".snakemake", workflow.executor_plugin.name
    )
    # What the executor decides (several nodes need Slurm), for the trainings this run makes.
    try:
        xlsent.config.check_launch(
            config,
            workflow.executor_plugin.name,
            {
                job.wildcards.run
                for job in workflow.dag.needrun_jobs()
                if job.rule.name == "train"
            },
        )
    except xlsent.config.ConfigError as err:
        raise WorkflowError(str(err)) from None
    # Each training that has a checkpoint: whether it resumes, or starts over and why.
    for job in workflow.dag.needrun_jobs():
        if job.rule.name == "train":
            note = xlsent.status.training_note(
                config, job.wildcards.run, int(job.wildcards.seed)
            )
            if note:
                (logger.warning if note.starts_over else logger.info)(note.text)
    if not workflow.touch:
        broken = xlsent.failures.unreadable.set_aside_unreadable_inputs(
            workflow.dag, ".snakemake", sys.argv
        )
        if broken:
            raise WorkflowError("\n".join(broken))
    # Not under other config files than those of the results it removes
    # (xlsent.failures.configfile_guard: a forgotten --configfile); this run's are recorded
    # as theirs.
    removed = (
        []
        if workflow.touch
        else xlsent.failures.rebuilt_outputs.rebuilt_outputs(workflow.dag)
    )
    refused = xlsent.failures.configfile_guard.check_and_record(
        ".snakemake", workflow.configfiles, removed, sys.argv
    )
    if refused:
        raise WorkflowError(refused)
    xlsent.failures.rebuilt_outputs.invalidate_rebuilt_outputs(removed)
    if removed:
        logger.info(
            f"Removed {len(removed)} outputs that this run rebuilds from changed inputs: "
            + ", ".join(removed[:8])
            + (" ..." if len(removed) > 8 else "")
        )


onsuccess:
    # What the jobs' own files say and the console must too: a training that could not
    # resume its latest checkpoint, the pairs each language's cleaning dropped
    # (xlsent.failures.end_of_run).
    noted = xlsent.failures.end_of_run.report(workflow.dag, ())
    if noted:
        logger.info("\n".join(noted))


onerror:
    # The jobs that failed, and those a Ctrl-C stopped (Snakemake leaves them running: it
    # handles no job's error after the interrupt).
    stopped = [*workflow.scheduler.failed, *workflow.scheduler.running]
    noted = xlsent.failures.end_of_run.report(workflow.dag, stopped)
    if noted:
        logger.info("\n".join(noted))
    # A failed job's own message (a known failure's one line: the file and the fix) is in its
    # log; the console shows only Snakemake's "non-zero exit status". Print it there too, once
    # at the end, for local and cluster runs alike, and what a signal's exit status means
    # (`log`: Snakemake's logs of this run, which hold each failed command's status).
    said = xlsent.failures.failed_jobs.report(stopped, log)
    if said:
        logger.error("\n".join(["The failed jobs' logs say:", *said]))


# What the stages share, then each stage: its names and input functions (<stage>_inputs.smk),
# then its rules. Every path under results/ is a pattern of xlsent.layout.
include: "workflow/rules/common.smk"
include: "workflow/rules/corpus_inputs.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/tokenize_inputs.smk"
include: "workflow/rules/tokenize.smk"
include: "workflow/rules/align_inputs.smk"
include: "workflow/rules/align.smk"
include: "workflow/rules/hard_negatives_inputs.smk"
include: "workflow/rules/hard_negatives.smk"
include: "workflow/rules/train_inputs.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/bisent2vec_inputs.smk"
include: "workflow/rules/bisent2vec.smk"
include: "workflow/rules/evaluate_inputs.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables_inputs.smk"
include: "workflow/rules/tables.smk"


rule all:
    # Every table and plot the config makes, the cost table, and the word alignments
    # (xlsent.config.final_outputs).
    input:
        final_outputs(config),
