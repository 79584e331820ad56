"""Pure-Python twin of ``group.c``: indices grouped by key, and the int tables' checks (see :mod:`._group`)."""

from __future__ import annotations

from array import array
from itertools import accumulate, islice
from operator import le

__all__ = ["ascending", "group", "scatter", "take", "within"]


def group(keys: array[int], n_keys: int) -> tuple[array[int], array[int]]:
    """Indices ``0 .. len(keys)-1`` grouped by key (ascending within a group), and each key's start.

    Raises:
        ValueError: a key is not in ``0 .. n_keys-1``.
    """
    if not within(keys, 0, n_keys):
        raise ValueError("group: a key is out of range")
    counts = [0] * n_keys
    for k in keys:
        counts[k] += 1
    start = array("i", accumulate(counts, initial=0))
    fill = list(start[:n_keys])
    items = array("i", bytes(4 * len(keys)))
    for i, k in enumerate(keys):
        items[fill[k]] = i
        fill[k] += 1
    return items, start


def ascending(a: array[int]) -> bool:
    """Whether ``a`` never decreases."""
    return all(map(le, a, islice(a, 1, None)))


def within(a: array[int], lo: int, hi: int) -> bool:
    """Whether every item of ``a`` is in ``lo .. hi-1`` (an empty ``a``: ``True``)."""
    return not a or (min(a) >= lo and max(a) < hi)


def scatter(dest: array[int], at: array[int], values: array[int]) -> None:
    """``dest[at[i]] = values[i]`` for every ``i``.

    Raises:
        ValueError: ``at`` and ``values`` differ in length, or an index is out of range
            (``dest`` is then left as it was).
    """
    if len(at) != len(values):
        raise ValueError("scatter: as many indices as values")
    if not within(at, 0, len(dest)):
        raise ValueError("scatter: an index is out of range")
    for i, value in zip(at, values, strict=True):
        dest[i] = value


def take(table: array[int], at: array[int]) -> array[int]:
    """``table[at[i]]`` for every ``i``, as an int array.

    Raises:
        ValueError: an index of ``at`` is not in ``0 .. len(table)-1``.
    """
    if not within(at, 0, len(table)):
        raise ValueError("take: an index is out of range")
    return array("i", map(table.__getitem__, at))
