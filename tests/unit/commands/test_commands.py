"""The CLI against its callers: the workflow's rules, the config schema, the results readers.

The rules call `xlsent SUBCOMMAND --flags` in shell strings that no test of the CLI runs
directly; these tests read those strings from workflow/rules/*.smk and parse them with the
real parser, so a renamed flag or subcommand fails here, not in the middle of a run.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import re
import shlex
from pathlib import Path

import polars as pl
import pytest
import yaml
from support import ROOT

from xlsent.cli import STAGES, build_parser, main
from xlsent.evaluate.results import COLUMNS, load_results, write_results

RULES = ROOT / "workflow" / "rules"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

# What the placeholders that stand for flags or positionals (rather than for a flag's value)
# render to, per rule: every form the input functions of workflow/rules/*_inputs.smk give them.
EXPANSIONS: dict[tuple[str, str], list[str]] = {
    ("opus_download", "{params.base_url}"): ["", "--base-url https://mirror.example/opus"],
    ("clean", "{params.args}"): [
        "--local-dir raw",
        "--local-dir raw --corpora Tanzil QED",
        "--manifest resources/opus.yaml --zip Tanzil=results/Tanzil/kk.zip QED=results/QED/kk.zip",
        "--heldout-fraction 0.2",
    ],
    ("clean", "{params.tokenizer}"): ["", "--tokenizer-dir results/pretrained/xlmr"],
    ("tokenizer", "{params.args}"): [
        "--pretrained results/pretrained/xlmr",
        "--corpus kk=kk/train.parquet te=te/train.parquet --vocab-size 32000 --sentences 2000",
    ],
    ("align_shard", "{params.model}"): [
        "",
        "--model results/aligners/wspalign",
        "--model results/pretrained/me5",
    ],
    ("align_shard", "{params.binary}"): [
        "",
        "--binary results/build/eflomal/eflomal",
        "--binary results/build/eflomal/eflomal --lang de --clean results/corpus/de/clean.parquet"
        " --dev results/corpus/de/dev.parquet --mining results/corpus/de/mining.parquet",
    ],
    ("subwords", "{params.prefix}"): [
        "--en-prefix '' --xx-prefix ''",
        "--en-prefix 'query: ' --xx-prefix 'passage: '",
    ],
    ("word_spans", "{params.prefix}"): ["--en-prefix 'query: ' --xx-prefix 'query: '"],
    ("align_manifest", "{input.stats}"): ["shard-0000.json shard-0001.json"],
    ("train", "{params.launcher}"): [
        "xlsent",
        "torchrun --standalone --nproc_per_node=2 -m xlsent.cli",
    ],
    ("train", "{params.args}"): [
        "--train kk=kk/train.parquet te=te/train.parquet --dev kk=kk/dev.parquet te=te/dev.parquet",
        "--train kk=kk/train.parquet --dev kk=kk/dev.parquet --pretrained results/pretrained/xlmr",
        "--train kk=kk/train.parquet --dev kk=kk/dev.parquet --pretrained results/pretrained/me5"
        " --negative-files kk=results/hard_negatives/pretrained/me5/all/kk/negatives.parquet",
    ],
    ("hard_negatives", "{input.shards}"): ["vectors-0000.arrow vectors-0001.arrow"],
    ("hard_negatives_encode", "{params.max_pairs}"): ["", "--max-pairs 2000"],
    ("bisent2vec_train", "{params.binary}"): ["", "--binary results/build/bisent2vec/bisent2vec"],
    ("bisent2vec_train", "{params.mapped}"): ["", """--mapped-settings '{"model": "cbow"}'"""],
    ("bisent2vec_train", "{params.seed_dictionary}"): [
        "",
        "--seed-pairs results/data/bli/de.seed.txt",
    ],
    ("bli_seed", "{params.files}"): ["en2xx=de.en2xx.txt xx2en=de.xx2en.txt", "xx2en=x.txt"],
    ("bli_test", "{params.files}"): ["en2xx=de.en2xx.txt xx2en=de.xx2en.txt", "en2xx=x.txt"],
    ("eval_tatoeba_bisent2vec", "{params.args}"): [
        "--models kk=results/models/b2v/seed0/kk te=results/models/b2v/seed0/te",
        "--models kk=results/models/b2v/seed0/kk --idf kk=results/words/kk/dev.parquet",
    ],
    ("bli_dictionary", "{params.args}"): [
        "--freedict eng-deu.dict.dz --index eng-deu.index",
        "--freedict eng-deu.dict.dz --index eng-deu.index --reverse",
        "--muse https://example.org/en-de.txt --download-dir results/downloads/bli/de.en2xx",
        "--muse en-de.txt",
        "--muse en-de.txt --reverse",
    ],
    ("tables_tatoeba", "{input.results}"): ["tr/seed42.parquet tr/seed0.parquet"],
    ("tables_ablation", "{input.results}"): ["tr/seed42.parquet"],
    ("tables_retrieval", "{input.results}"): ["tr/seed42.parquet b2v/seed42.parquet"],
    ("tables_transfer", "{input}"): ["mlm/seed42.parquet dualpivot-sup/seed42.parquet"],
    ("tables_bli", "{input}"): ["b2v/seed0/de.en2xx.parquet"],
    ("tables_cost", "{input.tables}"): ["results/tables/tatoeba.csv results/plots/bars.png"],
    ("encode", "{params.sentences}"): [
        "--dir results/demo/tatoeba --langs de kk --tatoeba-text laser",
        "--pairs de=results/corpus/de/mining.parquet kk=results/corpus/kk/mining.parquet",
        "--dir results/data/bucc2018 --langs de fr --splits sample training",
    ],
    ("eval_retrieval", "{params.tatoeba}"): ["", "--tatoeba-text dap"],
    ("eval_retrieval_bisent2vec", "{params.tatoeba}"): ["", "--tatoeba-text dap"],
    ("mining_set", "{params.tatoeba}"): ["", "--tatoeba-text laser"],
    ("eval_mteb", "{params.args}"): [
        "",
        "--tatoeba-dir results/data/tatoeba",
        "--tatoeba-dir /data/tatoeba --cache-dir /data/hf-mteb",
    ],
}

# Flags that carry a setting under another name than its schema key.
SETTING_ALIASES = {
    "langs": "languages",
    "sentences": "tokenizer_sentences",
    "tatoeba_text": "text",
}

# Setting flags the rules pass in some configurations only: no default either (the schema
# has it), but not required; the handler checks what its use needs (xlsent.arguments.require).
CONDITIONAL = {
    ("clean", "corpora"): "corpus.local.corpora: source local, when set",
    ("clean", "manifest"): "corpus.opus.manifest: source opus",
    ("clean", "heldout_fraction"): "corpus.demo.heldout_fraction: source demo",
    ("download-opus", "base_url"): "corpus.opus.base_url: when set",
    ("tokenizer", "corpus"): "a scratch model's training corpus",
    ("tokenizer", "vocab_size"): "a scratch model's vocab_size",
    ("tokenizer", "sentences"): "a scratch model's tokenizer_sentences",
    ("align-shard", "model"): "the model directory: methods wspalign and simalign",
    ("align-shard", "clean"): "the pairs beyond the cap: method eflomal",
    ("align-shard", "mining"): "the pairs beyond the cap: method eflomal",
    ("bisent2vec-eval-tatoeba", "model"): "one of --model and --models (a required group)",
    ("bisent2vec-eval-tatoeba", "models"): "one of --model and --models (a required group)",
    ("eval-mteb", "cache_dir"): "evaluate.mteb.cache_dir: when set",
    ("encode", "dir"): "the folder of the files: source tatoeba or bucc2018",
    ("encode", "langs"): "the languages: source tatoeba or bucc2018",
    ("encode", "splits"): "BUCC 2018's splits: source bucc2018",
    ("encode", "pairs"): "the held-out splits: source mining",
    ("encode", "tatoeba_text"): "evaluate.tatoeba.text: source tatoeba",
    ("eval-retrieval", "tatoeba_text"): "evaluate.tatoeba.text: --from tatoeba",
    ("bisent2vec-eval-retrieval", "tatoeba_text"): "evaluate.tatoeba.text: --from tatoeba",
    ("mining-set", "tatoeba_text"): "evaluate.tatoeba.text: --from tatoeba",
    ("train", "nodes"): "train.nodes: above 1 (absent, the job is this node)",
    ("hard-negatives-encode", "max_pairs"): "train.max_pairs of the runs: when set",
}

_HEADER = re.compile(r"^\s*(?:rule|checkpoint)\s+(\w+):")


def _rule_shells() -> dict[str, str]:
    """The shell command of every rule, its string literals joined as Snakemake joins them."""
    shells = {}
    for path in sorted(RULES.glob("*.smk")):
        lines = path.read_text().splitlines()
        rule = None
        for i, line in enumerate(lines):
            if header := _HEADER.match(line):
                rule = header[1]
            elif line.strip() == "shell:":
                parts = []
                for literal in lines[i + 1 :]:
                    if not literal.strip().startswith('"'):
                        break
                    parts.append(ast.literal_eval(literal.strip()))
                assert rule and parts, f"{path.name}:{i + 1}: a shell block without a string"
                shells[rule] = "".join(parts)
    return shells


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def _options(subparser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {option: a for a in subparser._actions for option in a.option_strings}


def _dummy(action: argparse.Action) -> str:
    """A value the flag accepts, standing for a rule's {placeholder}."""
    if action.choices:
        return str(next(iter(action.choices)))
    for value in ("1", "0.5", "x"):  # the first that the flag's type takes
        try:
            (action.type or str)(value)
        except (TypeError, ValueError):
            continue
        return value
    pytest.fail(f"no dummy value for {action.option_strings}")


