"""Grouping indices by key (C, or its pure twin), and the checks of int tables the C parts read.

:func:`group` is a stable counting sort: for ``keys`` (one int in ``0 .. n_keys-1`` per
index), the indices grouped by key, each group ascending, and each key's start:
``items[start[k]:start[k + 1]]`` are the indices whose key is ``k``. :func:`ascending` and
:func:`within` are the checks the callers of the C parts make of their tables (in C when it
is built: a pass over a table in Python costs 20-30 ns per item).

.. versionadded:: 0.3
"""

from __future__ import annotations

from array import array

__all__ = ["ascending", "group", "scatter", "take", "within"]


def group(keys: array[int], n_keys: int) -> tuple[array[int], array[int]]:
    """The indices of ``keys`` grouped by key, and each key's start (see the module docstring).

    Raises:
        ValueError: a key is not in ``0 .. n_keys-1``, or ``n_keys`` is negative.
    """
    from olmkit._solver import _encode

    if n_keys < 0:
        raise ValueError("group: n_keys is negative")
    result: tuple[array[int], array[int]] = _encode.get().group(keys, n_keys)
    return result


def ascending(a: array[int]) -> bool:
    """Whether ``a`` never decreases."""
    from olmkit._solver import _encode

    return bool(_encode.get().ascending(a))


def within(a: array[int], lo: int, hi: int) -> bool:
    """Whether every item of ``a`` is in ``lo .. hi-1`` (an empty ``a``: ``True``)."""
    from olmkit._solver import _encode

    return bool(_encode.get().within(a, lo, hi))


def scatter(dest: array[int], at: array[int], values: array[int]) -> None:
    """``dest[at[i]] = values[i]`` for every ``i`` (in C, a pass over the indices; in Python 60-100 ns each).

    .. versionadded:: 0.4

    Raises:
        ValueError: ``at`` and ``values`` differ in length, or an index of ``at`` is not in
            ``0 .. len(dest)-1`` (``dest`` is then left as it was).
    """
    from olmkit._solver import _encode

    _encode.get().scatter(dest, at, values)


def take(table: array[int], at: array[int]) -> array[int]:
    """``table[at[i]]`` for every ``i``, as an int array (the converse of :func:`scatter`).

    .. versionadded:: 0.4

    Raises:
        ValueError: an index of ``at`` is not in ``0 .. len(table)-1``.
    """
    from olmkit._solver import _encode

    result: array[int] = _encode.get().take(table, at)
    return result
