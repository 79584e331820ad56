"""Pure-Python twin of ``olm_lay_out`` (``classes.c``): see :func:`olmkit._solver._classes.lay_out`."""

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
    """See :func:`olmkit._solver._classes.lay_out`."""
    n_rows = len(row_start) - 1
    template_number = [-1] * n_templates
    list_number = [-1] * n_lists
    key_number = [-1] * n_keys
    atom_seen = bytearray(len(atom_list))
    codes = array("i")
    code_start = array("i", [0])
    keys = array("i")
    key_start = array("i", [0])
    template_order = array("i")
    list_order = array("i")
    list_row = array("i")
    list_atom = array("i")
    atom_order = array("i")
    key_order = array("i")
    for r in range(n_rows):
        keyed: list[tuple[int, int]] | None = None
        for i in range(row_start[r], row_start[r + 1]):
            a = row_atoms[i]
            t = atom_template[a]
            if t >= 0:
                n = template_number[t]
                if n < 0:
                    n = template_number[t] = len(template_order)
                    template_order.append(t)
                codes.append(-1 - 2 * n)
            lst = atom_list[a]
            if lst >= 0:
                n = list_number[lst]
                if n < 0:
                    n = list_number[lst] = len(list_order)
                    list_order.append(lst)
                    list_row.append(r)
                    list_atom.append(a)
                if not atom_seen[a]:
                    atom_seen[a] = 1
                    atom_order.append(a)
                codes.append(n)
            k = atom_key[a]
            if k >= -1:
                if keyed is None:
                    keyed = [(atom_group[a], k)]
                else:
                    keyed.append((atom_group[a], k))
        code_start.append(len(codes))
        if keyed is not None:
            groups = list(dict.fromkeys(group for group, _ in keyed))
            done: set[int] = set()
            for group in groups:
                for g, k in keyed:
                    if g != group or k < 0:
                        continue
                    n = key_number[k]
                    if n < 0:
                        n = key_number[k] = len(key_order)
                        key_order.append(k)
                    if n not in done:
                        done.add(n)
                        keys.append(n)
        key_start.append(len(keys))
    return codes, code_start, keys, key_start, template_order, list_order, list_row, list_atom, atom_order, key_order
