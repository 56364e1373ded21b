"""BUCC's file layout (`xlsent.evaluate.bucc_files`): the names the rules give the BUCC jobs
(reading a split from those files: test_bucc.py beside this file)."""

from __future__ import annotations

from xlsent.evaluate.bucc_files import file_name, files_directory, split_files


def test_a_split_is_three_files_named_for_its_language_and_split():
    assert file_name("de", "sample", "gold") == "de-en.sample.gold"
    # Neither flat nor unpacked exists: the flat path, which an error would name.
    assert [str(p) for p in split_files("results/data/mining", "kk", "dev")] == [
        "results/data/mining/kk-en.dev.kk",
        "results/data/mining/kk-en.dev.en",
        "results/data/mining/kk-en.dev.gold",
    ]


def test_the_rules_pass_the_directory_above_the_folders_the_tarballs_unpack_to():
    """`--dir` of the BUCC jobs from their files: flat (the mining set), or in `{xx}-en/`."""
    assert files_directory(["results/data/mining/de-en.dev.de"]) == "results/data/mining"
    unpacked = [str(p) for p in split_files("results/data/bucc2018", "de", "sample")]
    assert files_directory(unpacked) == "results/data/bucc2018"
    assert files_directory(["/data/bucc/de-en/de-en.sample.gold"]) == "/data/bucc"
