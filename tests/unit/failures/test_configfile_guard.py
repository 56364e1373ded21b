"""The config files a directory's results were made with, and the refusal to remove them
under others (`xlsent.failures.configfile_guard`); the workflow's own run of each case is in
tests/workflow/test_recovery_messages.py."""

from __future__ import annotations

import pytest

from xlsent.failures.configfile_guard import check_and_record, names, recorded, refusal

ARGV = ["/venv/bin/snakemake", "results/tables/tatoeba.csv", "--cores", "2"]
REMOVED = ["results/tables/tatoeba.csv", "results/models/tr/seed42", "results/eval/x.parquet"]


def test_config_files_in_the_directory_are_named_relative_to_it(tmp_path, monkeypatch):
    """A directory copied or moved with its config keeps its record."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path.name
    assert names([tmp_path / "mine.yaml", "config.yaml", f"../{run}/b.yaml", "/etc/c.yaml"]) == [
        "mine.yaml",
        "config.yaml",
        "b.yaml",
        "/etc/c.yaml",
    ]


def test_a_run_of_other_config_files_is_refused_with_both_ways_on():
    """The report: a forgotten --configfile ran config.yaml in a directory of mine.yaml."""
    argv = [*ARGV, "--configfile", "other.yaml", "more.yaml", "--keep-going"]
    said = refusal(["mine.yaml"], ["other.yaml", "more.yaml"], REMOVED, argv, environ={})
    assert said == (
        "This run would remove 3 results that it rebuilds, among them 1 trained model "
        "(results/models/tr/seed42), made with other config files: this directory's last run "
        "had mine.yaml, this run has other.yaml, more.yaml. Nothing was removed or run.\n"
        "To go on with those results, give their config files: snakemake "
        "results/tables/tatoeba.csv --cores 2 --keep-going --configfile mine.yaml\n"
        "To rebuild them with this run's config files instead, run the same command with "
        "XLSENT_ALLOW_REMOVAL=1 in front: XLSENT_ALLOW_REMOVAL=1 snakemake "
        "results/tables/tatoeba.csv --cores 2 --configfile other.yaml more.yaml --keep-going"
    )


def test_the_config_files_of_a_command_in_another_directory_are_given_whole(tmp_path, monkeypatch):
    """`--directory`: the user's shell is elsewhere, and sees the config by its full path."""
    monkeypatch.chdir(tmp_path)
    argv = [*ARGV, "--directory", str(tmp_path), "--configfile=other.yaml"]
    said = refusal(["config.yaml"], ["other.yaml"], REMOVED[:1], argv, environ={})
    assert (
        "This run would remove 1 result that it rebuilds, made with other config files: "
    ) in said
    assert (
        "give their config files: snakemake results/tables/tatoeba.csv --cores 2 --directory "
        f"{tmp_path} --configfile {tmp_path / 'config.yaml'}\n"
    ) in said


@pytest.mark.parametrize(
    ("before", "removed", "environ"),
    [
        (["mine.yaml"], REMOVED, {}),  # the config files of the results: a changed setting
        (["other.yaml"], [], {}),  # nothing to remove
        (["other.yaml"], REMOVED, {"XLSENT_ALLOW_REMOVAL": "1"}),  # the way on
        (None, REMOVED[:1], {}),  # no record (an earlier version), and no trained model
    ],
)
def test_a_run_removes_what_it_rebuilds_where_it_may(before, removed, environ):
    assert refusal(before, ["mine.yaml"], removed, ARGV, environ=environ) is None


def test_a_trained_model_is_not_removed_where_the_config_files_are_unknown():
    said = refusal(None, ["config.yaml"], REMOVED, ARGV, environ={})
    assert said == (
        "This run would remove 3 results that it rebuilds, among them 1 trained model "
        "(results/models/tr/seed42), and this directory has no record of the config files "
        "they were made with (an xlsent before this check made them); this run's are "
        "config.yaml. Nothing was removed or run.\n"
        "If those made them, run the same command with XLSENT_ALLOW_REMOVAL=1 in front: "
        "XLSENT_ALLOW_REMOVAL=1 snakemake results/tables/tatoeba.csv --cores 2\n"
        "If others did, give those instead (--configfile FILE ...)."
    )


def test_a_run_records_its_config_files_unless_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("XLSENT_ALLOW_REMOVAL", raising=False)
    assert recorded(".") is None
    assert check_and_record(".", ["mine.yaml"], REMOVED[:1], ARGV) is None
    assert recorded(".") == ["mine.yaml"]
    assert check_and_record(".", ["config.yaml"], REMOVED, ARGV) is not None
    assert recorded(".") == ["mine.yaml"]
    assert check_and_record(".", ["config.yaml"], [], ARGV) is None  # removes nothing
    assert recorded(".") == ["config.yaml"]