def _renderings(rule: str, shell: str) -> list[list[str]]:
    """Every argv (after `xlsent` or `-m xlsent.cli`) the rule's command can take."""
    tokens = shlex.split(shell)
    # What the shell redirects (stderr to the log, or appended to it) is not the command's.
    tokens = tokens[: next((i for i, t in enumerate(tokens) if t in ("2>", "2>>")), len(tokens))]
    parsers = _subparsers(build_parser())
    choices: list[list[list[str]]] = []
    command, options = "", dict[str, argparse.Action]()
    for previous, token in zip(["", *tokens], tokens, strict=False):
        if "{" not in token:
            choices.append([[token]])
            if not command and token in parsers:
                command, options = token, _options(parsers[token])
            continue
        if previous.startswith("--") and previous not in options:
            pytest.fail(f"rule {rule} passes {previous}, which `xlsent {command}` lacks")
        action = options.get(previous)
        if action is not None and action.nargs != 0:
            choices.append([[_dummy(action)]])
            continue
        assert (rule, token) in EXPANSIONS, (
            f"rule {rule}: {token} stands for flags or positionals; add what it renders to "
            "EXPANSIONS"
        )
        choices.append([shlex.split(text) for text in EXPANSIONS[rule, token]])
    argvs = []
    for parts in itertools.product(*choices):
        argv = [token for part in parts for token in part]
        start = max(i for i, token in enumerate(argv) if token in ("xlsent", "xlsent.cli"))
        argvs.append(argv[start + 1 :])
    return argvs


