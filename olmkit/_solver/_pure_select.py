"""Pure-Python twin of ``olm_select`` (``classes.c``): see :func:`olmkit._solver._select.select`."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Sequence

__all__ = ["select"]

# program node codes (see _select.py)
MEMBER, RANKED, HAS, ALL, ANY, NONE = range(6)
# comparison codes
EQ, GE, LT, GT, LE, NE = range(6)


def _compare(op: int, rank: int, lo: int, hi: int) -> bool:
    if op == EQ:
        return lo <= rank < hi
    if op == GE:
        return rank >= lo
    if op == LT:
        return rank < lo
    if op == GT:
        return rank >= hi
    if op == LE:
        return rank < hi
    return not lo <= rank < hi


def _run(
    prog: Sequence[int], pc: int, row: int, atoms: Sequence[int], tables: tuple[Sequence[int], ...]
) -> tuple[bool, int]:
    """Evaluate the node at ``pc`` for ``row``: its value and the position after it."""
    atom_type, atom_owner, atom_rank, set_start, set_rows = tables
    code = prog[pc]
    if code == MEMBER:
        s = prog[pc + 1]
        if not 0 <= s < len(set_start) - 1:
            raise IndexError(s)
        lo, hi = set_start[s], set_start[s + 1]
        i = bisect_left(set_rows, row, lo, hi)
        return i < hi and set_rows[i] == row, pc + 2
    if code == RANKED:
        t, owner, n_alt = prog[pc + 1], prog[pc + 2], prog[pc + 3]
        if n_alt < 0:
            raise IndexError(n_alt)
        pc += 4
        alternatives = []
        for _ in range(n_alt):
            n_cmp = prog[pc]
            if n_cmp < 0 or pc + 1 + 3 * n_cmp > len(prog):
                raise IndexError(n_cmp)
            alternatives.append([tuple(prog[pc + 1 + 3 * j : pc + 4 + 3 * j]) for j in range(n_cmp)])
            pc += 1 + 3 * n_cmp
        found = False
        for a in atoms:
            if owner < 0 or atom_type[a] != t or atom_owner[a] != owner or atom_rank[a] < 0:
                continue
            rank = atom_rank[a]
            if any(all(_compare(op, rank, lo, hi) for op, lo, hi in alt) for alt in alternatives):
                found = True
        return found, pc
    if code == HAS:
        t = prog[pc + 1]
        return t >= 0 and any(atom_type[a] == t for a in atoms), pc + 2
    if code not in (ALL, ANY, NONE):
        raise ValueError(f"select: unknown program node {code}")
    n = prog[pc + 1]
    if n < 0:
        raise IndexError(n)
    pc += 2
    values = []
    for _ in range(n):
        value, pc = _run(prog, pc, row, atoms, tables)
        values.append(value)
    if code == ALL:
        return all(values), pc
    if code == ANY:
        return any(values), pc
    return not any(values), pc


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
    """See :func:`olmkit._solver._select.select`."""
    tables = (atom_type, atom_owner, atom_rank, set_start, set_rows)
    out = array("i")
    out_start = array("i", [0])
    for p in range(len(prog_start) - 1):
        sets = cand_sets[cand_start[p] : cand_start[p + 1]]
        if any(s < 0 for s in sets) and len(sets) != 1:
            raise ValueError("select: candidate sets out of range")
        if len(sets) == 1 and sets[0] < 0:
            rows: list[int] = list(range(n_rows))
        else:
            rows = sorted({r for s in sets for r in set_rows[set_start[s] : set_start[s + 1]]})
        found: list[int] = []
        for r in rows:
            try:
                value, end = _run(prog, prog_start[p], r, row_atoms[row_start[r] : row_start[r + 1]], tables)
            except IndexError:
                raise ValueError("select: a program or candidate set is malformed") from None
            if end != prog_start[p + 1]:
                raise ValueError(f"select: program {p} is malformed")
            if value:
                found += items[item_start[r] : item_start[r + 1]]
        found.sort()
        out.extend(found)
        out_start.append(len(out))
    return out, out_start
