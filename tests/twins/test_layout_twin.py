"""The graph compiler's C parts (:func:`olmkit._solver.lay_out`, :func:`olmkit._solver.select`,
:func:`olmkit._solver.group` and the table checks) and their twins.

The compiler's fast path lays out every bundle's class and gathers most lists with them;
the twins must agree on every output, on random rows of shared atoms (templates, lists,
keys in interleaved groups, atoms repeated within a row) and random programs over them.
"""

from __future__ import annotations

from array import array
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olmkit._solver import _encode, group, lay_out, select
from olmkit._solver import _pure as pure
from olmkit._solver._group import ascending, within

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


# --------------------------------------------------------------------------- select


@st.composite
def programs(draw: Any, n_sets: int, depth: int = 0) -> list[int]:
    kind = draw(st.integers(0, 5 if depth < 3 else 2))
    if kind == 0:
        return [0, draw(st.integers(0, n_sets - 1))] if n_sets else [2, draw(st.integers(-1, 2))]
    if kind == 1:
        out = [1, draw(st.integers(0, 2)), draw(st.integers(-1, 2))]
        alternatives = draw(
            st.lists(
                st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 4)), max_size=3), max_size=3
            )
        )
        out.append(len(alternatives))
        for alternative in alternatives:
            out.append(len(alternative))
            for op, lo, extra in alternative:
                out += [op, lo, lo + extra % 2]
        return out
    if kind == 2:
        return [2, draw(st.integers(-1, 2))]
    children = draw(st.lists(programs(n_sets, depth + 1), max_size=3))
    return [kind, len(children)] + [x for child in children for x in child]


@st.composite
def selections(draw: Any) -> tuple[Any, ...]:
    n_atoms = draw(st.integers(1, 10))
    atom_type = array("i", [draw(st.integers(0, 2)) for _ in range(n_atoms)])
    atom_owner = array("i", [draw(st.integers(-1, 2)) for _ in range(n_atoms)])
    atom_rank = array("i", [draw(st.integers(-1, 5)) for _ in range(n_atoms)])
    n_rows = draw(st.integers(0, 8))
    row_start = array("i", [0])
    row_atoms = array("i")
    item_start = array("i", [0])
    items = array("i")
    for _ in range(n_rows + 1):  # one row more than the candidates (a class without a bundle)
        row_atoms.extend(draw(st.lists(st.integers(0, n_atoms - 1), max_size=4)))
        row_start.append(len(row_atoms))
        items.extend(draw(st.lists(st.integers(0, 30), max_size=3, unique=True)))
        item_start.append(len(items))
    sets = draw(st.lists(st.lists(st.integers(0, n_rows), max_size=4, unique=True), max_size=4))
    set_start = array("i", [0])
    set_rows = array("i")
    for rows in sets:
        set_rows.extend(sorted(rows))
        set_start.append(len(set_rows))
    prog_start = array("i", [0])
    prog = array("i")
    cand_start = array("i", [0])
    cand_sets = array("i")
    for _ in range(draw(st.integers(0, 5))):
        prog.extend(draw(programs(len(sets))))
        prog_start.append(len(prog))
        if not sets or draw(st.integers(0, 3)) == 0:
            cand_sets.append(-1)
        else:
            cand_sets.extend(draw(st.lists(st.integers(0, len(sets) - 1), max_size=3)))
        cand_start.append(len(cand_sets))
    return (
        prog_start,
        prog,
        cand_start,
        cand_sets,
        n_rows,
        row_start,
        row_atoms,
        atom_type,
        atom_owner,
        atom_rank,
        set_start,
        set_rows,
        item_start,
        items,
    )


@needs_native
@settings(max_examples=300, deadline=None)
@given(args=selections())
def test_select_twins_agree(args):
    """The C selection and its twin give the same items for random programs over random rows."""
    native = _encode.module("native")

    assert [a.tobytes() for a in pure.select(*args)] == [a.tobytes() for a in native.select(*args)]


