"""Scanning catalog files of one JSON blob per line into bundle rows (C, ``scan.c``).

A :class:`LineScanner` reads one file's bytes at a time and returns a :class:`FileScan`:

* every line checked to be exactly one JSON value; a file with another line (blank, two
  values, a value spanning lines, malformed JSON, nesting deeper than 64) is not taken
  (``None``) and the caller reads it its usual way;
* each *plain* bundle blob taken as a row: its line, name, package and image (``None`` for
  none, null or empty) and its properties as numbers of distinct properties. Plain: an
  object with ``"schema": "olm.bundle"``, a non-empty ``name`` and ``package``, optionally
  ``image`` (a string or null) and ``properties`` (null or an array of objects with exactly
  a non-empty ``type`` string and a ``value``), no other or repeated key, no escape in
  those strings. Every other line is left to the caller (its start and end offsets);
* the distinct properties, numbered across the files scanned by one scanner in the order
  first met: ``(flags, type, text)``, where ``text`` is the value's JSON text without the
  whitespace outside strings, which is exactly :func:`orjson.dumps` of the value
  :func:`orjson.loads` reads from it, unless ``flags & CANONICALISE`` (an escape in a
  string, a number other than an integer of at most 18 digits, a repeated key); ``flags &
  VALUE_FIRST``: the property object names its value before its type.

There is no pure twin: without the C part (or with ``OLMKIT_PURE_PYTHON=1``) :func:`scanner`
is ``None`` and the loader decodes every file with orjson, which is what this replaces.

.. versionadded:: 0.4
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["CANONICALISE", "VALUE_FIRST", "FileScan", "LineScanner", "scanner"]

#: the property object names ``value`` before ``type``
VALUE_FIRST: Final = 1
#: the value's text is not orjson's: read and write it again
CANONICALISE: Final = 2
_FRESH: Final = 4  # of a type not interned (see LineScanner)


class FileScan:
    """One file scanned (see the module docstring).

    Attributes:
        line_kind: per line: -1 a line left to the caller, else the number of its bundle.
        line_start, line_end: per line, its offsets in the file.
        b_line: per bundle taken, its line (from 1).
        prop_start: ``n_bundles + 1`` offsets into ``occ``.
        b_ndist: per bundle, how many distinct properties were known once it was taken.
        occ: per property occurrence, its distinct property.
        names, packages, images: per bundle.
        first: the number of the first distinct property this file added;
        new: ``(flags, type, text)`` of each distinct property it added.
    """

    __slots__ = (
        "b_line",
        "b_ndist",
        "first",
        "images",
        "line_end",
        "line_kind",
        "line_start",
        "names",
        "new",
        "occ",
        "packages",
        "prop_start",
    )

    def __init__(self) -> None:
        self.line_kind = array("i")
        self.line_start = array("i")
        self.line_end = array("i")
        self.b_line = array("i")
        self.prop_start = array("i")
        self.b_ndist = array("i")
        self.occ = array("i")
        self.names: list[str] = []
        self.packages: list[str] = []
        self.images: list[str | None] = []
        self.first = 0
        self.new: list[tuple[int, bytes, bytes]] = []


class LineScanner:
    """A scan of one catalog's files (the distinct properties are numbered across them).

    Args:
        fresh: property types not interned: each occurrence is a distinct property of its
            own, whose text the scanner forgets after the file (a bundle's identity: the
            caller keys them itself, and the scanner keeps no text of every bundle).
    """

    def __init__(self, fresh: Iterable[str] = ()) -> None:
        # the compiled extension, as its face imports it (ImportError without it)
        from olmkit._solver._native import ffi, lib  # type: ignore[attr-defined]

        self._ffi = ffi
        self._lib = lib
        handle = lib.olm_scan_new()
        if handle == ffi.NULL:
            raise MemoryError("olmkit._solver: out of memory while scanning")
        self._s = ffi.gc(handle, lib.olm_scan_free)
        for name in fresh:
            text = name.encode()
            if lib.olm_scan_fresh(self._s, text, len(text)):
                raise MemoryError("olmkit._solver: out of memory while scanning")

    def scan(self, data: bytes) -> FileScan | None:
        """Scan one file's bytes; ``None`` when a line is not exactly one JSON value."""
        ffi, s = self._ffi, self._s
        first = s.n_dist
        rc = self._lib.olm_scan_file(s, ffi.from_buffer(data), len(data))
        if rc == 1:
            raise MemoryError("olmkit._solver: out of memory while scanning")
        if rc:
            return None
        out = FileScan()
        n_lines, n_bundles = s.n_lines, s.n_bundles
        buffer = ffi.buffer
        if n_lines:
            out.line_kind.frombytes(buffer(s.line_kind, 4 * n_lines))
            out.line_start.frombytes(buffer(s.line_start, 4 * n_lines))
            out.line_end.frombytes(buffer(s.line_end, 4 * n_lines))
        out.prop_start.frombytes(buffer(s.b_prop_start, 4 * (n_bundles + 1)))
        if n_bundles:
            out.b_line.frombytes(buffer(s.b_line, 4 * n_bundles))
            out.b_ndist.frombytes(buffer(s.b_ndist, 4 * n_bundles))
            if s.n_occ:
                out.occ.frombytes(buffer(s.occ, 4 * s.n_occ))
            out.names = _lines(buffer(s.names, s.names_len))
            out.packages = _lines(buffer(s.packages, s.packages_len))
            out.images = [image or None for image in _lines(buffer(s.images, s.images_len))]
        out.first = first
        end = s.n_dist
        if end > first:
            n = end - first
            starts = array("Q" if ffi.sizeof("size_t") == 8 else "I")
            starts.frombytes(buffer(s.d_start + first, starts.itemsize * n))
            type_len, value_len = array("i"), array("i")
            type_len.frombytes(buffer(s.d_type_len + first, 4 * n))
            value_len.frombytes(buffer(s.d_value_len + first, 4 * n))
            flags = bytes(buffer(s.d_flags + first, n))
            arena = bytes(buffer(s.arena + s.arena_first, s.arena_len - s.arena_first))
            fresh = bytes(buffer(s.farena, s.farena_len)) if s.farena_len else b""
            base = s.arena_first
            new = out.new
            for f, at, tl, vl in zip(flags, starts, type_len, value_len, strict=True):
                if f & _FRESH:
                    new.append((f, fresh[at : at + tl], fresh[at + tl : at + tl + vl]))
                else:
                    at -= base
                    new.append((f, arena[at : at + tl], arena[at + tl : at + tl + vl]))
        return out


def _lines(buffer: Any) -> list[str]:
    """The newline-terminated texts in ``buffer``."""
    text: str = bytes(buffer).decode()
    return text.split("\n")[:-1]


def scanner(fresh: Iterable[str] = ()) -> LineScanner | None:
    """A new scanner (see :class:`LineScanner`), or ``None`` when the pure-Python implementation is in use."""
    from olmkit._solver import _encode

    if _encode.current() != "native":
        return None
    return LineScanner(fresh)
