"""Python face of the C accelerator ``_speedups`` (built from ``encode.c``).

Same functions and methods, with the same signatures and results, as
:mod:`olmkit._solver._pure`; importing this module raises ImportError when the
extension was not built.
"""

from __future__ import annotations

from array import array
from typing import Any

from olmkit._solver._speedups import ffi, lib  # type: ignore[import-not-found,unused-ignore]

__all__ = ["Searcher", "encode", "encode_counter"]


def _ptr(buf: array[int], ctype: str = "int *") -> Any:
    if len(buf) == 0:
        return ffi.NULL
    return ffi.cast(ctype, ffi.from_buffer(buf))


def _take(out: Any, out_len: Any) -> array[int]:
    n = out_len[0]
    try:
        result = array("i")
        if n:
            result.frombytes(ffi.buffer(out[0], n * 4))
    finally:
        lib.olm_free(out[0])
    return result


def encode(n_vars: int, nodes: array[int], args: array[int], top: array[int]) -> tuple[array[int], int]:
    """See :func:`olmkit._solver._pure.encode`."""
    out = ffi.new("int **")
    out_len = ffi.new("size_t *")
    top_var = ffi.new("int *")
    rc = lib.olm_encode(n_vars, _ptr(nodes), _ptr(args), _ptr(top), len(top), out, out_len, top_var)
    if rc:
        raise MemoryError("olmkit._solver: out of memory while encoding")
    return _take(out, out_len), top_var[0]


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
    ) -> None:
        self.n_vars = n_vars
        # The C side keeps pointers into these arrays: hold on to them.
        self._keep = (nodes, args, vdep_start, vdep)
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

    def forced_extras(self) -> bool:
        """See :meth:`olmkit._solver._pure.Searcher.forced_extras`."""
        return bool(lib.olm_searcher_forced_extras(self._s))

    def check(self, lits: array[int], complete: bool) -> int:
        """See :meth:`olmkit._solver._pure.Searcher.check`."""
        rc: int = lib.olm_searcher_check(self._s, _ptr(lits), len(lits), 1 if complete else 0)
        if rc == -2:
            raise MemoryError("olmkit._solver: out of memory during propagation")
        return rc

    def stats(self) -> dict[str, int]:
        """See :meth:`olmkit._solver._pure.Searcher.stats`."""
        out = ffi.new("long long[4]")
        lib.olm_searcher_stats(self._s, out)
        return {
            "guesses": out[0],
            "backtracks": out[1],
            "propagations": out[2],
            "solver_calls": out[3],
        }
