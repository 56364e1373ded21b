"""Settings that run, but probably not as meant: one line each, printed before the run."""

from __future__ import annotations

import functools

from xlsent.config.runs import (
    group_languages,
    listed,
    runs_of,
    table_groups,
    tatoeba_languages,
    train_key,
)
from xlsent.methods import ENCODER_METHODS

# What `xlsent.config` re-exports of this module (its `__getattr__`).
__all__ = [
    "config_warnings",
]


def config_warnings(config: dict) -> list[str]:
    """Settings of a validated `config` that run, but probably not as meant: one line each.

    Not errors: a short test run rightly lowers `max_steps` alone, and the trainer copes (it
    evaluates at the last step whatever `eval_every` is). But with `eval_every` above
    `max_steps` the "best checkpoint by dev P@1" is simply the last step, and with
    `warmup_steps` above it the learning rate never reaches `lr`: worth a line before hours of
    training. (`checkpoint_every` above `max_steps` is not: it only means no resumable
    checkpoint before the end, and a preempted job still saves one.) A table group with
    languages left unevaluated is one too: small test configs evaluate a few languages of the
    papers' groups on purpose, and the tables leave such a group blank with a footnote.
    """
    out = []
    for run in runs_of(config, ENCODER_METHODS):
        settings = {**config["train"], **config["runs"][run]["train"]}
        key = functools.partial(train_key, config, run)
        steps = f"`{key('max_steps')}` ({settings['max_steps']})"
        if settings["max_steps"] == 0:
            continue  # the starting model exported unchanged: nothing trains
        if settings["eval_every"] > settings["max_steps"]:
            out.append(
                f"config key `{key('eval_every')}` ({settings['eval_every']}) is above {steps}: "
                "dev P@1 is measured at the last step only, so the exported model is the last "
                "one, not the best; lower eval_every to select among checkpoints"
            )
        if settings["warmup_steps"] > settings["max_steps"]:
            out.append(
                f"config key `{key('warmup_steps')}` ({settings['warmup_steps']}) is above "
                f"{steps}: the learning rate is still warming up when training stops and never "
                "reaches train.lr; lower warmup_steps"
            )
    evaluated = tatoeba_languages(config)
    for key, names in table_groups(config, made_only=True).items():
        for group, codes in group_languages(config, names).items():
            missing = [code for code in codes if code not in evaluated]
            if missing:
                out.append(
                    f"config key `{key}`: group {group!r} needs Tatoeba results for "
                    f"{listed(missing)}, which are not evaluated (`evaluate.tatoeba.languages`, "
                    "default `languages`): its columns stay blank; evaluate them or drop it"
                )
    return list(dict.fromkeys(out))  # runs that inherit the same global keys: said once
