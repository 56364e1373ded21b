"""Bi-Sent2vec: trainer speed against fastText CBOW, and quality on real data (BLI, Tatoeba).

Speed, on the l10n de-en pairs (../shared/data/l10n, spaCy word tokens; `--smoke`: the
embedded demo's, their held-out part as the Tatoeba set), with the same tokens, vocabulary
threshold, dim, epochs, lr, neg, t and threads for both trainers:
- words/s/thread of our trainer and of fastText CBOW (the fasttext-wheel package, window 5,
  no character n-grams), 1 and 2 threads. "wall" counts the whole training call (reading,
  vocabulary, training; ours also saving); "loop" is our trainer's own count of its
  training loop. Words are in-vocabulary tokens x epochs;
- the per-update ratio: Bi-Sent2vec makes two updates per target word kept by subsampling
  (monolingual + cross-lingual, each over a whole sentence), CBOW one (over a window):
  updates/s/thread, ours counted, CBOW's expected from its vocabulary counts;
- peak RSS of each training process (fastText's is a Python process) and the scaling of
  total words/s from 1 thread to each of `--speed-threads` (default 1 2), of the whole
  call ("wall", which has serial parts: reading the vocabulary, writing the vectors) and of
  our training loop alone ("loop"). Each speed setting runs `--repeats` times; the fastest
  counts (other load on the machine only ever slows a run down), and the slowest is shown
  beside it: on a virtual machine whose cores at times share no cache, the threads' writes
  to the same rows make some runs several times slower (docs/results.md);
- the machine's ceiling for that scaling: N single-thread trainings of ours at once, as N
  processes that share nothing (`independent`: their mean loop words/s over one alone).
  Threads that scale below it lose time to what they share; ones at it, to nothing;
- words per CPU-second (user + system time of all threads: ours of the training loop,
  CBOW's of the whole `train_unsupervised` call), which other processes competing for the
  cores do not dilute as they do wall-clock speed.
Quality, one en-xx model per language (--langs) trained on its l10n pairs, unigrams
("uni") and, for de, unigrams + bigrams ("uni+bi"), beside the CBOW baseline:
- BLI en->de and de->en, P@1 (and @5, @10) by nearest neighbour and by CSLS, with the FreeDict
  English-German dictionary (Debian's dict-freedict-eng-deu; reversed for de->en);
- Tatoeba accuracy (the real LASER files in ../shared/data/tatoeba/v1): plain average and
  tf-idf weighted average (idf counted on the language's l10n training sentences).
Quality runs use `--preset small-data` by default (lr 0.2 as in the Bi-Sent2vec README, 20
epochs: the l10n corpus has 50K pairs, the paper's runs millions); `--preset reference` uses
the reference trainer's defaults (lr 0.05, 5 epochs) as the speed runs always do. The CBOW
baseline of the quality runs keeps fastText's own lr (`--cbow-lr`, 0.05): CBOW does not
divide the input gradient by the context size as Bi-Sent2vec does, so the same number is a
step several times larger for it, and at 0.2 it diverges (BLI P@1 falls to about 4 %).

    .venv/bin/python benchmarks/bisent2vec.py [--pairs 50000] [--langs de kk te]
    .venv/bin/python benchmarks/bisent2vec.py --langs --binary OTHER/bisent2vec  # speed of
        # another build (e.g. an older commit's) beside fastText, with the same command

Prints tables and writes bisent2vec.json: `speed` (per thread count: words/s/thread of
both trainers, wall and loop seconds, peak RSS, scaling), `bli` and `tatoeba` (per model).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import subprocess
import sys
import tempfile
from itertools import islice
from pathlib import Path

import harness
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from xlsent import dictionaries
from xlsent.bisent2vec.build import build
from xlsent.bisent2vec.data import write_pairs
from xlsent.bisent2vec.model import SentenceModel
from xlsent.bisent2vec.trainer import STATS_FILE, Bisent2vecSettings, run_logged, train
from xlsent.evaluate import bli, tatoeba
from xlsent.io import read_json
from xlsent.tables.write import markdown
from xlsent.tokenize import WORDS_SCHEMA, word_tokenizer

FREEDICT = Path("/usr/share/dictd/freedict-eng-deu.dict.dz")
DEMO_HELDOUT = 0.2  # the demo config's share of held-out pairs (`--smoke`'s Tatoeba set)
PRESETS = {
    "reference": {},
    "small-data": {"lr": 0.2, "epoch": 20},
}


def l10n_texts(lang: str, n: int) -> list[tuple[str, str]]:
    """The first n (English, foreign) l10n pairs of a language."""
    pair = "-".join(sorted(("en", lang)))
    with (
        gzip.open(harness.SHARED / f"l10n/l10n.{pair}.en.gz", "rt") as en,
        gzip.open(harness.SHARED / f"l10n/l10n.{pair}.{lang}.gz", "rt") as xx,
    ):
        return [(a.rstrip("\n"), b.rstrip("\n")) for a, b in islice(zip(en, xx, strict=True), n)]


def demo_texts(lang: str, n: int) -> list[tuple[str, str]]:
    """The first n (English, foreign) pairs of the embedded demo's training part."""
    from xlsent.corpus.readers import demo

    pairs = demo.demo_pairs(lang)
    return [(en, xx) for _, en, xx in pairs if not demo.is_heldout(en, DEMO_HELDOUT)][:n]


