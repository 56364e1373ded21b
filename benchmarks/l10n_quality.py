"""Real-data quality: encoders trained on CPU on the l10n corpus, on real Tatoeba.

Runs the workflow with `resources/l10n/config.yaml` (all 36 languages of
../shared/data/l10n, a small XLM-R-shaped encoder pretrained with MLM on the monolingual
sides, a fixed number of steps: the CPU budget; `tr` and `wacse` fine-tuned from it, the
latter on eflomal links; dual-pivot heads over the frozen MLM encoder trained on de-en only;
Bi-Sent2vec word vectors on the same pairs) in `benchmarks/out/l10n/`, then sets their
Tatoeba accuracy per language group beside the untrained floor: character 1-4-gram tf-idf
retrieval (`char_wb` n-grams, inside word boundaries, fitted per language on the test
sentences of both sides, cosine similarity, both directions).

`--scratch` adds, for each run that fine-tunes another run's model (`init_from`), the same
run from scratch with as many optimizer steps as the two together (`{run}-scratch`), so that
"pretrain, then fine-tune" and "fine-tune only" are compared at about the same CPU budget
(an MLM step costs about a TR step: both encode 2 × batch sentences); the measured CPU
minutes of each are printed beside them.

    .venv/bin/python benchmarks/l10n_quality.py [--cores 2] [--max-steps N] [--runs tr wacse]
        [--scratch]

Prints tables and writes benchmarks/out/l10n_quality.json (git-ignored).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import yaml
from sklearn.feature_extraction.text import TfidfVectorizer

from xlsent import languages, tables
from xlsent.config import DUALPIVOT_METHODS, WORD_VECTOR_METHODS
from xlsent.evaluate.tatoeba import read_pairs

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "out"
SHARED = ROOT.parent / "shared" / "data"


def tfidf_floor(directory: Path, langs: list[str]) -> pl.DataFrame:
    """Tatoeba accuracy (%) of character 1-4-gram tf-idf retrieval, as evaluation rows."""
    rows = []
    for lang in langs:
        xx, en = read_pairs(directory, lang)
        vectors = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4)).fit(xx + en)
        sim = (vectors.transform(xx) @ vectors.transform(en).T).toarray()  # rows L2-normalised
        gold = np.arange(len(xx))
        acc = {
            "xx2en": 100 * float(np.mean(sim.argmax(axis=1) == gold)),
            "en2xx": 100 * float(np.mean(sim.argmax(axis=0) == gold)),
        }
        acc["mean"] = (acc["xx2en"] + acc["en2xx"]) / 2
        rows += [
            {
                "task": "tatoeba",
                "run": "tfidf-floor",
                "seed": 0,
                "lang": lang,
                "direction": d,
                "metric": "accuracy",
                "value": v,
                "n": len(xx),
            }
            for d, v in acc.items()
        ]
    return pl.DataFrame(rows)


def _benchmark(path: Path) -> dict[str, float]:
    with open(path) as f:
        cost = next(csv.DictReader(f, delimiter="\t"))
    return {"train_wall_s": float(cost["s"]), "train_cpu_s": float(cost["cpu_time"])}


def training_cost(workdir: Path, run: str, config: dict, langs: list[str]) -> dict:
    """What training `run` (seed 42) cost: an encoder's one job, with its best dev step (and,
    for a run that starts from another's model, the two together), a dual-pivot head's job
    with its pivot's dev P@1, or the sum of a word-vector run's jobs (one per language)."""
    spec = config["runs"][run]
    if spec["method"] in WORD_VECTOR_METHODS:
        costs = [
            _benchmark(workdir / f"results/benchmarks/bisent2vec_train/{run}/seed42/{lang}.tsv")
            for lang in langs
        ]
        return {key: sum(cost[key] for cost in costs) for key in costs[0]}
    best = json.loads((workdir / f"results/models/{run}/seed42/best.json").read_text())
    if spec["method"] in DUALPIVOT_METHODS:
        return {
            **_benchmark(workdir / f"results/benchmarks/train_dualpivot/{run}/seed42.tsv"),
            "pivot_dev_p1": best["dev_p1"],
        }
    cost = {
        **_benchmark(workdir / f"results/benchmarks/train/{run}/seed42.tsv"),
        "train_steps": {**config["train"], **spec.get("train", {})}["max_steps"],
        "best_dev_step": best["step"],
        "best_dev_p1": best["dev_p1"],
    }
    if spec.get("init_from"):
        source = training_cost(workdir, spec["init_from"], config, langs)
        cost["with_init_cpu_s"] = cost["train_cpu_s"] + source["train_cpu_s"]
    return cost


def add_scratch_runs(config: dict) -> None:
    """`{run}-scratch` for each run that starts from another's model: the same run without
    `init_from`, with the optimizer steps of the two together."""
    steps = {
        run: {**config["train"], **spec.get("train", {})}["max_steps"]
        for run, spec in config["runs"].items()
        if "model" in spec and spec["method"] not in DUALPIVOT_METHODS
    }
    for run, spec in list(config["runs"].items()):
        source = spec.get("init_from")
        if not source or spec["method"] in DUALPIVOT_METHODS:
            continue
        scratch = {k: v for k, v in spec.items() if k != "init_from"}
        scratch["train"] = {**spec.get("train", {}), "max_steps": steps[run] + steps[source]}
        config["runs"][f"{run}-scratch"] = scratch


def run_workflow(workdir: Path, config: dict, cores: int) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "results/tables/tatoeba.csv",
            "--snakefile",
            str(ROOT / "Snakefile"),
            "--directory",
            str(workdir),
            "--cores",
            str(cores),
            "--configfile",
            str(configfile),
            # An interrupted benchmark resumes: training restarts from its last checkpoint.
            "--rerun-incomplete",
        ],
        check=True,
        env=env,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--max-steps", type=int, help="override train.max_steps (the budget)")
    parser.add_argument("--runs", nargs="+", help="runs of the config to train (default: all)")
    parser.add_argument(
        "--scratch", action="store_true", help="add each fine-tuned run from scratch, same steps"
    )
    args = parser.parse_args()

    config = yaml.safe_load((ROOT / "resources/l10n/config.yaml").read_text())
    config["corpus"]["local"]["dir"] = str(SHARED / "l10n")
    config["evaluate"]["tatoeba"]["dir"] = str(SHARED / "tatoeba" / "v1")
    if args.max_steps:
        config["train"]["max_steps"] = args.max_steps
    if args.runs:
        needed = {config["runs"][run].get("init_from") for run in args.runs} - {None}
        config["runs"] = {
            run: spec for run, spec in config["runs"].items() if run in {*args.runs, *needed}
        }
    if args.scratch:
        add_scratch_runs(config)
    workdir = OUT / "l10n"
    run_workflow(workdir, config, args.cores)

    langs = languages.resolve(config["languages"])
    groups = config["tables"]["groups"]
    runs = list(config["runs"])
    ours = [pl.read_parquet(workdir / f"results/eval/tatoeba/{run}/seed42.parquet") for run in runs]
    summary, per_language = tables.tatoeba_tables(
        [tfidf_floor(SHARED / "tatoeba" / "v1", langs), *ours], groups
    )
    training = {run: training_cost(workdir, run, config, langs) for run in runs}
    result = {
        "training": training,
        "summary": summary.to_dicts(),
        "per_language": per_language.to_dicts(),
    }
    transfer_csv = workdir / "results/tables/transfer.csv"
    if transfer_csv.exists():
        result["transfer"] = pl.read_csv(transfer_csv).to_dicts()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "l10n_quality.json").write_text(json.dumps(result, indent=2) + "\n")
    print(tables.markdown(summary.select("run", *groups, *(f"{g}_xx2en" for g in groups))))
    print(tables.markdown(per_language))
    if "transfer" in result:
        print(transfer_csv.with_suffix(".md").read_text())
    for run, cost in training.items():
        wall, cpu = cost["train_wall_s"] / 60, cost["train_cpu_s"] / 60
        line = f"{run}: {wall:.1f} min ({cpu:.1f} CPU min)"
        if "train_steps" in cost:
            line += (
                f", {cost['train_steps']} steps; best dev P@1 {cost['best_dev_p1']} at step "
                f"{cost['best_dev_step']}"
            )
        if "with_init_cpu_s" in cost:
            line += f"; {cost['with_init_cpu_s'] / 60:.1f} CPU min with its pretraining"
        if "pivot_dev_p1" in cost:
            line += f"; pivot dev P@1 {cost['pivot_dev_p1']}"
        print(line)


if __name__ == "__main__":
    main()
