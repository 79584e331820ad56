"""Compiling a loaded catalog into its :class:`~olmkit.resolver._graph.CatalogGraph`.

The compiler numbers the entries and classes (one class per bundle), builds each class's
templates and uniqueness keys, and gathers each requirement predicate's list of candidates.
:func:`graph_candidates` gathers further lists (for predicates of other catalogs and of
installed operators) against a graph already compiled or read from disk.

Compiling reads the whole catalog once. Compiling only what a resolution reaches would
not pay: on the gen_catalog workloads a resolution reaches 85-99% of the entries and
predicates (dependencies chain through most packages). What repeats is computed once
(a requirement per distinct value, a key per property, the candidates per lookup key),
and a predicate that declares its lookup ``exact`` is answered from the catalog's index
without asking it about each candidate.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import compress, filterfalse, repeat
from operator import attrgetter
from typing import Any, Final

import orjson

from olmkit.errors import CatalogError, OlmkitError, ResolutionError
from olmkit.model import Property
from olmkit.registry import Registry
from olmkit.resolver._graph import CatalogGraph
from olmkit.resolver._views import MISSING, BundleView, CandidateBatch, Context, Failed, parse_once, predicate_lookups

__all__ = ["compile_general", "graph_candidates", "raw_key"]


class _Compiler:
    """Builds a graph's entries, classes and lists from a loaded catalog.

    The work is per catalog (every bundle, every distinct requirement), so it is kept to
    plain lists indexed by class and to caches keyed by what repeats: a requirement
    property's value (many bundles of many packages require the same API or package),
    a property object's parsed value, a lookup key's candidates. Bundles whose
    requirements do not all build go through :meth:`_slow_class`, which follows the
    definition step by step (which error a class gets depends on the order of its
    properties).
    """

    def __init__(self, graph: CatalogGraph, catalog: Any, registry: Registry) -> None:
        self.g = graph
        self.catalog = catalog
        self.registry = registry
        self.inline = registry.inline_types
        #: gathering for a compiled graph: new errors are returned, not added to it
        self.gathering = False
        self.broken = graph.broken
        #: per package, bundle name -> class
        self.names_of: dict[str, dict[str, int]] = {}
        #: per class, its bundle (``None``: a channel entry without one; empty: read from the catalog)
        self.bundles: list[Any] = []
        #: per class, its entries (ascending)
        self.ents_of: list[list[int]] = []
        #: class -> error of the first broken channel listing it
        self.class_err: dict[int, int] = {}
        self.views: list[Any] = []  # BundleView or a view like it (the columns compiler's)
        #: per class: 1 every property parses, 2 one does not, 0 not known yet
        self.wellformed = bytearray()
        #: id(property) -> parsed value or Failed (the properties stay alive with the catalog)
        self.parsed: dict[int, Any] = {}
        self._lookups: dict[tuple[str, Hashable], Sequence[int]] = {}
        #: lookup -> its candidates for predicates that select (and what they read of them)
        self._batches: dict[tuple[str, Hashable], CandidateBatch] = {}
        # requirements: by property, and by (type, exact JSON) (or None: does not build, or
        # _DEPENDENT: built with the bundle's name); the slow path's by property
        self._rec_of: dict[int, _Requirement] = {}
        self._by_value: dict[tuple[str, bytes], Any] = {}
        self._requirements: dict[int, Any] = {}
        self._templates: dict[str, int] = {}
        # uniqueness: id(property) -> global key or -1
        self._ukey_of: dict[int, int] = {}
        self.preds: dict[Any, int] = {}
        self._kinds: dict[str, tuple[Any, str | None, bool, bool] | None] = {}

    @classmethod
    def for_graph(cls, graph: CatalogGraph, catalog: Any, registry: Registry) -> _Compiler:
        """A compiler that gathers candidates for a graph already compiled (or read from disk)."""
        c = cls(graph, catalog, registry)
        tables = graph._tables
        if tables is None:
            packages = graph.packages
            names_of: dict[str, dict[str, int]] = {}
            for i, (p, n) in enumerate(zip(graph.class_package, graph.class_name, strict=True)):
                names_of.setdefault(packages[p], {})[n] = i
            class_err = _class_errors(graph.broken, catalog, names_of)
            tables = graph._tables = (names_of, _entries_by_class(graph), class_err)
        c.names_of, c.ents_of, c.class_err = tables
        c.views = [None] * len(graph.class_name)
        c.wellformed = bytearray(len(graph.class_name))
        c.gathering = True
        return c

    # -- views ----------------------------------------------------------------------

    def view(self, cls: int) -> BundleView:
        view: BundleView | None = self.views[cls]
        if view is None:
            b = self.bundles[cls] if self.bundles else None
            if b is None:
                g = self.g
                b = self.catalog.bundles[g.packages[g.class_package[cls]]][g.class_name[cls]]
            view = BundleView(b.name, b.package, b.version, b.properties, self.registry, self._parse, self.inline)
            self.views[cls] = view
        return view

    def _parse(self, pt: Any, prop: Property) -> Any:
        return parse_once(self.parsed, pt, prop)

    def _kind(self, type_name: str) -> tuple[Any, str | None, bool, bool] | None:
        """``(property type, prohibition text, has a requirement, has uniqueness)``, ``None``: ignored."""
        found = self._kinds.get(type_name, MISSING)
        if found is MISSING:
            pt = self.registry.property_types.get(type_name)
            if pt is None or type_name in self.registry.inline_types:
                found = None  # unknown types are ignored, as upstream; inline ones are content
            else:
                found = (pt, pt.prohibits, pt.requirement is not None, pt.uniqueness is not None)
            self._kinds[type_name] = found
        return found  # type: ignore[return-value]

    def _template(self, text: str) -> int:
        """The code of a prohibition (templates are numbered as classes first use them)."""
        return -1 - 2 * self._templates.setdefault(text, len(self._templates))

    # -- entries --------------------------------------------------------------------

    def _number_bundles(self) -> tuple[dict[str, int], list[int], list[str], list[str | None], list[str | None]]:
        """Number the catalog's bundles as classes, package by package: the packages' numbers and the class columns.

        The name, version and image columns may be shared with the catalog (never changed:
        :meth:`entries` copies them before adding a class).
        """
        package_index: dict[str, int] = {}
        names_of = self.names_of
        bundles = self.bundles
        class_package: list[int] = []
        class_name: list[str] = []
        class_version: list[str | None] = []
        class_image: list[str | None] = []
        for package, per in self.catalog.bundles.items():
            p = package_index.setdefault(package, len(package_index))
            names = names_of[package] = {}
            start = len(class_name)
            for i, (name, bundle) in enumerate(per.items()):
                names[name] = start + i
                class_name.append(name)
                class_version.append(bundle.version)
                class_image.append(bundle.image)
                bundles.append(bundle)
            class_package += [p] * len(per)
        return package_index, class_package, class_name, class_version, class_image

    def entries(self) -> None:
        """Number the entries and the classes; note broken channels."""
        g = self.g
        catalog = self.catalog
        names_of = self.names_of
        bundles = self.bundles
        package_index, class_package, class_name, class_version, class_image = self._number_bundles()
        g.n_bundles = len(class_name)
        # a channel's entries are consecutive: sort the channels, not the entries
        chans: list[tuple[bool, str, str, list[Any]]] = []  # (not default, package, channel, its chain's entries)
        for package, channels in catalog.channels.items():
            pkg = catalog.packages.get(package)
            default = pkg.default_channel if pkg is not None else None
            for ch in channels:
                try:
                    order = catalog.channel_order(package, ch)
                except CatalogError as exc:
                    self.broken[(package, ch)] = g.add_error(exc)
                    continue
                chans.append((ch != default, package, ch, order))
        chans.sort(key=lambda c: c[:3])
        channel_index: dict[str, int] = {}
        entry_class: list[int] = []
        entry_channel: list[int] = []

        copied = False  # the class columns may be the catalog's (see _number_bundles): copied before growing

        def class_of(package: str, name: str) -> int:
            nonlocal class_name, class_version, class_image, copied
            names = names_of.setdefault(package, {})
            cls = names.get(name)
            if cls is None:
                # a channel entry without a bundle: a class whose only template is the error
                if not copied:
                    class_name, class_version, class_image = list(class_name), list(class_version), list(class_image)
                    copied = True
                cls = names[name] = len(class_name)
                class_package.append(package_index.setdefault(package, len(package_index)))
                class_name.append(name)
                class_version.append(None)
                class_image.append(None)
                bundles.append(None)
            return cls

        def classes_of(package: str, entries: Sequence[Any]) -> list[int]:
            """The classes of a channel's ``entries`` (an entry naming no bundle: one made for it, in entry order)."""
            found: list[int] = list(map(names_of.get(package, {}).get, map(_name, entries), repeat(-1)))
            if -1 in found:
                found = [class_of(package, e.name) for e in entries]
            return found

        chains: list[tuple[str, str, list[Any], list[int]]] = []  # (package, channel, its chain's entries, classes)
        for _, package, ch, order in chans:
            number = channel_index.setdefault(ch, len(channel_index))
            g.channel_first[(package, ch)] = len(entry_class)
            found = classes_of(package, order)
            chains.append((package, ch, order, found))
            entry_class += found
            entry_channel += [number] * len(order)
        # entries off the chain (skipped or not reached from the head) come last: only a
        # subscription's startingCSV can name them, no candidate list holds them
        # (a broken channel has no chain: upstream sorts only the starting entry, so it works)
        g.n_chain = len(entry_class)
        chains += [(package, ch, [], []) for package, ch in self.broken]
        for package, ch, order, found in chains:
            entries = catalog.channels[package][ch].entries
            if len(order) == len(entries):
                continue  # the chain holds every entry (it holds distinct names, at most all of them)
            # each channel once, and within it a name is a class: an entry is known by its class
            classes = classes_of(package, entries)
            off = list(filterfalse(set(found).__contains__, dict.fromkeys(classes)))
            if off:
                entry_class += off
                entry_channel += [channel_index.setdefault(ch, len(channel_index))] * len(off)
        g.packages = list(package_index)
        g.channel_names = list(channel_index)
        g.class_package = array("i", class_package)
        g.class_name = class_name
        g.class_version = class_version
        g.class_image = class_image
        g.entry_class = array("i", entry_class)
        g.entry_channel = array("i", entry_channel)
        g.defer(_off_chain, "off_chain")
        self._file_entries()
        self.class_err = _class_errors(self.broken, catalog, names_of)
        self.views = [None] * len(class_name)
        self.wellformed = bytearray(len(class_name))
        # entries of different packages may share channel and bundle names, hence an
        # identifier: they are then one variable (the first one a resolution reaches);
        # that needs two packages with a bundle of the same name
        if len(set(class_name)) < len(class_name):
            first: dict[tuple[int, str], int] = {}
            pairs = zip(entry_channel, entry_class, strict=True)
            slot = [first.setdefault((ch, class_name[cls]), e) for e, (ch, cls) in enumerate(pairs)]
            if len(first) < len(slot):
                g.slot = array("i", slot)

    def _file_entries(self) -> None:
        """File the chains' entries by class (:attr:`ents_of`)."""
        self.ents_of = _entries_by_class(self.g)

    # -- classes --------------------------------------------------------------------

    def classes(self) -> None:
        """Templates and uniqueness keys of every bundle, and the predicates they need."""
        g = self.g
        g._preds = []
        kind_of = self._kind
        kinds = self._kinds
        rec_of = self._rec_of
        requirement = self._requirement
        unique = self._unique
        ukey_of = self._ukey_of
        ukey_get = ukey_of.get
        register_key = self._register_key
        assign = self._assign
        parse = self._parse
        wellformed = self.wellformed
        codes = g.class_codes
        class_start = g.class_start
        ukeys = g.ukeys
        ukey_start = g.ukey_start
        uerr = array("i")
        any_uerr = False
        bundles = self.bundles
        for cls in range(len(g.class_name)):
            b = bundles[cls]
            if b is None:
                self._undefined_class(cls)  # an entry without a bundle
                uerr.append(-1)
                continue
            # the templates in property order: prohibition codes and requirements (numbered
            # once the whole bundle is known to build, as a failing one numbers only some)
            seq: list[Any] = []
            uprops: list[Property] | None = None
            keys: list[int] = []  # each of uprops' key, -2: not known yet
            utypes: list[str] = []  # their types in order of first appearance
            together = True  # each type's properties come together: property order is type order
            pending: list[tuple[int, Any, Any]] = []  # (index in keys, property type, parsed value)
            unparsed = False  # a missing key's property does not parse
            clean = True
            parses = True
            for prop in b.properties:
                kind: Any = kinds.get(prop.type, MISSING)
                if kind is MISSING:
                    kind = kind_of(prop.type)
                if kind is None:
                    continue
                pt, template, required, has_keys = kind
                if has_keys:
                    k = ukey_get(id(prop), -2)
                    if k == -2:
                        # a key not known yet (an identity is one per bundle): parsed now,
                        # registered once every missing one of the bundle parses
                        try:
                            pending.append((len(keys), pt, parse(pt, prop)))
                        except ValueError:
                            unparsed = True
                    if uprops is None:
                        uprops = [prop]
                        keys = [k]
                        utypes = [prop.type]
                    else:
                        uprops.append(prop)
                        keys.append(k)
                        if prop.type != utypes[-1]:
                            if prop.type in utypes:
                                together = False
                            utypes.append(prop.type)
                elif not required and parses:
                    # neither keys nor requirement parse it: see whether it does
                    try:
                        parse(pt, prop)
                    except ValueError:
                        parses = False
                if template is not None:
                    seq.append(template)
                if required:
                    rec = rec_of.get(id(prop))
                    if rec is None:
                        rec = requirement(prop, pt, b.name)
                        if rec is None:
                            clean = False
                            break
                    seq.append(rec)
            if clean:
                for x in seq:
                    if type(x) is str:
                        codes.append(self._template(x))
                    else:
                        codes.append(x.p if x.p >= 0 else assign(x, b.name))
            else:
                uprops = self._slow_class(b)
            class_start.append(len(codes))
            if uprops is None:
                err = -1
            elif clean and together and not unparsed:
                # the usual bundle: its keys in property order (see _unique)
                for i, pt, value in pending:
                    ukey_of[id(uprops[i])] = keys[i] = register_key(pt, value)
                _append_keys(ukeys, keys)
                err = -1
            else:
                err = unique(b, uprops)
            # a plainly built class whose keys parse has only properties that parse
            wellformed[cls] = 1 if clean and parses and err < 0 else 2
            uerr.append(err)
            any_uerr = any_uerr or err >= 0
            ukey_start.append(len(ukeys))
        g.uerr = uerr if any_uerr else None
        g.templates = list(self._templates)

    def _undefined_class(self, cls: int) -> None:
        """Lay out class ``cls``, a channel entry naming no bundle: its only template is the error saying so."""
        g = self.g
        name = g.class_name[cls]
        package = g.packages[g.class_package[cls]]
        err = g.add_error(
            CatalogError(
                f'bundle "{name}" of package "{package}" is listed in a channel but not defined '
                f"in catalog {self.catalog.name}"
            )
        )
        g.class_codes.append(-2 - 2 * err)
        g.class_start.append(len(g.class_codes))
        g.ukey_start.append(len(g.ukeys))

    def _new_pred(self, predicate: Any, type_name: str, value: Any, bundle: str) -> int:
        p = self.preds.get(predicate)
        if p is None:
            g = self.g
            p = self.preds[predicate] = len(g._preds)
            g._preds.append(predicate)
            g.pred_source.append((type_name, _json(value), bundle))
        return p

    def _assign(self, rec: _Requirement, bundle: str) -> int:
        """Number a requirement's list on its first use by a bundle that builds."""
        p = self._new_pred(rec.predicate, rec.type, rec.value, bundle)
        if rec.independent:
            rec.p = p
            self.g.pred_raw.setdefault(raw_key(rec.type, rec.value), p)
        return p

    def _requirement(self, prop: Property, pt: Any, bundle: str) -> _Requirement | None:
        """A requirement property's predicate, or ``None`` when it does not plainly build for ``bundle``.

        Plainly: its value parses and its predicate builds. A predicate built without the
        bundle's name is the same for every equal value, so it is built once per value
        (equal down to key order, which error texts may depend on).
        """
        try:
            key: tuple[str, bytes] | None = (prop.type, orjson.dumps(prop.value, option=_EXACT))
        except TypeError:
            key = None  # not plain JSON: built for this property alone
        found = self._by_value.get(key, MISSING) if key is not None else MISSING
        if found is MISSING and key is not None:
            key = (key[0], bytes(memoryview(key[1])))  # to be kept: copy (see _json)
        if found is MISSING or found is _DEPENDENT:
            try:
                value = self._parse(pt, prop)
            except ValueError:
                found = None
            else:
                context = Context(self.registry, bundle)
                try:
                    predicate = pt.requirement(value, context)
                except ValueError:
                    found = _DEPENDENT if context.used_bundle else None
                else:
                    if context.used_bundle:
                        if key is not None:
                            self._by_value[key] = _DEPENDENT
                        return _Requirement(predicate, prop.type, prop.value, False)
                    found = _Requirement(predicate, prop.type, prop.value, True)
            if key is not None:
                self._by_value[key] = found
        if type(found) is not _Requirement:
            return None  # does not build, or built with the bundle's name: the slow path
        self._rec_of[id(prop)] = found
        return found

    def _slow_class(self, b: Any) -> list[Property] | None:
        """A bundle's templates, exactly by the definition (one of its requirements fails).

        Returns its properties that have uniqueness keys (``None``: none).
        """
        g = self.g
        codes = g.class_codes
        view = self.view(self.names_of[b.package][b.name])
        uprops = [p for p in view.properties if (k := self._kind(p.type)) is not None and k[3]] or None
        seen_types: dict[str, int] = {}
        for prop in view.properties:
            kind = self._kind(prop.type)
            if kind is None:
                continue
            pt, template, required, _ = kind
            i = seen_types.get(prop.type, 0)
            seen_types[prop.type] = i + 1
            if template is not None:
                codes.append(self._template(template))
            if not required:
                continue
            try:
                predicate, independent = self._slow_requirement(view, prop, pt, i)
            except ResolutionError as exc:
                codes.append(-2 - 2 * g.add_error(exc))
                break
            p = self._new_pred(predicate, prop.type, prop.value, view.name)
            if independent:
                g.pred_raw.setdefault(raw_key(prop.type, prop.value), p)
            codes.append(p)
        return uprops

    def _slow_requirement(self, view: BundleView, prop: Property, pt: Any, i: int) -> tuple[Any, bool]:
        """The predicate of the ``i``-th property of its type, and whether it ignores the bundle's name.

        Every property of that type must parse (the builder is handed them all).
        """
        try:
            value = view.values(prop.type)[i]
        except ValueError as exc:
            raise ResolutionError(f"bundle {view.name}: property {prop.type}: {exc}") from exc
        key = id(prop)
        cached = self._requirements.get(key)
        if cached is not None:
            if type(cached) is Failed:
                raise ResolutionError(f"bundle {view.name}: property {prop.type}: {cached.exc}")
            return cached, True
        context = Context(self.registry, view.name)
        try:
            predicate = pt.requirement(value, context)
        except ValueError as exc:
            if not context.used_bundle:
                self._requirements[key] = Failed(exc)
            raise ResolutionError(f"bundle {view.name}: property {prop.type}: {exc}") from exc
        if not context.used_bundle:
            self._requirements[key] = predicate
        return predicate, not context.used_bundle

    def _unique(self, b: Any, uprops: list[Property]) -> int:
        """Append the bundle's keys, type by type in order of first appearance; an error number or -1.

        A type whose properties do not all parse ends the bundle's keys with an error (the
        keys of the types before it stay).
        """
        g = self.g
        ukey_of = self._ukey_of
        if len(uprops) == 1:
            prop = uprops[0]
            k = ukey_of.get(id(prop))
            if k is None:
                k = self._ukey(prop)
                if k is None:
                    return self._key_error(b, prop)
            if k >= 0:
                g.ukeys.append(k)
            return -1
        if len(uprops) == 2 or _contiguous(uprops):
            # the usual shape (each type's properties together): property order is type order
            keys = [ukey_of.get(id(p), -2) for p in uprops]
            if -2 in keys and self._keys_of(uprops, keys):
                keys[0] = -2  # a type does not parse: the general way below says which
            if -2 not in keys:
                _append_keys(g.ukeys, keys)
                return -1
        groups: dict[str, list[Property]] = {}
        for prop in uprops:
            group = groups.get(prop.type)
            if group is None:
                groups[prop.type] = [prop]
            else:
                group.append(prop)
        seen: set[int] = set()
        for type_name, group in groups.items():
            pt = self.registry.property_types[type_name]
            for prop in group:
                if id(prop) not in ukey_of:
                    try:
                        self._parse(pt, prop)
                    except ValueError:
                        return self._key_error(b, prop)
            for prop in group:
                k = ukey_of.get(id(prop))
                if k is None:
                    k = self._ukey(prop)
                    assert k is not None
                if k >= 0 and k not in seen:
                    seen.add(k)
                    g.ukeys.append(k)
        return -1

    def _keys_of(self, uprops: list[Property], keys: list[int]) -> bool:
        """Fill in the missing (-2) keys of type-ordered properties; ``True`` if one does not parse.

        Every missing one is parsed before any key is registered (a type's properties must
        all parse before any of its keys is; if one does not, the general way in
        :meth:`_unique` registers the types before it). Inlined: it runs for nearly every
        bundle (identity properties are distinct per bundle).
        """
        kinds = self._kinds
        parse = self._parse
        found: list[tuple[int, Any, Any]] = []
        for i, k in enumerate(keys):
            if k == -2:
                p = uprops[i]
                pt = kinds[p.type][0]  # type: ignore[index]
                try:
                    found.append((i, pt, parse(pt, p)))
                except ValueError:
                    return True
        ukey_of = self._ukey_of
        for i, pt, value in found:
            ukey_of[id(uprops[i])] = keys[i] = self._register_key(pt, value)
        return False

    def _register_key(self, pt: Any, value: Any) -> int:
        """The number of a parsed property's uniqueness key, numbered on first sight (-1: it has none)."""
        u = pt.uniqueness(value)
        if u is None:
            return -1
        g = self.g
        k = g.key_index.get(u.key, -1)
        if k < 0:
            k = g.key_index[u.key] = len(g.keys)
            g.keys.append(u.key)
        return k

    def _ukey(self, prop: Property) -> int | None:
        """The key number of a property (-1: it has none), ``None`` if it does not parse."""
        pt = self.registry.property_types[prop.type]
        try:
            value = self._parse(pt, prop)
        except ValueError:
            return None
        assert pt.uniqueness is not None
        k = self._ukey_of[id(prop)] = self._register_key(pt, value)
        return k

    def _key_error(self, b: Any, prop: Property) -> int:
        """The error of a bundle whose properties of ``prop``'s type do not all parse (the first failure's)."""
        pt = self.registry.property_types[prop.type]
        for p in b.properties:
            if p.type == prop.type:
                try:
                    self._parse(pt, p)
                except ValueError as exc:
                    return self.g.add_error(ResolutionError(f"bundle {b.name}: property {prop.type}: {exc}"))
        raise AssertionError(f"{prop.type} of {b.name} parses")

    def release_requirements(self) -> None:
        """Drop what only numbering the classes needed."""
        self._rec_of = {}
        self._by_value = {}
        self._requirements = {}
        self._ukey_of = {}

    def release(self) -> None:
        """Drop everything (views refer back to the compiler, and resolution runs without the cyclic GC)."""
        self.release_requirements()
        self.views = []
        self.parsed = {}
        self.bundles = []
        self.ents_of = []
        self.names_of = {}
        self._lookups = {}
        self._batches = {}
        self.preds = {}

    # -- lists ----------------------------------------------------------------------

    def lists(self) -> None:
        """Every predicate's list.

        Gathered in the order of their candidates in the catalog (all lists over one
        package together, whose views then stay in the processor's caches: a quarter
        less time at P=10000), laid out and their errors numbered in predicate order.
        """
        g = self.g
        preds = g._preds
        lookups_of = [predicate_lookups(predicate) for predicate in preds]
        found_lists: list[Any] = [None] * len(preds)
        self._gather_lists(range(len(preds)), lookups_of, found_lists)
        _append_lists(g, found_lists)
        _file_lists(g, lookups_of)
        g._pred_index = dict(self.preds)

    def _gather_lists(self, ps: Iterable[int], lookups_of: list[Any], found_lists: list[Any]) -> None:
        """Gather the lists of predicates ``ps`` into ``found_lists`` (items and error, as :meth:`gather`)."""
        preds = self.g._preds
        first: dict[int, int] = {}
        for p in ps:
            lookups = lookups_of[p]
            found = self._candidates(lookups[0]) if lookups else None
            first[p] = found[0] if found else -1
        self.gathering = True
        previous = -1
        for p in sorted(first, key=first.__getitem__):
            if first[p] != previous:
                # the predicates of a lookup come together: what its batch read is done with
                self._batches.clear()
                previous = first[p]
            found_lists[p] = self.gather(preds[p], lookups_of[p])
        self.gathering = False

    def gather(self, predicate: Any, lookups: Any = MISSING) -> tuple[array[int], Any]:
        """The catalog's entries satisfying ``predicate`` in preference order, and an error or -1.

        The error is the graph's number, or when gathering for a graph already compiled
        (:meth:`for_graph`) and the predicate fails on a candidate, the new error itself.
        ``lookups`` is :func:`predicate_lookups` of the predicate when the caller has it.
        """
        g = self.g
        if lookups is MISSING:
            lookups = predicate_lookups(predicate)
        names: Iterable[int]
        if lookups is None:
            names = range(g.n_bundles)
        elif len(lookups) == 1:
            names = self._candidates(lookups[0])
        else:
            found: list[int] = []
            for lookup in lookups:
                found += self._candidates(lookup)
            names = dict.fromkeys(found)
        views = self.views
        ents_of = self.ents_of
        class_err = self.class_err
        match = predicate.matches
        out: list[int] = []
        cls = -1
        try:
            if lookups is not None and getattr(predicate, "exact", False) is True:
                # the index answers; only a candidate with a malformed property is asked
                wellformed = self.wellformed
                for cls in names:
                    state = wellformed[cls] or self._check(cls)
                    if state == 1 or match(views[cls] or self.view(cls)):
                        if class_err and cls in class_err:
                            return array("i"), class_err[cls]
                        out += ents_of[cls]
            elif lookups is not None and len(lookups) == 1 and (selected := self._select(predicate, lookups[0])):
                for cls in compress(names, selected):
                    if class_err and cls in class_err:
                        return array("i"), class_err[cls]
                    out += ents_of[cls]
            else:
                for cls in names:
                    view = views[cls]
                    if view is None:
                        view = self.view(cls)
                    if match(view):
                        if class_err and cls in class_err:
                            return array("i"), class_err[cls]
                        out += ents_of[cls]
        except ValueError as exc:
            error = ResolutionError(f"bundle {self.view(cls).name}: {exc}")
            return array("i"), error if self.gathering else g.add_error(error)
        out.sort()
        return array("i", out), -1

    def _select(self, predicate: Any, lookup: tuple[str, Hashable]) -> Sequence[Any] | None:
        """What ``matches`` says of each candidate under ``lookup``, from the predicate's ``select``.

        ``None`` when the predicate has no ``select`` or it raises (a candidate does not
        parse): the candidates are then asked one by one, which says which one fails. The
        batch is kept per lookup, with what its predicates read of the candidates.
        """
        select = getattr(predicate, "select", None)
        if select is None:
            return None
        batch = self._batches.get(lookup)
        if batch is None:
            views = self.views
            candidates = [views[cls] or self.view(cls) for cls in self._candidates(lookup)]
            batch = self._batches[lookup] = CandidateBatch(candidates)
        try:
            selected: Sequence[Any] = select(batch)
        except ValueError:
            return None
        if len(selected) != len(batch.candidates):
            return None  # not an answer for these candidates: ask each (the definition)
        return selected

    def _check(self, cls: int) -> int:
        """1 if every property of the class's bundle parses (or is of an ignored type), else 2."""
        state = 1
        for prop in self.view(cls).properties:
            kind = self._kind(prop.type)
            if kind is not None:
                try:
                    self._parse(kind[0], prop)
                except ValueError:
                    state = 2
                    break
        self.wellformed[cls] = state
        return state

    def _candidates(self, lookup: tuple[str, Hashable]) -> Sequence[int]:
        found = self._lookups.get(lookup)
        if found is None:
            names_of = self.names_of
            found = self._lookups[lookup] = [names_of[p][n] for p, n in self.catalog.lookup_names(*lookup)]
        return found


