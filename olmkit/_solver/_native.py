"""Python face of the C accelerator ``_speedups`` (built from ``encode.c`` and ``classes.c``).

Same functions and methods, with the same signatures and results, as
:mod:`olmkit._solver._pure`; importing this module raises ImportError when the
extension was not built.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from olmkit._solver._speedups import ffi, lib  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "Searcher",
    "ascending",
    "encode",
    "encode_counter",
    "expand",
    "group",
    "lay_out",
    "scatter",
    "select",
    "take",
    "within",
]


def _ptr(buf: array[int], ctype: str = "int *") -> Any:
    if len(buf) == 0:
        return ffi.NULL
    return ffi.cast(ctype, ffi.from_buffer(buf))


def _adopt(pointer: Any, n: int) -> memoryview:
    """``n`` ints the C part allocated, as a view of that memory (no copy), freed when the view goes.

    Read and indexed as the pure twin's ``array('i')`` is (equal to it, element by element);
    copying into an array instead cost a page fault per page of fresh memory as well as the
    copy: 0.04 s of a cold resolution at 40k bundles, 0.15 s at 200k.
    """
    if not n:
        lib.olm_free(pointer)
        return memoryview(bytearray()).cast("i")
    # the buffer keeps the owning pointer alive, and the view keeps the buffer
    return memoryview(ffi.buffer(ffi.gc(pointer, lib.olm_free), 4 * n)).cast("i")


def _copy(pointer: Any, n: int) -> array[int]:
    """A copy of the ``n`` ints at ``pointer`` (their memory stays the caller's to free)."""
    result = array("i")
    if n:
        result.frombytes(ffi.buffer(pointer, n * 4))
    return result


def _take(out: Any, out_len: Any) -> array[int]:
    """A copy of the ints the C part allocated at ``out[0]``, which it frees."""
    try:
        return _copy(out[0], out_len[0])
    finally:
        lib.olm_free(out[0])


def encode(n_vars: int, nodes: array[int], args: array[int], top: array[int]) -> tuple[memoryview, int]:
    """See :func:`olmkit._solver._pure.encode`."""
    out = ffi.new("int **")
    out_len = ffi.new("size_t *")
    top_var = ffi.new("int *")
    rc = lib.olm_encode(n_vars, _ptr(nodes), _ptr(args), _ptr(top), len(top), out, out_len, top_var)
    if rc:
        raise MemoryError("olmkit._solver: out of memory while encoding")
    return _adopt(out[0], out_len[0]), top_var[0]


def encode_counter(first_var: int, lits: array[int]) -> tuple[array[int], array[int], int]:
    """See :func:`olmkit._solver._pure.encode_counter`."""
    k = len(lits)
    out = ffi.new("int **")
    out_len = ffi.new("size_t *")
    top_var = ffi.new("int *")
    outs = array("i", bytes(4 * k))
    rc = lib.olm_encode_counter(first_var, _ptr(lits), k, out, out_len, _ptr(outs), top_var)
    if rc:
        raise MemoryError("olmkit._solver: out of memory while encoding")
    return _take(out, out_len), outs, top_var[0]


class Searcher:
    """See :class:`olmkit._solver._pure.Searcher`."""

    #: Completing an assignment is cheap here, so conflict minimisation tries it before
    #: asking the backend whether a subset is satisfiable (it only saves time).
    cheap_completion = True
    #: With ``consume=True``, the clause buffer becomes the searcher's own storage (no copy).
    consumes = True

    def __init__(
        self,
        n_vars: int,
        n_total: int,
        clauses: array[int],
        n_act: int,
        nodes: array[int],
        args: array[int],
        anchor_start: int,
        n_anchors: int,
        vdep_start: array[int],
        vdep: array[int],
        proofs: bool = True,
        consume: bool = False,
    ) -> None:
        self.n_vars = n_vars
        # The C side keeps pointers into these arrays: hold on to them.
        self._keep = (nodes, args, vdep_start, vdep, clauses if consume else None)
        handle = lib.olm_searcher_new(
            n_vars,
            n_total,
            _ptr(clauses),
            len(clauses),
            n_act,
            _ptr(nodes),
            _ptr(args),
            anchor_start,
            n_anchors,
            _ptr(vdep_start),
            _ptr(vdep),
            1 if proofs else 0,
            1 if consume else 0,
        )
        if handle == ffi.NULL:
            raise MemoryError("olmkit._solver: out of memory while loading the search")
        self._s = ffi.gc(handle, lib.olm_searcher_free)

    def run(self) -> int:
        """See :meth:`olmkit._solver._pure.Searcher.run`."""
        rc: int = lib.olm_searcher_run(self._s)
        if rc == -2:
            raise MemoryError("olmkit._solver: out of memory during the search")
        return rc

    def assumptions(self) -> array[int]:
        """See :meth:`olmkit._solver._pure.Searcher.assumptions`."""
        n = lib.olm_searcher_assumptions(self._s, ffi.NULL)
        out = array("i", bytes(4 * n))
        if n:
            lib.olm_searcher_assumptions(self._s, _ptr(out))
        return out

    def resume(self, sat: bool, model: bytes | None, core: array[int] | None) -> None:
        """See :meth:`olmkit._solver._pure.Searcher.resume`."""
        if sat:
            assert model is not None
            rc = lib.olm_searcher_resume(self._s, 1, ffi.from_buffer(model), ffi.NULL, 0)
        elif core is None:
            rc = lib.olm_searcher_resume(self._s, 0, ffi.NULL, ffi.NULL, 0)
        else:
            rc = lib.olm_searcher_resume(self._s, 0, ffi.NULL, _ptr(core), len(core))
        if rc:
            raise RuntimeError("resume() without a pending question")

    def model(self) -> bytes:
        """See :meth:`olmkit._solver._pure.Searcher.model`."""
        out = bytearray(self.n_vars)
        if self.n_vars:
            lib.olm_searcher_model(self._s, ffi.from_buffer(out))
        return bytes(out)

    def check(self, lits: array[int], complete: bool) -> int:
        """See :meth:`olmkit._solver._pure.Searcher.check`."""
        rc: int = lib.olm_searcher_check(self._s, _ptr(lits), len(lits), 1 if complete else 0)
        if rc == -2:
            raise MemoryError("olmkit._solver: out of memory during propagation")
        return rc

    def stats(self) -> dict[str, int]:
        """See :meth:`olmkit._solver._pure.Searcher.stats`."""
        out = ffi.new("long long[6]")
        lib.olm_searcher_stats(self._s, out)
        return {
            "guesses": out[0],
            "backtracks": out[1],
            "propagations": out[2],
            "solver_calls": out[3],
            "proofs": out[4],
            "clauses": out[5],
        }


def expand(
    blocks: Sequence[Any],
    n_items: int,
    slot: array[int] | None,
    ov_index: array[int],
    ov_start: array[int],
    ov_items: array[int],
    ov_err: array[int],
    seeds: array[int],
    n_front: int,
    heads: Any,
    prefix: array[int],
    n_keys: int,
) -> tuple[Any, ...]:
    """See :func:`olmkit._solver._pure.expand`."""
    cblocks = ffi.new("olm_block[]", max(1, len(blocks)))
    keep: list[Any] = []

    def ptr(buf: array[int] | None) -> Any:
        if buf is None or len(buf) == 0:
            return ffi.NULL
        p = ffi.cast("int *", ffi.from_buffer(buf))
        keep.append(p)
        return p

    for i, b in enumerate(blocks):
        c = cblocks[i]
        c.item_off = b.item_off
        c.n_items = len(b.item_class)
        c.pred_off = b.pred_off
        c.err_off = b.err_off
        c.n_classes = len(b.class_start) - 1
        c.item_class = ptr(b.item_class)
        c.class_start = ptr(b.class_start)
        c.class_codes = ptr(b.class_codes)
        c.ukey_start = ptr(b.ukey_start)
        c.ukeys = ptr(b.ukeys)
        c.uerr = ptr(b.uerr)
        c.pred_start = ptr(b.pred_start)
        c.pred_items = ptr(b.pred_items)
        c.pred_err = ptr(b.pred_err)
        c.key_map = ptr(b.key_map)
    out = ffi.new("olm_expansion *")
    rc = lib.olm_expand(
        cblocks,
        len(blocks),
        n_items,
        ptr(slot),
        ptr(ov_index),
        ptr(ov_start),
        ptr(ov_items),
        ptr(ov_err),
        ptr(seeds),
        len(seeds),
        n_front,
        ptr(heads.start),
        len(heads.start) - 1,
        ptr(heads.cons),
        ptr(heads.items),
        ptr(prefix),
        len(prefix) // 3,
        n_keys,
        out,
    )
    if rc:
        raise MemoryError("olmkit._solver: out of memory while expanding templates")
    try:
        if out.error >= 0:
            empty = array("i")
            return (out.error, 0, empty, empty, empty, empty, empty, empty, empty, 0, 0, array("i", [0]), empty)
        n_vars = out.n_vars

        def take(field: str, n: int) -> memoryview:
            pointer = getattr(out, field)
            setattr(out, field, ffi.NULL)  # the view owns it now: olm_expansion_free leaves it
            return _adopt(pointer, n)

        return (
            -1,
            n_vars,
            take("var_item", n_vars),
            take("group_keys", out.n_groups),
            take("nodes", out.n_nodes),
            take("args", out.n_args),
            take("top", out.n_top),
            take("top_owner", out.n_top),
            take("top_index", out.n_top),
            out.anchor_start,
            out.n_anchors,
            take("vdep_start", n_vars + 1),
            take("vdep", out.n_vdep),
        )
    finally:
        lib.olm_expansion_free(out)


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
    """See :func:`olmkit._solver._classes.lay_out` (checked there)."""
    n_rows = len(row_start) - 1
    out = ffi.new("olm_layout *")
    rc = lib.olm_lay_out(
        n_rows,
        _ptr(row_start),
        _ptr(row_atoms),
        len(atom_template),
        _ptr(atom_template),
        _ptr(atom_list),
        _ptr(atom_key),
        _ptr(atom_group),
        n_templates,
        n_lists,
        n_keys,
        out,
    )
    if rc:
        raise MemoryError("olmkit._solver: out of memory while laying out classes")
    try:
        return (
            _copy(out.codes, out.n_codes),
            _copy(out.code_start, n_rows + 1),
            _copy(out.keys, out.n_keys),
            _copy(out.key_start, n_rows + 1),
            _copy(out.template_order, out.n_templates),
            _copy(out.list_order, out.n_lists),
            _copy(out.list_row, out.n_lists),
            _copy(out.list_atom, out.n_lists),
            _copy(out.atom_order, out.n_atom_order),
            _copy(out.key_order, out.n_key_order),
        )
    finally:
        lib.olm_layout_free(out)


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
    """See :func:`olmkit._solver._select.select` (checked there)."""
    n_progs = len(prog_start) - 1
    out = ffi.new("int **")
    out_len = ffi.new("size_t *")
    out_start = array("i", bytes(4 * (n_progs + 1)))
    rc = lib.olm_select(
        n_progs,
        _ptr(prog_start),
        _ptr(prog),
        _ptr(cand_start),
        _ptr(cand_sets),
        n_rows,
        _ptr(row_start),
        _ptr(row_atoms),
        _ptr(atom_type),
        _ptr(atom_owner),
        _ptr(atom_rank),
        len(set_start) - 1,
        _ptr(set_start),
        _ptr(set_rows),
        len(item_start) - 1,
        _ptr(item_start),
        _ptr(items),
        out,
        out_len,
        _ptr(out_start),
    )
    if rc == 2:
        raise ValueError("select: a program or candidate set is malformed")
    if rc:
        raise MemoryError("olmkit._solver: out of memory while selecting")
    return _take(out, out_len), out_start


def group(keys: array[int], n_keys: int) -> tuple[array[int], array[int]]:
    """See :func:`olmkit._solver._group.group`."""
    items = array("i", bytes(4 * len(keys)))
    start = array("i", bytes(4 * (n_keys + 1)))
    if lib.olm_group(len(keys), _ptr(keys), n_keys, _ptr(items), _ptr(start)):
        raise ValueError("group: a key is out of range")
    return items, start


def ascending(a: array[int]) -> bool:
    """See :func:`olmkit._solver._group.ascending`."""
    return bool(lib.olm_ascending(len(a), _ptr(a)))


def within(a: array[int], lo: int, hi: int) -> bool:
    """See :func:`olmkit._solver._group.within`."""
    return bool(lib.olm_within(len(a), _ptr(a), lo, hi))


def scatter(dest: array[int], at: array[int], values: array[int]) -> None:
    """See :func:`olmkit._solver._group.scatter`."""
    if len(at) != len(values):
        raise ValueError("scatter: as many indices as values")
    if lib.olm_scatter(len(at), _ptr(at), _ptr(values), len(dest), _ptr(dest)):
        raise ValueError("scatter: an index is out of range")


def take(table: array[int], at: array[int]) -> array[int]:
    """See :func:`olmkit._solver._group.take`."""
    out = array("i", bytes(4 * len(at)))
    if lib.olm_take(len(at), _ptr(at), _ptr(table), len(table), _ptr(out)):
        raise ValueError("take: an index is out of range")
    return out
