"""Grouping indices by key (:func:`olmkit._solver.group`) and the table checks, in C and in the twin.

The graph compiler files the chains' entries by class and the distinct properties by type
with :func:`~olmkit._solver.group`; the callers of the C parts check their tables with
:func:`~olmkit._solver._group.ascending` and :func:`~olmkit._solver._group.within`. Both
implementations must agree with the definitions on random tables.
"""

from __future__ import annotations

from array import array
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olmkit._solver import _encode, group, lay_out
from olmkit._solver._group import ascending, within

INT = st.integers(-(2**31), 2**31 - 1)


@pytest.fixture(params=_encode.available())
def implementation(request: pytest.FixtureRequest) -> Any:
    old = _encode.set_implementation(request.param)
    try:
        yield request.param
    finally:
        _encode.set_implementation(old)


@st.composite
def keyed(draw: Any) -> tuple[array[int], int]:
    n_keys = draw(st.integers(0, 9))
    keys = draw(st.lists(st.integers(0, n_keys - 1), max_size=40)) if n_keys else []
    return array("i", keys), n_keys


@settings(max_examples=200, deadline=None)
@given(case=keyed())
def test_group_is_a_stable_sort_by_key(case):
    """Each implementation groups the indices by key, ascending within a key, with each key's start."""
    keys, n_keys = case
    expected_items = sorted(range(len(keys)), key=keys.__getitem__)
    expected_start = [sum(1 for k in keys if k < key) for key in range(n_keys + 1)]
    for name in _encode.available():
        items, start = _encode.module(name).group(keys, n_keys)
        assert expected_items == list(items)
        assert expected_start == list(start)
        assert items.typecode == start.typecode == "i"  # int arrays, as the callers slice them


@settings(max_examples=200, deadline=None)
@given(values=st.lists(INT, max_size=12), lo=INT, hi=INT)
def test_table_checks_agree_with_their_definitions(values, lo, hi):
    """ascending and within, in C and in the twin, are the definitions."""
    a = array("i", values)
    for name in _encode.available():
        impl = _encode.module(name)
        assert all(x <= y for x, y in pairwise(values)) == impl.ascending(a)
        assert all(lo <= x < hi for x in values) == impl.within(a, lo, hi)


def test_group_refuses_keys_out_of_range(implementation):
    """A key outside 0 .. n_keys-1 is a ValueError, not a write past the arrays in C."""
    with pytest.raises(ValueError, match="out of range"):
        group(array("i", [0, 3]), 3)
    with pytest.raises(ValueError, match="out of range"):
        group(array("i", [-1]), 3)
    with pytest.raises(ValueError, match="negative"):
        group(array("i"), -1)
    assert (array("i", [1, 0]), array("i", [0, 0, 1, 2])) == group(array("i", [2, 1]), 3)


def test_the_checks_refuse_alike_in_both_implementations(implementation):
    """The lay-out's table checks (in C when it is built) refuse what the twin refuses, with the same message."""
    assert ascending(array("i", [1, 1, 2]))
    assert not ascending(array("i", [2, 1]))
    assert within(array("i"), 0, 0)
    assert not within(array("i", [5]), 0, 5)
    one = array("i", [0])
    with pytest.raises(ValueError, match="row_atoms out of range"):
        lay_out(array("i", [0, 1]), array("i", [3]), one, array("i", [-1]), array("i", [-2]), one, 1, 0, 0)
    with pytest.raises(ValueError, match="atom_key out of range"):
        lay_out(array("i", [0, 1]), array("i", [0]), one, array("i", [-1]), array("i", [-3]), one, 1, 0, 0)
    with pytest.raises(ValueError, match="row_start is not a partition"):
        lay_out(array("i", [0, 1, 0, 1]), array("i", [0]), one, array("i", [-1]), array("i", [-2]), one, 1, 0, 0)
