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
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
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
        key = id(prop)
        found = self._parsed.get(key, _MISSING)
        if found is _MISSING:
            try:
                found = pt.parse(prop.value)
            except ValueError as exc:
                found = _Failed(exc)
            self._parsed[key] = found
            self._keep.append(prop)  # ids stay valid while the factory lives
        if type(found) is _Failed:
            raise found.exc
        return found


_MISSING: Final = object()


class _Failed:
    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


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
        self.class_index: dict[tuple[str, str], int] = {}
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
        self._extra: dict[Any, tuple[array[int], int]] = {}
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
    ) -> tuple[array[int], int]:
        """Entries satisfying any predicate, in preference order, and an error number or -1.

        For predicates of other catalogs and of installed operators. One the graph has
        (found by its requirement ``raw``, as :func:`raw_key` gives it, or by equality
        when the graph was compiled in this process) is answered from its lists; others
        are gathered from ``catalog`` and kept.
        """
        pred = self.pred_raw.get(raw) if raw is not None else None
        if pred is None and self._pred_index is not None:
            pred = self._pred_index.get(predicate)
        if pred is not None:
            err = self.pred_err[pred] if self.pred_err is not None else -1
            return self.pred_items[self.pred_start[pred] : self.pred_start[pred + 1]], err
        found = self._extra.get(predicate)
        if found is None:
            state = _Compiler(self, catalog, registry)
            found = state.gather(predicate)
            self._extra[predicate] = found
        return found

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
            return marshal.dumps(
                {"format": _FORMAT, "core": core, "names": marshal.dumps(names), "preds": marshal.dumps(preds)}
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
        if name == "class_index" and sections is not None:
            packages = self.packages
            pairs = zip(self.class_package, self.class_name, strict=True)
            self.class_index = {(packages[p], n): i for i, (p, n) in enumerate(pairs)}
            return self.class_index
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
    """Builds a graph's classes and lists from a loaded catalog."""

    def __init__(self, graph: CatalogGraph, catalog: Any, registry: Registry) -> None:
        self.g = graph
        self.catalog = catalog
        self.registry = registry
        self.views = ViewFactory(registry)
        self._view_of: dict[int, BundleView] = {}
        self._class_entries: dict[int, list[int]] | None = None
        self._requirements: dict[tuple[int, str], Any] = {}
        self._value_keys: dict[tuple[int, str], int] = {}
        self._lookups: dict[tuple[str, Hashable], list[int]] = {}
        self.broken = graph.broken

    # -- views ----------------------------------------------------------------------

    def view(self, cls: int) -> BundleView:
        view = self._view_of.get(cls)
        if view is None:
            g = self.g
            package = g.packages[g.class_package[cls]]
            b = self.catalog.bundles[package][g.class_name[cls]]
            view = self.views.view(b.name, b.package, b.version, b.properties)
            self._view_of[cls] = view
        return view

    # -- entries --------------------------------------------------------------------

    def entries(self) -> None:
        """Number the entries and the classes; note broken channels."""
        g = self.g
        catalog = self.catalog
        package_index: dict[str, int] = {}
        for package, bundles in catalog.bundles.items():
            p = package_index.setdefault(package, len(package_index))
            for name, bundle in bundles.items():
                g.class_index[(package, name)] = len(g.class_name)
                g.class_package.append(p)
                g.class_name.append(name)
                g.class_version.append(bundle.version)
                g.class_image.append(bundle.image)
        g.n_bundles = len(g.class_name)
        rows: list[tuple[bool, str, str, int, str]] = []
        for package, channels in catalog.channels.items():
            pkg = catalog.packages.get(package)
            default = pkg.default_channel if pkg is not None else None
            for ch in channels:
                try:
                    order = catalog.channel_order(package, ch)
                except CatalogError as exc:
                    self.broken[(package, ch)] = g.add_error(exc)
                    continue
                rows += [(ch != default, package, ch, pos, e.name) for pos, e in enumerate(order)]
        rows.sort()
        channel_index: dict[str, int] = {}
        for i, (_, package, ch, pos, name) in enumerate(rows):
            if pos == 0:
                g.channel_first[(package, ch)] = i
            cls = g.class_index.get((package, name))
            if cls is None:
                # a channel entry without a bundle: a class whose only template is the error
                cls = g.class_index[(package, name)] = len(g.class_name)
                g.class_package.append(package_index.setdefault(package, len(package_index)))
                g.class_name.append(name)
                g.class_version.append(None)
                g.class_image.append(None)
            g.entry_class.append(cls)
            g.entry_channel.append(channel_index.setdefault(ch, len(channel_index)))
        g.packages = list(package_index)
        g.channel_names = list(channel_index)
        # entries of different packages may share channel and bundle names, hence an
        # identifier: they are then one variable (the first one a resolution reaches)
        first: dict[tuple[int, str], int] = {}
        names = g.class_name
        pairs = zip(g.entry_channel, g.entry_class, strict=True)
        slot = [first.setdefault((ch, names[cls]), e) for e, (ch, cls) in enumerate(pairs)]
        if len(first) < len(slot):
            g.slot = array("i", slot)

    def class_entries(self, cls: int) -> list[int]:
        """Per channel listing the bundle (catalog order): its entry, or ``-1 - error``."""
        if self._class_entries is None:
            g = self.g
            table: dict[int, list[int]] = {}
            position: dict[tuple[str, str], dict[str, int]] = {}
            for package, channels in self.catalog.channels.items():
                for ch, channel in channels.items():
                    key = (package, ch)
                    err = self.broken.get(key)
                    if err is None:
                        first = g.channel_first.get(key)
                        names = position.setdefault(key, {})
                        if first is not None:
                            for pos, e in enumerate(self.catalog.channel_order(package, ch)):
                                names[e.name] = first + pos
                    for e in channel.entries:
                        c = g.class_index.get((package, e.name))
                        if c is None:
                            continue
                        if err is not None:
                            table.setdefault(c, []).append(-1 - err)
                            continue
                        entry = position[key].get(e.name)
                        if entry is not None:
                            table.setdefault(c, []).append(entry)
            self._class_entries = table
        return self._class_entries.get(cls, [])

    # -- classes --------------------------------------------------------------------

    def classes(self) -> None:
        """Templates and uniqueness keys of every bundle, and the predicates they need."""
        g = self.g
        registry = self.registry
        property_types = registry.property_types
        templates: dict[str, int] = {}
        preds: dict[Any, int] = {}
        g._preds = []
        self.preds = preds
        uerr = array("i")
        any_uerr = False
        for cls in range(len(g.class_name)):
            if cls >= g.n_bundles:
                # an entry without a bundle
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
                uerr.append(-1)
                continue
            view = self.view(cls)
            seen_types: dict[str, int] = {}
            for prop in view.properties:
                pt = property_types.get(prop.type)
                if pt is None:
                    continue  # unknown property types are ignored, as upstream
                i = seen_types.get(prop.type, 0)
                seen_types[prop.type] = i + 1
                if pt.prohibits is not None:
                    t = templates.setdefault(pt.prohibits, len(templates))
                    g.class_codes.append(-1 - 2 * t)
                if pt.requirement is None:
                    continue
                try:
                    predicate, independent = self.requirement(view, prop, pt, i)
                except ResolutionError as exc:
                    g.class_codes.append(-2 - 2 * g.add_error(exc))
                    break
                p = preds.get(predicate)
                if p is None:
                    p = preds[predicate] = len(g._preds)
                    g._preds.append(predicate)
                    g.pred_source.append((prop.type, _json(prop.value), view.name))
                if independent:
                    g.pred_raw.setdefault(raw_key(prop.type, prop.value), p)
                g.class_codes.append(p)
            g.class_start.append(len(g.class_codes))
            err = self.uniqueness(view)
            uerr.append(err)
            any_uerr = any_uerr or err >= 0
            g.ukey_start.append(len(g.ukeys))
        g.uerr = uerr if any_uerr else None
        g.templates = list(templates)

    def requirement(self, view: BundleView, prop: Property, pt: Any, i: int) -> tuple[Any, bool]:
        """The predicate of the ``i``-th property of its type, and whether it ignores the bundle's name.

        A predicate built without the bundle's name is built once per property.
        """
        try:
            value = view.values(prop.type)[i]
        except ValueError as exc:
            raise ResolutionError(f"bundle {view.name}: property {prop.type}: {exc}") from exc
        key = (id(prop), prop.type)
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

    def uniqueness(self, view: BundleView) -> int:
        """Append the bundle's keys; return an error number or -1."""
        g = self.g
        property_types = self.registry.property_types
        seen: set[int] = set()
        for type_name in dict.fromkeys(p.type for p in view.properties):
            pt = property_types.get(type_name)
            if pt is None or pt.uniqueness is None:
                continue
            try:
                values = view.values(type_name)
            except ValueError as exc:
                return g.add_error(ResolutionError(f"bundle {view.name}: property {type_name}: {exc}"))
            for value in values:
                # parsed values are shared by equal properties: one key lookup for them all
                k = self._value_keys.get((id(value), type_name), -2)
                if k == -2:
                    u = pt.uniqueness(value)
                    k = -1
                    if u is not None:
                        k = g.key_index.get(u.key, -1)
                        if k < 0:
                            k = g.key_index[u.key] = len(g.keys)
                            g.keys.append(u.key)
                    self._value_keys[(id(value), type_name)] = k
                if k < 0 or k in seen:
                    continue
                seen.add(k)
                g.ukeys.append(k)
        return -1

    # -- lists ----------------------------------------------------------------------

    def lists(self) -> None:
        g = self.g
        pred_err = array("i")
        any_err = False
        for p, predicate in enumerate(g._preds):
            items, err = self.gather(predicate)
            g.pred_items.extend(items)
            g.pred_start.append(len(g.pred_items))
            pred_err.append(err)
            any_err = any_err or err >= 0
            lookups = predicate_lookups(predicate)
            if lookups is None:
                g.scan_preds.append(p)
            else:
                for lookup in dict.fromkeys(lookups):
                    g.lookup_preds.setdefault(lookup, []).append(p)
        g.pred_err = pred_err if any_err else None
        g._pred_index = dict(self.preds)

    def gather(self, predicate: Any) -> tuple[array[int], int]:
        """The catalog's entries satisfying ``predicate`` in preference order, and an error or -1."""
        g = self.g
        lookups = predicate_lookups(predicate)
        names: Iterable[int]
        if lookups is None:
            names = range(g.n_bundles)
        else:
            found: list[int] = []
            for lookup in lookups:
                classes = self._lookups.get(lookup)
                if classes is None:
                    index = g.class_index
                    classes = [index[(b.package, b.name)] for b in self.catalog.lookup(*lookup)]
                    self._lookups[lookup] = classes
                found += classes
            names = found if len(lookups) == 1 else dict.fromkeys(found)
        out = array("i")
        for cls in names:
            view = self.view(cls)
            try:
                hit = predicate.matches(view)
            except ValueError as exc:
                return array("i"), g.add_error(ResolutionError(f"bundle {view.name}: {exc}"))
            if not hit:
                continue
            for entry in self.class_entries(cls):
                if entry < 0:
                    return array("i"), -1 - entry
                out.append(entry)
        return array("i", sorted(out)), -1


def raw_key(type_name: str, value: Any) -> tuple[str, bytes]:
    """A requirement property as a key: its type and canonical JSON value."""
    return type_name, _json(value, orjson.OPT_SORT_KEYS)


def _json(value: Any, option: int = 0) -> bytes:
    # orjson's result keeps a 4 KiB buffer whatever its length: copy what is kept
    return bytes(memoryview(orjson.dumps(value, option=option, default=str)))


def compile_graph(catalog: Any, registry: Registry) -> CatalogGraph:
    """Compile the resolution graph of a loaded catalog."""
    g = CatalogGraph()
    c = _Compiler(g, catalog, registry)
    c.entries()
    c.classes()
    c.lists()
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
