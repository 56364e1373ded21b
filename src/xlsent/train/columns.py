"""The columns a training reads of its input files.

`xlsent.train.data` reads them into a pool; `xlsent.train.memory` sizes a training job's
memory from their Parquet metadata in the Snakemake process, which need not import the
readers' polars for two lists of names.
"""

from __future__ import annotations

# Of a subwords file (xlsent.tokenize): both sides' subword ids.
PAIR_INPUTS = ["xx_ids", "en_ids"]
# Of a word-span file (WACSE's pools, xlsent.train.word_spans): each side's words' subword
# starts and ends, and the links between the words.
WORD_FIELDS = ("xx_starts", "xx_ends", "en_starts", "en_ends", "links")