def test_select_evaluates_programs(implementation):
    """Set membership, ranked atoms (by type and owner), types, and all / any / none over them."""
    # rows: 0 has atoms 0 (type 0, owner 1, rank 2) and 2 (type 1); 1 has atom 1 (type 0, owner 1, rank 4)
    atom_type, atom_owner, atom_rank = array("i", [0, 0, 1]), array("i", [1, 1, -1]), array("i", [2, 4, -1])
    row_start, row_atoms = array("i", [0, 2, 3]), array("i", [0, 2, 1])
    item_start, items = array("i", [0, 2, 3]), array("i", [7, 3, 5])
    set_start, set_rows = array("i", [0, 1, 3]), array("i", [1, 0, 1])
    at_least_3 = [1, 0, 1, 1, 1, 1, 3, 3]  # owner 1, one alternative: rank >= 3
    in_set_0 = [0, 0]
    has_type_1 = [2, 1]
    programs = [at_least_3, in_set_0, has_type_1, [5, 1, *has_type_1], [3, 2, *in_set_0, *at_least_3], [4, 0]]
    prog = array("i", [x for p in programs for x in p])
    prog_start = array("i", [0])
    for p in programs:
        prog_start.append(prog_start[-1] + len(p))
    cand_sets = array("i", [1, -1, 1, 1, 0, 1, -1])
    cand_start = array("i", [0, 1, 2, 3, 4, 6, 7])

    found, starts = select(
        prog_start,
        prog,
        cand_start,
        cand_sets,
        2,
        row_start,
        row_atoms,
        atom_type,
        atom_owner,
        atom_rank,
        set_start,
        set_rows,
        item_start,
        items,
    )

    lists = [list(found[starts[i] : starts[i + 1]]) for i in range(len(programs))]
    assert [[5], [5], [3, 7], [5], [5], []] == lists


def test_select_refuses_malformed_programs(implementation):
    """A program that runs past its end or names a set that is not there is a ValueError."""
    one = array("i", [0, 1])
    args = (one, array("i", [0, 0]), array("i", [0, 0]), one, one, array("i", [0]), array("i", [0]))
    with pytest.raises(ValueError):
        select(
            array("i", [0, 2]), array("i", [0, 5]), array("i", [0, 1]), array("i", [-1]), 1, one, array("i", [0]), *args
        )
    with pytest.raises(ValueError):
        select(
            array("i", [0, 2]), array("i", [3, 1]), array("i", [0, 1]), array("i", [-1]), 1, one, array("i", [0]), *args
        )


# --------------------------------------------------------------------------- group and the checks


INT = st.integers(-(2**31), 2**31 - 1)


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


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_scatter_writes_each_value_at_its_index(data):
    """scatter, in C and in the twin: dest[at[i]] = values[i]; an index out of range changes nothing."""
    n = data.draw(st.integers(0, 12))
    at = data.draw(st.lists(st.integers(-2, n + 1), max_size=12, unique=True))
    values = data.draw(st.lists(INT, min_size=len(at), max_size=len(at)))
    for name in _encode.available():
        impl = _encode.module(name)
        dest = array("i", range(n))
        if all(0 <= i < n for i in at):
            expected = list(range(n))
            for i, value in zip(at, values, strict=True):
                expected[i] = value
            impl.scatter(dest, array("i", at), array("i", values))
            assert expected == list(dest)
        else:
            with pytest.raises(ValueError, match="out of range"):
                impl.scatter(dest, array("i", at), array("i", values))
            assert list(range(n)) == list(dest)
        with pytest.raises(ValueError, match="as many"):
            impl.scatter(dest, array("i", at), array("i", [*values, 0]))


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_take_reads_each_index(data):
    """take, in C and in the twin: table[at[i]] per index, an index out of range refused."""
    table = data.draw(st.lists(INT, max_size=12))
    at = data.draw(st.lists(st.integers(-2, len(table) + 1), max_size=12))
    for name in _encode.available():
        impl = _encode.module(name)
        if all(0 <= i < len(table) for i in at):
            out = impl.take(array("i", table), array("i", at))
            assert [table[i] for i in at] == list(out)
            assert out.typecode == "i"
        else:
            with pytest.raises(ValueError, match="out of range"):
                impl.take(array("i", table), array("i", at))