def words_file(texts: list[tuple[str, str]], lang: str, out: Path) -> Path:
    """(English, foreign) pairs, word-tokenized into a words Parquet file."""
    en_words = list(word_tokenizer("en")([a for a, _ in texts]))
    xx_words = list(word_tokenizer(lang)([b for _, b in texts]))
    path = out / f"{lang}.words.parquet"
    table = {"id": list(range(len(texts))), "en_words": en_words, "xx_words": xx_words}
    pq.write_table(pa.table(table, schema=WORDS_SCHEMA), path)
    return path


def cbow_in_process(words: Path, out: Path, lang: str, settings, threads: int) -> dict:
    """fastText CBOW in its own process (so its peak memory is its own), via the CLI."""
    cmd = [
        *(sys.executable, "-m", "xlsent.cli", "bisent2vec-train", "--method", "fasttext-cbow"),
        *("--lang", lang, "--words", str(words), "--out", str(out)),
        *("--settings", json.dumps(dataclasses.asdict(settings)), "--threads", str(threads)),
    ]
    run_logged(cmd, "fasttext")
    return read_json(out / STATS_FILE)


def independent(binary: Path, pairs: Path, work: Path, settings, n: int) -> float:
    """Mean loop words/s of n single-thread trainings run at once as separate processes."""
    procs = []
    for i in range(n):
        out = work / f"independent-{n}-{i}"
        out.mkdir(exist_ok=True)
        cmd = [
            *(str(binary), "train", "-input", str(pairs), "-output", str(out / "model")),
            *("-lang1", "en", "-lang2", "de", "-thread", "1", "-verbose", "0"),
            *settings.flags(),
        ]
        procs.append((subprocess.Popen(cmd), out))
    speeds = []
    for proc, out in procs:
        if proc.wait() != 0:
            raise RuntimeError(f"{binary} failed (exit {proc.returncode}) in {out}")
        speeds.append(read_json(out / "model.json")["words_per_sec_per_thread"])
    return sum(speeds) / n


