"""The class lay-out (:func:`olmkit._solver.lay_out`): C and its pure twin give the same arrays.

The graph compiler's fast path lays out every bundle's class with it; the twins must agree
on every output, on random rows of shared atoms (templates, lists, keys in interleaved
groups, atoms repeated within a row).
"""

from __future__ import annotations

from array import array
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olmkit._solver import _encode, lay_out
from olmkit._solver import _pure as pure

NATIVE = "native" in _encode.available()
needs_native = pytest.mark.skipif(not NATIVE, reason="the C accelerator is not built: there is no twin to compare")


@st.composite
def layouts(draw: Any) -> tuple[Any, ...]:
    n_templates = draw(st.integers(0, 3))
    n_lists = draw(st.integers(0, 6))
    n_keys = draw(st.integers(0, 6))
    n_atoms = draw(st.integers(0, 12))
    atom_template = array("i", [draw(st.integers(-1, n_templates - 1)) for _ in range(n_atoms)])
    atom_list = array("i", [draw(st.integers(-1, n_lists - 1)) for _ in range(n_atoms)])
    atom_key = array("i", [draw(st.integers(-2, n_keys - 1)) for _ in range(n_atoms)])
    atom_group = array("i", [draw(st.integers(0, 2)) for _ in range(n_atoms)])
    rows = draw(st.lists(st.lists(st.integers(0, n_atoms - 1), max_size=6), max_size=8)) if n_atoms else []
    row_start = array("i", [0])
    row_atoms = array("i")
    for row in rows:
        row_atoms.extend(row)
        row_start.append(len(row_atoms))
    return row_start, row_atoms, atom_template, atom_list, atom_key, atom_group, n_templates, n_lists, n_keys


@needs_native
@settings(max_examples=300, deadline=None)
@given(args=layouts())
def test_lay_out_twins_agree(args):
    """Every output array of the C lay-out equals the twin's."""
    native = _encode.module("native")

    assert [a.tobytes() for a in pure.lay_out(*args)] == [a.tobytes() for a in native.lay_out(*args)]


@pytest.fixture(params=_encode.available())
def implementation(request: pytest.FixtureRequest) -> Any:
    old = _encode.set_implementation(request.param)
    try:
        yield request.param
    finally:
        _encode.set_implementation(old)


def test_lay_out_numbers_in_order_of_first_use(implementation):
    """Templates, lists and keys are numbered as rows first use them; keys group by group, each once."""
    # atoms: 0 template 1; 1 list 2; 2 template 0 + list 0; 3 key 1 group 0; 4 key 0 group 1;
    # 5 key 2 group 0; 6 keyed without a key (group 1)
    atom_template = array("i", [1, -1, 0, -1, -1, -1, -1])
    atom_list = array("i", [-1, 2, 0, -1, -1, -1, -1])
    atom_key = array("i", [-2, -2, -2, 1, 0, 2, -1])
    atom_group = array("i", [-1, -1, -1, 0, 1, 0, 1])
    rows = [[3, 1, 4, 5, 0], [2, 1, 6, 5, 3, 5], []]
    row_start = array("i", [0, 5, 11, 11])
    row_atoms = array("i", [a for row in rows for a in row])

    out = [list(a) for a in lay_out(row_start, row_atoms, atom_template, atom_list, atom_key, atom_group, 2, 3, 3)]

    codes, code_start, keys, key_start, template_order, list_order, list_row, list_atom, atom_order, key_order = out
    assert [0, -1, -3, 1, 0] == codes  # row 0: list 2 -> 0, template 1 -> 0; row 1: template 0 -> 1, list 0 -> 1
    assert [0, 2, 5, 5] == code_start
    assert [0, 1, 2, 1, 0] == keys  # row 0: group 0 (keys 1, 2) then group 1 (key 0); row 1: group 1 has none
    assert [0, 3, 5, 5] == key_start
    assert [1, 0] == template_order
    assert [2, 0] == list_order
    assert [0, 1] == list_row
    assert [1, 2] == list_atom
    assert [1, 2] == atom_order
    assert [1, 2, 0] == key_order


def test_lay_out_refuses_arrays_out_of_range():
    """An atom or slot out of range is a ValueError, not a crash in C."""
    one = array("i", [0])
    with pytest.raises(ValueError, match="row_atoms"):
        lay_out(array("i", [0, 1]), array("i", [3]), one, array("i", [-1]), array("i", [-2]), one, 1, 0, 0)
    with pytest.raises(ValueError, match="atom_list"):
        lay_out(array("i", [0, 1]), array("i", [0]), one, array("i", [1]), array("i", [-2]), one, 1, 1, 0)
    with pytest.raises(ValueError, match="row_start"):
        lay_out(array("i", [0, 2]), array("i", [0]), one, array("i", [-1]), array("i", [-2]), one, 1, 0, 0)
