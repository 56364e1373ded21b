# Names and input functions of the hard-negative stage (hard_negatives.smk, which holds only
# its rules) and of the trainings that read it (train_inputs, train_args in train_inputs.smk).
from xlsent.hard_negatives.pool import shards_holding

HARD_NEGATIVES = config["hard_negatives"]
# Where a language's negatives are (layout.HARD_NEGATIVES): {start}, the model the runs start
# from, as its directory under results/ (start_weights); {pool}: the pairs a language's
# negatives are mined among, the runs' training pool: all of the split's (`all`), or the
# share of train.max_pairs N (`maxN`).


wildcard_constraints:
    start=r"pretrained/[a-z][a-z0-9_-]*|models/[a-z][a-z0-9_-]*/seed\d+",
    pool=r"all|max\d+",


def pool_name(max_pairs):
    """The {pool} of a training pool capped at train.max_pairs (None: all)."""
    return "all" if max_pairs is None else f"max{max_pairs}"


def pool_cap(pool):
    """The train.max_pairs of a {pool}, None for all."""
    return None if pool == "all" else int(pool.removeprefix("max"))


def start_model(start):
    """The model entry whose subwords and tokenizer a start reads: `pretrained/{model}`'s, or
    the model of the run of `models/{run}/seed{seed}`."""
    kind, name = start.split("/")[:2]
    return name if kind == "pretrained" else model_of(name)


def hard_negative_encode_inputs(wildcards):
    """A shard's inputs: every language's subwords (the pool's languages), the model that
    encodes them and the tokenizer of the subwords."""
    model = start_model(wildcards.start)
    return {
        "subwords": expand(layout.SUBWORDS, model=model, lang=LANGS, split="train"),
        "model": f"{layout.RESULTS}/{wildcards.start}",
        "tokenizer": layout.TOKENIZER.format(model=model),
    }


def hard_negative_encode_args(wildcards):
    """`xlsent hard-negatives-encode --subwords`: each language's subwords."""
    model = start_model(wildcards.start)
    return lang_args(layout.SUBWORDS, LANGS, model=model, split="train")


def hard_negative_shards(wildcards):
    """The pool's shards that hold a language's pairs, once every language's sample exists
    (the `sample` checkpoint)."""
    cap = pool_cap(wildcards.pool)
    sizes = {
        lang: train_pairs(lang) if cap is None else min(train_pairs(lang), cap)
        for lang in sorted(LANGS)
    }
    held = shards_holding(sizes, wildcards.lang, HARD_NEGATIVES["shard_size"])
    return [
        layout.HARD_NEGATIVE_SHARD.format(
            start=wildcards.start, pool=wildcards.pool, shard=f"{i:04d}"
        )
        for i in held
    ]


def hard_negative_pool(wildcards):
    """The {start} and {pool} of a training with hard negatives (its starting model under
    results/, its training pool), or None without them; a run with them has a start
    (xlsent.config checks)."""
    settings = train_settings_of(wildcards)
    if not settings["hard_negatives"]:
        return None
    start = start_weights(wildcards).removeprefix(f"{layout.RESULTS}/")
    return {"start": start, "pool": pool_name(settings["max_pairs"])}


def hard_negative_files(wildcards):
    """A training's hard-negative files, one per language (train_inputs); none without."""
    where = hard_negative_pool(wildcards)
    if where is None:
        return {}
    return {"negatives": expand(layout.HARD_NEGATIVES_FILE, lang=LANGS, **where)}


def hard_negative_args(wildcards):
    """`xlsent train --negative-files` of a training with hard negatives (train_args)."""
    where = hard_negative_pool(wildcards)
    if where is None:
        return ""
    return f" --negative-files {lang_args(layout.HARD_NEGATIVES_FILE, LANGS, **where)}"