def speed(
    binary: Path,
    words: Path,
    pairs: Path,
    work: Path,
    settings,
    repeats: int,
    thread_counts: list[int],
) -> list[dict]:
    """Both trainers at each thread count; of `repeats` runs each, the fastest counts, and the
    slowest is reported beside it."""
    rows = []
    for threads in thread_counts:
        ours_runs = sorted(
            (
                train(binary, pairs, work / f"speed-b2v-{threads}", "de", settings, threads=threads)
                for _ in range(repeats)
            ),
            key=lambda stats: stats["wall_seconds"],
        )
        ours = ours_runs[0]
        ours_updates = ours["updates"]["mono"] + ours["updates"]["cross"]
        words_total = ours["tokens_per_epoch"] * settings.epoch
        cbow_runs = sorted(
            (
                cbow_in_process(words, work / f"speed-cbow-{threads}", "de", settings, threads)
                for _ in range(repeats)
            ),
            key=lambda stats: stats["seconds"],
        )
        cbow = cbow_runs[0]
        cbow_words = cbow["tokens_per_epoch"] * settings.epoch
        rows.append(
            {
                "threads": threads,
                "b2v_words_s_thread_wall": words_total / ours["wall_seconds"] / threads,
                "b2v_words_s_thread_loop": ours["words_per_sec_per_thread"],
                "cbow_words_s_thread_wall": cbow_words / cbow["seconds"] / threads,
                "b2v_words_per_cpu_s": words_total / ours["cpu_seconds"],
                "cbow_words_per_cpu_s": cbow_words / cbow["cpu_seconds"],
                "b2v_updates_s_thread": ours_updates / ours["wall_seconds"] / threads,
                "cbow_updates_s_thread": cbow["updates_estimated"] / cbow["seconds"] / threads,
                "b2v_updates_per_word": ours_updates / words_total,
                "cbow_updates_per_word": cbow["updates_estimated"] / cbow_words,
                "b2v_peak_rss_mb": ours["peak_rss_mb"],
                "cbow_peak_rss_mb": cbow["peak_rss_mb"],
                "b2v_wall_s": ours["wall_seconds"],
                "b2v_loop_s": ours["seconds"],
                "cbow_train_s": cbow["seconds"],
                "b2v_wall_s_slowest": ours_runs[-1]["wall_seconds"],
                "cbow_train_s_slowest": cbow_runs[-1]["seconds"],
            }
        )
        if threads > 1:
            rows[-1]["b2v_independent_words_s"] = max(
                independent(binary, pairs, work, settings, threads) for _ in range(repeats)
            )
    one = rows[0]
    for row in rows:
        row["words_ratio"] = row["b2v_words_s_thread_wall"] / row["cbow_words_s_thread_wall"]
        row["per_update_ratio"] = row["b2v_updates_s_thread"] / row["cbow_updates_s_thread"]
        row["cpu_words_ratio"] = row["b2v_words_per_cpu_s"] / row["cbow_words_per_cpu_s"]
        # Total words/s at n threads over total words/s at one: n x the per-thread ratio.
        n = row["threads"] / one["threads"]
        for name, key in (
            ("b2v_wall", "b2v_words_s_thread_wall"),
            ("b2v_loop", "b2v_words_s_thread_loop"),
            ("cbow", "cbow_words_s_thread_wall"),
        ):
            row[f"{name}_scaling"] = n * row[key] / one[key]
        if "b2v_independent_words_s" in row:
            row["independent_scaling"] = (
                row["threads"] * row["b2v_independent_words_s"] / one["b2v_words_s_thread_loop"]
            )
    return rows


