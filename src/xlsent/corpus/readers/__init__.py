"""The corpus sources' readers: what reads a source's raw files into pairs (`opus`: OPUS's
Moses files and manifest; `local`: a directory of such files; `demo`: Babel's CLDR data and
Django's catalogs). Each source's adapter, which the workflow and the config checks ask, is
`xlsent.corpus.sources`."""
