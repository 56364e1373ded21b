"""Cleaning styles side by side: pairs kept per language by ours and by DAP's filters.

Cleans each language's pairs of a directory of Moses files (default the l10n corpus beside
the checkout, ../shared/data/l10n) three ways: `words` at its default (min_tokens 4), `words`
at min_tokens 2 (the l10n configs' setting) and `dap` (DAP's data/gen_sent_pair.py filters,
min_tokens 4, on the subword tokens of `--tokenizer`, a directory holding a tokenizer.json).
Beside them: the training pairs DAP's split leaves of the dap count (its dev set is
min(N // 10, 10K), its train set at most 1M of the rest), and WACSE Table 1's training pairs
(Miao et al. 2024; DAP's corpus) for the languages it lists. Then DAP's drops per filter.

    .venv/bin/python benchmarks/clean_styles.py --tokenizer DIR [--data DIR] [--langs kk te]

Prints two tables and writes benchmarks/out/clean_styles.json (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# WACSE Table 1: training (and dev) pairs of DAP's corpus; every other language 1M (10K).
WACSE_TRAIN = {"kk": 18_190, "te": 78_105, "ka": 146_905, "jv": 317_252}
STYLES = {
    "words": {"style": "words"},
    "words, min_tokens 2": {"style": "words", "min_tokens": 2},
    "dap": {"style": "dap"},
}


def dap_train_pairs(kept: int) -> int:
    """The training pairs DAP's gen_sent_pair.py leaves of `kept` pairs after its dev set."""
    return min(kept - min(kept // 10, 10_000), 1_000_000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, required=True, help="holds tokenizer.json")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "l10n")
    parser.add_argument("--langs", nargs="+", default=["kk", "te", "ka", "jv", "de", "fr", "zh"])
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "out" / "clean_styles.json"
    )
    args = parser.parse_args()

    from xlsent.corpus.bitext import CorpusError
    from xlsent.corpus.clean import FILTERS, CleanConfig, clean
    from xlsent.corpus.readers import local

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="xlsent-clean-styles-") as tmp:
        for lang in args.langs:
            results[lang] = {}
            for name, settings in STYLES.items():
                cfg = CleanConfig(**settings, tokenizer=args.tokenizer)
                start = time.perf_counter()
                bitexts = local.discover(args.data, lang)
                try:
                    stats = clean(bitexts, lang, Path(tmp) / "c.parquet", cfg)
                except CorpusError:  # nothing left: counted as such
                    read = sum(1 for bitext in bitexts for _ in bitext.lines())
                    stats = {"read": read, "kept": 0, "dropped": {}}
                results[lang][name] = {
                    "read": stats["read"],
                    "kept": stats["kept"],
                    "dropped": stats["dropped"],
                    "seconds": round(time.perf_counter() - start, 1),
                }
                print(f"{lang} {name}: kept {stats['kept']} of {stats['read']}", flush=True)

    print()
    print("| lang | read | words | words, min_tokens 2 | dap | dap train | WACSE train |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for lang, styles in results.items():
        kept = [styles[name]["kept"] for name in STYLES]
        wacse = WACSE_TRAIN.get(lang, 1_000_000)
        cells = [styles["words"]["read"], *kept, dap_train_pairs(styles["dap"]["kept"]), wacse]
        print(f"| {lang} | " + " | ".join(f"{n:,}" for n in cells) + " |")
    print()
    dropped = {lang: styles["dap"]["dropped"] for lang, styles in results.items()}
    names = list(FILTERS["dap"])
    print("| dap: dropped | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for lang, counts in dropped.items():
        print(f"| {lang} | " + " | ".join(f"{counts.get(n, 0):,}" for n in names) + " |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {"data": str(args.data), "tokenizer": str(args.tokenizer), "results": results}
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
