"""Compiling a catalog's graph from its :class:`~olmkit.catalog.BundleColumns` (the fast path).

The graph is byte-identical to :class:`~olmkit.resolver._compile._Compiler`'s, which
remains the definition. The columns number each bundle's property occurrences by distinct
property, and the registered callables are deterministic in the value, so everything per
property is done once per *distinct* property: parsed, its uniqueness key, its
requirement's predicate, its prohibition. The per-bundle work is then ints only: the
classes' codes and keys, numbered in the order bundles use them, are laid out by
:func:`olmkit._solver.lay_out` (C, or its pure twin) without a Python object per bundle
or property occurrence. A predicate that describes itself as a program (see
:class:`_Encoder`) has its list selected by :func:`olmkit._solver.select` (C, or its pure
twin) over the columns; the others are gathered as the general compiler gathers them, over
bundle views made from the columns (one :class:`~olmkit.model.Property` per distinct
property, made when a predicate reads it).

Whatever the general compiler handles by its slow paths (a property of a registered type
that does not parse, a requirement that does not build or reads the bundle's name) makes
this path give up: the caller then compiles the catalog the general way. A catalog with a
broken channel has its lists gathered the general way (a broken channel's error may be a
list's answer, and which one depends on the candidates' order).
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from itertools import accumulate, chain, compress
from operator import attrgetter, itemgetter
from typing import Any, Final

import orjson

from olmkit.catalog.semver import Range, parse_range, parse_version
from olmkit.model import Property
from olmkit.registry import Registry
from olmkit.resolver._compile import _append_lists, _Compiler, _file_lists, _json, compile_general
from olmkit.resolver._graph import CatalogGraph
from olmkit.resolver._views import Context, property_key
from olmkit.types import EachForm, FieldsForm, KeyedForm, PackageIdentity, PatternForm, RangeForm

__all__ = ["compile_columns", "compile_graph"]

_package: Final = attrgetter("package")
_version: Final = attrgetter("version")


class _ColumnView:
    """A bundle as predicates see it (a ``PropertyView``, as :class:`BundleView`), read from the columns.

    Made per candidate a predicate asks about: it holds its class and reads the compiler's
    per-distinct-property tables; the Property objects are made only if asked for.
    """

    __slots__ = ("_c", "_cls", "_key", "_properties")

    def __init__(self, compiler: _ColumnCompiler, cls: int) -> None:
        self._c = compiler
        self._cls = cls
        self._properties: tuple[Property, ...] | None = None
        self._key: bytes | None = None

    @property
    def name(self) -> str:
        return self._c.columns.bundle_name[self._cls]  # type: ignore[no-any-return]

    @property
    def package(self) -> str:
        cols = self._c.columns
        return cols.packages[cols.bundle_package[self._cls]]  # type: ignore[no-any-return]

    @property
    def version(self) -> str | None:
        return self._c.columns.bundle_version[self._cls]  # type: ignore[no-any-return]

    def _atoms(self) -> Any:
        cols = self._c.columns
        cls = self._cls
        return cols.prop_ref[cols.prop_start[cls] : cols.prop_start[cls + 1]]

    @property
    def properties(self) -> tuple[Property, ...]:
        """The bundle's properties, those of inline types left out (as :class:`BundleView`)."""
        found = self._properties
        if found is None:
            c = self._c
            inline = c.inline
            types = c.columns.dist_type
            prop = c._prop
            found = self._properties = tuple([prop(d) for d in self._atoms() if types[d] not in inline])
        return found

    def values(self, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` (every one parses: see the module docstring)."""
        c = self._c
        types = c.columns.dist_type
        if type_name in c.inline:
            return ()
        if type_name not in c.registry.property_types:
            return tuple([c.columns.value(d) for d in self._atoms() if types[d] == type_name])
        value = c.value
        return tuple([value(d) for d in self._atoms() if types[d] == type_name])

    @property
    def property_key(self) -> bytes:
        """A canonical key of the property list (as :attr:`BundleView.property_key`)."""
        if self._key is None:
            self._key = property_key(self.properties)
        return self._key


class _NoProgram(Exception):
    """A predicate's program holds a node the compiler does not evaluate: it is asked instead."""


#: a value not parsed yet (read through its form): parsed when a view asks
_UNREAD: Final = object()

#: the comparisons of :func:`olmkit._solver.select`'s ranked nodes, by a range's operator
_COMPARISONS = {"=": 0, ">=": 1, "<": 2, ">": 3, "<=": 4}


class _Encoder:
    """Predicates' programs as :func:`olmkit._solver.select` programs over the columns.

    A predicate may describe what it matches as a ``program`` (a tuple tree), which the
    compiler evaluates for every candidate in C instead of asking the predicate:

    * ``("lookup", (type, key))``: the bundle is filed under the index key (as an
      ``exact`` predicate's lookup);
    * ``("identity", type, package, range)``: the bundle carries a property of ``type``
      that parses to a :class:`~olmkit.types.PackageIdentity` of ``package`` whose version
      (read tolerantly, as blang's ``ParseTolerant``) is in ``range`` (a
      :class:`~olmkit.catalog.semver.Range`);
    * ``("has_type", type)``: the bundle carries a property of ``type`` (inline ones are
      not seen);
    * ``("all" | "any" | "none", *programs)``: every one, at least one, none of them.

    Every property of the catalog parses (else the general compiler runs), so a program
    and the predicate's ``matches`` agree.
    """

    def __init__(self, compiler: _ColumnCompiler) -> None:
        self.c = compiler
        cols = compiler.columns
        #: the types' numbers (as the compiler numbered them) and each distinct property's
        self.type_id: dict[str, int] = compiler.type_id
        self.atom_type = compiler.atom_type
        n = len(cols.dist_type)
        self.atom_owner = array("i", [-1]) * n
        self.atom_rank = array("i", [-1]) * n
        #: per identity type: package -> owner number, and the sorted distinct version keys
        self.identities: dict[str, tuple[dict[str, int], list[Any]]] = {}
        self.sets: dict[Any, int] = {}
        self.set_start = array("i", [0])
        self.set_rows = array("i")
        self._ranges: dict[tuple[str, Any], list[int]] = {}
        from olmkit._solver import ascending

        self._ascending = ascending
        self._range_texts: dict[tuple[str, str], list[int]] = {}

    def set_of(self, lookup: Any) -> int:
        """The number of a lookup's set of candidates (ascending classes)."""
        s = self.sets.get(lookup)
        if s is None:
            s = self.sets[lookup] = len(self.sets)
            rows = self.c._candidates(lookup)
            # the index's rows are ascending already (an int array: copied as it is)
            if type(rows) is not array or rows.typecode != "i" or not self._ascending(rows):
                rows = sorted(rows)
            self.set_rows.extend(rows)
            self.set_start.append(len(self.set_rows))
        return s

    def node(self, program: Any, out: array[int]) -> None:
        """Append the encoding of ``program`` to ``out``.

        Raises:
            _NoProgram: a node the compiler does not know.
        """
        if type(program) is not tuple or not program:
            raise _NoProgram
        tag = program[0]
        if tag == "lookup" and len(program) == 2:
            out.append(0)
            out.append(self.set_of(program[1]))
        elif tag == "identity" and len(program) == 4:
            _, type_name, package, version_range = program
            if not isinstance(type_name, str) or not isinstance(version_range, Range):
                raise _NoProgram
            owners, _ = self.identity(type_name)
            out.extend((1, self.type_id.get(type_name, -1), owners.get(package, -1)))
            out.extend(self._range(type_name, version_range))
        elif tag == "has_type" and len(program) == 2:
            out.append(2)
            out.append(self.has_type(program[1]))
        elif tag in ("all", "any", "none"):
            out.append(3 if tag == "all" else 4 if tag == "any" else 5)
            out.append(len(program) - 1)
            for child in program[1:]:
                self.node(child, out)
        else:
            raise _NoProgram

    def has_type(self, type_name: str) -> int:
        """The type number a has-type node asks for (-1: no bundle carries it as seen)."""
        return -1 if type_name in self.c.inline else self.type_id.get(type_name, -1)

    def range_of_text(self, type_name: str, text: str) -> list[int]:
        """:meth:`_range` of a range's text.

        Raises:
            ValueError: the range does not parse.
        """
        cache_key = (type_name, text)
        found = self._range_texts.get(cache_key)
        if found is None:
            found = self._range_texts[cache_key] = self._range(type_name, parse_range(text))
        return found

    def identity(self, type_name: str) -> tuple[dict[str, int], list[Any]]:
        """The owners and sorted version keys of ``type_name``'s identities (ranks filled in once)."""
        found = self.identities.get(type_name)
        if found is None:
            from olmkit._solver import scatter

            c = self.c
            numbers = c.identity_numbers.get(type_name)
            if numbers is not None:
                found = self.identities[type_name] = self._identity_numbers(*numbers)
                return found
            ds: Sequence[int] = []
            identities: list[Any] = []
            read = c.identity_columns.get(type_name)
            if read is not None:  # read from the loader's columns: every one a PackageIdentity
                ds, packages, versions = read
            else:
                if type_name not in c.inline and type_name in c.registry.property_types:
                    ds = c.by_type.get(type_name, [])
                    values = c.values
                    value = c.value
                    identities = [values[d] if values[d] is not _UNREAD else value(d) for d in ds]
                if set(map(type, identities)) - {PackageIdentity}:
                    keep = [isinstance(i, PackageIdentity) for i in identities]
                    ds = list(compress(ds, keep))
                    identities = list(compress(identities, keep))
                packages = list(map(_package, identities))
                versions = list(map(_version, identities))
            keys, rank_of = _version_ranks(versions)
            # owners: every package (one whose versions are all unread has no rank to match)
            owners = {package: i for i, package in enumerate(dict.fromkeys(packages))}
            at = ds if type(ds) is array else array("i", ds)
            scatter(self.atom_owner, at, array("i", map(owners.__getitem__, packages)))
            scatter(self.atom_rank, at, array("i", map(rank_of.__getitem__, versions)))
            found = self.identities[type_name] = (owners, keys)
        return found

    def _identity_numbers(
        self, at: array[int], lists: array[int], table: list[Any], codes: array[int], strings: list[str]
    ) -> tuple[dict[str, int], list[Any]]:
        """:meth:`identity` of identities read as numbers (see ``LazyBundles.identity_numbers``)."""
        from olmkit._solver import scatter, take

        used = set(codes)
        keys, rank_of = _version_ranks(map(strings.__getitem__, used))
        rank_by = array("i", [-1]) * len(strings)
        for code in used:
            rank_by[code] = rank_of[strings[code]]
        # owners: every package, in order of first appearance
        owners: dict[str, int] = {}
        owner_by = array("i", [-1]) * len(table)
        for i, number in enumerate(dict.fromkeys(lists)):
            owners[table[number]] = owner_by[number] = i
        scatter(self.atom_owner, at, take(owner_by, lists))
        scatter(self.atom_rank, at, take(rank_by, codes))
        return owners, keys

    def _range(self, type_name: str, version_range: Range) -> list[int]:
        """A range's alternatives as rank comparisons over ``type_name``'s versions."""
        cache_key = (type_name, version_range)
        found = self._ranges.get(cache_key)
        if found is None:
            keys = self.identity(type_name)[1]
            found = [len(version_range.alternatives)]
            for alternative in version_range.alternatives:
                found.append(len(alternative))
                for op, bound in alternative:
                    b = bound._key
                    found += (_COMPARISONS.get(op, 5), bisect_left(keys, b), bisect_right(keys, b))
            self._ranges[cache_key] = found
        return found


def _version_ranks(texts: Iterable[str | None]) -> tuple[list[Any], dict[str | None, int]]:
    """The sorted distinct version keys of ``texts``, and each text's rank among them (-1: unread).

    Each distinct text is read once (tolerantly, as ``matches`` reads it).
    """
    version_key: dict[str | None, Any] = {}
    for text in set(texts):
        try:
            version_key[text] = parse_version(text, tolerant=True)._key if text is not None else None
        except ValueError:
            version_key[text] = None
    keys = sorted({key for key in version_key.values() if key is not None})
    rank = {key: i for i, key in enumerate(keys)}
    return keys, {text: rank[key] if key is not None else -1 for text, key in version_key.items()}


#: a requirement value read through its form (see :class:`_Forms`)
_Reading = tuple[Any, Any, Any, tuple[int, ...], int, Any]

#: a reading's key, and its program
_first: Final = itemgetter(0)
_program: Final = itemgetter(3)


class _NotPlain(Exception):
    """A value its form does not read (the plugin's callables build it)."""


class _Forms:
    """Plain requirement values read through their forms (see :class:`olmkit.types.FieldsForm`).

    :meth:`read` gives a value's *reading*: ``(key, lookup, lookups, program, lookup_set,
    lookups_sets)``, where ``key`` is equal for two values exactly when their predicates
    are, ``lookup`` and ``lookups`` are the predicate's ``lookup`` and ``lookups``
    attributes, ``program`` its program as :meth:`_Encoder.node` encodes it (a tuple of
    ints), and the last two the numbers of the lookups' candidate sets (:meth:`_Encoder.set_of`).
    """

    def __init__(self, registry: Registry, encoder: _Encoder) -> None:
        self.evaluators = {key: e.form for key, e in registry.constraint_evaluators.items()}
        self.encoder = encoder
        self._patterns: dict[str, Any] = {}
        #: per range form (by id, with the form): its reader (see :meth:`_ranged`)
        self._ranged_of: dict[int, tuple[RangeForm, Callable[[str, str], _Reading]]] = {}
        #: the readings of compounds' children, by content (see :meth:`_child`)
        self._children: dict[Any, _Reading] = {}

    def read(self, form: Any, value: Any, text: bytes) -> _Reading:
        """The reading of a property's decoded ``value`` (its JSON ``text``).

        Raises:
            _NotPlain: the form does not read it.
        """
        if type(form) is KeyedForm:
            if type(value) is not dict or len(text) > form.max_bytes:
                raise _NotPlain
            message = value.get(form.message, "")
            if type(message) is not str:
                raise _NotPlain
            return self._keyed(value, form.ignore, message)
        return self._read(form, value, "")

    def read_texts(self, form: FieldsForm | RangeForm, texts: list[bytes]) -> list[_Reading | None]:
        """:meth:`read` of JSON texts that are the form's fields as plain strings, keys sorted (``None``: another text).

        Such a text is its value's JSON with sorted keys (no escape, no other key): read
        without decoding it.
        """
        if isinstance(form, RangeForm):
            fields: tuple[str, ...] = (form.name_field, form.range_field)
            required = fields
        else:
            fields = form.fields
            required = tuple(f for f in fields if f not in form.may_be_empty)
        order = sorted(fields)
        if len(set(order)) != len(order):
            return [None] * len(texts)
        # each field's value: a JSON string without escapes (its bytes are its UTF-8), non-empty if required
        pattern = re.compile(
            b"\\{"
            + b",".join(
                re.escape(orjson.dumps(f)) + b':"([^"\\\\]' + (b"+" if f in required else b"*") + b')"' for f in order
            )
            + b"\\}"
        )
        where = [order.index(f) + 1 for f in fields]
        match = pattern.fullmatch
        encoder = self.encoder
        out: list[_Reading | None] = []
        if isinstance(form, RangeForm):
            name_at, range_at = where
            # all at once when every text is one (one search over the texts joined by newlines,
            # which no compact JSON text holds)
            joined = b"\n".join(texts)
            if joined.count(b"\n") == len(texts) - 1:
                lines = b"^" + pattern.pattern.replace(b'[^"\\\\]', b'[^"\\\\\n]') + b"$"
                found_all = re.findall(lines, joined, re.MULTILINE)
                if len(found_all) == len(texts):
                    names = list(map(bytes.decode, map(itemgetter(name_at - 1), found_all)))
                    ranges = list(map(bytes.decode, map(itemgetter(range_at - 1), found_all)))
                    return self._ranged_many(form, names, ranges)
            ranged = self._ranged(form)
            for text in texts:
                found = match(text)
                if found is None:
                    out.append(None)
                    continue
                out.append(ranged(found.group(name_at).decode(), found.group(range_at).decode()))
            return out
        lookup_type, tag = form.lookup_type, form.tag
        set_of = encoder.set_of
        single = len(fields) == 1
        for text in texts:
            found = match(text)
            if found is None:
                out.append(None)
                continue
            got = [b.decode() for b in found.group(*where)] if not single else found.group(1).decode()
            key = tuple(got) if not single else got
            lookup = (lookup_type, key)
            s = set_of(lookup)
            out.append(((tag, key), lookup, None, (0, s), s, None))
        return out

    def read_ranges(self, form: RangeForm, values: list[Any]) -> list[_Reading]:
        """:meth:`read` of many values of a :class:`RangeForm` (the same readings, in one loop).

        Raises:
            _NotPlain: the form does not read one of them.
        """
        ranged = self._ranged(form)
        name_field, range_field = form.name_field, form.range_field
        out: list[_Reading] = []
        for value in values:
            if type(value) is not dict or len(value) > 2:
                raise _NotPlain
            name = value.get(name_field)
            text = value.get(range_field)
            if type(name) is not str or type(text) is not str or not name or not text:
                raise _NotPlain
            out.append(ranged(name, text))
        return out

    def _ranged(self, form: RangeForm) -> Callable[[str, str], _Reading]:
        """The reading of a package name and a range text (both non-empty) of ``form`` (made once per form)."""
        found = self._ranged_of.get(id(form))
        if found is not None and found[0] is form:
            return found[1]
        encoder = self.encoder
        identity_type = form.identity_type
        owners = encoder.identity(identity_type)[0]
        type_id = encoder.type_id.get(identity_type, -1)
        range_of_text = encoder.range_of_text
        set_of = encoder.set_of
        tag = form.tag
        #: per package name: its lookup, owner number and candidate set (many ranges name one package)
        per_name: dict[str, tuple[tuple[str, str], int, int]] = {}

        def ranged(name: str, text: str) -> _Reading:
            try:
                ranks = range_of_text(identity_type, text)
            except ValueError:
                raise _NotPlain from None
            known = per_name.get(name)
            if known is None:
                lookup = (identity_type, name)
                known = per_name[name] = (lookup, owners.get(name, -1), set_of(lookup))
            lookup, owner, s = known
            return (tag, name, text), lookup, None, (1, type_id, owner, *ranks), s, None

        self._ranged_of[id(form)] = (form, ranged)
        return ranged

    def _ranged_many(self, form: RangeForm, names: list[str], texts: list[str]) -> list[_Reading | None]:
        """The readings of package names and range texts (all non-empty) of ``form``: ``_ranged(form)``'s, in one loop.

        Raises:
            _NotPlain: a range does not parse.
        """
        encoder = self.encoder
        identity_type = form.identity_type
        owners = encoder.identity(identity_type)[0]
        type_id = encoder.type_id.get(identity_type, -1)
        range_of_text = encoder.range_of_text
        set_of = encoder.set_of
        tag = form.tag
        try:
            ranks = {text: tuple(range_of_text(identity_type, text)) for text in dict.fromkeys(texts)}
        except ValueError:
            raise _NotPlain from None
        # per package name (in order of first use, as _ranged numbers the sets): its lookup, program head, set
        per_name = {}
        for name in dict.fromkeys(names):
            lookup = (identity_type, name)
            per_name[name] = (lookup, (1, type_id, owners.get(name, -1)), set_of(lookup))
        return [
            ((tag, name, text), known[0], None, known[1] + rank, known[2], None)
            for name, text, known, rank in zip(
                names, texts, map(per_name.__getitem__, names), map(ranks.__getitem__, texts), strict=True
            )
        ]

    def _child(self, item: Any, ignore: tuple[str, ...]) -> _Reading:
        """The reading of a compound's child (as :meth:`_keyed`, without a message), read once per content.

        Children repeat across a catalog's compounds (a third of the distinct ones at
        P=2000), and a child's reading depends on its content alone: one whose value is
        an object of strings is kept by its key and fields (a reading reads only strings,
        so an equal key is the same content).
        """
        if type(item) is dict and len(item) == 1:
            for name, value in item.items():
                if type(value) is dict:
                    try:
                        key: Any = (ignore, name, *value.items())
                        found = self._children.get(key)
                    except TypeError:  # a value that is not a string: read as it is
                        break
                    if found is None:
                        found = self._children[key] = self._keyed(item, ignore, "")
                    return found
        return self._keyed(item, ignore, "")

    def _keyed(self, value: Any, ignore: tuple[str, ...], message: str) -> _Reading:
        if type(value) is not dict:
            raise _NotPlain
        keys = [k for k in value if k not in ignore]
        if len(keys) != 1:
            raise _NotPlain
        form = self.evaluators.get(keys[0])
        if form is None:
            raise _NotPlain
        return self._read(form, value[keys[0]], message, ignore)  # the message: a pattern's key has it

    def _read(self, form: Any, value: Any, message: str, ignore: tuple[str, ...] = ()) -> _Reading:
        if type(value) is not dict:
            raise _NotPlain
        kind = type(form)
        if kind is FieldsForm:
            fields = form.fields
            got = []
            for name in fields:
                item = value.get(name)
                if item is None and name in form.may_be_empty and name not in value:
                    item = ""
                if type(item) is not str or (not item and name not in form.may_be_empty):
                    raise _NotPlain
                got.append(item)
            if any(k not in fields for k in value):
                raise _NotPlain  # a key outside the fields
            key = tuple(got) if len(got) > 1 else got[0]
            lookup = (form.lookup_type, key)
            s = self.encoder.set_of(lookup)
            return (form.tag, key), lookup, None, (0, s), s, None
        if kind is RangeForm:
            return self.read_ranges(form, [value])[0]
        if kind is PatternForm:
            text = value.get(form.field)
            if type(text) is not str or len(value) != 1:
                raise _NotPlain
            pattern = self._patterns.get(form.pattern)
            if pattern is None:
                try:
                    pattern = self._patterns[form.pattern] = re.compile(form.pattern)
                except (re.error, TypeError):
                    raise _NotPlain from None  # a plugin's pattern that is none: its builder builds
            found = pattern.fullmatch(text)
            if found is None:
                raise _NotPlain
            return (form.tag, text, message), None, None, (2, self.encoder.has_type(found.group(form.group))), -1, None
        if kind is EachForm:
            items = value.get(form.field)
            if type(items) is not list or not items or len(value) != 1:
                raise _NotPlain
            child = self._child
            return self._combine(form, [child(item, ignore) for item in items])
        raise _NotPlain

    @staticmethod
    def _combine(form: EachForm, children: list[_Reading]) -> _Reading:
        key = (form.tag, *map(_first, children))
        combine = form.combine
        lookup = lookups = lookups_sets = None
        lookup_set = -1
        if combine == "all":
            code = 3
            for child in children:
                if child[1] is not None:
                    lookup, lookup_set = child[1], child[4]
                    break
        elif combine == "any":
            code = 4
            many: list[Any] = []
            sets: list[int] = []
            for child in children:
                if child[2] is not None:
                    many.extend(child[2])
                    sets.extend(child[5])
                elif child[1] is not None:
                    many.append(child[1])
                    sets.append(child[4])
                else:
                    break
            else:
                lookups, lookups_sets = tuple(many), tuple(sets)
        elif combine == "none":
            code = 5
        else:
            raise _NotPlain
        program = tuple(chain((code, len(children)), *map(_program, children)))
        return key, lookup, lookups, program, lookup_set, lookups_sets


class _Sources:
    """A graph's ``pred_source`` in compact form: per list, the distinct property and the row of a bundle using it."""

    __slots__ = ("atoms", "names", "rows", "texts", "types")

    def __init__(self, types: list[str], texts: list[bytes], names: list[str], rows: Any, atoms: Any) -> None:
        self.types = types
        self.texts = texts
        self.names = names
        self.rows = rows
        self.atoms = atoms

    def __getitem__(self, p: int) -> tuple[str, bytes, str]:
        d = self.atoms[p]
        return self.types[d], self.texts[d], self.names[self.rows[p]]

    def make(self, g: CatalogGraph) -> None:
        """Set ``g.pred_source`` (the text is the requirement's JSON as read: plain JSON's ``_json``)."""
        types, texts, names = self.types, self.texts, self.names
        g.pred_source = [(types[d], texts[d], names[row]) for row, d in zip(self.rows, self.atoms, strict=True)]
        g._source_at = None


class _Requirements:
    """A graph's ``pred_raw`` in compact form: the requirement properties in the order of first use, their lists."""

    __slots__ = ("atom_list", "canonical", "number", "order", "texts", "types")

    def __init__(
        self, types: list[str], texts: list[bytes], canonical: bytearray, order: Any, atom_list: Any, number: Any
    ) -> None:
        self.types = types
        self.texts = texts
        self.canonical = canonical
        self.order = order
        self.atom_list = atom_list
        self.number = number

    def make(self, g: CatalogGraph) -> None:
        """Set ``g.pred_raw``: each requirement's first list, by its type and sorted JSON."""
        types, texts, canonical = self.types, self.texts, self.canonical
        number, atom_list = self.number, self.atom_list
        sort_keys = orjson.OPT_SORT_KEYS
        loads = orjson.loads
        pred_raw: dict[tuple[str, bytes], int] = {}
        for d in self.order:
            # a canonical text is the sorted JSON; the others are decoded and written again
            sorted_json = texts[d]
            if not canonical[d]:
                written = _json(loads(sorted_json), sort_keys)
                if written != sorted_json:  # (else the text is kept, not a copy of it)
                    sorted_json = written
            pred_raw.setdefault((types[d], sorted_json), number[atom_list[d]])
        g.pred_raw = pred_raw


class _GiveUp(Exception):
    """The columns hold something only the general compiler reproduces exactly."""


class _ColumnCompiler(_Compiler):
    """A :class:`_Compiler` whose bundles are columns (see the module docstring)."""

    def __init__(self, graph: CatalogGraph, catalog: Any, registry: Registry, columns: Any) -> None:
        super().__init__(graph, catalog, registry)
        self.columns = columns
        #: per distinct property: its parsed value (``None``: of an ignored type), its Property
        #: (made on first use) and its decoded JSON value (``None``: not decoded yet)
        self.values: list[Any] = []
        self.props: list[Property | None] = []
        self.decoded: list[Any] = []
        #: whether the catalog's index gives column rows (``lookup_rows``)
        self._rows = hasattr(catalog, "lookup_rows")
        #: type -> its distinct properties
        self.by_type: Mapping[str, Sequence[int]] = {}
        #: per list, the reading of its requirement (``None``: the predicates were built)
        self.readings: list[Any] | None = None
        #: what encoded the readings' programs (their sets' numbers)
        self.encoder: _Encoder | None = None
        #: the types of the distinct properties, numbered in order of first appearance
        self.type_id: dict[str, int] = {}
        self.atom_type = array("i")
        #: the chains' entries by class: ``items[item_start[c]:item_start[c + 1]]`` (ascending)
        self.items = array("i")
        self.item_start = array("i", [0])
        #: per distinct property: 1 when read from its text, which is its JSON with sorted keys (not decoded)
        self.canonical = bytearray()
        #: per identity type read from the loader's columns: its distinct properties, their packages and versions
        self.identity_columns: dict[str, tuple[Sequence[int], list[str], list[str | None]]] = {}
        #: the same as numbers (see ``LazyBundles.identity_numbers``): distinct properties, then its answer
        self.identity_numbers: dict[str, tuple[array[int], array[int], list[Any], array[int], list[str]]] = {}

    # -- entries --------------------------------------------------------------------

    def _number_bundles(self) -> tuple[dict[str, int], Any, list[str], list[str | None], list[str | None]]:
        from olmkit._solver import ascending

        cols = self.columns
        packages = cols.packages
        names = cols.bundle_name
        bundle_package = cols.bundle_package
        names_of = self.names_of
        n = len(names)
        start = 0
        class_package = array("i", bundle_package)
        if not ascending(class_package):
            raise _GiveUp  # not package by package
        for p, package in enumerate(packages):
            end = bisect_right(bundle_package, p, start)
            names_of[package] = dict(zip(names[start:end], range(start, end), strict=True))
            start = end
        if start != n or len(names_of) != len(packages):
            raise _GiveUp  # not package by package
        # every bundle has an object here: classes made for entries without one append None
        self.bundles = [True] * n
        package_index = {package: p for p, package in enumerate(packages)}
        # the columns' own lists (the graph shares them with the catalog; entries copies them to add a class)
        return package_index, class_package, names, cols.bundle_version, cols.bundle_image

    def _file_entries(self) -> None:
        # as flat arrays, grouped in C (not a list per class): ents_of is made only if the general way asks
        from olmkit._solver import group

        g = self.g
        self.items, self.item_start = group(g.entry_class[: g.n_chain], len(g.class_name))
        self._ents_of: list[Any] | None = None

    @property
    def ents_of(self) -> list[Any]:
        """Per class, its entries (ascending), from the flat arrays."""
        found = self._ents_of
        if found is None:
            items, start = self.items, self.item_start
            found = self._ents_of = [items[start[c] : start[c + 1]] for c in range(len(start) - 1)]
        return found

    @ents_of.setter
    def ents_of(self, value: list[Any]) -> None:
        self._ents_of = value

    def entries(self) -> None:
        super().entries()
        n = self.g.n_bundles
        self.wellformed[:n] = b"\x01" * n  # every property parses (else the general compiler runs)

    # -- views ----------------------------------------------------------------------

    def view(self, cls: int) -> Any:
        view = self.views[cls]
        if view is None:
            view = self.views[cls] = _ColumnView(self, cls)
        return view

    def _candidates(self, lookup: tuple[str, Hashable]) -> Sequence[int]:
        found = self._lookups.get(lookup)
        if found is None:
            rows = self.catalog.lookup_rows(*lookup) if self._rows else None
            if rows is None:
                self._rows = False  # the index is not filed by rows: by names then
                return super()._candidates(lookup)
            found = self._lookups[lookup] = rows  # bundles' rows are their classes (read, never changed)
        return found

    def value(self, d: int) -> Any:
        """The parsed value of distinct property ``d`` (of a registered type, not inline)."""
        value = self.values[d]
        if value is _UNREAD:  # read through its form: plain, so it parses
            cols = self.columns
            raw = self.decoded[d]
            value = self.values[d] = self.registry.property_types[cols.dist_type[d]].parse(
                raw if raw is not None else cols.value(d)
            )
        return value

    def _prop(self, d: int) -> Property:
        prop = self.props[d]
        if prop is None:
            cols = self.columns
            value = self.decoded[d]
            prop = self.props[d] = Property(cols.dist_type[d], value if value is not None else cols.value(d))
        return prop

    # -- classes --------------------------------------------------------------------

    def _parse_all(self, ds: Sequence[int], pt: Any) -> list[Any]:
        """Parse distinct properties ``ds`` of type ``pt`` (their decoded values kept)."""
        texts = self.columns.dist_json
        raws = [orjson.loads(texts[d]) for d in ds]
        try:
            parsed = list(map(pt.parse, raws))
        except ValueError:
            raise _GiveUp from None
        values = self.values
        decoded = self.decoded
        for d, raw, value in zip(ds, raws, parsed, strict=True):
            decoded[d] = raw
            values[d] = value
        return parsed

    @staticmethod
    def _keys(ds: Sequence[int], pt: Any, parsed: list[Any], keys: dict[str, int], atom_key: Any) -> None:
        """Number the uniqueness keys of distinct properties ``ds``."""
        setdefault = keys.setdefault
        for d, u in zip(ds, map(pt.uniqueness, parsed), strict=True):
            atom_key[d] = setdefault(u.key, len(keys)) if u is not None else -1

    def _identities(
        self,
        type_name: str,
        pt: Any,
        ds: Sequence[int],
        has_keys: bool,
        keys: dict[str, int],
        atom_key: Any,
    ) -> bool:
        """Read identity type ``pt``'s distinct properties ``ds`` from the loader's columns, if it can.

        Their values are left unread (parsed if a view asks), their packages and versions
        kept for :meth:`_Encoder.identity`, and their uniqueness keys numbered (``has_keys``)
        by asking ``uniqueness`` once per package, which the type's ``unique_by_key``
        allows (else ``False``: parsed values are needed). ``False`` too when the loader
        did not read each as a :class:`PackageIdentity`.
        """
        if not pt.identity:
            return False
        fields = pt.fields
        if has_keys and (fields is None or not fields.unique_by_key):
            return False
        bundles = getattr(self.catalog, "bundles", None)
        read = getattr(bundles, "identities", None)
        if read is None or getattr(bundles, "parsed_with", {}).get(type_name) is not pt.parse:
            return False  # (read with another parser: not what this registry's gives)
        from olmkit._solver import scatter, take

        at = ds if type(ds) is array else array("i", ds)
        numbers = getattr(bundles, "identity_numbers", None)
        got = numbers(at) if numbers is not None else None
        if got is not None:  # as numbers: no string per identity either
            lists, table, codes, strings = got
            self.identity_numbers[type_name] = (at, lists, table, codes, strings)  # (the values left _UNREAD)
            if has_keys:
                # each package's rule (in order of first appearance), asked of its last identity
                # (any other gives an equal one)
                last = dict(zip(lists, codes, strict=True))
                key_by = array("i", [-1]) * len(table)
                uniqueness = pt.uniqueness
                setdefault = keys.setdefault
                for number, code in last.items():
                    u = uniqueness(PackageIdentity(table[number], strings[code]))
                    key_by[number] = setdefault(u.key, len(keys)) if u is not None else -1
                scatter(atom_key, at, take(key_by, lists))
            return True
        found = read(ds)
        if found is None:
            return False
        packages, versions = found
        self.identity_columns[type_name] = (ds, packages, versions)  # (their values are left _UNREAD)
        if not has_keys:
            return True
        # each package's rule, asked of its first identity (any other gives an equal one)
        first_version = dict(zip(reversed(packages), reversed(versions), strict=True))
        uniqueness = pt.uniqueness
        setdefault = keys.setdefault
        key_of: dict[str, int] = {}
        for package in dict.fromkeys(packages):
            u = uniqueness(PackageIdentity(package, first_version[package]))
            key_of[package] = setdefault(u.key, len(keys)) if u is not None else -1
        scatter(atom_key, at, array("i", map(key_of.__getitem__, packages)))
        return True

    def _read_forms(self, required: list[tuple[Any, Any]]) -> list[Any] | None:
        """Every requirement property's reading through its type's form (a list per distinct property).

        ``required``: each type's distinct properties and its kind. ``None`` when a type
        with a requirement has no form (or keys), or a value is not plain: the predicates
        are then built by the plugins' callables, every one (a built predicate might equal
        one only read).
        """
        if any(kind[0].form is None or kind[3] for _, kind in required):
            return None
        texts = self.columns.dist_json
        readings: list[Any] = [None] * len(texts)
        encoder = self.encoder = _Encoder(self)
        forms = _Forms(self.registry, encoder)
        loads = orjson.loads
        dumps = orjson.dumps
        sort_keys = orjson.OPT_SORT_KEYS
        read = forms.read
        canonical = self.canonical = bytearray(len(texts))
        try:
            for ds, kind in required:
                form = kind[0].form
                if type(form) is RangeForm or type(form) is FieldsForm:
                    # the usual text (string fields, keys sorted) read without decoding; the others decoded
                    rest = []
                    for d, reading in zip(ds, forms.read_texts(form, list(map(texts.__getitem__, ds))), strict=True):
                        if reading is None:
                            rest.append(d)
                        else:
                            readings[d] = reading
                            canonical[d] = 1
                    ds = rest
                    if type(form) is RangeForm:
                        raws = list(map(loads, map(texts.__getitem__, ds)))
                        for d, reading in zip(ds, forms.read_ranges(form, raws), strict=True):
                            readings[d] = reading
                        continue
                for d in ds:
                    text = texts[d]
                    value = loads(text)
                    readings[d] = read(form, value, text)  # (the value is not kept: decoded again if asked)
                    if dumps(value, option=sort_keys) == text:
                        canonical[d] = 1  # its text is its sorted JSON (pred_raw's key): not decoded again for it
        except _NotPlain:
            self.encoder = None
            return None
        return readings

    def classes(self) -> None:
        from olmkit._solver import group, lay_out

        g = self.g
        g._preds = []
        cols = self.columns
        n_dist = len(cols.dist_type)
        kind_of = self._kind
        registry = self.registry
        # (_UNREAD until parsed or read: parsed if a view asks; never asked of ignored types)
        values: list[Any] = [_UNREAD] * n_dist
        self.props = [None] * n_dist
        atom_template = array("i", [-1]) * n_dist
        atom_list = array("i", [-1]) * n_dist
        atom_key = array("i", [-2]) * n_dist
        preds: list[Any] = [None] * n_dist
        decoded: list[Any] = [None] * n_dist  # the values (of the types not ignored)
        templates: dict[str, int] = {}
        lists: dict[Any, int] = {}
        keys: dict[str, int] = {}
        groups: dict[str, int] = {}
        # the distinct properties by type (in order of first appearance), grouped in C
        type_id = {t: i for i, t in enumerate(dict.fromkeys(cols.dist_type))}
        self.atom_type = array("i", map(type_id.__getitem__, cols.dist_type))
        self.type_id = type_id
        type_group = [-1] * len(type_id)  # the group of the keys of each type's properties
        ds_of, ds_start = group(self.atom_type, len(type_id))
        by_type = {t: ds_of[ds_start[i] : ds_start[i + 1]] for t, i in type_id.items()}
        self.values = values
        self.decoded = decoded
        self.by_type = by_type
        texts = cols.dist_json
        distinct = getattr(self.catalog, "parsed_distinct", None)
        parse = {n: pt.parse for n, pt in registry.property_types.items()}
        # the identities read through their fields are not made: read from the columns (see _identities)
        known = distinct(parse, identities=False) if distinct else {}
        made = False  # whether known holds those identities too
        # (the numbers of templates, keys, groups and lists are the types' order here: lay_out
        # numbers them again in the order bundles use them)
        required: list[tuple[Sequence[int], Any]] = []
        for type_name, ds in by_type.items():
            kind = kind_of(type_name)
            if kind is None:
                continue  # ignored: unknown or inline
            pt, template, is_required, has_keys = kind
            if template is not None:
                t = templates.setdefault(template, len(templates))
                for d in ds:
                    atom_template[d] = t
            if is_required:
                required.append((ds, kind))
                continue  # below: read through the forms, or built
            if has_keys:
                type_group[type_id[type_name]] = groups.setdefault(type_name, len(groups))
            if self._identities(type_name, pt, ds, has_keys, keys, atom_key):
                continue
            if known and not made and pt.identity and not all(map(known.__contains__, ds)):
                known = distinct(parse) if distinct else {}  # every identity made, as the loader would have
                made = True
            if known and all(map(known.__contains__, ds)):
                # what the loader parsed (the same function: parsing is deterministic)
                parsed = list(map(known.__getitem__, ds))
                for d, value in zip(ds, parsed, strict=True):
                    values[d] = value
            else:
                parsed = self._parse_all(ds, pt)
            if has_keys:
                self._keys(ds, pt, parsed, keys, atom_key)
        readings = self._read_forms(required) if required else None
        if readings is not None:  # (the values read through their forms are left _UNREAD)
            from olmkit._solver import scatter

            preds = readings
            setdefault = lists.setdefault
            for rds, _ in required:
                numbers = [setdefault(key, len(lists)) for key in map(_first, map(readings.__getitem__, rds))]
                scatter(atom_list, rds if type(rds) is array else array("i", rds), array("i", numbers))
        else:
            for rds, (pt, _, _, has_keys) in required:
                type_name = cols.dist_type[rds[0]]
                parsed = self._parse_all(rds, pt)
                if has_keys:
                    type_group[type_id[type_name]] = groups.setdefault(type_name, len(groups))
                    self._keys(rds, pt, parsed, keys, atom_key)
                requirement = pt.requirement
                # one context for all: a builder that reads the bundle's name makes the fast path give up
                context = Context(registry, "")
                for d, value in zip(rds, parsed, strict=True):
                    try:
                        predicate = requirement(value, context)
                    except ValueError:
                        raise _GiveUp from None
                    if context.used_bundle:
                        raise _GiveUp
                    preds[d] = predicate
                    atom_list[d] = lists.setdefault(predicate, len(lists))
        n = g.n_bundles
        atom_group = array("i", map(type_group.__getitem__, self.atom_type))
        laid_out = lay_out(
            cols.prop_start,
            cols.prop_ref,
            atom_template,
            atom_list,
            atom_key,
            atom_group,
            len(templates),
            len(lists),
            len(keys),
        )
        (
            codes,
            code_start,
            ukeys,
            ukey_start,
            template_order,
            list_order,
            list_row,
            list_atom,
            atom_order,
            key_order,
        ) = laid_out
        names = cols.bundle_name
        if readings is None:
            for row, d in zip(list_row, list_atom, strict=True):
                predicate = preds[d]
                self.preds[predicate] = len(g._preds)
                g._preds.append(predicate)
                g.pred_source.append((cols.dist_type[d], texts[d], names[row]))  # the text is _json's for plain JSON
            number_of = self.preds
            pred_raw = g.pred_raw
            for d in atom_order:
                raw = (cols.dist_type[d], _json(decoded[d], orjson.OPT_SORT_KEYS))
                pred_raw.setdefault(raw, number_of[preds[d]])
        else:
            # no predicate objects: the graph makes them when asked (as a graph read from disk)
            self.readings = [preds[d] for d in list_atom]
            # the sources and requirements of the lists, made when first read (from the columns)
            sources = g._source_at = _Sources(cols.dist_type, texts, names, list_row, list_atom)
            g.defer(sources.make, "pred_source")
            number = array("i", [0]) * len(list_order)
            for p, lst in enumerate(list_order):
                number[lst] = p
            requirements = _Requirements(cols.dist_type, texts, self.canonical, atom_order, atom_list, number)
            g.defer(requirements.make, "pred_raw")
        template_text = list(templates)
        g.templates = [template_text[t] for t in template_order]
        key_text = list(keys)
        g.keys = [key_text[k] for k in key_order]
        g.key_index = {k: i for i, k in enumerate(g.keys)}
        g.class_codes = codes
        g.class_start = code_start
        g.ukeys = ukeys
        g.ukey_start = ukey_start
        # channel entries naming no bundle: a class whose only template is the error
        for cls in range(n, len(g.class_name)):
            self._undefined_class(cls)
        g.uerr = None

    # -- lists ----------------------------------------------------------------------

    def lists(self) -> None:
        """Every predicate's list (as the general compiler's), from the readings when the predicates were not built."""
        readings = self.readings
        if readings is None:
            super().lists()
            return
        g = self.g
        n = len(readings)
        g._preds = [None] * n  # made when asked (graph.predicate)
        lookups_of = [r[2] if r[2] is not None else [r[1]] if r[1] is not None else None for r in readings]
        found_lists: list[Any] = [None] * n
        whole = self._select_lists(range(n), lookups_of, found_lists, whole=True)
        if whole is not None:  # every list selected at once, in predicate order
            g.pred_items, g.pred_start = whole
            g.pred_err = None
        else:
            _append_lists(g, found_lists)
        _file_lists(g, lookups_of)
        g._pred_index = None  # no predicate objects: found by their requirements (pred_raw), as from disk

    def _program(self, p: int) -> Any:
        """The program of predicate ``p`` (as the predicate's ``program`` gives it)."""
        return getattr(self.g.predicate(p, self.registry), "program", None)

    def _general_lists(self, ps: Iterable[int], lookups_of: list[Any], found_lists: list[Any]) -> None:
        """Gather as the general compiler (with the predicate objects: made now if only read)."""
        if self.readings is not None:
            g = self.g
            for p in ps:
                g.predicate(p, self.registry)
        super()._gather_lists(ps, lookups_of, found_lists)

    def _gather_lists(self, ps: Iterable[int], lookups_of: list[Any], found_lists: list[Any]) -> None:
        self._select_lists(ps, lookups_of, found_lists, whole=False)

    def _select_lists(
        self, ps: Iterable[int], lookups_of: list[Any], found_lists: list[Any], *, whole: bool
    ) -> tuple[array[int], array[int]] | None:
        """Gather the lists of the predicates with a program in C (or the twin), the others as the general compiler.

        With ``whole``, when every list in ``ps`` was selected in C: their items and starts
        in ``ps`` order (``found_lists`` is then left alone), else ``None``.
        """
        from olmkit._solver import select

        if self.class_err:  # a broken channel's error may be what a list gives: the general way says which
            self._general_lists(ps, lookups_of, found_lists)
            return None
        program_of = self._program
        prog = array("i")
        prog_start = array("i", [0])
        cand_sets = array("i")
        cand_start = array("i", [0])
        chosen: list[int] = []
        rest: list[int] = []
        readings = self.readings
        encoder = self.encoder if readings is not None else None
        if encoder is not None and readings is not None:
            # the readings' programs are encoded already
            chosen = list(ps)
            whole_range = type(ps) is range and ps == range(len(readings))
            read = readings if whole_range else list(map(readings.__getitem__, chosen))
            programs = list(map(_program, read))
            prog = array("i", chain.from_iterable(programs))
            prog_start = array("i", accumulate(map(len, programs), initial=0))
            sets = [r[5] if r[2] is not None else (r[4],) for r in read]  # (-1,): every bundle (no lookup)
            cand_sets = array("i", chain.from_iterable(sets))
            cand_start = array("i", accumulate(map(len, sets), initial=0))
            ps = ()
        else:
            encoder = _Encoder(self)
        for p in ps:
            program = program_of(p)
            if program is not None:
                mark = len(prog)
                try:
                    encoder.node(program, prog)
                except (_NoProgram, TypeError):  # a node it does not know, or an unhashable key
                    del prog[mark:]
                    program = None
            if program is None:
                rest.append(p)
                continue
            lookups = lookups_of[p]
            if lookups is None:
                cand_sets.append(-1)
            else:
                cand_sets.extend([encoder.set_of(lookup) for lookup in lookups])
            prog_start.append(len(prog))
            cand_start.append(len(cand_sets))
            chosen.append(p)
        if chosen:
            cols = self.columns
            items = self.items
            item_start = self.item_start
            found, starts = select(
                prog_start,
                prog,
                cand_start,
                cand_sets,
                self.g.n_bundles,
                cols.prop_start,
                cols.prop_ref,
                encoder.atom_type,
                encoder.atom_owner,
                encoder.atom_rank,
                encoder.set_start,
                encoder.set_rows,
                item_start,
                items,
            )
            if whole and not rest:
                return found, starts
            for i, p in enumerate(chosen):
                found_lists[p] = (found[starts[i] : starts[i + 1]], -1)
        if rest:
            self._general_lists(rest, lookups_of, found_lists)
        return None

    def release(self) -> None:
        super().release()
        self.readings = None
        self.encoder = None
        self.items = array("i")
        self.item_start = array("i", [0])
        self.atom_type = array("i")
        self.type_id = {}
        self.values = []
        self.props = []
        self.decoded = []
        self.by_type = {}
        self.identity_columns = {}
        self.identity_numbers = {}


def compile_columns(catalog: Any, columns: Any, registry: Registry) -> CatalogGraph | None:
    """The graph of ``catalog`` compiled from its columns, or ``None`` when only the general compiler can."""
    g = CatalogGraph()
    c = _ColumnCompiler(g, catalog, registry, columns)
    try:
        c.entries()
        c.classes()
    except _GiveUp:
        c.release()
        return None
    c.release_requirements()
    c.lists()
    c.release()
    return g


def compile_graph(catalog: Any, registry: Registry) -> CatalogGraph:
    """Compile the resolution graph of a loaded catalog: from its columns where it can, else from its bundles.

    The columns are used when the catalog already holds them (its loader filled them):
    building them from the bundles costs more than the fast path saves. Only with the C
    part: the pure twins of its inner loops give the same graph, slower than the general
    compiler.
    """
    from olmkit._solver import implementation

    # the pure twins of its C parts are slower than the general compiler: they are for the tests
    found = _held_columns(catalog) if implementation() == "native" else None
    if found is not None:
        graph = compile_columns(catalog, found, registry)
        if graph is not None:
            return graph
    return compile_general(catalog, registry)


def _held_columns(catalog: Any) -> Any:
    """The catalog's columns if it holds them already, else ``None``."""
    columns = getattr(catalog, "columns", None)
    if columns is None:
        return None
    try:
        return columns(build=False)
    except TypeError:  # a catalog that always builds them
        return None
