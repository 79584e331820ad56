"""A catalog's resolution graph: entries, bundle templates and candidate lists as int arrays.

Everything resolution needs from one catalog that does not depend on the request is
computed once per catalog content and shared by every resolution against it:

* *entries*: one per (bundle, channel) that can be a candidate (entries another entry of
  the channel skips are left out), numbered in upstream's preference order within a
  catalog: default channel first, then package name, channel name and the replaces chain
  from the head. A channel's entries are therefore consecutive, head first.
* *classes*: one per bundle: its templates (``olm.deprecated``-style prohibitions and one
  dependency per requirement, in property order) and its uniqueness keys, as the codes of
  :class:`olmkit._solver.Block`.
* *lists*: one per distinct requirement predicate: the catalog's entries that satisfy it,
  in preference order.

Whatever fails (a malformed property, a constraint that does not build, a broken channel
graph) is recorded where it happens and raised only when a resolution reaches it, with
the text the resolver would have given. The graph of a catalog with a content digest is
also kept on disk (next to the catalog cache), so that a new process resolves at once.

Compiling reads the whole catalog once. Compiling only what a resolution reaches would
not pay: on the gen_catalog workloads a resolution reaches 85-99% of the entries and
predicates (dependencies chain through most packages). What repeats is computed once
(a requirement per distinct value, a key per property, the candidates per lookup key),
and a predicate that declares its lookup ``exact`` is answered from the catalog's index
without asking it about each candidate.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import compress
from pathlib import Path
from typing import Any, Final

import orjson

from olmkit._solver import Block
from olmkit.errors import CatalogError, OlmkitError, ResolutionError
from olmkit.model import Property
from olmkit.registry import Registry
from olmkit.resolver._index import BundleView

__all__ = [
    "CatalogGraph",
    "Context",
    "ViewFactory",
    "compile_graph",
    "predicate_lookups",
    "raw_key",
    "registry_key",
]

_FORMAT: Final = 1

#: Error classes a graph may record (by name, so that graphs can be stored).
_ERRORS: Final[Mapping[str, type[OlmkitError]]] = {"CatalogError": CatalogError, "ResolutionError": ResolutionError}


class Context:
    """The ``RequirementContext`` handed to requirement builders.

    It notes whether the builder read :attr:`bundle`: a predicate built without looking
    at the bundle's name is the same for every bundle carrying the same property, and is
    built once.
    """

    def __init__(self, registry: Registry, bundle: str) -> None:
        self.registry = registry
        self._bundle = bundle
        self.used_bundle = False

    @property
    def bundle(self) -> str:
        self.used_bundle = True
        return self._bundle

    @bundle.setter
    def bundle(self, value: str) -> None:
        self._bundle = value

    def build_constraint(self, value: Any) -> Any:
        if not isinstance(value, Mapping):
            raise ValueError(f"a constraint must be an object, not {type(value).__name__}")
        keys = [k for k in value if k != "failureMessage"]
        if not keys:
            raise ValueError("constraint is empty")
        evaluators = self.registry.constraint_evaluators
        for k in keys:
            if k not in evaluators:
                raise ValueError(f'json: unknown field "{k}"')
        if len(keys) > 1:
            raise ValueError(f"constraint has more than one key: {', '.join(keys)}")
        return evaluators[keys[0]].build(value[keys[0]], self)


def registry_key(registry: Registry) -> str:
    """What a graph depends on besides the catalog: the plugins that parse and match."""
    from olmkit import __version__

    kinds = ("property type", "constraint key")
    owned = sorted(f"{kind}:{name}={owner}" for (kind, name), owner in registry.owners.items() if kind in kinds)
    return f"{_FORMAT}:{__version__}:" + ",".join(owned)


def predicate_lookups(predicate: Any) -> Sequence[tuple[str, Hashable]] | None:
    """The index keys a predicate narrows its candidates to, or ``None`` (scan everything)."""
    lookups: Sequence[tuple[str, Hashable]] | None = getattr(predicate, "lookups", None)
    if lookups is None:
        single = getattr(predicate, "lookup", None)
        lookups = [single] if single is not None else None
    return lookups


class ViewFactory:
    """Bundle views that share parsed property values (parsing is deterministic)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._parsed: dict[int, Any] = {}
        self._keep: list[Property] = []

    def view(self, name: str, package: str, version: str | None, properties: tuple[Property, ...]) -> BundleView:
        return BundleView(name, package, version, properties, self.registry, self._parse)

    def _parse(self, pt: Any, prop: Property) -> Any:
        if id(prop) not in self._parsed:
            self._keep.append(prop)  # ids stay valid while the factory lives
        return _parse_once(self._parsed, pt, prop)


