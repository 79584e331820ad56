"""The loader's fast path: bundle blobs straight into columns, bundles built on demand.

A catalog of JSON files, one blob per line (what ``opm`` and most tools write), whose
bundle blobs are well formed, is read without one :class:`~olmkit.model.Bundle`,
:class:`~olmkit.model.Property` or :class:`~olmkit.model.Origin` per bundle: each bundle
becomes a row of :class:`~olmkit.catalog._columns.BundleColumns` (its properties as
numbers of distinct properties, each parsed at most once), plus its file and line. The
snapshot's ``bundles`` builds a package's bundles on first access, equal to what the
object loader builds (same origins, extra fields and versions), and its index is filed
from the columns.

Everything else (packages, channels, deprecations, other schemas) goes through the object
loader blob by blob, as before: they are few. Anything the fast path does not take as it
is (a YAML file, a blob spanning lines, a malformed bundle blob or property, a duplicate
bundle, a property written two ways: the object loader keeps those apart and validation
reports them apart) raises :class:`Bail`, and the loader reads the whole catalog again the
usual way, so that every problem is found and worded exactly as before.

With the C part, a file is not decoded whole: :func:`olmkit._solver.line_scanner` takes its
plain bundle blobs as rows and hands over each distinct property once, as the text orjson
writes for it (or flagged, to be made so here); the lines it leaves are decoded one by one,
and a file it does not take (a line that is not exactly one JSON value) is decoded whole,
as without the C part. The loader hands files over a batch at a time (:meth:`ColumnBuilder.add_files`):
one scan call per batch, and the batch's bundles added at once, in the order read. The
catalog is the same either way (``tests/catalog/test_scan.py``).

Per distinct property the loader keeps numbers: its index list and, for an identity, its
version. A value of a type declaring :class:`~olmkit.types.ValueFields` that is plain is not
parsed (the C scan hands its key and version as interned strings; without it the decoded
value's fields are read); other identity and indexed values are parsed once, as by the object
loader. Every row's version and every index list's rows are filed once all rows are read
(:func:`olmkit._solver.rows_index`). A compiler or a check that reads the columns builds no bundle.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate, repeat, starmap
from operator import itemgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, cast

import orjson

from olmkit._solver import (
    SCAN_CANONICALISE,
    SCAN_FILE_INTS,
    SCAN_ODD,
    SCAN_VALUE_FIRST,
    ScanReading,
    ascending,
    line_scanner,
    rows_index,
    take,
)
from olmkit.catalog._columns import BundleColumns
from olmkit.model import Bundle, Origin, Property
from olmkit.model import _bundle as new_bundle
from olmkit.model import _origin as new_origin
from olmkit.model import _property as new_property
from olmkit.registry import Registry
from olmkit.serde import SCHEMA_BUNDLE, bundle_head
from olmkit.types import PackageIdentity, ValueFields

if TYPE_CHECKING:
    from olmkit._solver import FileScan
    from olmkit.catalog._load import _Builder

__all__ = ["NOT_PARSED", "Bail", "ColumnBuilder", "IndexKeys", "LazyBundles"]

_BUNDLE_KEYS: Final = frozenset({"schema", "name", "package", "image", "properties"})
_SECOND: Final = itemgetter(1)
_FAILED: Final[Any] = object()  # an identity property that does not parse (or none at all)
#: a distinct property not parsed (yet)
NOT_PARSED: Final = _FAILED
_PARSE_ERRORS: Final = (ValueError, TypeError, AttributeError, KeyError)
_UNREAD: Final[Any] = object()  # a value not decoded (yet)


#: scan files with the C part when it is in use; tests turn it off to compare
SCAN = True


_DECODED: Final = 2  # a distinct property made from a decoded blob (or an identity)
#: a scanned distinct property's flags -> its form (SCAN_VALUE_FIRST or 0)
_FORM_OF_FLAGS: Final = bytes(f & SCAN_VALUE_FIRST for f in range(256))


def _json_file(path: str, data: bytes) -> bool:
    """Whether a file is read as JSON (by its suffix, else by its first character)."""
    suffix = os.path.splitext(path)[1].lower()
    return suffix == ".json" or (suffix not in (".yaml", ".yml") and data.lstrip()[:1] in (b"{", b"["))


def _runs(kinds: array[int], at: int, end: int) -> list[tuple[int, int]]:
    """The runs of a file's lines ``at .. end - 1`` of a scan (numbered from ``at``): ``(first, last)``
    for lines ``first .. last - 1`` the scan left, ``(lo, -hi)`` for its bundles ``lo .. hi - 1``."""
    runs = []
    line, n = 0, end - at
    while line < n:
        first = line
        if kinds[at + line] < 0:
            while line < n and kinds[at + line] < 0:
                line += 1
            runs.append((first, line))
        else:
            while line < n and kinds[at + line] >= 0:
                line += 1
            runs.append((kinds[at + first], -(kinds[at + line - 1] + 1)))
    return runs


def _blob(ptype: str, text: bytes, form: int) -> bytes:
    """The text orjson writes for a property blob ``{"type": ptype, "value": <text>}``.

    ``form``: SCAN_VALUE_FIRST for the value first, else 0.
    """
    type_text = orjson.dumps(ptype)
    if form & SCAN_VALUE_FIRST:
        return b"".join((b'{"value":', text, b',"type":', type_text, b"}"))
    return b"".join((b'{"type":', type_text, b',"value":', text, b"}"))


class Bail(Exception):
    """The fast path met something it does not take as it is: load the catalog the usual way."""


class ColumnBuilder:
    """Fills the columns from decoded files; other blobs go to ``rest`` (the object loader).

    Args:
        registry: the property types (identity types give versions, indexed types the index).
        rest: the object loader that takes every blob but bundles, and keeps the problems.

    Per distinct property it keeps numbers, not objects: its index list (``d_list``: one
    list, none, or several) and, for an identity, its version (``d_ver``); a value of a type
    with :class:`~olmkit.types.ValueFields` that is plain is not parsed at all (its key and
    version are its fields' strings: the C scan hands them as numbers). Each row's version
    and each list's rows are filed once every row is read (:func:`olmkit._solver.rows_index`).
    """

    def __init__(self, registry: Registry, rest: _Builder) -> None:
        types = registry.property_types
        self.identity = {n: pt.parse for n, pt in types.items() if pt.identity}
        self.indexers = {n: pt for n, pt in types.items() if pt.index_keys is not None}
        #: the types whose plain values are read through their fields (identities need a version field)
        self.fields: dict[str, ValueFields] = {
            n: pt.fields
            for n, pt in types.items()
            if pt.fields is not None
            and (n in self.indexers or n in self.identity)
            and (n not in self.identity or (pt.fields.key_fields >= 1 and len(pt.fields.fields) >= 2))
        }
        self.rest = rest
        self.files: list[str] = []
        #: per bundle, in the order read: package number, name, image, file, line, properties
        self.r_pkg = array("i")
        self.r_name: list[str] = []
        self.r_image: list[str | None] = []
        self.r_file = array("i")
        self.r_line = array("i")
        self.refs = array("i")  # every bundle's distinct properties, one after the other
        #: per bundle, where its properties start in ``refs`` (and where the last one's end)
        self.r_start = array("i", [0])
        self.extra: dict[int, Mapping[str, Any]] = {}
        self.packages: dict[str, int] = {}
        #: per package: its bundles' names (without the scan: it finds duplicates itself)
        self.names: dict[int, set[str]] = {}
        # distinct properties
        self.by_blob: dict[bytes, int] = {}  # a decoded property blob's JSON text -> distinct property
        #: (type, value's JSON text) -> distinct property, for those not the scan's own (decoded, canonicalised)
        self.by_key: dict[tuple[str, bytes], int] = {}
        self.identities: dict[tuple[str, bytes], int] = {}  # the same for identities
        self.known_texts: set[bytes] = set()  # the texts of both
        self.dist_type: list[str] = []
        self.types: dict[str, str] = {}
        self.dist_json: list[bytes] = []
        self.parsed: dict[int, Any] = {}  # distinct property -> its parsed value (those parsed)
        #: per distinct property: its index list (>= 0), none (-1), or ``ex_lists[-2 - n]``
        self.d_list = array("i")
        self.ex_lists: list[tuple[int, ...]] = []
        #: per distinct property: its version if it is an identity that reads (>= 0: a string
        #: of the scan's, <= -2: ``py_versions[-2 - n]``), else -1
        self.d_ver = array("i")
        self.py_versions: list[str | None] = []
        #: per type (indexed or read through fields): key -> its list; per list: its key
        self.lists_of: dict[str, dict[Hashable, int]] = {n: {} for n in {**self.indexers, **self.fields}}
        self.list_keys: list[Hashable] = []
        #: once every row is read: each list's rows, ``rows[list_start[l]:list_start[l + 1]]``
        self.list_start = array("i")
        self.rows = array("i")
        #: the C scan of the files (None: files are decoded whole), and its distinct
        #: properties' numbers in the columns
        readings = [
            ScanReading(
                n,
                f.fields if f is not None else (),
                f.key_fields if f is not None else 0,
                f.may_be_empty if f is not None else (),
                n in self.identity,
            )
            for n in {**self.identity, **self.indexers}
            for f in (self.fields.get(n),)
        ]
        self.scanner = line_scanner(readings) if SCAN else None
        self.cmap = array("i")
        self.same = True  # cmap[c] == c for every scanned distinct property c so far
        #: per distinct property: the form of a scanned one's blob (SCAN_VALUE_FIRST or 0), else _DECODED
        self.forms = bytearray()
        #: the scan's tables: its types' names, its strings, its keys' lists (then -1, for no key)
        self.type_names: list[str] = []
        self.strings: list[str] = []
        self.key_list: list[int] = [-1]
        #: the keys the scans met (their type and key, in the scans' numbering from
        #: ``len(key_list) - 1`` on) whose lists are not numbered yet
        self.keys_waiting: list[tuple[str, Hashable]] = []
        #: the identity and indexed types read by their parsers (no ValueFields), and the scan's numbers of them
        self.by_parser = {*self.identity, *self.indexers} - set(self.fields)
        self.parsed_types: set[int] = set()
        self.package_names: list[str] = []
        self.package_of: list[int] = []  # the scan's package -> its number here (-1: not yet)
        self.same_packages = True  # package_of[c] in (c, -1) for every scanned package c so far

    def add_file(self, path: str, data: bytes) -> None:
        """Add every blob of one JSON file (one blob per line): bundles as rows, the rest to ``rest``.

        With the C part, the file is scanned (:func:`olmkit._solver.line_scanner`): its
        plain bundle blobs become rows without being decoded, the other lines are decoded
        one by one; a file the scan does not take is decoded whole, as without it.

        Raises:
            Bail: not such a file, or a bundle blob the fast path does not take as it is (one
                not plainly well formed, or naming a bundle already read).
        """
        if not _json_file(path, data):
            raise Bail
        scan = self.scanner.scan(data) if self.scanner is not None else None
        if scan is None:
            self._add_whole(path, data)
            return
        if scan.two_ways or scan.duplicate:
            raise Bail  # a property written two ways, a duplicate bundle: the object loader tells
        self._take_tables(scan)
        file = len(self.files)
        self.files.append(path)
        kinds, starts, ends = scan.line_kind, scan.line_start, scan.line_end
        for first, last in _runs(kinds, 0, len(kinds)):
            if last < 0:  # a run of bundles the scan took
                self._add_scanned(scan, first, -last, [(file, -last - first)])
            else:  # a run of lines the scan left: decoded here
                self._add_values(path, file, self._decode_lines(path, data, starts, ends, first, last))

    def add_files(self, items: Sequence[tuple[str, bytes]]) -> None:
        """:meth:`add_file` of each ``(path, bytes)`` in order, the same rows and distinct properties.

        With the C part, the files are scanned in one call and the bundles they give one
        after the other are added at once (up to a file, or lines, the scan left that hold
        a bundle: the rows stay in the order read): no Python work per file for them.

        Raises:
            Bail: as :meth:`add_file`.
        """
        scanner = self.scanner
        if scanner is None or len(items) < 2:
            for path, data in items:
                self.add_file(path, data)
            return
        for path, data in items:
            if not _json_file(path, data):
                raise Bail
        scan, records = scanner.scan_files([data for _, data in items])
        self._take_tables(scan)
        kinds, all_starts, all_ends = scan.line_kind, scan.line_start, scan.line_end
        # the bundles scanned but not added yet (lo .. hi - 1 of the scan's), and their files
        lo = hi = 0
        pieces: list[tuple[int, int]] = []
        lines_at = 0
        for k, (path, data) in enumerate(items):
            rc, lines_end, bundles_end, left, prefix, flags = records[SCAN_FILE_INTS * k : SCAN_FILE_INTS * (k + 1)]
            if rc:  # not taken: decoded whole, after the rows before it
                if hi > lo:
                    self._add_scanned(scan, lo, hi, pieces)
                    lo, pieces = hi, []
                self._add_whole(path, data)
                continue
            if flags:
                raise Bail  # a property written two ways, a duplicate bundle: the object loader tells
            file = len(self.files)
            self.files.append(path)
            if left:
                starts, ends = all_starts[lines_at:lines_end], all_ends[lines_at:lines_end]
                # the lines left, then the bundles (the usual file), or its runs
                runs = [(0, left)] if left == prefix else _runs(kinds, lines_at, lines_end)
                for first, last in runs:
                    if last < 0:  # bundles lo .. -last - 1 of the scan's
                        pieces.append((file, -last - first))
                        hi = -last
                        continue
                    values = self._decode_lines(path, data, starts, ends, first, last)
                    if values:  # a bundle the scan left: after the rows before it
                        if hi > lo:
                            self._add_scanned(scan, lo, hi, pieces)
                            lo, pieces = hi, []
                        self._add_values(path, file, values)
                if left == prefix and bundles_end > hi:
                    pieces.append((file, bundles_end - hi))
                    hi = bundles_end
            elif bundles_end > hi:
                pieces.append((file, bundles_end - hi))
                hi = bundles_end
            lines_at = lines_end
        if hi > lo:
            self._add_scanned(scan, lo, hi, pieces)

    def _decode_lines(
        self, path: str, data: bytes, starts: array[int], ends: array[int], first: int, last: int
    ) -> list[tuple[int, Any]]:
        """The bundle blobs of the lines the scan left ``first .. last - 1`` (the rest go to ``rest``)."""
        try:
            return self.rest.decode_lines(path, data, starts, ends, first, last)
        except orjson.JSONDecodeError:  # a number orjson does not read (1e400): as a whole file
            raise Bail from None

    def _add_whole(self, path: str, data: bytes) -> None:
        """Add a file the scan did not take (or without it): decoded whole."""
        try:
            # as serde.decode_json_texts: success means value i is line i + 1
            values = orjson.loads(b"".join((b"[", data.rstrip(b"\n").replace(b"\n", b","), b"]")))
        except orjson.JSONDecodeError:
            raise Bail from None
        file = len(self.files)
        self.files.append(path)
        self._add_values(path, file, enumerate(values, 1))

    def _take_tables(self, scan: FileScan) -> None:
        """The scan's types, packages and strings first numbered since the last call."""
        for ptype in scan.new_types:
            if ptype in self.by_parser:
                self.parsed_types.add(len(self.type_names))
            self.type_names.append(ptype)
        self.package_names += scan.new_packages
        self.package_of += [-1] * len(scan.new_packages)
        self.strings += scan.new_strings
        # the keys, read now: a scan numbers the keys of the lines it leaves too, and the next
        # scan's keys come after them (their lists are numbered once a property needs them)
        strings, type_names, fields = self.strings, self.type_names, self.fields
        key_type, key_start, key_strs = scan.key_type, scan.key_start, scan.key_strs
        for k, t in enumerate(key_type):
            ptype = type_names[t]
            parts = key_strs[key_start[k] : key_start[k + 1]]
            key = strings[parts[0]] if fields[ptype].key_fields == 1 else tuple(map(strings.__getitem__, parts))
            self.keys_waiting.append((ptype, key))

    def _add_values(self, path: str, file: int, values: Iterable[tuple[int, Any]]) -> None:
        """Add decoded blobs ``(line, blob)`` of the file numbered ``file``."""
        add = self.rest.add
        packages, names, extra = self.packages, self.names, self.extra
        met = self.scanner.bundle if self.scanner is not None else None
        r_pkg, r_name, r_image = self.r_pkg.append, self.r_name, self.r_image.append
        r_file, r_line, r_start = self.r_file.append, self.r_line.append, self.r_start.append
        known = self.by_blob.get
        refs = self.refs
        extend = refs.extend
        distinct = self._distinct
        own = self._identity
        identity = self.identity
        dumps = orjson.dumps
        for line, raw in values:
            if type(raw) is not dict or raw.get("schema") != SCHEMA_BUNDLE:
                add(raw, path, line)
                continue
            fields = bundle_head(raw)
            if fields is None:
                raise Bail
            name, package, image = fields
            pn = packages.get(package)
            if pn is None:
                pn = packages[package] = len(packages)
            if met is not None:
                if met(package, name):
                    raise Bail  # a duplicate: the object loader words the problem
            else:
                seen = names.setdefault(pn, set())
                if name in seen:
                    raise Bail
                seen.add(name)
            props = raw.get("properties") or ()
            if type(props) is not list and props != ():
                raise Bail
            first = props[0] if props else None
            kind = first.get("type") if type(first) is dict else None
            if type(kind) is str and kind in identity and "value" in first:  # type: ignore[operator]
                # the bundle's identity first, as usual: its own, nothing to look up by its blob
                rest = props[1:]
                head = [own(kind, first["value"])]  # type: ignore[index]
            else:
                rest, head = props, []
            keys = list(map(dumps, rest))
            found = list(map(known, keys))
            while None in found:  # a property not seen before
                i = found.index(None)
                found[i] = distinct(rest[i], keys[i])
            ds = cast("list[int]", head + found if head else found)
            extend(ds)
            number = len(r_name)
            r_pkg(pn)
            r_name.append(name)
            r_image(image)
            r_file(file)
            r_line(line)
            r_start(len(refs))
            if not _BUNDLE_KEYS.issuperset(raw):
                extra[number] = {k: v for k, v in raw.items() if k not in _BUNDLE_KEYS}

    def _add_scanned(self, scan: FileScan, lo: int, hi: int, pieces: list[tuple[int, int]]) -> None:
        """Add the bundles ``lo`` to ``hi`` the scan took (as :meth:`_add_values`); ``pieces``: their
        files in order, each ``(file number, how many of them)``."""
        cmap, b_ndist = self.cmap, scan.b_ndist
        c_lo, c_hi = len(cmap), b_ndist[hi - 1]
        # the distinct properties first met in these bundles, in the order met (bundles make
        # no distinct property: numbering them first numbers them as reading bundle by bundle)
        if c_hi > c_lo:
            # where each piece's distinct properties end: taken as file by file (see _take_plain)
            cuts = [b_ndist[end - 1] for end in accumulate(map(_SECOND, pieces), initial=lo)][1:]
            self._take_distinct(scan, c_lo, c_hi, cuts if len(cuts) > 1 else ())
        starts = scan.prop_start
        occ = scan.occ[starts[lo] : starts[hi]]
        shift = len(self.refs) - starts[lo]  # from the scan's offsets to the rows' in refs
        self.refs.extend(occ if self.same else array("i", map(cmap.__getitem__, occ)))
        b_pkg = scan.b_pkg[lo:hi]
        package_of, packages = self.package_of, self.packages
        for c in dict.fromkeys(b_pkg):  # numbered in the order first met (duplicates: found by the scan)
            if package_of[c] < 0:
                name = self.package_names[c]
                pn = packages.get(name)
                if pn is None:
                    pn = packages[name] = len(packages)
                package_of[c] = pn
                if pn != c:
                    self.same_packages = False
        self.r_pkg.extend(b_pkg if self.same_packages else map(package_of.__getitem__, b_pkg))
        self.r_name += scan.names[lo:hi]
        self.r_image += scan.images[lo:hi]
        r_file = self.r_file.extend
        for file, n in pieces:
            r_file(repeat(file, n))
        self.r_line.extend(scan.b_line[lo:hi])
        ends = starts[lo + 1 : hi + 1]
        self.r_start.extend(map(shift.__add__, ends) if shift else ends)

    def _take_keys(self, end: int) -> None:
        """Number the lists of the keys the scans met up to ``end`` (in the scans' numbering), in the order met."""
        key_list = self.key_list
        n = end - (len(key_list) - 1)
        if n > 0:
            waiting = self.keys_waiting
            key_list[-1:] = [*starmap(self._list, waiting[:n]), -1]
            del waiting[:n]

    def _take_distinct(self, scan: FileScan, c_lo: int, c_hi: int, cuts: Sequence[int] = ()) -> None:
        """Number the scan's distinct properties ``c_lo`` to ``c_hi`` in the columns, in order.

        Odd ones one by one (read here), the others at once unless a text was met another
        way already (decoded, or canonicalised); ``cuts``: where the files' (runs') distinct
        properties end, ascending (see :meth:`_take_plain`).
        """
        odd = scan.odd
        at = c_lo
        for c in odd[bisect_left(odd, c_lo) : bisect_left(odd, c_hi)]:
            if c > at:
                self._take_plain(scan, at, c, cuts)
            self._take_one(scan, c)
            at = c + 1
        if at < c_hi:
            self._take_plain(scan, at, c_hi, cuts)

    def _take_one(self, scan: FileScan, c: int) -> None:
        d = self._scanned(scan, c)
        if d != c:
            self.same = False
        self.cmap.append(d)

    def _take_plain(self, scan: FileScan, c_lo: int, c_hi: int, cuts: Sequence[int] = ()) -> None:
        """:meth:`_take_distinct` of distinct properties none of which is odd.

        Where a text was met another way, the distinct properties are taken one by one (a
        new one's type is then the string the decoded blobs gave, not the scan's: marshal
        shows which objects are shared, so the catalog cache's bytes depend on it), as file
        by file: only those of the files (runs, ended at ``cuts``) that hold such a text.
        """
        i0, i1 = c_lo - scan.first, c_hi - scan.first
        if self.known_texts and not self.known_texts.isdisjoint(scan.texts[i0:i1]):
            inner = cuts[bisect_right(cuts, c_lo) : bisect_left(cuts, c_hi)]
            if inner:  # each file's part as its own (known_texts does not grow meanwhile: no odd one)
                at = c_lo
                for c in (*inner, c_hi):
                    if c > at:
                        self._take_plain(scan, at, c)
                    at = c
                return
            for c in range(c_lo, c_hi):
                self._take_one(scan, c)
            return
        keys = scan.keys[i0:i1]
        self._take_keys(max(keys) + 1)
        base = len(self.dist_type)
        if base != c_lo:
            self.same = False
        self.cmap.extend(range(base, base + c_hi - c_lo))
        self.dist_type += map(self.type_names.__getitem__, scan.types[i0:i1])
        self.dist_json += scan.texts[i0:i1]
        self.forms += scan.flags[i0:i1].translate(_FORM_OF_FLAGS)
        self.d_list.extend(map(self.key_list.__getitem__, keys))
        self.d_ver.extend(scan.versions[i0:i1])
        if self.parsed_types:  # the values of types read by their parsers: decoded at once, read in order
            parsed_types = self.parsed_types
            picked = [i for i, t in enumerate(scan.types[i0:i1]) if t in parsed_types]
            if picked:
                texts, types, names = scan.texts, scan.types, self.type_names
                values = orjson.loads(b"".join((b"[", b",".join([texts[i0 + i] for i in picked]), b"]")))
                for i, value in zip(picked, values, strict=True):
                    self._read(base + i, names[types[i0 + i]], value)

    def _scanned(self, scan: FileScan, c: int) -> int:
        """The distinct property of the scan's ``c`` (as :meth:`_distinct` of the blob it was read from).

        Raises:
            Bail: as :meth:`_distinct`, or its value does not read (a number orjson refuses).
        """
        i = c - scan.first
        flags = scan.flags[i]
        ptype = self.type_names[scan.types[i]]
        text = scan.texts[i]
        value: Any = _UNREAD
        if flags & SCAN_CANONICALISE:
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                raise Bail from None
            text = bytes(memoryview(orjson.dumps(value)))
        form = flags & SCAN_VALUE_FIRST
        if ptype in self.identity:
            d = self.identities.get((ptype, text))
            if d is None and flags & SCAN_CANONICALISE:
                d = self._scanned_as(ptype, text, False)
            if d is not None:
                return d
            d = self._new(ptype, text)
            if flags & SCAN_CANONICALISE:
                self.identities[(ptype, text)] = d
                self.known_texts.add(text)
        else:
            d = self.by_key.get((ptype, text))
            if d is None and flags & SCAN_CANONICALISE:
                d = self._scanned_as(ptype, text, bool(form))
                if d is None and self._scanned_as(ptype, text, not form) is not None:
                    raise Bail  # the same property, written the other way round
            if d is not None:  # the same property, from a blob written the same way (else: two ways)
                known = self.forms[d]
                if known == form or (known == _DECODED and self.by_blob.get(_blob(ptype, text, form)) == d):
                    return d
                raise Bail
            d = self._new(ptype, text)
            if flags & SCAN_CANONICALISE:
                self.by_key[(ptype, text)] = d
                self.known_texts.add(text)
            self.forms[d] = form  # its blob's text is not kept: its form tells it
        if flags & SCAN_ODD or ptype in self.by_parser:
            self._read(d, ptype, value if value is not _UNREAD else orjson.loads(text))
        else:
            key = scan.keys[i]
            self._take_keys(key + 1)
            self.d_list[d] = self.key_list[key]
            self.d_ver[d] = scan.versions[i]
        return d

    def _scanned_as(self, ptype: str, text: bytes, value_first: bool) -> int | None:
        """The distinct property of a plain scanned property (type, text, form) numbered already, or ``None``."""
        if self.scanner is None:
            return None
        c = self.scanner.find(ptype, text, value_first)
        return self.cmap[c] if 0 <= c < len(self.cmap) else None

    def _distinct(self, p: Any, key: bytes) -> int:
        """The distinct property of a property blob (its JSON text ``key``), numbered, parsed and filed if new.

        Raises:
            Bail: the blob is not an object with a type and a value, or another blob wrote
                the same property another way (key order, extra keys): the object loader
                keeps those apart (validation reports them apart).
        """
        d = self.by_blob.get(key)
        if d is not None:
            return d
        if type(p) is not dict:
            raise Bail
        ptype = p.get("type")
        if type(ptype) is not str or not ptype or "value" not in p:
            raise Bail
        value = p["value"]
        if ptype in self.identity:  # an identity is its bundle's own: it does not recur
            return self._identity(ptype, value)
        # compact copies: orjson's results keep a larger buffer, too much to keep
        text = bytes(memoryview(orjson.dumps(value)))
        d = self.by_key.get((ptype, text))
        if d is None:
            for form in (0, SCAN_VALUE_FIRST):
                d = self._scanned_as(ptype, text, bool(form))
                if d is not None:
                    break
        if d is not None:
            if self.forms[d] != _DECODED and key == _blob(ptype, text, self.forms[d]):
                self.by_blob[bytes(memoryview(key))] = d  # a scanned property, written the same way
                return d
            raise Bail
        d = self.by_key[(ptype, text)] = self.by_blob[bytes(memoryview(key))] = self._new(ptype, text)
        if self.scanner is not None:  # the scan's runs are checked against it
            self.known_texts.add(text)
        self._read(d, ptype, value)
        return d

    def _new(self, ptype: str, text: bytes) -> int:
        """A new distinct property (no list, no version)."""
        d = len(self.dist_type)
        self.dist_type.append(self.types.setdefault(ptype, ptype))  # one string per type
        self.dist_json.append(text)
        self.forms.append(_DECODED)
        self.d_list.append(-1)
        self.d_ver.append(-1)
        return d

    def _identity(self, ptype: str, value: Any) -> int:
        """The distinct property of an identity property (numbered, parsed and filed if new).

        Bundles with one identity share it: the object loader shares no identity, but
        theirs are equal.
        """
        text = bytes(memoryview(orjson.dumps(value)))
        d = self.identities.get((ptype, text))
        if d is None:
            d = self._scanned_as(ptype, text, False)
        if d is None:
            d = self.identities[(ptype, text)] = self._new(ptype, text)
            if self.scanner is not None:
                self.known_texts.add(text)
            self._read(d, ptype, value)
        return d

    def _list(self, ptype: str, key: Hashable) -> int:
        """The index list of ``key`` of type ``ptype``."""
        lists = self.lists_of[ptype]
        found = lists.get(key)
        if found is None:
            found = lists[key] = len(self.list_keys)
            self.list_keys.append(key)
        return found

    def _version(self, d: int, version: str | None) -> None:
        """Give identity ``d`` the version ``version`` (a code ``<= -2``, see :func:`_versions`)."""
        self.d_ver[d] = -2 - len(self.py_versions)
        self.py_versions.append(version)

    def _read(self, d: int, ptype: str, value: Any) -> None:
        """File distinct property ``d`` of ``ptype`` (decoded ``value``): its lists and version, parsed if need be."""
        reading = self.fields.get(ptype)
        if reading is not None:
            strings = _plain(reading, value)
            if strings is not None:  # read through its fields: not parsed
                key = strings[0] if reading.key_fields == 1 else tuple(strings[: reading.key_fields])
                self.d_list[d] = self._list(ptype, key)
                if ptype in self.identity:
                    self._version(d, strings[1])
                return
        parse = self.identity.get(ptype)
        if parse is not None:
            try:
                parsed = self.parsed[d] = parse(value)
            except _PARSE_ERRORS:
                pass
            else:
                self._version(d, getattr(parsed, "version", None))
        pt = self.indexers.get(ptype)
        if pt is not None:
            try:
                parsed = self.parsed.get(d)
                if parsed is None:
                    parsed = self.parsed[d] = pt.parse(value)
                lists = tuple(self._list(ptype, k) for k in pt.index_keys(parsed))  # type: ignore[misc]
            except _PARSE_ERRORS:
                lists = ()
            if len(lists) == 1:
                self.d_list[d] = lists[0]
            elif lists:
                self.d_list[d] = -2 - len(self.ex_lists)
                self.ex_lists.append(lists)

    def count(self) -> int:
        """The number of bundles read."""
        return len(self.r_name)

    def _filed(self) -> tuple[list[str | None], array[int], array[int]]:
        """Each row's version (in the order read) and each list's rows: ``rows[start[l]:start[l + 1]]``."""
        ex_start = array("i", [0])
        ex_start.extend(accumulate(map(len, self.ex_lists)))
        ex = array("i", [lst for lists in self.ex_lists for lst in lists])
        first, list_start, rows = rows_index(
            self.r_start, self.refs, self.d_ver, self.d_list, ex_start, ex, len(self.list_keys)
        )
        return list(map(_versions(self.strings, self.py_versions).__getitem__, first)), list_start, rows

    def columns(self) -> tuple[BundleColumns, array[int], array[int], dict[int, int] | None]:
        """The columns (bundles package by package), each row's file and line, and (when
        packages were interleaved across files) the row of each bundle read, else ``None``."""
        packages = list(self.packages)
        if not self.r_name:
            empty = BundleColumns(packages, array("i"), [], [], [], array("i", [0]), array("i"), [], [])
            return empty, array("i"), array("i"), None
        versions, list_start, rows = self._filed()
        self.list_start, self.rows = list_start, rows
        b_pkg, names, images = self.r_pkg, self.r_name, self.r_image
        files, lines = self.r_file, self.r_line
        dist_type, dist_json = self.dist_type, self.dist_json
        row_of: dict[int, int] | None = None
        if ascending(b_pkg):
            refs, starts = self.refs, self.r_start
        else:  # packages interleaved across files: group them
            groups: list[list[int]] = [[] for _ in packages]
            for i, pn in enumerate(b_pkg):
                groups[pn].append(i)
            order = [i for g in groups for i in g]
            row_of = {i: r for r, i in enumerate(order)}
            offsets = self.r_start
            refs = array("i")
            starts = array("i", [0])
            for i in order:
                refs.extend(self.refs[offsets[i] : offsets[i + 1]])
                starts.append(len(refs))
            b_pkg, files, lines = (array("i", [column[i] for i in order]) for column in (b_pkg, files, lines))
            names = [names[i] for i in order]
            versions = [versions[i] for i in order]
            images = [images[i] for i in order]
            # distinct properties numbered in the order the columns first name them
            renumber: dict[int, int] = dict.fromkeys(refs, 0)
            for new, d in enumerate(renumber):
                renumber[d] = new
            refs = array("i", map(renumber.__getitem__, refs))
            dist_type, dist_json = list(dist_type), list(dist_json)
            d_ver, d_list = array("i", self.d_ver), array("i", self.d_list)
            for d, new in renumber.items():
                dist_type[new] = self.dist_type[d]
                dist_json[new] = self.dist_json[d]
                d_ver[new] = self.d_ver[d]
                d_list[new] = self.d_list[d]
            self.d_ver, self.d_list = d_ver, d_list
            self.parsed = {renumber[d]: v for d, v in self.parsed.items()}
        columns = BundleColumns(packages, b_pkg, names, versions, images, starts, refs, dist_type, dist_json)
        return columns, files, lines, row_of

    def catalog_parts(self, parsed: dict[int, Any]) -> tuple[BundleColumns, LazyBundles, dict[str, IndexKeys]]:
        """The columns, the lazy bundles over them (filing parsed values in ``parsed``) and the index."""
        self.by_blob = {}  # the reading's tables first: less at the peak
        self.by_key = {}
        self.identities = {}
        self.known_texts = set()
        self.scanner = None  # its texts and tables (C memory)
        self.cmap = array("i")
        self.forms = bytearray()
        columns, files, lines, row_of = self.columns()
        self.r_pkg, self.r_name, self.r_image = array("i"), [], []
        self.r_file, self.r_line, self.r_start = array("i"), array("i"), array("i", [0])
        extra = self.extra
        index: dict[str, dict[Hashable, Any]] = {}
        if len(columns):
            list_start, rows = self.list_start, self.rows
            for n in self.indexers:
                index[n] = {
                    k: rows[list_start[lst] : list_start[lst + 1]]
                    for k, lst in self.lists_of[n].items()
                    if list_start[lst] != list_start[lst + 1]
                }
        else:
            index = {n: {} for n in self.indexers}
        self.list_start, self.rows = array("i"), array("i")
        if row_of is not None:  # from the order read to the columns' order
            extra = {row_of[i]: v for i, v in extra.items()}
            index = {n: {k: array("i", map(row_of.__getitem__, v)) for k, v in idx.items()} for n, idx in index.items()}
        # what the values in self.parsed were parsed with: the identities' and indexed types' parsers
        parsed_with = {**self.identity, **{n: pt.parse for n, pt in self.indexers.items()}}
        plain = _PlainIdentities(
            self.d_ver,
            self.d_list,
            self.list_keys,
            self.strings,
            self.py_versions,
            self.parsed,
            columns.dist_type,
            {n: f.key_fields for n, f in self.fields.items() if n in self.identity},
            {n: self.indexers[n].parse for n in self.fields if n not in self.identity},
            columns.values,
        )
        bundles = LazyBundles(columns, self.files, files, lines, extra, self.parsed, parsed_with, parsed, plain)
        return columns, bundles, {n: IndexKeys(idx, columns) for n, idx in index.items()}


def _versions(strings: list[str], py_versions: list[str | None]) -> list[str | None]:
    """The versions by their codes (``table[code]``): a string of the scan's (``code >= 0``),
    ``py_versions[-2 - code]`` (``code <= -2``), or none (``-1``)."""
    return [*strings, *reversed(py_versions), None]


def _plain(reading: ValueFields, value: Any) -> list[str] | None:
    """The fields' strings of a plain value (see :class:`~olmkit.types.ValueFields`), else ``None``."""
    if type(value) is not dict or len(value) != len(reading.fields):
        return None
    out = []
    for field in reading.fields:
        found = value.get(field)
        if type(found) is not str or (not found and field not in reading.may_be_empty):
            return None
        out.append(found)
    return out


class _PlainIdentities:
    """The parsed values of the distinct properties read through their fields, made when asked (not kept here).

    An identity's is made from its strings; another type's by its parser (``parse``: type ->
    parser) from its decoded value (``decode``: distinct properties -> values).
    """

    def __init__(
        self,
        d_ver: array[int],
        d_list: array[int],
        list_keys: list[Hashable],
        strings: list[str],
        py_versions: list[str | None],
        parsed: Mapping[int, Any],
        dist_type: list[str],
        key_fields: Mapping[str, int],
        parse: Mapping[str, Callable[[Any], Any]],
        decode: Callable[[list[int]], list[Any]],
    ) -> None:
        self._parse = parse
        self._decode = decode
        self._d_ver = d_ver
        self._d_list = d_list
        self._list_keys = list_keys
        self._strings = strings
        self._py_versions = py_versions
        self._parsed = parsed
        self._dist_type = dist_type
        self._key_fields = key_fields

    def get(self, d: int) -> Any:
        """The parsed value of distinct property ``d`` if it is such an identity, else ``_FAILED``."""
        code = self._d_ver[d]
        if code == -1 or d in self._parsed:
            return _FAILED
        key = self._list_keys[self._d_list[d]]
        package = key if self._key_fields[self._dist_type[d]] == 1 else key[0]  # type: ignore[index]
        version = self._strings[code] if code >= 0 else self._py_versions[-2 - code]
        return PackageIdentity(package, version)  # type: ignore[arg-type]

    def columns(self, ds: Iterable[int]) -> tuple[list[str], list[str | None]] | None:
        """Package and version of identities ``ds`` (each plain, or parsed to a PackageIdentity), else ``None``."""
        ds = list(ds)
        codes = list(map(self._d_ver.__getitem__, ds))
        if -1 in codes:
            return None
        parsed = self._parsed
        if parsed and not parsed.keys().isdisjoint(ds):
            values = [parsed.get(d) for d in ds]
            if any(v is not None and type(v) is not PackageIdentity for v in values):
                return None
            got = [v if v is not None else self.get(d) for d, v in zip(ds, values, strict=True)]
            return [v.package for v in got], [v.version for v in got]
        key_fields = self._key_fields
        if any(key_fields.get(t) != 1 for t in set(map(self._dist_type.__getitem__, ds))):
            got = list(map(self.get, ds))
            return [v.package for v in got], [v.version for v in got]
        table = _versions(self._strings, self._py_versions)
        packages = list(map(self._list_keys.__getitem__, map(self._d_list.__getitem__, ds)))
        return packages, list(map(table.__getitem__, codes))  # type: ignore[return-value]

    def numbers(self, ds: array[int]) -> tuple[array[int], list[Hashable], array[int], list[str]] | None:
        """Per identity of ``ds``: the number of its package in ``keys`` and of its version in ``versions``.

        ``(packages, keys, versions_at, versions)``, two int arrays and the tables they
        number into; ``None`` unless each of ``ds`` was read through its fields (not
        parsed), with one key field and a version the scan kept.
        """
        codes = take(self._d_ver, ds)
        if codes and min(codes) < 0:
            return None  # no version read (-1), or one kept in Python (<= -2)
        if not self._parsed.keys().isdisjoint(ds):  # one of ds parsed
            return None
        key_fields = self._key_fields
        if any(n != 1 for n in key_fields.values()) and any(
            key_fields.get(t) != 1 for t in set(map(self._dist_type.__getitem__, ds))
        ):
            return None
        lists = take(self._d_list, ds)
        if lists and min(lists) < 0:
            return None
        return lists, self._list_keys, codes, self._strings

    def all(self) -> dict[int, Any]:
        """Every such distinct property's parsed value (what the loader would have parsed), by number."""
        parsed, d_ver, d_list, dist_type, parse = self._parsed, self._d_ver, self._d_list, self._dist_type, self._parse
        get = self.get
        found = {d: get(d) for d in range(len(d_ver)) if d_ver[d] != -1 and d not in parsed}
        # the others read through their fields: filed under a key, not parsed (a failed parse files none)
        rest = (
            [d for d in range(len(d_list)) if d_list[d] != -1 and dist_type[d] in parse and d not in parsed]
            if parse
            else []
        )
        for d, value in zip(rest, self._decode(rest), strict=True):
            found[d] = parse[dist_type[d]](value)  # plain: it parses
        return found


class LazyBundles(Mapping[str, Mapping[str, Bundle]]):
    """``package -> name -> bundle`` over the columns: each package's bundles built on first access.

    Args:
        columns: the bundles.
        paths: the files read; ``files`` and ``lines``: each row's file (index) and line.
        extra: bundle row -> its extra fields (only bundles that have some).
        parsed: distinct property -> its parsed value, filed in ``catalog_parsed`` by
            ``id`` of the property built for it (the catalog's :meth:`~Catalog.parsed`).
    """

    def __init__(
        self,
        columns: BundleColumns,
        paths: list[str],
        files: array[int],
        lines: array[int],
        extra: Mapping[int, Mapping[str, Any]],
        parsed: dict[int, Any],
        parsed_with: Mapping[str, Callable[[Any], Any]],
        catalog_parsed: dict[int, Any],
        plain: _PlainIdentities | None = None,
    ) -> None:
        self.columns = columns
        self._paths = paths
        self._files = files
        self._lines = lines
        self._extra = extra
        self._parsed = parsed
        self._plain = plain  # the identities not parsed, until parsed_view asks for every one
        self._identities = plain
        self._catalog_parsed = catalog_parsed
        self._props: list[Property | None] = [None] * len(columns.dist_type)
        #: type -> the function the values in ``parsed`` of that type were parsed with
        self.parsed_with = parsed_with
        self._number = {p: n for n, p in enumerate(columns.packages)}
        self._done: dict[str, Mapping[str, Bundle]] = {}

    def __getitem__(self, package: str) -> Mapping[str, Bundle]:
        found = self._done.get(package)
        if found is None:
            found = self._done[package] = MappingProxyType(self._build(package))
        return found

    def _build(self, package: str) -> dict[str, Bundle]:
        c = self.columns
        rows = self.span(package)
        if package not in self._number:
            raise KeyError(package)
        first, end = rows.start, rows.stop
        starts, refs = c.prop_start, c.prop_ref
        props = self._props
        # the package's properties not built yet
        self._make([d for d in dict.fromkeys(refs[starts[first] : starts[end]]) if props[d] is None])
        pick = props.__getitem__
        names, versions, images = c.bundle_name, c.bundle_version, c.bundle_image
        paths, files, lines, extra = self._paths, self._files, self._lines, self._extra
        return {
            names[i]: new_bundle(
                names[i],
                package,
                versions[i],
                images[i],
                tuple(map(pick, refs[starts[i] : starts[i + 1]])),  # type: ignore[arg-type]
                new_origin(paths[files[i]], lines[i]),
                extra.get(i),
            )
            for i in range(first, end)
        }

    def _make(self, missing: list[int]) -> None:
        """Build the properties of distinct properties ``missing`` (their values decoded at once)."""
        if not missing:
            return
        c, props = self.columns, self._props
        dist_type, parsed, catalog_parsed, plain = c.dist_type, self._parsed, self._catalog_parsed, self._plain
        for d, value in zip(missing, c.values(missing), strict=True):
            prop = props[d] = new_property(dist_type[d], value)
            known = parsed.get(d, _FAILED)
            if known is _FAILED and plain is not None:
                known = plain.get(d)
            if known is not _FAILED:
                catalog_parsed[id(prop)] = known

    def properties(self, row: int) -> tuple[Property, ...]:
        """The properties of the bundle of ``row``, the very objects its bundle holds once built."""
        c, props = self.columns, self._props
        ds = c.prop_ref[c.prop_start[row] : c.prop_start[row + 1]]
        self._make([d for d in dict.fromkeys(ds) if props[d] is None])
        return tuple(map(props.__getitem__, ds))  # type: ignore[arg-type]

    def span(self, package: str) -> range:
        """The rows of a package's bundles (empty for a package without bundles)."""
        pn = self._number.get(package)
        if pn is None:
            return range(0)
        b_pkg = self.columns.bundle_package
        first = bisect_left(b_pkg, pn)
        return range(first, bisect_right(b_pkg, pn, first))

    def origin(self, row: int) -> Origin:
        """Where the bundle of ``row`` was read."""
        return new_origin(*self.where(row))

    def where(self, row: int) -> tuple[str, int]:
        """Where the bundle of ``row`` was read: file and line."""
        return self._paths[self._files[row]], self._lines[row]

    @property
    def extra(self) -> Mapping[int, Mapping[str, Any]]:
        """Row -> the bundle's extra fields (bundles that have some)."""
        return self._extra

    def identities(self, ds: Iterable[int]) -> tuple[list[str], list[str | None]] | None:
        """The package and version of each identity property ``ds``, without a PackageIdentity per property.

        ``None`` unless each is an identity that parses to exactly a
        :class:`~olmkit.types.PackageIdentity` (read through its fields, or parsed).
        """
        if self._identities is None:
            return None
        return self._identities.columns(ds)

    def parsed_so_far(self) -> Mapping[int, Any]:
        """:meth:`parsed_view` without making the values read through their fields (read-only, no copy).

        Those values are missing (until :meth:`parsed_view` makes them): :meth:`identities`
        reads the identities' package and version; parsing another such value gives it.
        """
        return MappingProxyType(self._parsed)

    def parsed_view(self) -> Mapping[int, Any]:
        """Distinct property -> its value as the loader parsed it (read-only, no copy).

        The identities read through their fields are made now, every one (once).
        """
        if self._plain is not None:
            self._parsed.update(self._plain.all())
            self._plain = None
        return MappingProxyType(self._parsed)

    def identity_numbers(self, ds: array[int]) -> tuple[array[int], list[Hashable], array[int], list[str]] | None:
        """:meth:`identities` as numbers: ``(packages, keys, versions_at, versions)``.

        Identity ``ds[i]``'s package is ``keys[packages[i]]`` and its version
        ``versions[versions_at[i]]``. ``None`` unless each was read through its fields
        (not parsed), with one key field and a version: then use :meth:`identities`.
        """
        if self._identities is None:
            return None
        return self._identities.numbers(ds)

    def build_all(self) -> None:
        """Build every package's bundles (for a caller that reads them all)."""
        self._make([d for d, prop in enumerate(self._props) if prop is None])  # every value decoded at once
        for package in self._number:
            self[package]

    def __iter__(self) -> Iterator[str]:
        return iter(self._number)

    def __len__(self) -> int:
        return len(self._number)

    def __contains__(self, key: object) -> bool:
        return key in self._number


class IndexKeys(Mapping[Hashable, list[tuple[str, str]]]):
    """One property type's index: ``key -> [(package, bundle name)]``, each key's list made on first use.

    Args:
        lists: key -> the rows of the bundles filed under it, in the order read (``array("i")`` slices).
        columns: the bundles.
    """

    def __init__(self, lists: dict[Hashable, Sequence[int]], columns: BundleColumns) -> None:
        self.lists = lists
        self._columns = columns
        self._done: dict[Hashable, list[tuple[str, str]]] = {}

    def __getitem__(self, key: Hashable) -> list[tuple[str, str]]:
        found = self._done.get(key)
        if found is None:
            c = self._columns
            packages, b_pkg, names = c.packages, c.bundle_package, c.bundle_name
            found = self._done[key] = [(packages[b_pkg[i]], names[i]) for i in self.lists[key]]
        return found

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.lists)

    def __len__(self) -> int:
        return len(self.lists)

    def __contains__(self, key: object) -> bool:
        return key in self.lists
