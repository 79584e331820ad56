"""Turning subscriptions, installed CSVs and properties into the solver's problem.

The only place that does. Each visible catalog's request-independent part (entries,
bundle templates, dependency candidates) comes from its
:class:`~olmkit.resolver._graph.CatalogGraph`; what depends on the request (installed CSVs,
subscriptions, and candidate lists that installed CSVs or other catalogs join) is built
here, and :func:`olmkit._solver.expand` finds the reachable variables and lays out the
solver's arrays without a Python object per variable. Identifiers, constraints and
their texts are made only when something asks (explanations, reporters).

Variables come in upstream's order: installed CSVs (by name), subscriptions (by name),
catalog entries in the order they are reached (breadth first from the subscriptions'
candidates, each bundle's dependencies in property order), then the uniqueness rules.
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_left
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import attrs

from olmkit._solver import (
    CONFLICT,
    DEPENDENCY,
    MANDATORY,
    PROHIBITED,
    AtMost,
    Block,
    Conflict,
    Constraint,
    Dependency,
    DuplicateIdentifier,
    Heads,
    LazyVariables,
    Mandatory,
    Prohibited,
    Variable,
    expand,
)
from olmkit._solver import Problem as SolverProblem
from olmkit.catalog.semver import parse_range, parse_version
from olmkit.errors import OlmkitError, ResolutionError
from olmkit.registry import Registry
from olmkit.resolver._compile import graph_candidates, raw_key
from olmkit.resolver._graph import CatalogGraph
from olmkit.resolver._graph_cache import graph_for
from olmkit.resolver._views import BundleView, Context, ViewFactory, predicate_lookups
from olmkit.resolver.request import Deferred, InstalledCSV, ResolutionRequest, SourceRef, SubscriptionRef

__all__ = ["DependencyInfo", "Entry", "Problem", "join_ids"]

#: Kept for the requirement builders' tests: the context they receive.
_Context = Context


def join_ids(ids: Sequence[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``: upstream's way of listing identifiers."""
    if len(ids) <= 1:
        return "".join(ids)
    return f"{', '.join(ids[:-1])} {last} {ids[-1]}"


@attrs.frozen
class Entry:
    """A variable's subject: one (bundle, channel) of a catalog, or an installed CSV."""

    id: str
    name: str
    package: str
    version: str | None
    channel: str
    source: SourceRef | None  # None: installed
    installed: InstalledCSV | None = None


@attrs.frozen
class DependencyInfo:
    """Why a Dependency constraint exists: for explanations."""

    kind: str  # "subscription" or "requirement"
    subject: str
    predicate: Any = None
    property_type: str | None = None
    candidates: tuple[str, ...] = ()
    subscription: SubscriptionRef | None = None


class _Installed:
    """An installed CSV: its view, class templates and keys (an item of the last block)."""

    def __init__(self, csv: InstalledCSV, view: BundleView, entry_id: str) -> None:
        self.csv = csv
        self.view = view
        self.id = entry_id
        self.malformed = False
        self.index_keys: set[tuple[str, Hashable]] = set()


class _Catalog:
    """A visible catalog in this resolution: its source, snapshot, graph and offsets."""

    def __init__(self, ref: SourceRef, catalog: Any, graph: CatalogGraph) -> None:
        self.ref = ref
        self.catalog = catalog
        self.graph = graph
        self.item_off = 0
        self.pred_off = 0
        self.err_off = 0
        self.block: Block | None = None


