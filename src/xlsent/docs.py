"""The parts of docs/ that the code would otherwise drift from, generated from their sources.

Two tables are generated: each rule's threads, GPUs, memory, runtime and group, read from the
rules' own declarations in ``workflow/rules/*.smk``, and every configuration key with its
default and description, read from ``workflow/schemas/config.schema.yaml``. Each sits in its
document between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``; ``python -m
xlsent.docs`` rewrites them and ``--check`` fails (naming the document) where one is stale,
which ``tests/unit/test_docs.py`` runs.

Two things are checked, not generated. The numbers docs/methods.md quotes from
docs/results.md (`citations`): a quoted number is a link to where results.md states it,
``[0.2 to 0.3](results.md#NAME)``, and results.md marks it there, ``<a id="NAME">0.2 to
0.3</a>``; both commands fail, naming the two, where the texts differ. And the per-language
counts and means results.md quotes from a comparison table (`xlsent tables-compare`,
`compared`): results.md marks each with the cell that gives it, ``<a id="NAME"
data-compare="results/tables/compare.csv wacse tr tatoeba xtreme36 below">28</a>`` (the
table's path from the repository root, runs a and b, the task, the row: a group, ``all`` or
a language, and the column); where that table is at hand the commands fail if the quote is
not the cell at the quote's decimals, and name the tables that are not (results/ is made by
the workflow, not kept in the repository). A number quoted from any other table the workflow
writes is marked the same way by its row and column (`cells`): ``<a id="NAME"
data-cell="docs/evidence/wacse/results/tables/tatoeba.csv run=wacse-eflomal low8">86.0</a>``
(the table, the values that pick its one row, the column).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

from xlsent.defaults import LEFT_OUT_AT_DEFAULT, PROGRAM
from xlsent.methods import METHODS, Loss
from xlsent.tables.compare import COUNTS, DEV, SCORES, TASKS

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "workflow" / "rules"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

_RULE = re.compile(r"^\s*(?:rule|checkpoint) (\w+):$")
_SECTION = re.compile(r"^    (\w+):\s*(.*)$")
_ATTEMPT = re.compile(r"^lambda w(?:ildcards)?, attempt: (.+?) \* attempt$")
# A number methods.md quotes from results.md, and where results.md states it.
_CITATION = re.compile(r"\[([−+-]?\d[^\]]*)\]\(results\.md#([\w-]+)\)")
_STATED = re.compile(r'<a id="([\w-]+)"(?: data-(?:compare|cell)="[^"]*")?>([^<]*)</a>')
# A number results.md quotes from a comparison table, with the cell that gives it.
_COMPARED = re.compile(r'<a id="([\w-]+)" data-compare="([^"]*)">([^<]*)</a>')
# A number results.md quotes from another table, with the row and column that give it.
_CELL = re.compile(r'<a id="([\w-]+)" data-cell="([^"]*)">([^<]*)</a>')
_NUMBER = re.compile(r"[−+-]?\d+(?:\.\d+)?")
COMPARE_COLUMNS = (*SCORES, *COUNTS, "languages")


def _rule_blocks(text: str) -> Iterator[tuple[str, dict[str, list[str]]]]:
    """Each rule (or checkpoint) of a .smk file as (name, {section: its lines}).

    Relies on snakefmt's layout: sections one indent below the rule, their lines deeper; a
    rule ends at the next line as shallow as its own header (rules may sit inside an `if`).
    """
    name, sections, current, indent = None, {}, None, 0
    for line in [*text.splitlines(), "<end>"]:
        depth = len(line) - len(line.lstrip())
        header = _RULE.match(line)
        if header or (name and line.strip() and depth <= indent):
            if name:
                yield name, sections
            name, sections, current = (header.group(1), {}, None) if header else (None, {}, None)
            indent = depth
        elif name:
            section = _SECTION.match(line[indent:])
            if section:
                current = section.group(1)
                sections[current] = [section.group(2)] if section.group(2) else []
            elif current and line.strip():
                sections[current].append(line.strip())


def _resource(lines: list[str], key: str) -> str:
    """A resource's value as the docs show it: `16000 × attempt` for the usual lambda."""
    for line in lines:
        if line.startswith(f"{key}="):
            value = line[len(key) + 1 :].rstrip(",")
            match = _ATTEMPT.match(value)
            if match:
                return f"{match.group(1).replace(' * ', ' × ')} × attempt"
            return value if re.fullmatch(r"[\d.]+", value) else "(computed)"
    return ""


