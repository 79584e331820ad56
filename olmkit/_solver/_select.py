"""Selecting rows by small programs over their atoms (C, or its pure twin).

The rows and atoms of :mod:`olmkit._solver._classes`: a caller with many predicates over
the same rows describes each predicate as a *program* and lets :func:`select` (C, or its
pure twin) find, for each, the rows it holds among its candidates, and return their
*items* (``items[item_start[r]:item_start[r + 1]]`` per row ``r``), sorted. Everything is
domain-free ints. Per atom ``a``: a type ``atom_type[a]``, an owner ``atom_owner[a]`` and
a rank ``atom_rank[a]`` (-1: none). *Sets* of rows (``set_rows[set_start[s]:set_start[s + 1]]``,
ascending) are a program's candidates (``cand_sets[cand_start[p]:cand_start[p + 1]]``:
the union of those sets, or every row ``0 .. n_rows-1`` for the single set -1).

A program is a tree of nodes in prefix form:

* ``0 s``: the row is in set ``s``;
* ``1 t o n`` then ``n`` alternatives, each ``m`` then ``m`` comparisons ``op lo hi``: the row
  has an atom of type ``t``, owner ``o`` (``o >= 0``) and a rank (``>= 0``) that passes every
  comparison of one alternative (an alternative without comparisons passes). ``lo .. hi``
  is the rank range of the bound: ``op`` 0 ``=`` (``lo <= rank < hi``), 1 ``>=`` (``rank >= lo``),
  2 ``<`` (``rank < lo``), 3 ``>`` (``rank >= hi``), 4 ``<=`` (``rank < hi``), else ``!=``;
* ``2 t``: the row has an atom of type ``t`` (``t >= 0``);
* ``3 n``, ``4 n``, ``5 n`` then ``n`` nodes: all of them, any of them, none of them.

.. versionadded:: 0.3
"""

from __future__ import annotations

from array import array

__all__ = ["select"]


def select(
    prog_start: array[int],
    prog: array[int],
    cand_start: array[int],
    cand_sets: array[int],
    n_rows: int,
    row_start: array[int],
    row_atoms: array[int],
    atom_type: array[int],
    atom_owner: array[int],
    atom_rank: array[int],
    set_start: array[int],
    set_rows: array[int],
    item_start: array[int],
    items: array[int],
) -> tuple[array[int], array[int]]:
    """Each program's items (see the module docstring): the items, and their starts per program.

    Raises:
        ValueError: a program, a candidate set or a table is malformed.
    """
    from olmkit._solver import _encode
    from olmkit._solver._group import ascending, within

    n_atoms = len(atom_type)
    n_sets = len(set_start) - 1
    rows_with_items = min(len(row_start), len(item_start)) - 1
    if len(atom_owner) != n_atoms or len(atom_rank) != n_atoms or n_sets < 0 or rows_with_items < n_rows:
        raise ValueError("select: inconsistent tables")
    if len(cand_start) != len(prog_start) or not prog_start or prog_start[0] != 0 or prog_start[-1] != len(prog):
        raise ValueError("select: inconsistent programs")
    if cand_start[0] != 0 or cand_start[-1] != len(cand_sets) or not within(cand_sets, -(2**31), n_sets):
        raise ValueError("select: candidate sets out of range")
    if set_start[0] != 0 or set_start[-1] != len(set_rows) or not within(set_rows, -(2**31), rows_with_items):
        raise ValueError("select: sets out of range")
    if not within(row_atoms, 0, n_atoms):
        raise ValueError("select: row atoms out of range")
    if row_start[-1] != len(row_atoms) or item_start[-1] != len(items):
        raise ValueError("select: inconsistent rows")
    for name, starts in (
        ("prog", prog_start),
        ("cand", cand_start),
        ("set", set_start),
        ("row", row_start),
        ("item", item_start),
    ):
        if not ascending(starts):
            raise ValueError(f"select: {name}_start is not ascending")
    result: tuple[array[int], array[int]] = _encode.get().select(
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
    return result