#: a channel entry's name
_name: Final = attrgetter("name")

#: orjson options for requirement values compared exactly (datetimes are not their text)
_EXACT: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


def _entries_by_class(g: CatalogGraph) -> list[list[int]]:
    """Per class, the chains' entries of it (ascending)."""
    ents_of: list[list[int]] = [[] for _ in range(len(g.class_name))]
    for e, cls in enumerate(g.entry_class[: g.n_chain]):
        ents_of[cls].append(e)
    return ents_of


def _off_chain(g: CatalogGraph) -> None:
    """Fill in the graph's ``off_chain``: the entries after its chains, by their names (as entries numbered them)."""
    packages = g.packages
    channels = g.channel_names
    class_package = g.class_package
    class_name = g.class_name
    entry_channel = g.entry_channel
    entry_class = g.entry_class
    g.off_chain = {
        (packages[class_package[cls]], channels[entry_channel[e]], class_name[cls]): e
        for e, cls in enumerate(entry_class[g.n_chain :], g.n_chain)
    }


def _append_lists(g: CatalogGraph, found_lists: list[Any]) -> None:
    """Lay out the gathered lists (items and error, in predicate order) in the graph, numbering their errors."""
    pred_err = array("i")
    any_err = False
    pred_items = g.pred_items
    pred_start = g.pred_start
    for p, (items, err) in enumerate(found_lists):
        found_lists[p] = None
        if not isinstance(err, int):
            err = g.add_error(err)
        pred_items.extend(items)
        pred_start.append(len(pred_items))
        pred_err.append(err)
        any_err = any_err or err >= 0
    g.pred_err = pred_err if any_err else None