def rule_table(rules_dir: Path = RULES) -> str:
    """A Markdown table of every rule's declared threads, GPUs, memory, runtime and group."""
    rows = [
        "| rule | file | threads | GPUs | mem_mb | runtime (min) | group |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for path in sorted(rules_dir.glob("*.smk")):
        for name, sections in _rule_blocks(path.read_text()):
            threads = " ".join(sections.get("threads", []))
            if threads.startswith("lambda"):
                threads = "(computed)"
            resources = sections.get("resources", [])
            gpus = _resource(resources, "gpu")
            group = sections.get("group", [""])
            group = "".join(group).strip('"')
            cells = [
                f"`{name}`",
                path.name,
                threads,
                gpus,
                _resource(resources, "mem_mb"),
                _resource(resources, "runtime"),
                f"`{group}`" if group else "",
            ]
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _keys(node: dict, prefix: str = "") -> Iterator[tuple[str, dict]]:
    for key, spec in node.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        if "properties" in spec:
            yield from _keys(spec, path)
        else:
            yield path, spec


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# What a key's annotation in the schema (`xlsent.defaults`) adds to its meaning.
_ANNOTATIONS = {
    (PROGRAM, False): "Not in the settings its job's program takes (`x-program: false`).",
    (LEFT_OUT_AT_DEFAULT, True): "Left out of a job's settings at its default "
    "(`x-left-out-at-default`).",
}


def config_reference(schema: Path = SCHEMA) -> str:
    """A Markdown table of every configuration key: its default and its description, and
    what its annotations say (`x-program`, `x-left-out-at-default`)."""
    rows = ["| key | default | meaning |", "| --- | --- | --- |"]
    for path, spec in _keys(yaml.safe_load(schema.read_text())):
        default = json.dumps(spec.get("default"), ensure_ascii=False)
        if len(default) > 60:
            default = "(see the schema)"
        notes = [text for (key, value), text in _ANNOTATIONS.items() if spec.get(key) is value]
        meaning = " ".join([spec.get("description", ""), *notes]).strip()
        rows.append(f"| `{path}` | `{_cell(default)}` | {_cell(meaning)} |")
    return "\n".join(rows)


def _term(loss: Loss) -> str:
    """A term of a method's loss as the method table writes it: `weight`·`objective`."""
    key, _, item = (loss.weight or "").partition(".")
    weight = f"`{key}[{item}]`·" if item else f"`{key}`·" if key else ""
    return f"{weight}`{loss.objective}`" + (" (0: left out)" if loss.optional else "")


def method_table() -> str:
    """A Markdown table of the run methods, one row each (`xlsent.methods.METHODS`): what each
    trains, its loss's terms and their weights, the heads they train, what its training
    reads and the settings blocks its runs take."""
    rows = [
        "| method | kind | what it trains | its loss | heads its losses train | its training "
        "reads | settings |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method in METHODS.values():
        heads = [
            f"`{loss.head}` (`{loss.objective}`{', at a weight above 0' if loss.optional else ''})"
            for loss in method.losses
            if loss.head
        ]
        reads = method.data + (" (the word aligner's links)" if method.needs_links else "")
        cells = [
            f"`{method.name}`",
            method.kind,
            method.about,
            " + ".join(map(_term, method.losses)) or "–",
            ", ".join(heads) or "–",
            reads,
            ", ".join(f"`{block}`" for block in method.blocks),
        ]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows)


GENERATED: dict[str, tuple[str, Callable[[], str]]] = {
    "docs/cluster.md": ("rules", rule_table),
    "docs/configuration.md": ("config", config_reference),
    "docs/development.md": ("methods", method_table),
}


def citations(methods: str, results: str) -> list[str]:
    """What is wrong with the numbers `methods` (docs/methods.md) quotes from `results`
    (docs/results.md): each link whose text is a number, `[0.3](results.md#NAME)`, must have
    that very text where results.md marks NAME, `<a id="NAME">0.3</a>`."""
    stated = dict(_STATED.findall(results))
    problems = []
    for number, name in _CITATION.findall(methods):
        if name not in stated:
            problems.append(
                f"docs/methods.md quotes {number} from results.md#{name}, which marks no "
                f'number there: write <a id="{name}">{number}</a> where results.md states it'
            )
        elif stated[name] != number:
            problems.append(
                f"docs/methods.md quotes {number} from results.md#{name}, where "
                f"docs/results.md says {stated[name]}"
            )
    return problems


def _rows(path: Path) -> list[dict[str, str]] | None:
    """A table's rows, or None where it is not at hand."""
    if not path.exists():
        return None
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def _misquoted(text: str, cell: str) -> str | None:
    """The cell rounded to the decimals of the quote `text` where that is not the quoted
    number (`−` or `-` for minus, `+` allowed); None where it is."""
    decimals = len(text.partition(".")[2])
    rounded = f"{float(cell):.{decimals}f}"
    return None if float(rounded) == float(text.replace("−", "-")) else rounded


def compared(results: str, root: Path = ROOT) -> tuple[list[str], dict[str, int]]:
    """What is wrong with the numbers `results` (docs/results.md) quotes from comparison
    tables, each marked `<a id="NAME" data-compare="TABLE A B TASK ROW COLUMN">28</a>`, and
    how many quotes each table that is not at hand (under `root`) leaves unchecked.

    A quote matches its cell when the cell, rounded to the quote's decimals, is the quoted
    number (`−` or `-` for minus, `+` allowed): 28 for a count, −0.37 for a difference."""
    problems: list[str] = []
    unchecked: dict[str, int] = {}
    tables: dict[str, dict | None] = {}
    form = (
        f"TABLE A B TASK ROW COLUMN (TASK one of {', '.join([*TASKS, DEV])}; COLUMN one of "
        f"{', '.join(COMPARE_COLUMNS)})"
    )
    for name, cell, text in _COMPARED.findall(results):
        where = f"docs/results.md#{name} ({text})"
        fields = cell.split()
        if len(fields) != 6 or fields[3] not in {*TASKS, DEV} or fields[5] not in COMPARE_COLUMNS:
            problems.append(f'{where}: data-compare="{cell}" is not {form}')
            continue
        if not _NUMBER.fullmatch(text):
            problems.append(f"{where}: marks no number; the table's cell is a number")
            continue
        table, a, b, task, unit, column = fields
        if table not in tables:
            found = _rows(root / table)
            keyed = {(r["a"], r["b"], r["task"], r["unit"]): r for r in found or []}
            tables[table] = None if found is None else keyed
        rows = tables[table]
        if rows is None:
            unchecked[table] = unchecked.get(table, 0) + 1
            continue
        row = rows.get((a, b, task, unit))
        if row is None or row[column] == "":
            missing = "no row" if row is None else f"a blank {column} in the row"
            problems.append(f"{where}: {table} has {missing} {a} {b} {task} {unit}")
            continue
        if (rounded := _misquoted(text, row[column])) is not None:
            problems.append(f"{where}: {table} gives {column} {rounded} for {a} {b} {task} {unit}")
    return problems, unchecked


def cells(results: str, root: Path = ROOT) -> tuple[list[str], dict[str, int]]:
    """What is wrong with the numbers `results` quotes from the other tables the workflow
    writes, each marked `<a id="NAME" data-cell="TABLE KEY=VALUE ... COLUMN">86.0</a>` (the
    table's path from the repository root, the values of its columns that pick one row, the
    column quoted), and how many quotes each table not at hand leaves unchecked; a quote
    matches as in `compared`."""
    problems: list[str] = []
    unchecked: dict[str, int] = {}
    tables: dict[str, list | None] = {}
    for name, cell, text in _CELL.findall(results):
        where = f"docs/results.md#{name} ({text})"
        fields = cell.split()
        if len(fields) < 3 or not all("=" in key for key in fields[1:-1]):
            problems.append(f'{where}: data-cell="{cell}" is not TABLE KEY=VALUE ... COLUMN')
            continue
        table, *keys, column = fields
        picks = dict(key.partition("=")[::2] for key in keys)
        if not _NUMBER.fullmatch(text):
            problems.append(f"{where}: marks no number; the table's cell is a number")
            continue
        if table not in tables:
            tables[table] = _rows(root / table)
        rows = tables[table]
        if rows is None:
            unchecked[table] = unchecked.get(table, 0) + 1
            continue
        picked = [r for r in rows if all(r.get(k) == v for k, v in picks.items())]
        if len(picked) != 1 or picked[0].get(column) in (None, ""):
            found = f"{len(picked)} rows" if len(picked) != 1 else f"no {column} in the row"
            problems.append(f"{where}: {table} has {found} where {' '.join(keys)}")
            continue
        if (rounded := _misquoted(text, picked[0][column])) is not None:
            problems.append(f"{where}: {table} gives {column} {rounded} where {' '.join(keys)}")
    return problems, unchecked


def _replace(text: str, name: str, table: str, doc: str) -> str:
    start, end = f"<!-- generated: {name} -->", "<!-- end generated -->"
    head, found, rest = text.partition(start)
    if not found or end not in rest:
        raise SystemExit(f"{doc}: no `{start}` … `{end}` block to fill")
    return f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xlsent.docs", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail where a document is stale")
    args = parser.parse_args(argv)
    stale = []
    for doc, (name, make) in GENERATED.items():
        path = ROOT / doc
        text = path.read_text()
        new = _replace(text, name, make(), doc)
        if new != text:
            stale.append(doc)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"stale: {', '.join(stale)}; run `python -m xlsent.docs`", file=sys.stderr)
    results = (ROOT / "docs" / "results.md").read_text()
    problems = citations((ROOT / "docs" / "methods.md").read_text(), results)
    quoted, unchecked = compared(results, ROOT)
    problems += quoted
    quoted, not_here = cells(results, ROOT)
    problems += quoted
    unchecked.update(not_here)
    for problem in problems:
        print(problem, file=sys.stderr)
    for table, count in unchecked.items():
        print(
            f"not checked: {count} numbers docs/results.md quotes from {table}, which is not "
            "here (results/ is not in the repository; results.md gives the command that makes "
            "it)",
            file=sys.stderr,
        )
    return 1 if problems or (args.check and stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