def quality(
    binary: Path,
    lang: str,
    words: Path,
    pairs: Path,
    work: Path,
    settings: Bisent2vecSettings,
    cbow_settings: Bisent2vecSettings,
    threads: int,
    tatoeba_dir: Path,
) -> tuple[list[dict], list[dict]]:
    models = {}
    variants = {"uni": settings}
    if lang == "de":
        variants["uni+bi"] = dataclasses.replace(settings, word_ngrams=2, bucket=2_000_000)
    for name, variant in variants.items():
        train(binary, pairs, work / f"{lang}-{name}", lang, variant, threads=threads)
        models[f"bisent2vec {name}"] = SentenceModel.load(work / f"{lang}-{name}")
    cbow_in_process(words, work / f"{lang}-cbow", lang, cbow_settings, threads)
    models["fasttext cbow"] = SentenceModel.load(work / f"{lang}-cbow")

    table = pq.read_table(words, columns=["en_words", "xx_words"])
    held = {"en": table.column("en_words").to_pylist(), lang: table.column("xx_words").to_pylist()}
    tatoeba_rows, bli_rows = [], []
    en_de = dictionaries.freedict_pairs(FREEDICT) if lang == "de" and FREEDICT.is_file() else []
    for name, model in models.items():
        idf = {code: model.idf(sentences, code) for code, sentences in held.items()}
        for weighting, weights in (("mean", None), ("tf-idf", idf)):
            rows = tatoeba.evaluate(model.text_encoder(weights), tatoeba_dir, [lang])
            accuracy = {r["direction"]: r["value"] for r in rows}
            tatoeba_rows.append({"lang": lang, "model": name, "average": weighting, **accuracy})
        if en_de:
            for direction, (src, tgt), dictionary in (
                ("en2de", ("en", "de"), en_de),
                ("de2en", ("de", "en"), [(t, s) for s, t in en_de]),
            ):
                sw, sv = model.word_vectors(src)
                tw, tv = model.word_vectors(tgt)
                result = bli.evaluate(sw, sv, tw, tv, dictionary)
                row = {"direction": direction, "model": name, "queries": result[0]["n"]}
                row.update({f"{r['method']} {r['metric']}": r["value"] for r in result})
                bli_rows.append(row)
    return tatoeba_rows, bli_rows


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--langs", nargs="*", default=["de", "kk", "te"], help="none: speed only")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2, help="for the quality runs")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small-data")
    parser.add_argument("--cbow-lr", type=float, default=0.05, help="the quality runs' CBOW lr")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--repeats", type=int, default=2, help="speed runs per setting")
    parser.add_argument(
        "--speed-threads", type=int, nargs="+", default=[1, 2], help="thread counts timed"
    )
    parser.add_argument("--seed", type=int, default=0, help="the quality runs' trainer seed")
    parser.add_argument(
        "--lr-update-rate",
        type=int,
        help="the speed runs' tokens between updates of the shared word counter (default: the "
        "reference's 100); 1 makes every thread update it 100 times as often, the traffic of "
        "100 times the threads: a contention experiment",
    )
    parser.add_argument(
        "--binary", type=Path, help="time this trainer binary (default: build the checkout's)"
    )
    smoke = {"pairs": 1000, "langs": ["de"], "dim": 10, "repeats": 1}
    args = harness.parse(parser, smoke)

    binary = args.binary or build(harness.ROOT / "build" / "bisent2vec")
    reference = Bisent2vecSettings(dim=args.dim)
    if args.lr_update_rate:
        reference = dataclasses.replace(reference, lr_update_rate=args.lr_update_rate)
    tuned = dataclasses.replace(reference, seed=args.seed, **PRESETS[args.preset])
    results: dict = {
        "pairs": args.pairs,
        "binary": str(binary),
        "reference": dataclasses.asdict(reference),
    }
    cbow = dataclasses.replace(tuned, lr=args.cbow_lr)
    results["quality_settings"] = dataclasses.asdict(tuned)
    results["quality_cbow_settings"] = dataclasses.asdict(cbow)
    tatoeba_rows, bli_rows = [], []
    with tempfile.TemporaryDirectory(prefix="xlsent-bench-b2v-") as tmp:
        work = Path(tmp)
        tatoeba_dir = harness.SHARED / "tatoeba/v1"
        if args.smoke:
            from xlsent.corpus.readers import demo

            tatoeba_dir = work / "tatoeba"
            demo.write_heldout(args.langs, tatoeba_dir, DEMO_HELDOUT)
        texts = demo_texts if args.smoke else l10n_texts
        for lang in dict.fromkeys(["de", *args.langs]):
            words = words_file(texts(lang, args.pairs), lang, work)
            pairs = work / f"{lang}.pairs.txt"
            write_pairs([words], pairs)
            if lang == "de" and not args.skip_speed:
                results["speed"] = speed(
                    binary, words, pairs, work, reference, args.repeats, args.speed_threads
                )
            if lang in args.langs:
                t_rows, b_rows = quality(
                    binary, lang, words, pairs, work, tuned, cbow, args.threads, tatoeba_dir
                )
                tatoeba_rows += t_rows
                bli_rows += b_rows
    results["tatoeba"], results["bli"] = tatoeba_rows, bli_rows

    if "speed" in results:
        print(markdown(pl.DataFrame(results["speed"]), digits=2, caption="Speed (de-en)"))
    if bli_rows:
        print(markdown(pl.DataFrame(bli_rows), caption="BLI with FreeDict (%)"))
    if tatoeba_rows:
        print(markdown(pl.DataFrame(tatoeba_rows), caption="Tatoeba accuracy (%)"))
    harness.write_json(args.out_dir, __file__, results)


if __name__ == "__main__":
    main()