def _file_lists(g: CatalogGraph, lookups_of: list[Any]) -> None:
    """File each list under its predicate's lookups (or as a scan)."""
    lookup_preds = g.lookup_preds
    for p, lookups in enumerate(lookups_of):
        if lookups is None:
            g.scan_preds.append(p)
        else:
            for lookup in dict.fromkeys(lookups) if len(lookups) > 1 else lookups:
                found = lookup_preds.get(lookup)
                if found is None:
                    lookup_preds[lookup] = [p]
                else:
                    found.append(p)


def _append_keys(out: array[int], keys: list[int]) -> None:
    """Append a bundle's key numbers in order, each once, without the -1s (properties without a key)."""
    if len(keys) == 1 or (len(keys) == 2 and keys[0] != keys[1]):
        for k in keys:
            if k >= 0:
                out.append(k)
    else:
        for k in dict.fromkeys(keys):
            if k >= 0:
                out.append(k)


def _contiguous(props: list[Property]) -> bool:
    """Whether the properties of each type come together."""
    seen: set[str] = set()
    previous = None
    for p in props:
        if p.type != previous:
            if p.type in seen:
                return False
            seen.add(p.type)
            previous = p.type
    return True


#: a requirement value whose predicate is built with the bundle's name
_DEPENDENT: Final = object()