class Problem:
    """One namespace's resolution problem."""

    def __init__(self, request: ResolutionRequest) -> None:
        self.request = request
        self.registry: Registry = request.registry
        self.namespace = request.namespace
        self.timings: dict[str, float] = {}
        self.counters: dict[str, int] = {}
        self.cats: list[_Catalog] = []
        self.sources: list[SourceRef] = []
        self.installed: list[_Installed] = []
        self.existing_by_name: dict[str, int] = {}
        self.subscriptions: list[SubscriptionRef] = []
        self.errors: list[BaseException] = []
        self.replaces: dict[int, str] = {}
        self.views = ViewFactory(self.registry)
        self._inst_index: tuple[dict[tuple[str, Hashable], list[int]], list[int]] | None = None
        # the installed block's templates and lists
        self._inst_codes = array("i")
        self._inst_start = array("i", [0])
        self._inst_ukeys = array("i")
        self._inst_ukey_start = array("i", [0])
        self._inst_uerr = array("i")
        self._inst_preds: list[Any] = []
        self._inst_pred_type: list[str] = []
        self._inst_pred_raw: list[tuple[str, bytes] | None] = []
        # heads: per subscription, (problem text or None, candidate items, current item or -1)
        self._heads: list[tuple[str | None, list[int], int]] = []
        self._seeds: list[int] = []
        self._prefix = array("i")
        self._keys: list[str] = []
        self._key_index: dict[str, int] = {}
        self._ids: dict[str, int] | None = None
        self._templates: list[str] = []
        self._starts: list[int] = []
        self._expansion: Any = None
        self._slot: array[int] | None = None

    # -- inputs ---------------------------------------------------------------------

    def load_catalogs(self) -> None:
        """Load every visible catalog and its graph; any failure fails the whole namespace."""
        start = time.perf_counter()
        visible = {self.namespace}
        if not self.request.exclude_global:
            visible.add(self.request.global_namespace)
        loaded = []
        for ref in self.request.sources:
            if ref.namespace not in visible:
                continue
            try:
                catalog = ref.source.load()
            except OlmkitError as exc:
                raise ResolutionError(f"error using catalogsource {ref.namespace}/{ref.name}: {exc}") from exc
            loaded.append((ref, catalog))
        self.timings["catalog"] = time.perf_counter() - start
        start = time.perf_counter()
        for ref, loaded_catalog in loaded:
            graph, origin, catalog = graph_for(loaded_catalog, self.registry)
            self.counters[f"graphs_{origin}"] = self.counters.get(f"graphs_{origin}", 0) + 1
            self.sources.append(ref)
            self.cats.append(_Catalog(ref, catalog, graph))
        self.timings["graph"] = time.perf_counter() - start
        item_off = pred_off = err_off = 0
        for cat in self.cats:
            g = cat.graph
            cat.item_off, cat.pred_off, cat.err_off = item_off, pred_off, err_off
            item_off += g.n_entries
            pred_off += g.n_preds
            err_off += len(g.errors)
        self.n_catalog_items = item_off
        self.n_catalog_preds = pred_off
        self.n_catalog_errors = err_off

    def _catalog_rank(self, ref: SourceRef, preferred: SourceRef | None) -> tuple[Any, ...]:
        return (
            0 if preferred is not None and ref is preferred else 1,
            -ref.priority,
            0 if ref.namespace == self.namespace else 1,
            ref.name,
        )

    def _cat_of(self, name: str, namespace: str) -> _Catalog | None:
        for cat in self.cats:
            if cat.ref.name == name and cat.ref.namespace == namespace:
                return cat
        return None

    def _error(self, exc: BaseException) -> int:
        self.errors.append(exc)
        return self.n_catalog_errors + len(self.errors) - 1

    # -- installed CSVs -------------------------------------------------------------

    def add_installed(self) -> None:
        """Installed CSVs become variables; those no subscription references are mandatory."""
        registry = self.registry
        referenced = {s.installed_csv for s in self.request.subscriptions if s.installed_csv}
        identity_types = registry.identity_types
        base = self.n_catalog_items
        for csv in sorted(self.request.installed, key=lambda c: c.name):
            package = ""
            view = self.views.view(csv.name, "", csv.version, csv.properties)
            for t in identity_types:
                for value in _values(view, t, csv.name):
                    package = getattr(value, "package", "") or package
            view.package = package
            item = base + len(self.installed)
            inst = _Installed(csv, view, f"@existing/{self.namespace}//{csv.name}")
            self.installed.append(inst)
            self.existing_by_name[csv.name] = len(self.installed) - 1
            self._seeds.append(item)
            if csv.name not in referenced:
                self._prefix.extend((item, MANDATORY, 0))
        for inst in self.installed:
            self._installed_templates(inst)
            self._installed_keys(inst)

    def _installed_templates(self, inst: _Installed) -> None:
        """An installed CSV's templates, as a graph's class (predicates local to the block)."""
        view = inst.view
        codes = self._inst_codes
        property_types = self.registry.property_types
        seen_types: dict[str, int] = {}
        for prop in view.properties:
            pt = property_types.get(prop.type)
            if pt is None:
                continue
            i = seen_types.get(prop.type, 0)
            seen_types[prop.type] = i + 1
            if pt.prohibits is not None:
                codes.append(-1 - 2 * self._template(pt.prohibits))
            if pt.requirement is None:
                continue
            context = Context(self.registry, view.name)
            try:
                value = _values(view, prop.type, view.name)[i]
                try:
                    predicate = pt.requirement(value, context)
                except ValueError as exc:
                    raise ResolutionError(f"bundle {view.name}: property {prop.type}: {exc}") from exc
            except ResolutionError as exc:
                codes.append(-2 - 2 * self._error(exc))
                break
            codes.append(len(self._inst_preds))
            self._inst_preds.append(predicate)
            self._inst_pred_type.append(prop.type)
            self._inst_pred_raw.append(None if context.used_bundle else raw_key(prop.type, prop.value))
        self._inst_start.append(len(codes))

    def _template(self, text: str) -> int:
        # installed prohibitions carry their text directly (the graph's templates are per catalog)
        self._templates.append(text)
        return len(self._templates) - 1

    def _installed_keys(self, inst: _Installed) -> None:
        view = inst.view
        property_types = self.registry.property_types
        seen: set[str] = set()
        err = -1
        for type_name in dict.fromkeys(p.type for p in view.properties):
            pt = property_types.get(type_name)
            if pt is not None and pt.index_keys is not None:
                try:
                    for value in view.values(type_name):
                        inst.index_keys.update((type_name, k) for k in pt.index_keys(value))
                except (ValueError, TypeError, AttributeError, KeyError):
                    inst.malformed = True
            if pt is None or pt.uniqueness is None or err >= 0:
                continue
            try:
                values = view.values(type_name)
            except ValueError as exc:
                err = self._error(ResolutionError(f"bundle {view.name}: property {type_name}: {exc}"))
                continue
            for value in values:
                u = pt.uniqueness(value)
                if u is None or u.key in seen:
                    continue
                seen.add(u.key)
                self._inst_ukeys.append(self._key(u.key))
        if not inst.malformed:
            for p in view.properties:
                pt = property_types.get(p.type)
                if pt is not None:
                    try:
                        view.values(p.type)
                    except ValueError:
                        inst.malformed = True
                        break
        self._inst_ukey_start.append(len(self._inst_ukeys))
        self._inst_uerr.append(err)

    def _key(self, key: str) -> int:
        if self.cats:
            k = self.cats[0].graph.key_index.get(key)
            if k is not None:
                return k
        k = self._key_index.get(key)
        if k is None:
            base = len(self.cats[0].graph.keys) if self.cats else 0
            k = self._key_index[key] = base + len(self._keys)
            self._keys.append(key)
        return k

    def key_text(self, key: int) -> str:
        base = len(self.cats[0].graph.keys) if self.cats else 0
        return self.cats[0].graph.keys[key] if key < base else self._keys[key - base]

    # -- subscriptions --------------------------------------------------------------

    def add_subscriptions(self) -> None:
        """One Mandatory variable per subscription, depending on its candidates in order."""
        self.subscriptions = sorted(self.request.subscriptions, key=lambda s: s.name)
        for sub in self.subscriptions:
            problem = self._subscription_problem(sub)
            if problem is not None:
                self._heads.append((problem, [], -1))
                continue
            current = self.existing_by_name.get(sub.installed_csv, -1) if sub.installed_csv else -1
            current_item = self.n_catalog_items + current if current >= 0 else -1
            candidates = self._subscription_candidates(sub, current)
            for item in candidates:
                if current >= 0:
                    self._prefix.extend((item, CONFLICT, current_item))
                    slot = self._slot[item] if self._slot is not None else item
                    self.replaces[slot] = self.installed[current].view.name
            self._seeds += candidates
            self._heads.append((None, candidates, current_item))

    def _subscription_problem(self, sub: SubscriptionRef) -> str | None:
        cat = self._cat_of(sub.source, sub.source_namespace)
        if cat is None:
            return (
                f"no operators found from catalog {sub.source} in namespace {sub.source_namespace} "
                f"referenced by subscription {sub.name}"
            )
        catalog = cat.catalog
        if sub.package not in catalog.packages:
            return f"no operators found in package {sub.package} in the catalog referenced by subscription {sub.name}"
        channels = catalog.channels.get(sub.package, {})
        if sub.channel and sub.channel not in channels:
            return (
                f"no operators found in channel {sub.channel} of package {sub.package} "
                f"in the catalog referenced by subscription {sub.name}"
            )
        if sub.starting_csv and sub.installed_csv not in self.existing_by_name:
            names = [sub.channel] if sub.channel else list(channels)
            if not any(e.name == sub.starting_csv for ch in names for e in channels[ch].entries):
                return (
                    f"no operators found with name {sub.starting_csv} in channel {sub.channel} of package "
                    f"{sub.package} in the catalog referenced by subscription {sub.name}"
                )
        return None

    def _subscription_candidates(self, sub: SubscriptionRef, current: int) -> list[int]:
        cat = self._cat_of(sub.source, sub.source_namespace)
        assert cat is not None
        catalog = cat.catalog
        channels = list(catalog.channels.get(sub.package, {}))
        if sub.channel:
            channels = [sub.channel]
        else:
            pkg = catalog.packages.get(sub.package)
            default = pkg.default_channel if pkg is not None else None
            channels.sort(key=lambda ch: (ch != default, ch))
        name = self.installed[current].view.name if current >= 0 else ""
        current_version = None
        if current >= 0 and self.installed[current].view.version:
            try:
                current_version = parse_version(self.installed[current].view.version or "", tolerant=True)
            except ValueError:
                current_version = None
        out = []
        for ch in channels:
            if current < 0 and sub.starting_csv:
                # the starting bundle is taken from the whole channel, even when a newer
                # entry skips it or the channel is broken: upstream sorts the one matching
                # entry, not the channel
                entry = cat.graph.off_chain.get((sub.package, ch, sub.starting_csv))
                if entry is not None:
                    out.append(cat.item_off + entry)
                if entry is not None or (sub.package, ch) in cat.graph.broken:
                    continue
            for pos, e in enumerate(catalog.channel_order(sub.package, ch)):
                if current >= 0:
                    upgrades = e.replaces == name or name in (e.skips or ())
                    if not upgrades and e.skip_range and current_version is not None:
                        try:
                            upgrades = parse_range(e.skip_range).matches(current_version)
                        except ValueError:
                            upgrades = False  # an unparsable skipRange is dropped, as upstream
                    if not upgrades:
                        continue
                elif sub.starting_csv and e.name != sub.starting_csv:
                    continue
                out.append(cat.item_off + cat.graph.entry_of(sub.package, ch, pos))
        return out

    # -- candidate lists that depend on the request ------------------------------------

    def _installed_matches(
        self, predicate: Any, lookups: Sequence[tuple[str, Hashable]] | None
    ) -> tuple[list[int], int]:
        """Installed CSVs satisfying a predicate (as items), and an error or -1.

        A predicate with lookups can only match bundles filed under one of them (the
        ``Predicate`` contract), so the others are not asked; a CSV with a malformed
        property is always asked (the predicate may fail on it, as upstream's does).
        """
        out = []
        base = self.n_catalog_items
        asked: Iterable[int]
        if lookups is None:
            asked = range(len(self.installed))
        else:
            by_key, malformed = self._installed_index()
            picked = set(malformed)
            for lk in lookups:
                picked.update(by_key.get(lk, ()))
            asked = sorted(picked)
        for i in asked:
            inst = self.installed[i]
            try:
                hit = predicate.matches(inst.view)
            except ValueError as exc:
                return [], self._error(ResolutionError(f"bundle {inst.view.name}: {exc}"))
            if hit:
                out.append(base + i)
        return out, -1

    def _installed_index(self) -> tuple[dict[tuple[str, Hashable], list[int]], list[int]]:
        """The installed CSVs filed under each index key, and those always asked (malformed)."""
        if self._inst_index is None:
            by_key: dict[tuple[str, Hashable], list[int]] = {}
            malformed = []
            for i, inst in enumerate(self.installed):
                if inst.malformed:
                    malformed.append(i)
                for lk in inst.index_keys:
                    by_key.setdefault(lk, []).append(i)
            self._inst_index = by_key, malformed
        return self._inst_index

    def _compose(
        self, predicate: Any, own: _Catalog | None, own_pred: int, raw: tuple[str, bytes] | None
    ) -> tuple[list[int], int]:
        """A dependency's candidates: installed first, then catalogs in preference order."""
        out, err = self._installed_matches(predicate, predicate_lookups(predicate))
        if err >= 0:
            return out, err
        preferred = own.ref if own is not None else None
        for cat in sorted(self.cats, key=lambda c: self._catalog_rank(c.ref, preferred)):
            g = cat.graph
            if cat is own:
                lst = g.pred_items[g.pred_start[own_pred] : g.pred_start[own_pred + 1]]
                err = g.pred_err[own_pred] if g.pred_err is not None else -1
            else:
                lst, failure = graph_candidates(g, predicate, self.registry, cat.catalog, raw)
                if not isinstance(failure, int):
                    return [], self._error(failure)
                err = failure
            if err >= 0:
                return [], cat.err_off + err
            off = cat.item_off
            out += [off + x for x in lst] if off else lst
        return out, -1

    def overrides(self) -> tuple[list[tuple[Sequence[int], int]], array[int]]:
        """The lists this request changes: where installed CSVs or other catalogs join in."""
        n_preds = self.n_catalog_preds + len(self._inst_preds)
        override_of = array("i", [-1]) * n_preds
        overrides: list[tuple[Sequence[int], int]] = []

        def put(global_pred: int, found: tuple[Sequence[int], int]) -> None:
            override_of[global_pred] = len(overrides)
            overrides.append(found)

        inst_pred_off = self.n_catalog_preds
        inst_lists = []
        for p, predicate in enumerate(self._inst_preds):
            composed = self._compose(predicate, None, -1, self._inst_pred_raw[p])
            put(inst_pred_off + p, composed)
            inst_lists.append(composed[0])
        if len(self.cats) == 1:
            # one catalog: only lists that installed CSVs join differ from the graph's own
            cat = self.cats[0]
            g = cat.graph
            affected: set[int] = set()
            if self.installed:
                affected.update(g.scan_preds)
                if any(inst.malformed for inst in self.installed):
                    affected.update(range(g.n_preds))
                else:
                    for inst in self.installed:
                        for lk in inst.index_keys:
                            affected.update(g.lookup_preds.get(lk, ()))
            for p in sorted(affected):
                predicate = g.predicate(p, self.registry)
                matched, err = self._installed_matches(predicate, predicate_lookups(predicate))
                if err >= 0:
                    put(cat.pred_off + p, ([], err))
                elif matched:
                    own = g.pred_err[p] if g.pred_err is not None else -1
                    items = g.pred_items[g.pred_start[p] : g.pred_start[p + 1]]
                    put(cat.pred_off + p, ([], cat.err_off + own) if own >= 0 else ([*matched, *items], -1))
        elif len(self.cats) > 1:
            self._compose_reachable(put, inst_lists)
        return overrides, override_of

    def _compose_reachable(self, put: Any, inst_lists: Sequence[Sequence[int]]) -> None:
        """Several catalogs: compose every list a reachable bundle depends on."""
        inst_block = len(self.cats)
        seen_items = bytearray(self.n_catalog_items + len(self.installed))
        seen_classes: set[tuple[int, int]] = set()
        done: dict[tuple[int, int], Sequence[int]] = {}
        queue = list(self._seeds)
        while queue:
            item = queue.pop()
            if seen_items[item]:
                continue
            seen_items[item] = 1
            b, local = self._locate(item)
            if b == inst_block:
                cls = local
                codes: Sequence[int] = self._inst_codes[self._inst_start[cls] : self._inst_start[cls + 1]]
            else:
                g = self.cats[b].graph
                cls = g.entry_class[local]
                codes = g.class_codes[g.class_start[cls] : g.class_start[cls + 1]]
            if (b, cls) in seen_classes:
                continue
            seen_classes.add((b, cls))
            for code in codes:
                if code < 0:
                    continue
                if b == inst_block:
                    members = inst_lists[code]
                else:
                    members_found = done.get((b, code))
                    if members_found is None:
                        cat = self.cats[b]
                        g = cat.graph
                        found = self._compose(g.predicate(code, self.registry), cat, code, g.raw_of(code))
                        put(cat.pred_off + code, found)
                        members_found = done[(b, code)] = found[0]
                    members = members_found
                queue.extend(members)

    def _locate(self, item: int) -> tuple[int, int]:
        """Block number and local number of a global item."""
        if item >= self.n_catalog_items:
            return len(self.cats), item - self.n_catalog_items
        if len(self.cats) == 1:
            return 0, item
        if not self._starts:
            self._starts = [c.item_off for c in self.cats]
        b = bisect_left(self._starts, item + 1) - 1
        return b, item - self.cats[b].item_off

    # -- the whole ------------------------------------------------------------------

    def blocks(self) -> list[Block]:
        out = []
        key_maps = self._key_maps()
        for cat, key_map in zip(self.cats, key_maps, strict=True):
            base = cat.graph.block()
            out.append(
                attrs.evolve(base, item_off=cat.item_off, pred_off=cat.pred_off, err_off=cat.err_off, key_map=key_map)
            )
        any_uerr = any(e >= 0 for e in self._inst_uerr)
        out.append(
            Block(
                item_off=self.n_catalog_items,
                pred_off=self.n_catalog_preds,
                err_off=0,
                item_class=array("i", range(len(self.installed))),
                class_start=self._inst_start,
                class_codes=self._inst_codes,
                ukey_start=self._inst_ukey_start,
                ukeys=self._inst_ukeys,
                pred_start=array("i", [0]) * (len(self._inst_preds) + 1),
                pred_items=array("i"),
                uerr=self._inst_uerr if any_uerr else None,
            )
        )
        return out

    def _key_maps(self) -> list[array[int] | None]:
        """Per catalog, its keys in this resolution's key numbers (the first catalog's are kept)."""
        maps: list[array[int] | None] = []
        for i, cat in enumerate(self.cats):
            if i == 0:
                maps.append(None)
                continue
            maps.append(array("i", [self._key(k) for k in cat.graph.keys]))
        return maps

    @property
    def n_keys(self) -> int:
        return (len(self.cats[0].graph.keys) if self.cats else 0) + len(self._keys)

    def _heads_record(self) -> Heads:
        start = array("i", [0])
        cons = array("i")
        items = array("i")
        for problem, candidates, current in self._heads:
            cons.extend((MANDATORY, 0, 0))
            if problem is not None:
                cons.extend((PROHIBITED, 0, 0))
            else:
                members = [*candidates, current] if current >= 0 else candidates
                cons.extend((DEPENDENCY, len(items), len(members)))
                items.extend(members)
            start.append(len(cons) // 3)
        return Heads(start, cons, items)

    def _slots(self) -> array[int] | None:
        """Variable slots when a catalog has entries sharing an identifier (else ``None``)."""
        if not any(c.graph.slot is not None for c in self.cats):
            return None
        out = array("i")
        for cat in self.cats:
            if cat.graph.slot is None:
                out.extend(range(cat.item_off, cat.item_off + cat.graph.n_entries))
            else:
                out.extend(cat.item_off + s for s in cat.graph.slot)
        return out

    def build(self) -> SolverProblem:
        """The solver's problem: anchors first (installed CSVs, subscriptions by name), bundles, invariants.

        Raises:
            ResolutionError: not exactly one OperatorGroup, an unusable catalog, or a
                reachable bundle whose requirements cannot be built.
            DuplicateIdentifier: two variables would share an identifier.
        """
        if self.request.operator_groups != 1:
            raise ResolutionError(f"expected 1 OperatorGroup in the namespace, found {self.request.operator_groups}")
        self.load_catalogs()
        start = time.perf_counter()
        self._slot = self._slots()
        self.add_installed()
        if self._slot is not None:
            self._slot.extend(range(self.n_catalog_items, self.n_catalog_items + len(self.installed)))
        self.add_subscriptions()
        overrides, override_of = self.overrides()
        blocks = self.blocks()
        n_items = self.n_catalog_items + len(self.installed)
        exp = expand(
            blocks,
            n_items=n_items,
            seeds=self._seeds,
            n_front=len(self.installed),
            heads=self._heads_record(),
            prefix=self._prefix,
            n_keys=self.n_keys,
            slot=self._slot,
            overrides=overrides,
            override_of=override_of,
        )
        if exp.error >= 0:
            raise self._raise(exp.error)
        self._expansion = exp
        self._check_duplicates()
        self.timings["variables"] = time.perf_counter() - start
        self.counters["variables"] = exp.n_vars
        self.counters["constraints"] = len(exp.top)
        return exp.problem(LazyVariables(exp.n_vars, self.variable))

    def _raise(self, error: int) -> BaseException:
        for cat in self.cats:
            if cat.err_off <= error < cat.err_off + len(cat.graph.errors):
                return cat.graph.error(error - cat.err_off)
        return self.errors[error - self.n_catalog_errors]

    def _check_duplicates(self) -> None:
        seen: set[str] = set()
        for inst in self.installed:
            if inst.id in seen:
                raise DuplicateIdentifier(identifier=inst.id)
            seen.add(inst.id)
        for sub in self.subscriptions:
            sub_id = f"subscription:{sub.name}"
            if sub_id in seen:
                raise DuplicateIdentifier(identifier=sub_id)
            seen.add(sub_id)
        keys = self.cats[0].graph.keys if self.cats else []
        base = len(keys)
        for k in self._expansion.group_keys:  # key_text, inline: once per uniqueness rule reached
            key = keys[k] if k < base else self._keys[k - base]
            if key in seen or (key.count("/") == 3 and key in self.ids()):  # a catalog entry's identifier
                raise DuplicateIdentifier(identifier=key)
            seen.add(key)

    # -- identifiers and constraints, on demand ------------------------------------------

    def kind(self, var: int) -> tuple[str, int]:
        """``("item", item)``, ``("head", h)`` or ``("group", g)`` for a 0-based variable."""
        item = self._expansion.var_item[var]
        if item >= 0:
            return "item", item
        n_heads = len(self._heads)
        if -item <= n_heads:
            return "head", -1 - item
        return "group", -1 - n_heads - item

    def items_of(self, variables: Iterable[int]) -> list[int]:
        """The items among 0-based variables, in their order (heads and groups left out)."""
        var_item = self._expansion.var_item
        return [item for item in map(var_item.__getitem__, variables) if item >= 0]

    def entry(self, item: int) -> Entry:
        """The subject of an item."""
        b, local = self._locate(item)
        if b == len(self.cats):
            inst = self.installed[local]
            return Entry(inst.id, inst.view.name, inst.view.package, inst.view.version, "", None, inst.csv)
        cat = self.cats[b]
        g = cat.graph
        package, channel, name = g.entry_names(local)
        ref = cat.ref
        version = g.class_version[g.entry_class[local]]
        return Entry(f"{ref.name}/{ref.namespace}/{channel}/{name}", name, package, version, channel, ref)

    def var_id(self, var: int) -> str:
        kind, n = self.kind(var)
        if kind == "item":
            return self.entry(n).id
        if kind == "head":
            return f"subscription:{self.subscriptions[n].name}"
        return self.key_text(self._expansion.group_keys[n])

    def ids(self) -> dict[str, int]:
        """Every variable's identifier -> its 0-based number (made on first use)."""
        if self._ids is None:
            self._ids = {}
            for v in range(self._expansion.n_vars):
                self._ids.setdefault(self.var_id(v), v)
        return self._ids

    def _node_ids(self, start: int, length: int) -> tuple[str, ...]:
        args = self._expansion.args
        return tuple(self.var_id(args[t] - 1) for t in range(start, start + length))

    def _nodes(self, var: int) -> list[tuple[int, int, int, int]]:
        """(kind, param, start, length) of each of the variable's constraints, in order."""
        exp = self._expansion
        owner = exp.top_owner
        j = bisect_left(owner, var)
        out = []
        while j < len(owner) and owner[j] == var:
            o = 5 * exp.top[j]
            out.append((exp.nodes[o], exp.nodes[o + 2], exp.nodes[o + 3], exp.nodes[o + 4]))
            j += 1
        return out

    def _class_templates(self, item: int) -> tuple[list[tuple[str, Any, str | None]], str]:
        """The item's class templates as ``("prohibit", text, None)`` / ``("dep", predicate, type)``."""
        b, local = self._locate(item)
        out: list[tuple[str, Any, str | None]] = []
        if b == len(self.cats):
            codes = self._inst_codes[self._inst_start[local] : self._inst_start[local + 1]]
            for code in codes:
                if code >= 0:
                    out.append(("dep", self._inst_preds[code], self._inst_pred_type[code]))
                elif not (-1 - code) & 1:
                    out.append(("prohibit", self._templates[(-1 - code) >> 1], None))
            return out, self.installed[local].view.name
        g = self.cats[b].graph
        cls = g.entry_class[local]
        for code in g.class_codes[g.class_start[cls] : g.class_start[cls + 1]]:
            if code >= 0:
                out.append(("dep", g.predicate(code, self.registry), g.pred_source[code][0]))
            elif not (-1 - code) & 1:
                out.append(("prohibit", g.templates[(-1 - code) >> 1], None))
        return out, g.class_name[cls]

    def variable(self, var: int) -> Variable:
        """The variable as :class:`Variable` (identifier, constraints with upstream's texts)."""
        return Variable(self.var_id(var), tuple(c for c, _ in self._constraints(var)))

    def _constraints(self, var: int) -> list[tuple[Constraint, DependencyInfo | None]]:
        kind, n = self.kind(var)
        subject = self.var_id(var)
        nodes = self._nodes(var)
        out: list[tuple[Constraint, DependencyInfo | None]] = []
        if kind == "head":
            sub = self.subscriptions[n]
            problem = self._heads[n][0]
            out.append((Mandatory(f"subscription {sub.name} exists"), None))
            if problem is not None:
                out.append((Prohibited(problem), None))
                return out
            _, _, start, length = nodes[1]
            ids = self._node_ids(start, length)
            if not ids:
                message = f"no operators found matching the criteria of subscription {sub.name}"
            elif len(ids) == 1:
                message = f"subscription {sub.name} requires {ids[0]}"
            else:
                message = f"subscription {sub.name} requires at least one of {join_ids(ids, 'or')}"
            info = DependencyInfo("subscription", subject, candidates=ids, subscription=sub)
            out.append((Dependency(ids, message), info))
            return out
        if kind == "group":
            key = subject
            _, _, start, length = nodes[1]
            ids = self._node_ids(start, length)
            mandatory_text, members_text = self._key_texts(self._expansion.args[start] - 1, key)
            out.append((Mandatory(mandatory_text.format(key=key)), None))
            out.append((AtMost(1, ids, members_text.format(ids=join_ids(ids), key=key)), None))
            return out
        templates, bundle = self._class_templates(n)
        n_prefix = len(nodes) - len(templates)
        for node_kind, _, start, _length in nodes[:n_prefix]:
            if node_kind == MANDATORY:
                name = self.entry(n).name
                out.append(
                    (Mandatory(f"clusterserviceversion {name} exists and is not referenced by a subscription"), None)
                )
            else:
                assert node_kind == CONFLICT
                out.append((Conflict(self.var_id(self._expansion.args[start] - 1)), None))
        for (what, value, type_name), (_, _, start, length) in zip(templates, nodes[n_prefix:], strict=True):
            if what == "prohibit":
                out.append((Prohibited(value.format(id=subject)), None))
                continue
            ids = self._node_ids(start, length)
            message = f"bundle {bundle} requires an operator {value}"
            info = DependencyInfo("requirement", bundle, predicate=value, property_type=type_name, candidates=ids)
            out.append((Dependency(ids, message), info))
        return out

    def _key_texts(self, var: int, key: str) -> tuple[str, str]:
        """The texts of the uniqueness rule ``key`` as the first variable carrying it gives them."""
        kind, item = self.kind(var)
        assert kind == "item"
        b, local = self._locate(item)
        if b == len(self.cats):
            view = self.installed[local].view
        else:
            cat = self.cats[b]
            g = cat.graph
            package, _, name = g.entry_names(local)
            bundle = cat.catalog.bundles[package][name]
            view = self.views.view(bundle.name, bundle.package, bundle.version, bundle.properties)
        property_types = self.registry.property_types
        for type_name in dict.fromkeys(p.type for p in view.properties):
            pt = property_types.get(type_name)
            if pt is None or pt.uniqueness is None:
                continue
            for value in view.values(type_name):
                u = pt.uniqueness(value)
                if u is not None and u.key == key:
                    return u.mandatory_text, u.members_text
        raise AssertionError(f"no uniqueness rule {key!r} on {view.name}")

    def dependency_info(self, subject: str, dependency: Constraint) -> DependencyInfo | None:
        """Why the constraint ``dependency`` of variable ``subject`` exists: that constraint itself,
        not another with the same text (two requirements can read alike, e.g. a gvk and a ``not``
        of it, while their candidates differ)."""
        var = self.ids().get(subject)
        if var is None:
            return None
        for constraint, info in self._constraints(var):
            if info is not None and constraint == dependency:
                return info
        return None

    def constraints_of(self, subject: str) -> tuple[Constraint, ...]:
        """The constraints of variable ``subject`` (empty when there is none)."""
        var = self.ids().get(subject)
        return () if var is None else tuple(c for c, _ in self._constraints(var))

    def image(self, item: int) -> str | None:
        """The bundle image of a catalog entry item."""
        b, local = self._locate(item)
        g = self.cats[b].graph
        return g.class_image[g.entry_class[local]]

    def deferred_bundle(self, item: int) -> tuple[Deferred, Deferred]:
        """``(properties, content)`` of a catalog entry, read from its catalog on first use."""
        b, local = self._locate(item)
        cat = self.cats[b]
        package, _, name = cat.graph.entry_names(local)
        return _bundle_loaders(cat.catalog, package, name, self.registry.inline_types)

    def replaces_of(self, item: int) -> str | None:
        """The installed CSV a subscription candidate upgrades, if any (the owner's slot)."""
        if self._slot is not None:
            item = self._slot[item]
        return self.replaces.get(item)

    def subject(self, variable: str) -> Entry | None:
        """The entry a variable stands for (``None`` for subscriptions and rules)."""
        var = self.ids().get(variable)
        if var is None:
            return None
        kind, item = self.kind(var)
        return self.entry(item) if kind == "item" else None


def _bundle_loaders(catalog: Any, package: str, name: str, inline: frozenset[str]) -> tuple[Deferred, Deferred]:
    """Loaders of a bundle's properties and of the bundle (holding the catalog, not the problem)."""

    def content() -> Any:
        return catalog.bundles[package][name]

    def properties() -> tuple[Any, ...]:
        props: tuple[Any, ...] = content().properties
        return tuple(p for p in props if p.type not in inline) if inline else props

    return Deferred(properties), Deferred(content)


def _values(view: BundleView, type_name: str, bundle: str) -> tuple[Any, ...]:
    try:
        return view.values(type_name)
    except ValueError as exc:
        raise ResolutionError(f"bundle {bundle}: property {type_name}: {exc}") from exc