def _rule_commands() -> dict[str, list[list[str]]]:
    return {rule: _renderings(rule, shell) for rule, shell in _rule_shells().items()}


def test_the_rules_are_read() -> None:
    shells = _rule_shells()
    text = "".join(path.read_text() for path in RULES.glob("*.smk"))
    assert len(shells) == text.count("shell:") > 20
    for rule, shell in shells.items():
        assert re.match(r"(xlsent|\{params\.launcher\}) [a-z0-9-]+ ", shell), (rule, shell)


def test_every_command_of_the_rules_parses() -> None:
    parser = build_parser()
    for rule, argvs in _rule_commands().items():
        for argv in argvs:
            try:
                args = parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"rule {rule}: `xlsent {shlex.join(argv)}` does not parse")
            assert args.command == argv[0]


def test_flags_the_rules_always_pass_are_required() -> None:
    """A flag in every command a subcommand gets from the rules has no CLI default to drift."""
    always: dict[str, set[str]] = {}
    for argvs in _rule_commands().values():
        for argv in argvs:
            flags = {token for token in argv if token.startswith("--")}
            always[argv[0]] = always.get(argv[0], flags) & flags
    parsers = _subparsers(build_parser())
    required_groups = {
        action
        for subparser in parsers.values()
        for group in subparser._mutually_exclusive_groups
        if group.required
        for action in group._group_actions
    }
    loose = [
        f"{command} {flag}"
        for command, flags in always.items()
        for flag in sorted(flags)
        if (action := _options(parsers[command])[flag]).nargs != 0  # store_true: a switch
        and not action.required
        and action not in required_groups
    ]
    assert loose == [], "always passed by the rules, yet optional"


def _schema_keys(node: object) -> set[str]:
    """Every property name anywhere in the config schema (settings at any depth)."""
    keys = set()
    if isinstance(node, dict):
        keys |= set(node.get("properties", {}))
        for value in node.values():
            keys |= _schema_keys(value)
    elif isinstance(node, list):
        for value in node:
            keys |= _schema_keys(value)
    return keys


def _defaults_beside_the_schema(parser: argparse.ArgumentParser) -> list[str]:
    """Setting flags with a default of their own, or optional though always given."""
    settings = _schema_keys(yaml.safe_load(SCHEMA.read_text())) | set(SETTING_ALIASES)
    found = []
    for command, subparser in _subparsers(parser).items():
        for action in subparser._actions:
            if action.dest not in settings:
                continue
            name = f"{command} {'/'.join(action.option_strings) or action.dest}"
            if subparser.get_default(action.dest) is not None:
                found.append(f"{name} has default {subparser.get_default(action.dest)!r}")
            elif not action.required and (command, action.dest) not in CONDITIONAL:
                found.append(f"{name} is optional")
    return found


