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
  first met, each with its flags, its type (types numbered in the order met), and its
  value's text without the whitespace outside strings, which is exactly :func:`orjson.dumps`
  of the value :func:`orjson.loads` reads from it, unless ``flags & CANONICALISE`` (an
  escape orjson does not write, ``\\/`` or ``\\u``, a number other than an integer of at
  most 18 digits, a repeated key); ``flags & VALUE_FIRST``: the property object names its value before its type;
* for the types registered as *read through fields* (:class:`TypeReading`), each plain value
  (an object of exactly those fields, each a string without escape, non-empty unless
  allowed) as interned strings: its key (the first ``key_fields`` fields' strings, numbered
  per type) and, for an identity type, its version (field 1's string). Every other value of
  such a type, and every value to canonicalise, is *odd* (``flags & ODD``): the caller reads
  it itself. An identity type's properties are interned by their text whatever their form.

There is no pure twin of the scan: without the C part (or with ``OLMKIT_PURE_PYTHON=1``)
:func:`scanner` is ``None`` and the loader decodes every file with orjson, which is what this
replaces. :func:`rows_index` (what the loader files once every row is read) has one.

.. versionadded:: 0.4
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

__all__ = [
    "CANONICALISE",
    "FILE_INTS",
    "ODD",
    "VALUE_FIRST",
    "FileScan",
    "LineScanner",
    "TypeReading",
    "rows_index",
    "scanner",
]

#: the property object names ``value`` before ``type``
VALUE_FIRST: Final = 1
#: the value's text is not orjson's: read and write it again
CANONICALISE: Final = 2
#: the caller reads the value itself (to canonicalise, of a type read so, or not plain)
ODD: Final = 8
#: ints per file in :meth:`LineScanner.scan_files`' record (``OLM_SCAN_FILE_INTS`` in scan.h)
FILE_INTS: Final = 6


class TypeReading(NamedTuple):
    """How the scan reads one property type's values (see the module docstring).

    ``fields`` empty: values are not read (no key, no version: the caller reads them), and
    ``odd`` flags every one. ``identity``: the type's properties are interned by their text
    only, and field 1 is the version.
    """

    name: str
    fields: tuple[str, ...] = ()
    key_fields: int = 0
    may_be_empty: tuple[str, ...] = ()
    identity: bool = False
    odd: bool = False


class FileScan:
    """One file scanned (see the module docstring).

    Attributes:
        line_kind: per line: -1 a line left to the caller, else the number of its bundle.
        line_start, line_end: per line, its offsets in the file.
        b_line: per bundle taken, its line (from 1).
        prop_start: ``n_bundles + 1`` offsets into ``occ``.
        b_ndist: per bundle, how many distinct properties were known once it was taken.
        occ: per property occurrence, its distinct property.
        names, images: per bundle; b_pkg: per bundle its package, numbered across files in
            the order met (``new_packages``: the names first numbered since the last file taken).
        duplicate: a bundle's package and name were met before (taken, or registered with
            :meth:`LineScanner.bundle`), or only their 64-bit hash: one of them at least.
        first: the number of the first distinct property this file added; per distinct
            property it added: ``flags``, ``types`` (type numbers), ``texts``, ``keys``
            (-1 none) and ``versions`` (string numbers, -1 none); ``odd``: those flagged ODD.
        new_types, new_strings: the names of the types and the strings first numbered since
            the last file taken, in order; ``key_type``, ``key_start``, ``key_strs``: the keys
            likewise (each key's type and strings: ``key_strs[key_start[k]:key_start[k + 1]]``
            for the k-th new key). Those of lines left and of files not taken are among
            them: a caller reads every one, in order (they number on from the last call's).
        two_ways: some property was written both ways (value first and type first).
    """

    __slots__ = (
        "b_line",
        "b_ndist",
        "b_pkg",
        "duplicate",
        "first",
        "flags",
        "images",
        "key_start",
        "key_strs",
        "key_type",
        "keys",
        "line_end",
        "line_kind",
        "line_start",
        "names",
        "new_packages",
        "new_strings",
        "new_types",
        "occ",
        "odd",
        "prop_start",
        "texts",
        "two_ways",
        "types",
        "versions",
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
        self.b_pkg = array("i")
        self.new_packages: list[str] = []
        self.duplicate = False
        self.images: list[str | None] = []
        self.first = 0
        self.flags = b""
        self.types = array("i")
        self.texts: list[bytes] = []
        self.keys = array("i")
        self.versions = array("i")
        self.odd = array("i")
        self.new_types: list[str] = []
        self.new_strings: list[str] = []
        self.key_type = array("i")
        self.key_start = array("i", [0])
        self.key_strs = array("i")
        self.two_ways = False


class LineScanner:
    """A scan of one catalog's files (the distinct properties are numbered across them).

    Args:
        readings: how to read the values of some property types (the others' values are
            interned as texts, without a key or a version).
    """

    def __init__(self, readings: Iterable[TypeReading] = ()) -> None:
        # the compiled extension, as its face imports it (ImportError without it)
        from olmkit._solver._native import ffi, lib  # type: ignore[attr-defined]

        self._ffi = ffi
        self._lib = lib
        handle = lib.olm_scan_new()
        if handle == ffi.NULL:
            raise MemoryError("olmkit._solver: out of memory while scanning")
        self._s = ffi.gc(handle, lib.olm_scan_free)
        for r in readings:
            text = r.name.encode()
            fields = "".join(f + "\n" for f in r.fields).encode()
            if any("\n" in f for f in r.fields) or len(set(r.fields)) != len(r.fields):
                raise ValueError(f"{r.name}: field names must be distinct, without a newline")
            kind = (1 if r.identity else 0) | (2 if r.fields else 0) | (4 if r.odd else 0)
            empty = sum(1 << i for i, f in enumerate(r.fields) if f in r.may_be_empty)
            rc = lib.olm_scan_type(self._s, text, len(text), kind, fields, len(r.fields), r.key_fields, empty)
            if rc == 1:
                raise MemoryError("olmkit._solver: out of memory while scanning")
            if rc:
                raise ValueError(f"{r.name}: not a reading the scan takes: {r}")
        # what the caller was handed of the tables so far (bytes of texts, numbers of keys)
        self._types_at = 0
        self._packages_at = 0
        self._strings_at = 0
        self._keys_at = 0

    def scan(self, data: bytes) -> FileScan | None:
        """Scan one file's bytes; ``None`` when a line is not exactly one JSON value."""
        ffi, s = self._ffi, self._s
        first = s.n_dist
        rc = self._lib.olm_scan_file(s, ffi.from_buffer(data), len(data))
        if rc == 1:
            raise MemoryError("olmkit._solver: out of memory while scanning")
        if rc:
            return None
        return self._outputs(first)

    def scan_files(self, data: Sequence[bytes]) -> tuple[FileScan, array[int]]:
        """Scan several files' bytes in one call, their outputs one after the other as if of one file.

        Returns:
            ``(scan, files)``: ``scan`` as :meth:`scan` gives for one file, but its bundles,
            lines, distinct properties and texts run on across the files taken (a bundle's
            ``line_kind`` is its number in ``scan``; ``prop_start`` has one leading 0);
            ``files``, per file :data:`FILE_INTS` ints: 0 taken (2 not taken: nothing of it
            in ``scan``), then, once it was done, the lines and bundles in ``scan``, how many
            of its lines it left, how many of those come before its first bundle line, and
            ``duplicate | two_ways << 1`` as they stood then.
        """
        ffi, s = self._ffi, self._s
        first = s.n_dist
        n = len(data)
        buffers = [ffi.from_buffer(d) for d in data]  # alive for the call
        files = array("i", bytes(4 * FILE_INTS * n))
        pointers, lengths = ffi.new("const char *[]", buffers), ffi.new("size_t[]", list(map(len, data)))
        rc = self._lib.olm_scan_files(s, pointers, lengths, n, ffi.from_buffer("int[]", files))
        if rc:
            raise MemoryError("olmkit._solver: out of memory while scanning")
        return self._outputs(first), files

    def _outputs(self, first: int) -> FileScan:
        """The last call's outputs, copied (``first``: the number of its first distinct property)."""
        ffi, s = self._ffi, self._s
        # every attribute set here, once (a FileScan() first would make arrays only to replace them)
        out = FileScan.__new__(FileScan)
        n_lines, n_bundles = s.n_lines, s.n_bundles
        buffer = ffi.buffer
        out.line_kind = _ints(buffer, s.line_kind, n_lines)
        out.line_start = _ints(buffer, s.line_start, n_lines)
        out.line_end = _ints(buffer, s.line_end, n_lines)
        out.prop_start = _ints(buffer, s.b_prop_start, n_bundles + 1)
        out.b_line = _ints(buffer, s.b_line, n_bundles)
        out.b_ndist = _ints(buffer, s.b_ndist, n_bundles)
        out.b_pkg = _ints(buffer, s.b_pkg, n_bundles)
        if n_bundles:
            out.occ = _ints(buffer, s.occ, s.n_occ)
            out.names = _lines(buffer(s.names, s.names_len))
            images = _lines(buffer(s.images, s.images_len))
            out.images = [image or None for image in images] if "" in images else images  # type: ignore[assignment]
        else:
            out.occ = array("i")
            out.names = []
            out.images = []
        out.first = first
        end = s.n_dist
        if end > first:
            n = end - first
            out.flags = bytes(buffer(s.d_flags + first, n))
            out.types = _ints(buffer, s.d_type + first, n)
            out.keys = _ints(buffer, s.d_key + first, n)
            out.versions = _ints(buffer, s.d_version + first, n)
            out.texts = bytes(buffer(s.new_texts, s.new_texts_len)).split(b"\n")[:-1]
            out.odd = _ints(buffer, s.odd, s.n_odd)
        else:
            out.flags = b""
            out.types = array("i")
            out.keys = array("i")
            out.versions = array("i")
            out.texts = []
            out.odd = array("i")
        out.new_types, out.new_strings, out.new_packages = [], [], []
        if s.new_types_len > self._types_at:
            out.new_types = _lines(buffer(s.new_types + self._types_at, s.new_types_len - self._types_at))
            self._types_at = s.new_types_len
        if s.new_strings_len > self._strings_at:
            out.new_strings = _lines(buffer(s.new_strings + self._strings_at, s.new_strings_len - self._strings_at))
            self._strings_at = s.new_strings_len
        if s.new_packages_len > self._packages_at:
            out.new_packages = _lines(
                buffer(s.new_packages + self._packages_at, s.new_packages_len - self._packages_at)
            )
            self._packages_at = s.new_packages_len
        out.duplicate = bool(s.duplicate)
        k0 = self._keys_at
        if s.n_keys > k0:
            k1 = self._keys_at = s.n_keys
            out.key_type = _ints(buffer, s.key_type + k0, k1 - k0)
            starts = _ints(buffer, s.key_start + k0, k1 - k0 + 1)
            out.key_strs = _ints(buffer, s.key_strs + starts[0], starts[-1] - starts[0])
            out.key_start = array("i", [at - starts[0] for at in starts])
        else:
            out.key_type = array("i")
            out.key_start = array("i", [0])
            out.key_strs = array("i")
        out.two_ways = bool(s.two_ways)
        return out

    def bundle(self, package: str, name: str) -> bool:
        """Register a bundle read otherwise (decoded): whether its package and name were met before (or their hash)."""
        p, n = package.encode(), name.encode()
        rc = int(self._lib.olm_scan_bundle(self._s, p, len(p), n, len(n)))
        if rc < 0:
            raise MemoryError("olmkit._solver: out of memory while scanning")
        return bool(rc)

    def find(self, ptype: str, text: bytes, value_first: bool) -> int:
        """The distinct property (-1 none) of a type and a value's text, in the given form."""
        t = ptype.encode()
        return int(self._lib.olm_scan_find(self._s, t, len(t), text, len(text), int(value_first)))


def _ints(buffer: Any, at: Any, n: int) -> array[int]:
    """The ``n`` C ints at ``at``, copied."""
    out = array("i")
    if n:
        out.frombytes(buffer(at, 4 * n))
    return out


def _lines(buffer: Any) -> list[str]:
    """The newline-terminated texts in ``buffer``."""
    text: str = bytes(buffer).decode()
    return text.split("\n")[:-1]


def scanner(readings: Iterable[TypeReading] = ()) -> LineScanner | None:
    """A new scanner (see :class:`LineScanner`), or ``None`` when the pure-Python implementation is in use."""
    from olmkit._solver import _encode

    if _encode.current() != "native":
        return None
    return LineScanner(readings)


def rows_index(
    row_start: array[int],
    refs: array[int],
    value: array[int],
    d_list: array[int],
    ex_start: array[int],
    ex_lists: array[int],
    n_lists: int,
) -> tuple[array[int], array[int], array[int]]:
    """Per row, its first distinct property's value; per list, its rows (C, or its pure twin).

    Rows are ``refs[row_start[r]:row_start[r + 1]]`` (distinct properties). Per distinct
    property ``d``: ``value[d]`` (-1: none) and its lists: ``d_list[d]`` (>= 0), none (-1), or
    ``ex_lists[ex_start[e]:ex_start[e + 1]]`` for ``d_list[d] == -2 - e``.

    Returns:
        ``(first, list_start, rows)``: per row the value of its first distinct property
        with one (-1: none); each list's rows in order, each once:
        ``rows[list_start[l]:list_start[l + 1]]``.
    """
    from olmkit._solver import _encode
    from olmkit._solver._group import within

    n_rows = len(row_start) - 1
    n_ex = len(ex_start) - 1 if ex_start else 0
    if n_rows < 0 or len(value) != len(d_list):
        raise ValueError("rows_index: inconsistent arrays")
    if _encode.current() == "native":  # it checks every ref, list and extra itself
        from olmkit._solver._native import ffi, lib  # type: ignore[attr-defined]

        first = array("i", bytes(4 * n_rows))
        list_start = array("i", bytes(4 * (n_lists + 1)))
        rows = array("i", bytes(4 * len(refs)))
        buf = ffi.from_buffer
        empty = array("i", [0])
        rc = lib.olm_rows_index(
            buf("int[]", row_start),
            buf("int[]", refs or empty),
            n_rows,
            len(value),
            buf("int[]", value or empty),
            buf("int[]", d_list or empty),
            buf("int[]", ex_start or empty),
            buf("int[]", ex_lists or empty),
            n_ex,
            n_lists,
            buf("int[]", first or empty),
            buf("int[]", list_start),
            buf("int[]", rows or empty),
        )
        if rc == 1:
            raise MemoryError("olmkit._solver: out of memory while indexing rows")
        if rc:
            raise ValueError("rows_index: a distinct property out of range, or a list or an extra")
        del rows[list_start[-1] :]
        return first, list_start, rows
    if not within(refs, 0, len(value)):
        raise ValueError("rows_index: a distinct property out of range")
    # each distinct property's lists, checked once
    lists_of: list[Any] = [
        () if dl == -1 else (dl,) if dl >= 0 else ex_lists[ex_start[-2 - dl] : ex_start[-1 - dl]] for dl in d_list
    ]
    if any(not 0 <= lst < n_lists for lists in lists_of for lst in lists):
        raise ValueError("rows_index: a list or an extra out of range")
    first = array("i")
    filed: list[list[int]] = [[] for _ in range(n_lists)]
    for r in range(n_rows):
        ds = refs[row_start[r] : row_start[r + 1]]
        found = -1
        for d in ds:
            if value[d] != -1:
                found = value[d]
                break
        first.append(found)
        for d in ds:
            for lst in lists_of[d]:
                rows_of = filed[lst]
                if not rows_of or rows_of[-1] != r:
                    rows_of.append(r)
    list_start = array("i", [0])
    rows = array("i")
    for rows_of in filed:
        rows.extend(rows_of)
        list_start.append(len(rows))
    return first, list_start, rows
