"""The parts of docs/ that the code would otherwise drift from, generated from their sources.

Two tables are generated: each rule's threads, GPUs, memory, runtime and group, read from the
rules' own declarations in ``workflow/rules/*.smk``, and every configuration key with its
default and description, read from ``workflow/schemas/config.schema.yaml``. Each sits in its
document between ``<!-- generated: NAME -->`` and ``<!-- end generated -->``; ``python -m
xlsent.docs`` rewrites them and ``--check`` fails (naming the document) where one is stale,
which ``tests/unit/test_docs.py`` runs.

One thing is checked, not generated: the numbers docs/methods.md quotes from docs/results.md
(`citations`). A quoted number is a link to where results.md states it, ``[0.2 to
0.3](results.md#NAME)``, and results.md marks it there, ``<a id="NAME">0.2 to 0.3</a>``; both
commands fail, naming the two, where the texts differ.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "workflow" / "rules"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"

_RULE = re.compile(r"^\s*(?:rule|checkpoint) (\w+):$")
_SECTION = re.compile(r"^    (\w+):\s*(.*)$")
_ATTEMPT = re.compile(r"^lambda w(?:ildcards)?, attempt: (.+?) \* attempt$")
# A number methods.md quotes from results.md, and where results.md states it.
_CITATION = re.compile(r"\[([−+-]?\d[^\]]*)\]\(results\.md#([\w-]+)\)")
_STATED = re.compile(r'<a id="([\w-]+)">([^<]*)</a>')


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


def config_reference(schema: Path = SCHEMA) -> str:
    """A Markdown table of every configuration key: its default and its description."""
    rows = ["| key | default | meaning |", "| --- | --- | --- |"]
    for path, spec in _keys(yaml.safe_load(schema.read_text())):
        default = json.dumps(spec.get("default"), ensure_ascii=False)
        if len(default) > 60:
            default = "(see the schema)"
        rows.append(f"| `{path}` | `{_cell(default)}` | {_cell(spec.get('description', ''))} |")
    return "\n".join(rows)


GENERATED: dict[str, tuple[str, Callable[[], str]]] = {
    "docs/cluster.md": ("rules", rule_table),
    "docs/configuration.md": ("config", config_reference),
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
    problems = citations(
        (ROOT / "docs" / "methods.md").read_text(), (ROOT / "docs" / "results.md").read_text()
    )
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems or (args.check and stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
