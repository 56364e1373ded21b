"""The documentation agrees with the code: generated tables are current, every rule is in the
resource table, and every relative link and anchor of README.md and docs/ resolves."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from support import ROOT, snakemake_command

from xlsent import docs

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors (lowercase, punctuation dropped, spaces to hyphens) and the
    `<a id="...">` that mark a number methods.md quotes (`xlsent.docs.citations`)."""
    anchors = set(re.findall(r'<a id="([\w-]+)">', path.read_text()))
    for line in path.read_text().splitlines():
        if line.startswith("#") and not line.startswith("#!"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def test_generated_tables_are_current(capsys):
    assert docs.main(["--check"]) == 0, capsys.readouterr().err


def test_a_stale_table_is_named(tmp_path, monkeypatch):
    doc = tmp_path / "docs" / "cluster.md"
    doc.parent.mkdir()
    doc.write_text("# x\n\n<!-- generated: rules -->\n| old |\n<!-- end generated -->\ntail\n")
    (tmp_path / "docs" / "methods.md").write_text("[0.3](results.md#gain)\n")
    (tmp_path / "docs" / "results.md").write_text('a gain of <a id="gain">0.3</a>\n')
    (tmp_path / "docs" / "configuration.md").write_text(
        f"<!-- generated: config -->\n{docs.config_reference()}\n<!-- end generated -->\n"
    )
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    assert docs.main(["--check"]) == 1
    assert docs.main([]) == 0
    text = doc.read_text()
    assert "| `train` | train.smk |" in text and "| old |" not in text
    assert text.endswith("<!-- end generated -->\ntail\n")


def test_the_numbers_methods_quotes_are_those_results_states():
    methods = (ROOT / "docs" / "methods.md").read_text()
    results = (ROOT / "docs" / "results.md").read_text()
    quoted = re.findall(r"\]\(results\.md#((?:wacse-negatives|simalign-aer)-\w+)\)", methods)
    assert sorted(quoted) == [
        "simalign-aer-de",
        "simalign-aer-fr",
        "wacse-negatives-dev",
        "wacse-negatives-tatoeba",
    ]
    assert docs.citations(methods, results) == []
    # Issue 38: methods.md had WACSE's per-pass negatives 0.4 below on Tatoeba, results.md 0.3.
    wrong = methods.replace(
        "[0.2 to 0.3](results.md#wacse-negatives-tatoeba)",
        "[0.4](results.md#wacse-negatives-tatoeba)",
    )
    assert docs.citations(wrong, results) == [
        "docs/methods.md quotes 0.4 from results.md#wacse-negatives-tatoeba, where "
        "docs/results.md says 0.2 to 0.3"
    ]
    unmarked = results.replace('<a id="simalign-aer-fr">0.071</a>', "0.071")
    assert docs.citations(methods, unmarked) == [
        "docs/methods.md quotes 0.071 from results.md#simalign-aer-fr, which marks no number "
        'there: write <a id="simalign-aer-fr">0.071</a> where results.md states it'
    ]


def test_a_misquoted_number_fails_the_check(tmp_path, monkeypatch, capsys):
    (tmp_path / "docs").mkdir()
    for doc, (name, make) in docs.GENERATED.items():
        (tmp_path / doc).write_text(
            f"<!-- generated: {name} -->\n{make()}\n<!-- end generated -->\n"
        )
    (tmp_path / "docs" / "methods.md").write_text("TR leads by [0.4](results.md#gain).\n")
    (tmp_path / "docs" / "results.md").write_text('TR leads by <a id="gain">0.3</a>.\n')
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    assert docs.main(["--check"]) == 1
    assert (
        "quotes 0.4 from results.md#gain, where docs/results.md says 0.3" in capsys.readouterr().err
    )


def test_the_rule_table_lists_every_rule_snakemake_knows(tmp_path):
    listed = subprocess.run(
        snakemake_command(tmp_path, "--configfile", str(ROOT / "config.yaml"), "--list-rules"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    table = docs.rule_table()
    documented = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    # `all` is the target list, not a job anyone sizes.
    assert documented == set(listed) - {"all"}
    # Values as declared: the training job's memory grows with the attempt.
    assert "| `train` | train.smk | (computed) | (computed) | 32000 × attempt |" in table


def test_every_key_of_the_schema_is_in_the_reference():
    reference = docs.config_reference()
    for key in ("corpus.per_source_cap", "train.negatives", "train.rtl_weight", "bisent2vec.t"):
        assert f"| `{key}` |" in reference
    assert "| `train.rtl_weight` | `0.8` |" in reference


def test_links_and_anchors_resolve():
    broken = []
    for doc in DOCUMENTS:
        for target in LINK.findall(doc.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            resolved = (doc.parent / path).resolve() if path else doc
            if not resolved.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and anchor not in _anchors(resolved):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def _defines(path: Path, name: str) -> bool:
    """Whether `path` defines every part of the dotted `name` (a function, class, method or
    module-level constant)."""
    text = path.read_text()
    return all(
        re.search(rf"^\s*(def|class) {part}\b|^{part} *[:=]", text, re.M)
        for part in name.split(".")
    )


def test_the_method_map_names_what_exists():
    """development.md's "Finding a method's parts": every `module:function` (and the bare
    names after it, of the same module), input function (and the rule calling it) and core
    test it names exists."""
    text = (ROOT / "docs" / "development.md").read_text()
    section = text[text.index("## Finding a method's parts") : text.index("Which run kind")]
    rows = [
        line
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith(("| method", "| ---"))
    ]
    assert len(rows) == 9
    common = ROOT / "workflow" / "rules" / "common.smk"
    rules = "".join(path.read_text() for path in common.parent.glob("*.smk"))
    missing = []
    for row in rows:
        _, _, _, _, code, inputs, _, core, _, _ = row.split("|")
        for group in code.split(";"):
            module = None
            for token in re.findall(r"`([^`]+)`", group):
                if re.fullmatch(r"[\w/]+\.py:[\w.]+", token):
                    path, name = token.split(":")
                    module = ROOT / "src" / "xlsent" / path
                elif re.fullmatch(r"[A-Za-z_][\w.]*", token) and module is not None:
                    path, name = module.relative_to(ROOT / "src" / "xlsent"), token
                else:
                    continue
                if not module.exists() or not _defines(module, name):
                    missing.append(f"{path}:{name}")
        for name in re.findall(r"`([a-z0-9]+(?:_[a-z0-9]+)+)`", inputs):
            if not _defines(common, name) and f"rule {name}:" not in rules:  # or its rule
                missing.append(f"common.smk:{name}")
        for file, test in re.findall(r"`(\w+\.py)::(\w+)`", core):
            if not _defines(ROOT / "tests" / "unit" / file, test):
                missing.append(f"{file}::{test}")
    assert not missing


def test_the_readme_stays_a_page_with_the_newcomer_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 100
    quick = readme.index("make demo")
    assert quick < readme.index("make test") < 1500
