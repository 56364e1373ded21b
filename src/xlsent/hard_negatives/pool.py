"""The hard-negative stage's pool: every language's pairs one after another (the codes sorted,
as a training joins them), cut into shards of `shard_size` pairs. Arithmetic on the languages'
pool sizes only, so that the rule files (`hard_negatives_inputs.smk`) read it without the
encoding's libraries."""

from __future__ import annotations

from collections.abc import Hashable, Mapping


def spans(sizes: Mapping[Hashable, int], low: int, high: int) -> list[tuple[Hashable, int, int]]:
    """The items of `sizes`, laid one after another in order, that positions [low, high)
    cover, as (key, first, end) counted within each item.

    >>> spans({"de": 5, "kk": 2, "te": 6}, 4, 8)
    [('de', 4, 5), ('kk', 0, 2), ('te', 0, 1)]
    """
    offset, out = 0, []
    for key, size in sizes.items():
        first, end = max(low - offset, 0), min(high - offset, size)
        if first < end:
            out.append((key, first, end))
        offset += size
    return out


def shard_languages(sizes: Mapping[str, int], index: int, shard_size: int) -> list:
    """The languages shard `index` holds, as (language, first row, end row) within each
    language's pairs; `sizes` in the pool's order.

    >>> shard_languages({"de": 5, "kk": 2, "te": 6}, 1, 4)
    [('de', 4, 5), ('kk', 0, 2), ('te', 0, 1)]
    """
    return spans(sizes, index * shard_size, (index + 1) * shard_size)


def shards_holding(sizes: Mapping[str, int], lang: str, shard_size: int) -> range:
    """The shards that hold `lang`'s pairs (its first shard alone where it has none);
    `sizes` in the pool's order.

    >>> list(shards_holding({"de": 5, "kk": 2, "te": 6}, "te", 4))
    [1, 2, 3]
    """
    keys = list(sizes)
    first = sum(sizes[key] for key in keys[: keys.index(lang)])
    last = first + max(sizes[lang], 1) - 1
    return range(first // shard_size, last // shard_size + 1)
