"""`xlsent status`: what the next run will redo and why, in a few lines per job.

A thin reading of Snakemake's own bookkeeping, run with the user's arguments: its dry run
(which jobs, and the reason of each) and its `--detailed-summary` (every output's status).
Three things are added to what Snakemake prints:

- a changed setting is shown as the keys that changed (`max_steps: 560 → 580`), not as the
  two JSON objects of every setting of the rule;
- outputs that stay as they are although a file they were computed from is gone (deleted by
  hand: Snakemake does not rebuild a missing intermediate whose consumers are complete) are
  listed with the command that recomputes them. A kill never leaves such outputs: a run
  removes what it will rebuild before it starts (xlsent.failures.rebuilt_outputs);
- outputs that no longer read back (`xlsent.failures.unreadable`: a Parquet file cut short by
  a copy) are listed with the command that remakes them.

Each planned training with a checkpoint is said to resume it or to start over, and why
(`training_notes`); a run says the same as it starts, from its config (`training_note`, the
Snakefile's `onstart`).
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from xlsent.failures.unreadable import problem, remake_command
from xlsent.layout import CHECKPOINTS, RESULTS

if TYPE_CHECKING:
    from xlsent.train.resume_notes import Note

# A job as Snakemake prints it in a dry run: "rule NAME:" (or localrule, checkpoint), then its
# more indented fields; jobs of a group job are indented as a whole.
_JOB = re.compile(
    r"^([ \t]*)(?:local)?(?:rule|checkpoint) (\w+):\n((?:\1[ \t]+.*\n)*)", re.MULTILINE
)


@dataclass
class Job:
    rule: str
    wildcards: str
    outputs: list[str]
    reasons: list[str] = field(default_factory=list)
    # The JSON params of the job where its reason shows them (changed since its last run).
    params: list[dict] = field(default_factory=list)


def _field(body: str, name: str) -> str:
    found = re.search(rf"^\s+{name}: (.*)$", body, flags=re.MULTILINE)
    return found.group(1) if found else ""


def planned_jobs(dry_run: str) -> list[Job]:
    """The jobs of a dry run's output, with their reasons made readable."""
    jobs = []
    for _, rule, body in _JOB.findall(dry_run):
        if rule == "all":
            continue
        outputs = [p.strip() for p in _field(body, "output").split(",") if p.strip()]
        reason = _field(body, "reason")
        params = _json_objects(reason.partition(" now: ")[2]) if " now: " in reason else []
        jobs.append(Job(rule, _field(body, "wildcards"), outputs, _reasons(reason), params))
    return jobs


def training_note(config: dict, run: str, seed: int) -> Note | None:
    """What the planned training of `run` at `seed` does with its checkpoint (resume at its
    step, or start over and why: `xlsent.train.resume_notes`), for the console as a run
    starts (the Snakefile's `onstart`), from the run's settings in `config`; None without a
    checkpoint."""
    from xlsent.arguments import settings_object
    from xlsent.config.runs import program_settings, train_settings, training_processes
    from xlsent.train.resume_notes import resume_note
    from xlsent.train.settings import TrainSettings, identity

    settings = train_settings(config, run, seed)
    trainer = settings_object(TrainSettings, program_settings("train", settings), "train")
    note = resume_note(
        Path(CHECKPOINTS.format(run=run, seed=seed)),
        identity(trainer),
        training_processes(settings),
    )
    return note and note._replace(text=f"training {run} (seed {seed}): {note.text}")


def training_notes(jobs: list[Job], root: Path = Path(".")) -> list[str]:
    """For each planned training that has a checkpoint, whether it resumes or starts over and
    why (`xlsent.train.resume_notes`): against the settings the job will pass where its
    reason shows them (they changed), else against its checkpoint's own (they did not)."""
    from xlsent.arguments import settings_object
    from xlsent.train.resume_notes import recorded, resume_note
    from xlsent.train.settings import TrainSettings, identity

    lines = []
    for job in jobs:
        if job.rule != "train":
            continue
        wildcards = dict(item.split("=", 1) for item in job.wildcards.split(", "))
        directory = root / CHECKPOINTS.format(**wildcards)
        record = recorded(directory)
        if record is None:
            continue
        settings, processes = record["settings"], record["processes"]
        # The train rule's settings param: the program's settings and its processes.
        planned = [params for params in job.params if "gpus" in params]
        if planned:
            resources = ("gpus", "nodes")
            program = {k: v for k, v in planned[0].items() if k not in resources}
            settings = identity(settings_object(TrainSettings, program, "train"))
            processes = max(1, planned[0]["gpus"]) * planned[0].get("nodes", 1)
        note = resume_note(directory.relative_to(root), settings, processes, record, root)
        lines.append(f"training {wildcards['run']} (seed {wildcards['seed']}): {note.text}")
    return lines


def _reasons(text: str) -> list[str]:
    """Snakemake's reason line, its changed settings shown as the keys that changed."""
    if not text:
        return []
    parts = [part.strip() for part in text.split(";") if part.strip()]
    out = []
    for part in parts:
        if part.startswith("Params have changed"):
            out.append("settings changed: " + _params_change(part))
        elif part.startswith("Input files updated by another job"):
            out.append("an input is rebuilt: " + part.split(":", 1)[1].strip())
        else:
            out.append(part)
    return out


