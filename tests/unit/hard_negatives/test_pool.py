"""The pool's arithmetic (`xlsent.hard_negatives.pool`): which languages a shard holds, and
which shards a language's mining job reads; the two agree."""

import doctest

from xlsent.hard_negatives import pool


def test_the_examples_give_what_they_print():
    result = doctest.testmod(pool)
    assert result.attempted == 3 and result.failed == 0


def test_each_language_reads_exactly_the_shards_that_hold_its_pairs():
    # A language over three shards, one inside a shard, one on a boundary, one empty.
    sizes = {"de": 9, "jv": 2, "kk": 1, "te": 0, "zh": 4}
    for shard_size in (1, 3, 4, 16):
        shards = -(-sum(sizes.values()) // shard_size)
        holding = {lang: set() for lang in sizes}
        rows = {lang: [] for lang in sizes}
        for index in range(shards):
            for lang, first, end in pool.shard_languages(sizes, index, shard_size):
                holding[lang].add(index)
                rows[lang].extend(range(first, end))
        for lang, size in sizes.items():
            assert rows[lang] == list(range(size))  # every pair once, in order
            if size:
                assert set(pool.shards_holding(sizes, lang, shard_size)) == holding[lang]
    # An empty language is given the one shard where its pairs would start.
    assert list(pool.shards_holding(sizes, "te", 4)) == [3]