class _Requirement:
    """A requirement's predicate and, once a bundle using it built, its list (-1 before)."""

    __slots__ = ("independent", "p", "predicate", "type", "value")

    def __init__(self, predicate: Any, type_name: str, value: Any, independent: bool) -> None:
        self.predicate = predicate
        self.type = type_name
        self.value = value
        self.independent = independent
        self.p = -1


def _class_errors(broken: Mapping[tuple[str, str], int], catalog: Any, names_of: Mapping[str, Any]) -> dict[int, int]:
    """Class -> error of the first broken channel (in catalog order) that lists it."""
    out: dict[int, int] = {}
    for (package, ch), err in broken.items():
        names = names_of.get(package, {})
        for e in catalog.channels[package][ch].entries:
            cls = names.get(e.name)
            if cls is not None:
                out.setdefault(cls, err)
    return out


def raw_key(type_name: str, value: Any) -> tuple[str, bytes]:
    """A requirement property as a key: its type and canonical JSON value."""
    return type_name, _json(value, orjson.OPT_SORT_KEYS)


def _json(value: Any, option: int = 0, default: Any = str) -> bytes:
    # orjson's result keeps a 4 KiB buffer whatever its length: copy what is kept
    return bytes(memoryview(orjson.dumps(value, option=option, default=default)))