_MISSING: Final = object()


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def _parse_once(parsed: dict[int, Any], pt: Any, prop: Property) -> Any:
    """``pt.parse(prop.value)``, kept in ``parsed`` by the property's id (a failure is kept and raised again).

    The properties must stay alive as long as ``parsed`` is used (their ids are its keys).
    """
    found = parsed.get(id(prop), _MISSING)
    if found is _MISSING:
        try:
            found = pt.parse(prop.value)
        except ValueError as exc:
            found = _Failed(exc)
        parsed[id(prop)] = found
    if type(found) is _Failed:
        raise found.exc
    return found


class CatalogGraph:
    """The request-independent part of resolving against one catalog (see the module docstring).

    Entry, class, list and key numbers are local to the graph; :meth:`block` lays them
    out for :func:`olmkit._solver.expand`.
    """

    def __init__(self) -> None:
        self.packages: list[str] = []
        self.channel_names: list[str] = []
        self.entry_class = array("i")
        self.entry_channel = array("i")
        self.channel_first: dict[tuple[str, str], int] = {}
        self.class_package = array("i")
        self.class_name: list[str] = []
        self.class_version: list[str | None] = []
        self.class_image: list[str | None] = []
        self.class_start = array("i", [0])
        self.class_codes = array("i")
        self.ukey_start = array("i", [0])
        self.ukeys = array("i")
        self.uerr: array[int] | None = None
        self.keys: list[str] = []
        self.key_index: dict[str, int] = {}
        self.templates: list[str] = []
        self.pred_start = array("i", [0])
        self.pred_items = array("i")
        self.pred_err: array[int] | None = None
        #: per list: (property type, raw value, bundle name) of a requirement that builds it
        self.pred_source: list[tuple[str, bytes, str]] = []
        #: (property type, raw value) -> list, for requirements built without the bundle's name
        self.pred_raw: dict[tuple[str, bytes], int] = {}
        self.lookup_preds: dict[tuple[str, Hashable], list[int]] = {}
        self.scan_preds: list[int] = []
        self.errors: list[BaseException] = []
        #: channels whose graph is broken: the error their entries raise when reached
        self.broken: dict[tuple[str, str], int] = {}
        #: classes ``0 .. n_bundles-1`` are the catalog's bundles; later ones are channel
        #: entries naming no bundle
        self.n_bundles = 0
        #: per entry, the first entry with the same identifier (``None``: all distinct)
        self.slot: array[int] | None = None
        self._preds: list[Any] = []
        self._pred_index: dict[Any, int] | None = None
        self._raw_of: dict[int, tuple[str, bytes]] | None = None
        self._extra: dict[Any, tuple[array[int], Any]] = {}
        #: what gathering more candidates needs (built on first use): names, entries, errors by class
        self._tables: tuple[Any, ...] | None = None
        self._block: Block | None = None
        self._sections: dict[str, bytes] | None = None
        self.storable = True

    # -- sizes ----------------------------------------------------------------------

    @property
    def n_entries(self) -> int:
        return len(self.entry_class)

    @property
    def n_preds(self) -> int:
        return len(self.pred_start) - 1

    # -- errors ---------------------------------------------------------------------

    def add_error(self, exc: BaseException) -> int:
        if type(exc).__name__ not in _ERRORS:
            self.storable = False
        self.errors.append(exc)
        return len(self.errors) - 1

    def error(self, number: int) -> BaseException:
        """A fresh exception equal to recorded error ``number`` (to raise)."""
        exc = self.errors[number]
        cls = _ERRORS.get(type(exc).__name__)
        return cls(str(exc)) if cls is not None else exc

    # -- predicates -----------------------------------------------------------------

    def predicate(self, pred: int, registry: Registry) -> Any:
        """The predicate of list ``pred`` (rebuilt from its requirement after loading)."""
        while len(self._preds) < self.n_preds:
            self._preds.append(None)
        found = self._preds[pred]
        if found is None:
            type_name, raw, bundle = self.pred_source[pred]
            pt = registry.property_types[type_name]
            requirement = pt.requirement
            assert requirement is not None
            found = requirement(pt.parse(orjson.loads(raw)), Context(registry, bundle))
            self._preds[pred] = found
        return found

    def raw_of(self, pred: int) -> tuple[str, bytes] | None:
        """The :func:`raw_key` that finds list ``pred`` in other graphs (``None``: none does)."""
        if self._raw_of is None:
            self._raw_of = {p: key for key, p in self.pred_raw.items()}
        return self._raw_of.get(pred)

    def candidates(
        self, predicate: Any, registry: Registry, catalog: Any, raw: tuple[str, bytes] | None = None
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
        pred = self.pred_raw.get(raw) if raw is not None else None
        if pred is None and self._pred_index is not None:
            pred = self._pred_index.get(predicate)
        if pred is not None:
            err = self.pred_err[pred] if self.pred_err is not None else -1
            return self.pred_items[self.pred_start[pred] : self.pred_start[pred + 1]], err
        found = self._extra.get(predicate)
        if found is None:
            gatherer = _Compiler.for_graph(self, catalog, registry)
            found = self._extra[predicate] = gatherer.gather(predicate)
            gatherer.release()
        items, failure = found
        if isinstance(failure, OlmkitError):
            return items, type(failure)(str(failure))  # a fresh one per resolution
        return items, failure

    # -- the expansion block ------------------------------------------------------------

    def block(self) -> Block:
        """The graph as an expansion block (offsets zero; the caller sets its own)."""
        if self._block is None:
            self._block = Block(
                item_off=0,
                pred_off=0,
                err_off=0,
                item_class=self.entry_class,
                class_start=self.class_start,
                class_codes=self.class_codes,
                ukey_start=self.ukey_start,
                ukeys=self.ukeys,
                pred_start=self.pred_start,
                pred_items=self.pred_items,
                uerr=self.uerr,
                pred_err=self.pred_err,
            )
        return self._block

    def entry_of(self, package: str, channel: str, position: int) -> int:
        """The entry at ``position`` of the channel's preference order."""
        return self.channel_first[(package, channel)] + position

    def entry_names(self, entry: int) -> tuple[str, str, str]:
        """``(package, channel, bundle)`` of an entry."""
        cls = self.entry_class[entry]
        return (
            self.packages[self.class_package[cls]],
            self.channel_names[self.entry_channel[entry]],
            self.class_name[cls],
        )

    # -- storage --------------------------------------------------------------------

    def dumps(self) -> bytes | None:
        """The graph as bytes, or ``None`` when it holds something that cannot be stored.

        What every resolution needs (the arrays, keys, errors) is read at once; the names
        (for identifiers and steps) and the predicates' sources (for installed CSVs and
        other catalogs) are sections of their own, decoded on first use.
        """
        if not self.storable:
            return None
        core = {
            "entry_class": self.entry_class.tobytes(),
            "channel_first": [(p, c, f) for (p, c), f in self.channel_first.items()],
            "class_start": self.class_start.tobytes(),
            "class_codes": self.class_codes.tobytes(),
            "ukey_start": self.ukey_start.tobytes(),
            "ukeys": self.ukeys.tobytes(),
            "uerr": self.uerr.tobytes() if self.uerr is not None else None,
            "keys": self.keys,
            "templates": self.templates,
            "pred_start": self.pred_start.tobytes(),
            "pred_items": self.pred_items.tobytes(),
            "pred_err": self.pred_err.tobytes() if self.pred_err is not None else None,
            "scan_preds": self.scan_preds,
            "errors": [(type(e).__name__, str(e)) for e in self.errors],
            "broken": [(p, c, e) for (p, c), e in self.broken.items()],
            "n_bundles": self.n_bundles,
            "slot": self.slot.tobytes() if self.slot is not None else None,
        }
        names = {
            "packages": self.packages,
            "channel_names": self.channel_names,
            "entry_channel": self.entry_channel.tobytes(),
            "class_package": self.class_package.tobytes(),
            "class_name": self.class_name,
            "class_version": self.class_version,
            "class_image": self.class_image,
        }
        preds = {
            "pred_source": self.pred_source,
            "pred_raw": [(t, r, p) for (t, r), p in self.pred_raw.items()],
            "lookup_preds": [(t, k, ps) for (t, k), ps in self.lookup_preds.items()],
        }
        try:
            # version 2: no back-references, which these flat lists do not need (twice as fast)
            return marshal.dumps(
                {
                    "format": _FORMAT,
                    "core": core,
                    "names": marshal.dumps(names, 2),
                    "preds": marshal.dumps(preds, 2),
                },
                2,
            )
        except ValueError:
            return None  # an index key marshal cannot store (a plugin's own type)

    @classmethod
    def loads(cls, data: bytes) -> CatalogGraph | None:
        """A graph from :meth:`dumps`, or ``None`` when the data is not one."""
        try:
            state = marshal.loads(data)
            if not isinstance(state, dict) or state.get("format") != _FORMAT:
                return None
            core = state["core"]
            g = cls.__new__(cls)
            g._preds = []
            g._pred_index = None
            g._raw_of = None
            g._extra = {}
            g._tables = None
            g._block = None
            g.storable = True
            g._sections = {"names": state["names"], "preds": state["preds"]}
            g.entry_class = _ints(core["entry_class"])
            g.channel_first = {(p, c): f for p, c, f in core["channel_first"]}
            g.class_start = _ints(core["class_start"])
            g.class_codes = _ints(core["class_codes"])
            g.ukey_start = _ints(core["ukey_start"])
            g.ukeys = _ints(core["ukeys"])
            g.uerr = _opt_ints(core["uerr"])
            g.keys = core["keys"]
            g.key_index = {k: i for i, k in enumerate(g.keys)}
            g.templates = core["templates"]
            g.pred_start = _ints(core["pred_start"])
            g.pred_items = _ints(core["pred_items"])
            g.pred_err = _opt_ints(core["pred_err"])
            g.scan_preds = list(core["scan_preds"])
            g.errors = [_ERRORS[name](message) for name, message in core["errors"]]
            g.broken = {(p, c): e for p, c, e in core["broken"]}
            g.n_bundles = core["n_bundles"]
            g.slot = _opt_ints(core["slot"])
            if not isinstance(g._sections["names"], bytes) or not isinstance(g._sections["preds"], bytes):
                return None
        except (EOFError, ValueError, TypeError, KeyError, IndexError):
            return None
        return g

    def __getattr__(self, name: str) -> Any:
        # only for graphs read by loads(): their sections are decoded on first use
        sections = self.__dict__.get("_sections")
        section = _SECTION_OF.get(name)
        if section is None or sections is None or section not in sections:
            raise AttributeError(name)
        raw = sections.pop(section)
        state = marshal.loads(raw)
        if section == "names":
            self.packages = state["packages"]
            self.channel_names = state["channel_names"]
            self.entry_channel = _ints(state["entry_channel"])
            self.class_package = _ints(state["class_package"])
            self.class_name = state["class_name"]
            self.class_version = state["class_version"]
            self.class_image = state["class_image"]
        else:
            self.pred_source = [tuple(s) for s in state["pred_source"]]
            self.pred_raw = {(t, r): p for t, r, p in state["pred_raw"]}
            self.lookup_preds = {(t, k): list(ps) for t, k, ps in state["lookup_preds"]}
        return self.__dict__[name]


_SECTION_OF: Final = {
    **dict.fromkeys(
        ("packages", "channel_names", "entry_channel", "class_package", "class_name", "class_version", "class_image"),
        "names",
    ),
    **dict.fromkeys(("pred_source", "pred_raw", "lookup_preds"), "preds"),
}


def _ints(raw: bytes) -> array[int]:
    out = array("i")
    out.frombytes(raw)
    return out


def _opt_ints(raw: bytes | None) -> array[int] | None:
    return _ints(raw) if raw is not None else None


# --------------------------------------------------------------------------- compiling


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
        self.views: list[BundleView | None] = []
        #: per class: 1 every property parses, 2 one does not, 0 not known yet
        self.wellformed = bytearray()
        #: id(property) -> parsed value or _Failed (the properties stay alive with the catalog)
        self.parsed: dict[int, Any] = {}
        self._lookups: dict[tuple[str, Hashable], list[int]] = {}
        #: lookup -> its candidates for predicates that select (and what they read of them)
        self._batches: dict[tuple[str, Hashable], _Batch] = {}
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
            ents_of: list[list[int]] = [[] for _ in range(len(graph.class_name))]
            for e, k in enumerate(graph.entry_class):
                ents_of[k].append(e)
            class_err = _class_errors(graph.broken, catalog, names_of)
            tables = graph._tables = (names_of, ents_of, class_err)
        c.names_of, c.ents_of, c.class_err = tables
        c.views = [None] * len(graph.class_name)
        c.wellformed = bytearray(len(graph.class_name))
        c.gathering = True
        return c

    # -- views ----------------------------------------------------------------------

    def view(self, cls: int) -> BundleView:
        view = self.views[cls]
        if view is None:
            b = self.bundles[cls] if self.bundles else None
            if b is None:
                g = self.g
                b = self.catalog.bundles[g.packages[g.class_package[cls]]][g.class_name[cls]]
            view = BundleView(b.name, b.package, b.version, b.properties, self.registry, self._parse, self.inline)
            self.views[cls] = view
        return view

    def _parse(self, pt: Any, prop: Property) -> Any:
        return _parse_once(self.parsed, pt, prop)

    def _kind(self, type_name: str) -> tuple[Any, str | None, bool, bool] | None:
        """``(property type, prohibition text, has a requirement, has uniqueness)``, ``None``: ignored."""
        found = self._kinds.get(type_name, _MISSING)
        if found is _MISSING:
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

    def entries(self) -> None:
        """Number the entries and the classes; note broken channels."""
        g = self.g
        catalog = self.catalog
        package_index: dict[str, int] = {}
        names_of = self.names_of
        bundles = self.bundles
        class_package: list[int] = []
        class_name: list[str] = []
        class_version: list[str | None] = []
        class_image: list[str | None] = []
        for package, per in catalog.bundles.items():
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
        g.n_bundles = len(class_name)
        # a channel's entries are consecutive: sort the channels, not the entries
        chans: list[tuple[bool, str, str, list[Any]]] = []
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
        for _, package, ch, order in chans:
            names = names_of.setdefault(package, {})
            number = channel_index.setdefault(ch, len(channel_index))
            g.channel_first[(package, ch)] = len(entry_class)
            for e in order:
                cls = names.get(e.name)
                if cls is None:
                    # a channel entry without a bundle: a class whose only template is the error
                    cls = names[e.name] = len(class_name)
                    class_package.append(package_index.setdefault(package, len(package_index)))
                    class_name.append(e.name)
                    class_version.append(None)
                    class_image.append(None)
                    bundles.append(None)
                entry_class.append(cls)
            entry_channel += [number] * len(order)
        g.packages = list(package_index)
        g.channel_names = list(channel_index)
        g.class_package = array("i", class_package)
        g.class_name = class_name
        g.class_version = class_version
        g.class_image = class_image
        g.entry_class = array("i", entry_class)
        g.entry_channel = array("i", entry_channel)
        ents_of: list[list[int]] = [[] for _ in range(len(class_name))]
        for e, cls in enumerate(entry_class):
            ents_of[cls].append(e)
        self.ents_of = ents_of
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
        parsed = self.parsed
        parsed_get = parsed.get
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
                # an entry without a bundle
                name = g.class_name[cls]
                package = g.packages[g.class_package[cls]]
                err = g.add_error(
                    CatalogError(
                        f'bundle "{name}" of package "{package}" is listed in a channel but not defined '
                        f"in catalog {self.catalog.name}"
                    )
                )
                codes.append(-2 - 2 * err)
                class_start.append(len(codes))
                ukey_start.append(len(ukeys))
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
                kind: Any = kinds.get(prop.type, _MISSING)
                if kind is _MISSING:
                    kind = kind_of(prop.type)
                if kind is None:
                    continue
                pt, template, required, has_keys = kind
                if has_keys:
                    k = ukey_get(id(prop), -2)
                    if k == -2:
                        # a key not known yet (an identity is one per bundle): parsed now,
                        # registered once every missing one of the bundle parses
                        value = parsed_get(id(prop), _MISSING)
                        if value is _MISSING:
                            try:
                                value = pt.parse(prop.value)
                            except ValueError as exc:
                                value = _Failed(exc)
                            parsed[id(prop)] = value
                        if type(value) is _Failed:
                            unparsed = True
                        else:
                            pending.append((len(keys), pt, value))
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
        found = self._by_value.get(key, _MISSING) if key is not None else _MISSING
        if found is _MISSING and key is not None:
            key = (key[0], bytes(memoryview(key[1])))  # to be kept: copy (see _json)
        if found is _MISSING or found is _DEPENDENT:
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
            if type(cached) is _Failed:
                raise ResolutionError(f"bundle {view.name}: property {prop.type}: {cached.exc}")
            return cached, True
        context = Context(self.registry, view.name)
        try:
            predicate = pt.requirement(value, context)
        except ValueError as exc:
            if not context.used_bundle:
                self._requirements[key] = _Failed(exc)
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
        first = []
        lookups_of = [predicate_lookups(predicate) for predicate in preds]
        for lookups in lookups_of:
            found = self._candidates(lookups[0]) if lookups else None
            first.append(found[0] if found else -1)
        found_lists: list[Any] = [None] * len(preds)
        self.gathering = True
        previous = -1
        for p in sorted(range(len(preds)), key=first.__getitem__):
            if first[p] != previous:
                # the predicates of a lookup come together: what its batch read is done with
                self._batches.clear()
                previous = first[p]
            found_lists[p] = self.gather(preds[p], lookups_of[p])
        self.gathering = False
        pred_err = array("i")
        any_err = False
        pred_items = g.pred_items
        pred_start = g.pred_start
        for p, lookups in enumerate(lookups_of):
            items, err = found_lists[p]
            found_lists[p] = None
            if not isinstance(err, int):
                err = g.add_error(err)
            pred_items.extend(items)
            pred_start.append(len(pred_items))
            pred_err.append(err)
            any_err = any_err or err >= 0
            if lookups is None:
                g.scan_preds.append(p)
            else:
                for lookup in dict.fromkeys(lookups):
                    g.lookup_preds.setdefault(lookup, []).append(p)
        g.pred_err = pred_err if any_err else None
        g._pred_index = dict(self.preds)

    def gather(self, predicate: Any, lookups: Any = _MISSING) -> tuple[array[int], Any]:
        """The catalog's entries satisfying ``predicate`` in preference order, and an error or -1.

        The error is the graph's number, or when gathering for a graph already compiled
        (:meth:`for_graph`) and the predicate fails on a candidate, the new error itself.
        ``lookups`` is :func:`predicate_lookups` of the predicate when the caller has it.
        """
        g = self.g
        if lookups is _MISSING:
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
            batch = self._batches[lookup] = _Batch(candidates)
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

    def _candidates(self, lookup: tuple[str, Hashable]) -> list[int]:
        found = self._lookups.get(lookup)
        if found is None:
            names_of = self.names_of
            found = self._lookups[lookup] = [names_of[p][n] for p, n in self.catalog.lookup_names(*lookup)]
        return found


class _Batch:
    """The candidates under one lookup, as predicates' ``select`` sees them (a ``CandidateBatch``)."""

    __slots__ = ("_read", "candidates")

    def __init__(self, candidates: Sequence[BundleView]) -> None:
        self.candidates = candidates
        self._read: dict[Any, Any] = {}

    def shared(self, read: Any) -> Any:
        """``read(candidates)``, once per batch (a failure is raised again to every caller)."""
        found = self._read.get(read, _MISSING)
        if found is _MISSING:
            try:
                found = read(self.candidates)
            except ValueError as exc:
                found = _Failed(exc)
            self._read[read] = found
        if type(found) is _Failed:
            raise found.exc
        return found


#: orjson options for requirement values compared exactly (datetimes are not their text)
_EXACT: Final = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS


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


def compile_graph(catalog: Any, registry: Registry) -> CatalogGraph:
    """Compile the resolution graph of a loaded catalog."""
    g = CatalogGraph()
    c = _Compiler(g, catalog, registry)
    c.entries()
    c.classes()
    c.release_requirements()
    c.lists()
    c.release()
    return g


# --------------------------------------------------------------------------- storage


def graph_path(digest: str, registry: Registry, name: str = "") -> Path:
    """Where the graph of the catalog ``name`` with ``digest`` is kept (next to the catalog cache)."""
    from olmkit.catalog import cache_dir

    text = f"{digest}\0{name}\0{registry_key(registry)}"
    key = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
    return cache_dir() / "resolver" / f"{key}.graph"


def read_graph(path: Path) -> CatalogGraph | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return CatalogGraph.loads(data)


def write_graph(path: Path, graph: CatalogGraph) -> None:
    """Write atomically; failures are ignored (the stored graph only saves time)."""
    data = graph.dumps()
    if data is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".graph")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return
