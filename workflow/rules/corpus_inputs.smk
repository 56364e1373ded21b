# Names and input functions of the corpus stage (corpus.smk, which holds only its rules).
from xlsent.config import clean_settings
from xlsent.corpus import sources
from xlsent.corpus.readers import demo

# The configured source (xlsent.corpus.sources) declares a language's raw files, the flags
# of `xlsent clean` that read them, and what else decides its raw pairs. What it downloads
# is under its layout.DOWNLOADS (the outputs of opus_download).
SOURCE = sources.SOURCES[CORPUS["source"]]
SOURCE_DOWNLOADS = layout.DOWNLOADS.format(source=SOURCE.name)


def corpus_inputs(wildcards):
    """The raw files of a language (named), so that a changed file re-runs its cleaning;
    with corpus.clean.style dap also, as `tokenizer`, the fetched directory of the model
    whose tokenizer counts DAP's tokens."""
    raw = SOURCE.inputs(
        config, wildcards.lang, shipped=shipped, downloads=SOURCE_DOWNLOADS
    )
    if CORPUS["clean"]["style"] == "dap":
        model = CORPUS["clean"]["tokenizer"]
        return {**raw, "tokenizer": layout.PRETRAINED.format(model=model)}
    return raw


def source_args(wildcards, input):
    """The source's flags of `xlsent clean`. A param that reads `input`, which Snakemake
    does not compare for staleness; the inputs and `source_identity` are compared."""
    raw = {name: path for name, path in input.items() if name != "tokenizer"}
    return shlex.join(SOURCE.clean_args(config, raw, shipped=shipped))


def clean_tokenizer_args(wildcards, input):
    """With corpus.clean.style dap, `xlsent clean --tokenizer-dir`: the fetched model
    directory whose tokenizer counts the tokens (the rest: clean_settings)."""
    if CORPUS["clean"]["style"] == "dap":
        return shlex.join(["--tokenizer-dir", input.tokenizer])
    return ""


def source_identity(wildcards):
    """What, besides input files, decides a language's raw pairs."""
    return SOURCE.identity(config)


def train_pairs(lang):
    """A language's training pairs, once its sample exists (the `sample` checkpoint): how
    many shards the align and hard-negative stages cut them into."""
    stats = checkpoints.sample.get(lang=lang).output.stats
    return json.loads(Path(stats).read_text())["train"]
