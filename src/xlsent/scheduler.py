"""One pending reevaluation timer in Snakemake's scheduler, not one more per finished job.

Snakemake (8.20 to at least 9.27) limits job submissions by default
(`--max-jobs-per-timespan 100/1s`), and so that what the limit held back is submitted later,
every pass of its scheduling loop starts a `threading.Timer` whose firing runs one more pass
(`JobScheduler._schedule_reevalutation`). A pass started by anything else, a job that ends above
all, thereby starts one more chain of passes, which never stops: a run of N jobs ends making
about N passes a second, each of which stats the inputs of every ready job
(`update_input_sizes`), whether anything changed or not (upstream: snakemake/snakemake pull
request 3744, open). On the demo's 224 jobs the Snakemake process held the GIL for 98 s of its
331 s (`py-spy record --gil`), 77 s of them in those passes; on a cluster, a run of thousands of
jobs keeps a core of the node it runs on busy.

`one_timer` lets the scheduler keep at most one such timer pending: a pass that finds one
pending starts none, as the pending one runs a pass within the limit's timespan anyway, all the
limit needs. Its timer is a daemon thread, so that Snakemake's exit does not wait for it (each
upstream timer held the exit up to its timespan).
"""

from __future__ import annotations

import threading

_lock = threading.Lock()


def one_timer() -> bool:
    """Make Snakemake's scheduler keep at most one reevaluation timer pending (once a process;
    the Snakefile calls it). False, changing nothing, where Snakemake no longer schedules its
    passes by a timer: its scheduler changed, and this needs a look."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    current = getattr(JobScheduler, "_schedule_reevalutation", None)
    if current is schedule_reevaluation:
        return True
    if current is None or "Timer" not in current.__code__.co_names:
        return False
    JobScheduler._schedule_reevalutation = schedule_reevaluation
    return True


def schedule_reevaluation(scheduler, delay: float) -> None:
    """Run a pass of `scheduler`'s loop in `delay` seconds, unless a timer is pending."""
    with _lock:
        if getattr(scheduler, "_pending_reevaluation", None) is not None:
            return
        timer = threading.Timer(delay, _reevaluate, args=(scheduler,))
        timer.daemon = True
        scheduler._pending_reevaluation = timer
    timer.start()


def _reevaluate(scheduler) -> None:
    # Cleared before the pass is released: the pass it runs starts the next timer.
    with _lock:
        scheduler._pending_reevaluation = None
    scheduler._open_jobs.release()
