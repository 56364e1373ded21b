"""The documentation agrees with the code: generated tables are current, every rule is in the
resource table, and every relative link and anchor of README.md and docs/ resolves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from support import ROOT, snakemake_command, snakemake_env

from xlsent import docs
from xlsent.tables.compare import compare_table, write_compare_table

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors (lowercase, punctuation dropped, spaces to hyphens) and the
    `<a id="...">` that mark a number methods.md quotes (`xlsent.docs.citations`), some of them
    with the comparison table's cell that gives it (`xlsent.docs.compared`)."""
    anchors = set(re.findall(r'<a id="([\w-]+)"[ >]', path.read_text()))
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
    (tmp_path / "docs" / "development.md").write_text(
        f"<!-- generated: methods -->\n{docs.method_table()}\n<!-- end generated -->\n"
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


def _compare_table(root: Path) -> None:
    """results/tables/compare.csv under `root` of a worked example: A and B, one seed each,
    on kk and te. A − B: kk 70 − 70.5 = −0.5 (below), te 80 − 80.04 = −0.04 (level); `all`
    −0.27 (the mean of the two), one below and one level."""
    rows = [
        ("tatoeba", run, 0, lang, "mean", "accuracy", value, 1000)
        for run, scores in (("A", {"kk": 70.0, "te": 80.0}), ("B", {"kk": 70.5, "te": 80.04}))
        for lang, value in scores.items()
    ]
    columns = ["task", "run", "seed", "lang", "direction", "metric", "value", "n"]
    results = pl.DataFrame(rows, schema=columns, orient="row")
    (root / "results" / "tables").mkdir(parents=True)
    table = compare_table([results], [("A", "B")], {})
    write_compare_table(table, root / "results" / "tables" / "compare.csv")


def test_a_number_quoted_from_a_comparison_table_is_its_cell(tmp_path):
    _compare_table(tmp_path)
    cell = 'data-compare="results/tables/compare.csv A B tatoeba'
    right = (
        f'A is below B on <a id="n" {cell} all below">1</a> of 2 (mean '
        f'<a id="m" {cell} all diff">−0.27</a>; kk <a id="k" {cell} kk diff">-0.5</a>).'
    )
    assert docs.compared(right, tmp_path) == ([], {})
    wrong = (
        f'<a id="n" {cell} all below">2</a>, mean <a id="m" {cell} all diff">−0.3</a> and '
        f'<a id="d" {cell} all diff">−0.2</a>; <a id="x" {cell} de diff">1</a>'
        f'<a id="y" {cell} all median">1</a>, <a id="z" {cell} all diff">a third</a>'
    )
    form = "TABLE A B TASK ROW COLUMN (TASK one of tatoeba, bucc, dev; COLUMN one of a_mean"
    problems, _ = docs.compared(wrong, tmp_path)
    assert problems[:3] == [
        "docs/results.md#n (2): results/tables/compare.csv gives below 1 for A B tatoeba all",
        # −0.27 at one decimal is −0.3: the quote's decimals decide.
        "docs/results.md#d (−0.2): results/tables/compare.csv gives diff -0.3 for A B tatoeba all",
        "docs/results.md#x (1): results/tables/compare.csv has no row A B tatoeba de",
    ]
    assert problems[3].startswith(f'docs/results.md#y (1): data-compare="{cell[14:]} all median"')
    assert form in problems[3]
    assert problems[4:] == [
        "docs/results.md#z (a third): marks no number; the table's cell is a number"
    ]
    # A table made elsewhere (results/ is not in the repository): counted, not checked.
    elsewhere = right.replace("compare.csv", "compare_seed42.csv")
    assert docs.compared(elsewhere, tmp_path) == ([], {"results/tables/compare_seed42.csv": 3})
    # A table at hand with no rows (a comparison of runs that have no results yet).
    (tmp_path / "results" / "tables" / "compare_seed42.csv").write_text("a,b,task,unit\n")
    problems, unchecked = docs.compared(elsewhere, tmp_path)
    assert unchecked == {}
    assert problems[0] == (
        "docs/results.md#n (1): results/tables/compare_seed42.csv has no row A B tatoeba all"
    )


def test_a_number_quoted_from_another_table_is_its_row_and_column(tmp_path):
    """`data-cell`: the table, the values that pick one row, the column; a worked dev table
    of two runs (tr seeds 42 and 0, wacse seed 42), as `xlsent tables-dev` writes it."""
    (tmp_path / "dev.csv").write_text(
        "run,seed,200,chosen\ntr,42,94.64,95.38\ntr,0,93.88,95.47\nwacse,42,93.61,94.56\n"
    )
    cell = 'data-cell="dev.csv'
    right = (
        f'<a id="a" {cell} run=tr seed=0 chosen">95.47</a>, '
        f'<a id="b" {cell} run=wacse 200">93.6</a>'
    )
    assert docs.cells(right, tmp_path) == ([], {})
    wrong = (
        f'<a id="c" {cell} run=tr chosen">95.4</a> <a id="d" {cell} run=tr seed=0 chosen">95.4</a>'
        f' <a id="e" {cell} run=tr seed=0 1200">95</a> <a id="f" {cell} chosen">95</a>'
        f' <a id="g" {cell} run=wacse chosen">ninety</a>'
    )
    assert docs.cells(wrong, tmp_path)[0] == [
        "docs/results.md#c (95.4): dev.csv has 2 rows where run=tr",
        # The quote's decimals decide: 95.47 at one decimal is 95.5.
        "docs/results.md#d (95.4): dev.csv gives chosen 95.5 where run=tr seed=0",
        "docs/results.md#e (95): dev.csv has no 1200 in the row where run=tr seed=0",
        'docs/results.md#f (95): data-cell="dev.csv chosen" is not TABLE KEY=VALUE ... COLUMN',
        "docs/results.md#g (ninety): marks no number; the table's cell is a number",
    ]
    assert docs.cells(right.replace("dev.csv", "gone.csv"), tmp_path) == ([], {"gone.csv": 2})


def test_the_check_fails_on_a_misquoted_cell_and_names_tables_it_cannot_read(
    tmp_path, monkeypatch, capsys
):
    (tmp_path / "docs").mkdir()
    for doc, (name, make) in docs.GENERATED.items():
        (tmp_path / doc).write_text(
            f"<!-- generated: {name} -->\n{make()}\n<!-- end generated -->\n"
        )
    (tmp_path / "docs" / "methods.md").write_text("")
    cell = 'data-compare="results/tables/compare.csv A B tatoeba all below"'
    results = tmp_path / "docs" / "results.md"
    results.write_text(f'below on <a id="n" {cell}>1</a> of 2\n')
    monkeypatch.setattr(docs, "ROOT", tmp_path)
    assert docs.main(["--check"]) == 0
    assert "not checked: 1 numbers docs/results.md quotes from results/tables/compare.csv" in (
        capsys.readouterr().err
    )
    _compare_table(tmp_path)
    assert docs.main(["--check"]) == 0 and capsys.readouterr().err == ""
    results.write_text(f'below on <a id="n" {cell}>2</a> of 2\n')
    assert docs.main(["--check"]) == 1
    assert "gives below 1 for A B tatoeba all" in capsys.readouterr().err


def test_results_marks_its_per_language_counts_with_their_cells():
    """The WACSE section's per-language counts and means name the comparison table's cell
    that gives each (issue 48): all well formed; none checked here, as results/ is not in
    the repository."""
    text = (ROOT / "docs" / "results.md").read_text()
    section = text[text.index("### WACSE given a fair test on me5") :]
    section = section[: section.index("\n### ")]
    marked = re.findall(r'data-compare="([^"]*)"', section)
    assert len(marked) >= 10
    assert docs.compared(section, ROOT / "no-results")[0] == []


TABLES_SH = ROOT / "docs" / "evidence" / "tables.sh"
EVIDENCE = sorted(path.parent for path in (ROOT / "docs" / "evidence").glob("*/results"))


@pytest.mark.parametrize("kept", EVIDENCE, ids=lambda kept: kept.name)
def test_kept_tables_are_what_the_kept_files_give(kept, tmp_path):
    """Each experiment kept in docs/evidence: the script, run on a copy without the kept
    tables, makes every kept table again, byte for byte, and nothing else."""
    copy = shutil.copytree(kept, tmp_path / kept.name)
    shutil.rmtree(copy / "results" / "tables")
    subprocess.run(["bash", str(TABLES_SH), str(copy)], check=True, env=snakemake_env())

    def tables(root: Path) -> dict[str, bytes]:
        found = (root / "results" / "tables").rglob("*")
        return {str(p.relative_to(root)): p.read_bytes() for p in found if p.is_file()}

    assert tables(copy) == tables(kept)


KEEP_SH = ROOT / "docs" / "evidence" / "keep.sh"


def test_keeping_a_run_copies_its_record_at_the_workflows_paths(tmp_path):
    """keep.sh over an experiment's directory (here the kept WACSE experiment itself, whose
    results/ has the workflow's layout) copies one run's files, byte for byte, links the
    checkpoint's training log to the model's, and refuses a run that was not made."""
    source = ROOT / "docs" / "evidence" / "wacse"
    kept = tmp_path / "kept"
    kept.mkdir()
    subprocess.run(["bash", str(KEEP_SH), str(source), str(kept), "tr", "42"], check=True)
    copied = {str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()}
    run_files = {f for f in copied if "/tr/seed42" in f}
    assert run_files == {
        "results/eval/tatoeba/tr/seed42.parquet",
        "results/eval/bucc/tr/seed42.parquet",
        "results/models/tr/seed42/train_log.jsonl",
        "results/models/tr/seed42/best.json",
        "results/models/tr/seed42/run.json",
        "results/checkpoints/tr/seed42/attempts.json",
        "results/checkpoints/tr/seed42/earlier_attempts.json",
        "results/checkpoints/tr/seed42/train_log.jsonl",  # the link, read through
        "results/benchmarks/train/tr/seed42.tsv",
        "results/benchmarks/eval/tatoeba/tr/seed42.tsv",
        "results/benchmarks/eval/bucc/tr/seed42.tsv",
        "results/benchmarks/eval/encode/tr/seed42/tatoeba.tsv",
        "results/benchmarks/eval/encode/tr/seed42/mining.tsv",
    }
    assert len(copied - run_files) == 36  # each language's sample_stats.json
    for name in copied:
        assert (kept / name).read_bytes() == (source / name).read_bytes(), name
    link = kept / "results/checkpoints/tr/seed42/train_log.jsonl"
    assert link.is_symlink() and link.resolve() == (
        kept / "results/models/tr/seed42/train_log.jsonl"
    )

    missing = subprocess.run(
        ["bash", str(KEEP_SH), str(source), str(kept), "tr", "7"], capture_output=True, text=True
    )
    assert missing.returncode == 1
    assert "results/eval/tatoeba/tr/seed7.parquet is missing" in missing.stderr


def test_the_numbers_quoted_from_kept_tables_are_checked():
    """results.md quotes numbers from the kept tables of every kept experiment, and every one
    of them is checked against its cell (none counted as a table not at hand)."""
    results = (ROOT / "docs" / "results.md").read_text()
    (problems, unchecked), (other, not_here) = docs.compared(results), docs.cells(results)
    assert problems == other == []
    assert not [t for t in [*unchecked, *not_here] if t.startswith("docs/evidence/")]
    kept = re.findall(r'data-(?:compare|cell)="(docs/evidence/[^ "]+)', results)
    assert {Path(table).parts[2] for table in kept} == {experiment.name for experiment in EVIDENCE}


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
    # Values as declared: a value computed from the job's inputs and settings says so.
    assert "| `train` | train.smk | (computed) | (computed) | (computed) |" in table


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


def _expand(token: str) -> list[str]:
    """`test_{a,b}.py` as `test_a.py`, `test_b.py`; any other token as it is."""
    brace = re.fullmatch(r"(.*)\{([^}]*)\}(.*)", token)
    if not brace:
        return [token]
    head, items, tail = brace.groups()
    return [f"{head}{item}{tail}" for item in items.split(",")]


def test_the_stage_map_has_a_row_for_every_stage_and_names_what_exists():
    """development.md's "Finding your way": a row for every stage of `xlsent --help` (its
    commands module, `xlsent.cli.STAGES`) and for every rule file (one that holds rules, not
    only input functions); every module, package and test it names exists (a module by its
    path below `src/xlsent/` or a package of it, a test file or directory by its path below
    `tests/unit/`, or below the repository where it starts with `tests/`)."""
    from xlsent.cli import STAGES

    text = (ROOT / "docs" / "development.md").read_text()
    section = text[text.index("## Finding your way") : text.index("## Finding a method's parts")]
    rows = [
        [cell.strip() for cell in line.split("|")[1:-1]]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith(("| stage", "| ---"))
    ]
    commands = " ".join(row[2] for row in rows)
    rule_files = " ".join(row[1] for row in rows)
    missing = [
        f"stage {stage.__name__}"
        for stage in STAGES
        if f"commands/{stage.__name__.rpartition('.')[2]}.py`" not in commands
    ]
    missing += [
        f"rule file {path.name}"
        for path in sorted((ROOT / "workflow" / "rules").glob("*.smk"))
        if re.search(r"^(local)?(rule|checkpoint) \w+:", path.read_text(), re.M)
        and path.name not in rule_files
    ]
    package = ROOT / "src" / "xlsent"
    sources = [path.relative_to(ROOT).as_posix() for path in package.rglob("*")]
    for row in rows:
        for token in re.findall(r"`([^`\s]+\.py|[^`\s]+/)`", row[3]):
            # A path below src/xlsent/ (or csrc/), or one below a package the row names.
            if not (ROOT / token).exists() and not any(
                f"/{source}".endswith(f"/{token.rstrip('/')}") for source in sources
            ):
                missing.append(f"{row[0]}: {token}")
        for token in re.findall(r"`([^`\s]+\.py|[^`\s]+/)`", row[4]):
            missing += [f"{row[0]}: {name}" for name in _expand(token) if not _test_path(name)]
    assert not missing


def _test_path(name: str) -> bool:
    """Whether the test file or directory `name` exists: a path below `tests/unit/`, or below
    the repository where it starts with `tests/`."""
    return (ROOT / name if name.startswith("tests/") else ROOT / "tests" / "unit" / name).exists()


def test_the_method_map_names_what_exists():
    """development.md's "Finding a method's parts": every `module:function` (and the bare
    names after it, of the same module), input function (in common.smk or a stage's own rule
    file; and the rule calling it), core test and test file it names exists."""
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
        _, _, _, _, code, inputs, _, core, tests, _ = row.split("|")
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
            defined = any(_defines(path, name) for path in common.parent.glob("*.smk"))
            if not defined and f"rule {name}:" not in rules:  # or its rule
                missing.append(f"common.smk:{name}")
        for file, test in re.findall(r"`([\w/]+\.py)::(\w+)`", core):
            if not _test_path(file) or not _defines(ROOT / "tests" / "unit" / file, test):
                missing.append(f"{file}::{test}")
        for token in re.findall(r"`([^`\s]+\.py)`", tests):
            missing += [name for name in _expand(token) if not _test_path(name)]
    assert not missing


def test_the_readme_stays_a_page_with_the_newcomer_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 100
    quick = readme.index("make demo")
    assert quick < readme.index("make test") < 1500


def test_the_reporting_keys_of_the_docs_are_the_codes():
    """docs/configuration.md lists the train keys that are no part of a training's identity:
    the list in the code (`REPORTING`), and nothing else."""
    from xlsent.train.settings import REPORTING

    text = (ROOT / "docs" / "configuration.md").read_text()
    line = text[text.index('<a id="reporting-keys">') :].split("They change no number")[0]
    assert re.findall(r"`(\w+)`", line.split(":", 1)[1]) == list(REPORTING)
