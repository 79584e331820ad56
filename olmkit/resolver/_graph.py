"""A catalog's resolution graph: entries, bundle templates and candidate lists as int arrays.

Everything resolution needs from one catalog that does not depend on the request is
computed once per catalog content and shared by every resolution against it:

* *entries*: one per (bundle, channel) that can be a candidate (entries another entry of
  the channel skips are left out), numbered in upstream's preference order within a
  catalog: default channel first, then package name, channel name and the replaces chain
  from the head. A channel's entries are therefore consecutive, head first. The entries
  off the chains (skipped ones) follow all of them: no candidate list holds them, only a
  new subscription's ``startingCSV`` can name one.
* *classes*: one per bundle: its templates (``olm.deprecated``-style prohibitions and one
  dependency per requirement, in property order) and its uniqueness keys, as the codes of
  :class:`olmkit._solver.Block`.
* *lists*: one per distinct requirement predicate: the catalog's entries that satisfy it,
  in preference order.

Whatever fails (a malformed property, a constraint that does not build, a broken channel
graph) is recorded where it happens and raised only when a resolution reaches it, with
the text the resolver would have given. :mod:`olmkit.resolver._compile` builds a graph;
:mod:`olmkit.resolver._graph_cache` keeps graphs in memory and, for a catalog with a
content digest, on disk (next to the catalog cache), so that a new process resolves at once.
"""

from __future__ import annotations

import marshal
import threading
from array import array
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any, Final

import orjson

from olmkit._solver import Block
from olmkit.errors import CatalogError, OlmkitError, ResolutionError
from olmkit.registry import Registry
from olmkit.resolver._views import Context

if TYPE_CHECKING:
    import mmap

__all__ = ["FORMAT", "CatalogGraph"]

#: the version of the stored form (:meth:`CatalogGraph.dumps`)
FORMAT: Final = 2

#: held while a deferred attribute is made (:meth:`CatalogGraph.defer`)
_MAKING: Final = threading.RLock()

#: Error classes a graph may record (by name, so that graphs can be stored).
_ERRORS: Final[Mapping[str, type[OlmkitError]]] = {"CatalogError": CatalogError, "ResolutionError": ResolutionError}


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
        #: entries ``0 .. n_chain-1`` are the channels' chains; later ones are entries off
        #: the chain, by ``(package, channel, bundle)``
        self.n_chain = 0
        self.off_chain: dict[tuple[str, str, str], int] = {}
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
        #: what gives one list's ``pred_source`` while the whole is deferred
        self._source_at: Any = None
        #: attributes made on first use (:meth:`defer`): name -> what fills it in
        self._later: dict[str, Callable[[CatalogGraph], None]] = {}
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

    def defer(self, make: Callable[[CatalogGraph], None], *names: str) -> None:
        """Leave attributes ``names`` out until first read: ``make(graph)`` then sets them (all of them).

        For what a resolution seldom reads and the compiler holds in compact form: the
        graph's bytes (:meth:`dumps`) and answers are the same, made or not. ``make`` is
        handed the graph (it need not hold it: no cycle for the cyclic GC to find).
        """
        for name in names:
            self.__dict__.pop(name, None)
            self._later[name] = make

    # -- predicates -----------------------------------------------------------------

    def predicate(self, pred: int, registry: Registry) -> Any:
        """The predicate of list ``pred`` (rebuilt from its requirement after loading)."""
        if len(self._preds) < self.n_preds:
            self._preds += [None] * (self.n_preds - len(self._preds))
        found = self._preds[pred]
        if found is None:
            sources = self.__dict__.get("pred_source")
            if sources is None:
                sources = self.__dict__.get("_source_at") or self.pred_source  # compact (deferred), or all
            type_name, raw, bundle = sources[pred]
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
            "n_chain": self.n_chain,
            "off_chain": [(p, c, n, e) for (p, c, n), e in self.off_chain.items()],
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
                    "format": FORMAT,
                    "core": core,
                    "names": marshal.dumps(names, 2),
                    "preds": marshal.dumps(preds, 2),
                },
                2,
            )
        except ValueError:
            return None  # an index key marshal cannot store (a plugin's own type)

    @classmethod
    def loads(cls, data: bytes | mmap.mmap) -> CatalogGraph | None:
        """A graph from :meth:`dumps` (its bytes, or a file of them mapped), or ``None`` when the data is not one."""
        try:
            state = marshal.loads(data)
            if not isinstance(state, dict) or state.get("format") != FORMAT:
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
            g._later = {}
            g._sections = {"names": state["names"], "preds": state["preds"]}
            g.entry_class = _ints(core["entry_class"])
            g.channel_first = {(p, c): f for p, c, f in core["channel_first"]}
            g.n_chain = core["n_chain"]
            g.off_chain = {(p, c, n): e for p, c, n, e in core["off_chain"]}
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
        # attributes left out until first use (defer), and the sections of graphs read by
        # loads(), decoded on first use
        later = self.__dict__.get("_later")
        if later and name in later:
            with _MAKING:  # (graphs are shared between threads: made once)
                make = later.get(name)
                if make is not None:
                    make(self)
                    for other in [n for n, m in later.items() if m is make]:
                        del later[other]
            return self.__dict__[name]
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