def test_no_cli_default_duplicates_the_schema() -> None:
    assert _defaults_beside_the_schema(build_parser()) == []


def test_the_schema_check_finds_a_default_added_to_a_setting_flag() -> None:
    parser = build_parser()
    subparsers = _subparsers(parser)
    clean = subparsers["clean"]
    _options(clean)["--source"].required = False
    _options(clean)["--heldout-fraction"].default = 0.2
    subparsers["download-opus"].set_defaults(retries=3)
    assert _defaults_beside_the_schema(parser) == [
        "clean --source is optional",
        "clean --heldout-fraction has default 0.2",
        "download-opus --retries has default 3",
    ]


def test_help_lists_every_subcommand_by_stage() -> None:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert all(choice.help for choice in action._choices_actions)
    listed = [choice.dest for choice in action._choices_actions]
    help_text = parser.format_help()
    assert all(re.search(rf"^ +{name}\s", help_text, re.MULTILINE) for name in listed)
    # Each subcommand's handler sits in its stage's module; the stages follow STAGES.
    stages = [action.choices[name].get_default("handler").__module__ for name in listed]
    order = [stage.__name__ for stage in STAGES]
    assert stages == sorted(stages, key=order.index)
    assert set(stages) == set(order)


def test_each_stage_lists_its_subcommands_in_its_register_docstring() -> None:
    """A stage module's `register` docstring names exactly the subcommands it adds: a reader
    of the module sees every command, and a command added or moved fails here until it is
    listed."""
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    stage_of = {name: p.get_default("handler").__module__ for name, p in action.choices.items()}
    for stage in STAGES:
        words = set(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", stage.register.__doc__ or ""))
        listed = {word for word in words if word in stage_of}
        added = {name for name, module in stage_of.items() if module == stage.__name__}
        assert listed == added, f"{stage.__name__}.register: lists {sorted(listed)}"


def test_status_passes_snakemake_arguments_through(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr("xlsent.status.report", lambda args: seen.append(args) or "report")
    main(["status", "--configfile", "config.yaml", "-n", "all"])
    assert seen == [["--configfile", "config.yaml", "-n", "all"]]
    with pytest.raises(SystemExit) as exit_info:
        main(["align-pharaoh", "--manifest", "m", "--out", "o", "--configfile", "c"])
    assert exit_info.value.code == 2


def test_help_leads_with_how_to_run_the_workflow(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = capsys.readouterr().out
    # The Snakemake commands and status come before the per-job subcommands.
    assert shown.index("make demo") < shown.index("xlsent status") < shown.index("clean")
    assert "snakemake --profile slurm" in shown
    with pytest.raises(SystemExit):
        main(["status", "--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("usage: xlsent status [SNAKEMAKE ARGUMENTS ...]")
    assert "Every argument is Snakemake's" in shown


def test_a_long_plan_is_summarised_by_rule() -> None:
    from xlsent.status import Job, by_rule

    jobs = [Job("clean", f"lang={lang}", [], ["Missing output files: x"]) for lang in "abc"]
    jobs += [
        Job("train", "run=tr, seed=42", [], ["settings changed: max_steps: 5 → 6"]),
        Job("train", "run=dap, seed=42", [], ["an input is rebuilt: y", "Code has changed"]),
        Job("tables", "", [], []),
    ]
    assert by_rule(jobs) == [
        "clean (3 jobs): Missing output files",
        "train (2 jobs): settings changed: max_steps: 5 → 6; an input is rebuilt; Code has changed",
        "tables (1 job): see snakemake -n",
    ]


def test_results_writer_writes_the_columns_the_tables_read(tmp_path: Path) -> None:
    rows = [
        {"lang": "kk", "direction": "xx2en", "metric": "accuracy", "value": 90, "n": 100.0},
        {"lang": "kk", "direction": "mean", "metric": "accuracy", "value": 91.5, "n": 200},
    ]
    out = tmp_path / "seed42.parquet"
    write_results(rows, "tatoeba", "tr", 42, out)
    frame = pl.read_parquet(out)
    assert frame.columns == list(COLUMNS)
    assert frame.schema == {
        "task": pl.String,
        "run": pl.String,
        "seed": pl.Int64,
        "lang": pl.String,
        "direction": pl.String,
        "metric": pl.String,
        "value": pl.Float64,
        "n": pl.Int64,
    }
    assert frame.row(0) == ("tatoeba", "tr", 42, "kk", "xx2en", "accuracy", 90.0, 100)
    assert load_results([out]).equals(frame)
