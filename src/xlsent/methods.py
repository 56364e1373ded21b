"""The run methods of the schema's `runs.*.method` by the kind of run they make, and the word
aligners: the one list the rules, the config checks, the commands and the trainer read.

Those that train an encoder (`train` settings, a `model`), those that train a head over a
frozen encoder (dual-pivot: `dualpivot` settings, a `model`), and those that train word
vectors per language pair (`bisent2vec` settings; Bi-Sent2vec, its CBOW baseline and the
mapping baseline, which adds `mapped` settings).
"""

ENCODER_METHODS = ("tr", "wacse", "dap", "mlm", "tlm", "tr-tlm")
DUALPIVOT_METHODS = ("dualpivot-sup", "dualpivot-unsup", "dualpivot-layer")
WORD_VECTOR_METHODS = ("bisent2vec", "fasttext-cbow", "mapped")
# The runs whose model directory encodes sentences (`xlsent.models.load`).
SENTENCE_ENCODER_METHODS = ENCODER_METHODS + DUALPIVOT_METHODS
# The word aligners (`align.method`), each with its settings block `align.<method>`.
ALIGN_METHODS = ("wspalign", "eflomal", "simalign")