def compile_general(catalog: Any, registry: Registry) -> CatalogGraph:
    """Compile the resolution graph of a loaded catalog from its bundles (the definition).

    :func:`olmkit.resolver._compile_columns.compile_graph` takes a faster way where it can.
    """
    g = CatalogGraph()
    c = _Compiler(g, catalog, registry)
    known = getattr(catalog, "parsed_so_far", None)
    if known is not None:  # what the catalog's loader parsed (each bundle's identity) is not parsed again
        c.parsed = known({n: pt.parse for n, pt in registry.property_types.items()})
    c.entries()
    c.classes()
    c.release_requirements()
    c.lists()
    c.release()
    return g


def graph_candidates(
    graph: CatalogGraph, predicate: Any, registry: Registry, catalog: Any, raw: tuple[str, bytes] | None = None
) -> tuple[array[int], int | OlmkitError]:
    """Entries satisfying any predicate, in preference order, and what failed.

    For predicates of other catalogs and of installed operators. One the graph has
    (found by its requirement ``raw``, as :func:`raw_key` gives it, or by equality
    when the graph was compiled in this process) is answered from its lists; others
    are gathered from ``catalog`` and kept.

    Returns:
        The entries, and -1, or the number of one of the graph's errors, or a new
        error (found gathering: the graph's errors are numbered once and for all,
        since resolutions number theirs after them).
    """
    pred = graph.pred_raw.get(raw) if raw is not None else None
    if pred is None and graph._pred_index is not None:
        pred = graph._pred_index.get(predicate)
    if pred is not None:
        err = graph.pred_err[pred] if graph.pred_err is not None else -1
        return graph.pred_items[graph.pred_start[pred] : graph.pred_start[pred + 1]], err
    found = graph._extra.get(predicate)
    if found is None:
        gatherer = _Compiler.for_graph(graph, catalog, registry)
        found = graph._extra[predicate] = gatherer.gather(predicate)
        gatherer.release()
    items, failure = found
    if isinstance(failure, OlmkitError):
        return items, type(failure)(str(failure))  # a fresh one per resolution
    return items, failure
