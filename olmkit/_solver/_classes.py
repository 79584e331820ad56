"""Laying out expansion classes from rows of shared atoms (C, or its pure twin).

A caller whose classes (see :mod:`olmkit._solver._expand`) are rows of *atoms*, with far
fewer distinct atoms than occurrences, describes each distinct atom once and lets
:func:`lay_out` (C, or its pure twin) number what the rows use and write the class arrays.
Everything is domain-free ints. Per atom ``a``:

* ``atom_template[a]``: a template slot (``>= 0``) or -1. Templates are numbered in the
  order rows first use them; the atom contributes the code ``-1 - 2 * number``.
* ``atom_list[a]``: a list slot (``>= 0``) or -1. Lists are numbered likewise; the atom
  contributes the code ``number`` (after its template's code, if it has both).
* ``atom_key[a]``: -2 no key; -1 a keyed atom without a key; ``>= 0`` a key slot.
  ``atom_group[a]`` is its key group. A row's keys are taken group by group, in the order
  of each group's first atom in the row, each group's atoms in row order; keys are numbered
  in that order as first taken, and a row lists each of its key numbers once.

Returns, as ``array('i')``: the codes and their row starts (``len(rows) + 1``), the keys
and their row starts, then the template slots, list slots and key slots in numbering
order, each list's first row and first atom, and the atoms with a list in the order of
their first use.

.. versionadded:: 0.3
"""

from __future__ import annotations

from array import array

__all__ = ["lay_out"]


def lay_out(
    row_start: array[int],
    row_atoms: array[int],
    atom_template: array[int],
    atom_list: array[int],
    atom_key: array[int],
    atom_group: array[int],
    n_templates: int,
    n_lists: int,
    n_keys: int,
) -> tuple[array[int], ...]:
    """Lay out the rows' classes (see the module docstring).

    Returns:
        ``(codes, code_start, keys, key_start, template_order, list_order, list_row,
        list_atom, atom_order, key_order)``.
    """
    from olmkit._solver import _encode
    from olmkit._solver._group import ascending, within

    n_atoms = len(atom_template)
    if not (len(atom_list) == len(atom_key) == len(atom_group) == n_atoms) or not row_start:
        raise ValueError("lay_out: inconsistent atom arrays")
    for name, column, bound in (
        ("atom_template", atom_template, n_templates),
        ("atom_list", atom_list, n_lists),
        ("atom_key", atom_key, n_keys),
    ):
        if not within(column, -2 if name == "atom_key" else -1, bound):
            raise ValueError(f"lay_out: {name} out of range")
    if not within(row_atoms, 0, n_atoms):
        raise ValueError("lay_out: row_atoms out of range")
    if row_start[0] != 0 or row_start[-1] != len(row_atoms) or not ascending(row_start):
        raise ValueError("lay_out: row_start is not a partition of row_atoms")
    impl = _encode.get()
    result: tuple[array[int], ...] = impl.lay_out(
        row_start, row_atoms, atom_template, atom_list, atom_key, atom_group, n_templates, n_lists, n_keys
    )
    return result
