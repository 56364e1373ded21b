"""The align stage: aligners (WSPAlign span prediction, eflomal), link combination, shards."""