def _params_change(text: str) -> str:
    """`a: 1 → 2, b: …` from Snakemake's "before: '…' now: '…'" dump of a rule's params."""
    before, _, now = text.partition(" now: ")
    old = _json_objects(before.partition("before: ")[2])
    new = _json_objects(now)
    changes = []
    for old_obj, new_obj in zip(old, new, strict=False):
        keys = dict.fromkeys([*old_obj, *new_obj])
        changes += [
            f"{key}: {_short(old_obj.get(key, '(none)'))} → {_short(new_obj.get(key, '(none)'))}"
            for key in keys
            if old_obj.get(key) != new_obj.get(key)
        ]
    if changes:
        return ", ".join(changes)
    return "params " + " → ".join(x.strip()[:150] for x in (before, now))


def _json_objects(text: str) -> list[dict]:
    """The JSON objects quoted in `text` (params that are JSON settings), in order."""
    objects = []
    for quoted in re.findall(r"'(\{.*?\})'", text):
        try:
            value = json.loads(quoted)
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    return objects


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def orphans(detailed_summary: str, root: Path = Path(".")) -> dict[str, list[str]]:
    """Outputs that no run will rebuild although a result they were computed from is gone,
    as {output: [its missing inputs]}, from Snakemake's `--detailed-summary`."""
    found = {}
    for row in csv.DictReader(io.StringIO(detailed_summary), delimiter="\t"):
        if row.get("plan") != "no update" or not (root / row["output_file"]).exists():
            continue
        inputs = [p for p in (row.get("input-file(s)") or "").split(",") if p]
        missing = [p for p in inputs if p.startswith(f"{RESULTS}/") and not (root / p).exists()]
        if missing:
            found[row["output_file"]] = missing
    return found


def unreadable(detailed_summary: str, root: Path = Path(".")) -> dict[str, str]:
    """Outputs that exist but do not read back (`xlsent.failures.unreadable.problem`: a Parquet
    file cut short, say), as {output: why}, from Snakemake's `--detailed-summary`."""
    found = {}
    for row in csv.DictReader(io.StringIO(detailed_summary), delimiter="\t"):
        why = problem(root / row["output_file"])
        if why is not None:
            found[row["output_file"]] = why
    return found


def _snakemake(args: list[str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", *args], capture_output=True, text=True
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(proc.returncode)
    return proc.stdout + proc.stderr


# Up to this many jobs are listed one by one; more (a first run of a paper config plans
# hundreds) are summarised by rule.
LISTED_JOBS = 30


def by_rule(jobs: list[Job]) -> list[str]:
    """One line per rule, in plan order: its job count and its distinct reasons, each named
    by its kind (the text before a reason's colon: the files it lists differ per job), a
    changed setting with its keys and values."""
    rules: dict[str, list[Job]] = {}
    for job in jobs:
        rules.setdefault(job.rule, []).append(job)
    lines = []
    for rule, members in rules.items():
        kinds = dict.fromkeys(
            reason if reason.startswith("settings changed") else reason.split(":")[0]
            for job in members
            for reason in job.reasons
        )
        count = f"{len(members)} job{'s' if len(members) > 1 else ''}"
        lines.append(f"{rule} ({count}): {'; '.join(kinds) or 'see snakemake -n'}")
    return lines


def report(args: list[str], root: Path = Path(".")) -> str:
    """The status report of `snakemake ARGS` (the user's targets, --configfile, ...)."""
    jobs = planned_jobs(_snakemake([*args, "--dry-run"]))
    summary = _snakemake([*args, "--detailed-summary"])
    table = summary[summary.find("output_file\t") :]
    lost, broken = orphans(table, root), unreadable(table, root)
    lines = []
    if len(jobs) > LISTED_JOBS:
        lines.append(f"The next run redoes {len(jobs)} jobs (by rule; each job: snakemake -n):")
        lines += [f"  {line}" for line in by_rule(jobs)]
    elif jobs:
        lines.append(f"The next run redoes {len(jobs)} jobs:")
        for job in jobs:
            name = f"{job.rule} ({job.wildcards})" if job.wildcards else job.rule
            lines.append(f"  {name}: {'; '.join(job.reasons) or 'see snakemake -n'}")
    else:
        lines.append("Nothing to redo: every requested result is up to date.")
    lines += training_notes(jobs, root)
    if lost:
        lines.append(
            f"{len(lost)} output{'s' if len(lost) > 1 else ''} stay as they are although a "
            "result they were computed from is gone (deleted by hand, or set aside because it "
            "no longer read back?):"
        )
        for output, missing in lost.items():
            lines.append(f"  {output} (from {', '.join(missing)})")
        lines.append(f"  To recompute them from their inputs: {remake_command(list(lost))}")
    if broken:
        outputs = (
            f"{len(broken)} outputs no longer read"
            if len(broken) > 1
            else "1 output no longer reads"
        )
        lines.append(f"{outputs} back (truncated or corrupt after the job that wrote them ended):")
        lines += [f"  {output}: {why}" for output, why in broken.items()]
        lines.append(
            "  To remake them and what was computed from them: " + remake_command(list(broken))
        )
    return "\n".join(lines)
