"""The resolver's problem builder as it was before resolution graphs: the test oracle.

This is the straightforward builder (one Python object per variable, candidates gathered
per resolution) that the graph-based builder in :mod:`olmkit.resolver._build` replaced.
Tests build both from the same request and require byte-identical solver input, so the
fast path cannot drift from these semantics.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from olmkit._solver import (
    AppliedConstraint,
    AtMost,
    Conflict,
    Constraint,
    Dependency,
    Mandatory,
    NotSatisfiable,
    Prohibited,
    Variable,
    solve,
)
from olmkit.catalog.semver import parse_range, parse_version
from olmkit.errors import OlmkitError, ResolutionError
from olmkit.model import Property
from olmkit.registry import Registry
from olmkit.resolver.request import (
    CONSTRAINTS_NOT_SATISFIABLE,
    ERROR_PREVENTED_RESOLUTION,
    ExplanationNode,
    InstalledCSV,
    Resolution,
    ResolutionRequest,
    SourceRef,
    Step,
    SubscriptionRef,
)


class BundleView:
    """A bundle (catalog entry or installed CSV) as predicates see it."""

    __slots__ = ("_key", "_parsed", "_registry", "matched", "name", "package", "properties", "version")

    def __init__(
        self, name: str, package: str, version: str | None, properties: tuple[Property, ...], registry: Registry
    ) -> None:
        self.name = name
        self.package = package
        self.version = version
        inline = registry.inline_types
        self.properties = tuple(p for p in properties if p.type not in inline) if inline else properties
        self._registry = registry
        self._parsed: dict[str, tuple[Any, ...]] = {}
        self._key: bytes | None = None
        self.matched: dict[int, bool] = {}

    def values(self, type_name: str) -> tuple[Any, ...]:
        """Parsed values of every property of ``type_name`` (parsed once).

        Raises:
            ValueError: a property of that type is malformed.
        """
        parsed = self._parsed.get(type_name)
        if parsed is None:
            pt = self._registry.property_types.get(type_name)
            raw = [p.value for p in self.properties if p.type == type_name]
            parsed = tuple(pt.parse(v) for v in raw) if pt is not None else tuple(raw)
            self._parsed[type_name] = parsed
        return parsed

    @property
    def property_key(self) -> bytes:
        """A canonical key of the property list (for caches keyed by property set)."""
        if self._key is None:
            import orjson

            self._key = orjson.dumps(
                [[p.type, p.value] for p in self.properties], option=orjson.OPT_SORT_KEYS, default=str
            )
        return self._key


class CatalogIndex:
    """Lazy lookup structures over one loaded catalog."""

    def __init__(self, catalog: Any, registry: Registry) -> None:
        self.catalog = catalog
        self.registry = registry
        self._views: dict[tuple[str, str], BundleView] = {}
        self._by_type: dict[str, dict[Hashable, list[tuple[str, str]]]] = {}
        self._channels_of: dict[tuple[str, str], list[str]] | None = None
        self._orders: dict[tuple[str, str], list[Any]] = {}
        self._positions: dict[tuple[str, str], dict[str, int]] = {}

    # -- bundles --------------------------------------------------------------------

    def bundle(self, package: str, name: str) -> Any:
        return self.catalog.bundles[package][name]

    def view(self, package: str, name: str) -> BundleView:
        key = (package, name)
        view = self._views.get(key)
        if view is None:
            b = self.bundle(package, name)
            view = BundleView(b.name, b.package, b.version, b.properties, self.registry)
            self._views[key] = view
        return view

    def all_bundles(self) -> Iterable[tuple[str, str]]:
        for package, bundles in self.catalog.bundles.items():
            for name in bundles:
                yield (package, name)

    def lookup(self, type_name: str, key: Hashable) -> list[tuple[str, str]]:
        """Bundles ``(package, name)`` filed under ``key`` by ``type_name``'s index keys."""
        table = self._by_type.setdefault(type_name, {})
        found = table.get(key)
        if found is None:
            found = [(b.package, b.name) for b in self.catalog.lookup(type_name, key)]
            table[key] = found
        return found

    # -- channels -------------------------------------------------------------------

    def channels_of(self, package: str, name: str) -> list[str]:
        """Channels of ``package`` listing the bundle ``name``."""
        if self._channels_of is None:
            table: dict[tuple[str, str], list[str]] = {}
            for pkg, channels in self.catalog.channels.items():
                for ch_name, channel in channels.items():
                    for entry in channel.entries:
                        table.setdefault((pkg, entry.name), []).append(ch_name)
            self._channels_of = table
        return self._channels_of.get((package, name), [])

    def order(self, package: str, channel: str) -> list[Any]:
        """Channel entries head first along replaces, skipped ones dropped.

        Raises:
            CatalogError: the channel has no unique head or a replaces cycle.
        """
        key = (package, channel)
        entries = self._orders.get(key)
        if entries is None:
            entries = list(self.catalog.channel_order(package, channel))
            self._orders[key] = entries
        return entries

    def position(self, package: str, channel: str, name: str) -> int | None:
        """Index of ``name`` in :meth:`order`, or ``None`` when it is skipped or absent."""
        key = (package, channel)
        positions = self._positions.get(key)
        if positions is None:
            positions = {e.name: i for i, e in enumerate(self.order(package, channel))}
            self._positions[key] = positions
        return positions.get(name)

    def default_channel(self, package: str) -> str | None:
        pkg = self.catalog.packages.get(package)
        return pkg.default_channel if pkg is not None else None


_PREDICATE_IDS: dict[Any, int] = {}


def predicate_id(predicate: Any) -> int:
    """A process-wide number for a predicate (equal predicates share it): the key of match caches."""
    pid = _PREDICATE_IDS.get(predicate)
    if pid is None:
        if len(_PREDICATE_IDS) > 1_000_000:  # bound the memory of a long-running process
            _PREDICATE_IDS.clear()
            _CACHE.clear()
        pid = _PREDICATE_IDS[predicate] = len(_PREDICATE_IDS)
    return pid


_CACHE: OrderedDict[Hashable, tuple[Any, Registry, CatalogIndex]] = OrderedDict()
_CACHE_SIZE = 16


def index_for(catalog: Any, registry: Registry) -> CatalogIndex:
    """The index of ``catalog``, reused while the same content is resolved again.

    A catalog with a content digest is known by it (a source that re-reads an unchanged
    catalog gives a new object with the same digest); one without, by identity.
    """
    digest = getattr(catalog, "digest", "")
    key: Hashable = ("digest", digest, catalog.name) if digest else ("id", id(catalog))
    hit = _CACHE.get(key)
    if hit is not None and hit[1] is registry and (digest or hit[0] is catalog):
        _CACHE.move_to_end(key)
        return hit[2]
    index = CatalogIndex(catalog, registry)
    _CACHE[key] = (catalog, registry, index)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return index


def join_ids(ids: Sequence[str], last: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``: upstream's way of listing identifiers."""
    if len(ids) <= 1:
        return "".join(ids)
    return f"{', '.join(ids[:-1])} {last} {ids[-1]}"


@attrs.define(eq=False)
class Entry:
    """A solver variable's subject: one (bundle, channel) of a catalog, or an installed CSV."""

    id: str
    view: BundleView
    channel: str
    source: SourceRef | None  # None: installed
    index: CatalogIndex | None
    installed: InstalledCSV | None = None
    replaces: str | None = None
    constraints: list[Constraint] = attrs.field(factory=list)


@attrs.frozen
class DependencyInfo:
    """Why a Dependency constraint exists: for explanations."""

    kind: str  # "subscription" or "requirement"
    subject: str
    predicate: Any = None
    property_type: str | None = None
    candidates: tuple[str, ...] = ()
    subscription: SubscriptionRef | None = None


class _Context:
    """The RequirementContext handed to requirement builders."""

    def __init__(self, registry: Registry, bundle: str) -> None:
        self.registry = registry
        self.bundle = bundle

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


class Problem:
    """One namespace's resolution problem, built on demand."""

    def __init__(self, request: ResolutionRequest) -> None:
        self.request = request
        self.registry = request.registry
        self.namespace = request.namespace
        self.timings: dict[str, float] = {}
        self.counters: dict[str, int] = {}
        self.entries: dict[str, Entry] = {}
        self.order: list[str] = []
        self.subscription_vars: list[Variable] = []
        self.invariant_vars: list[Variable] = []
        self.deps: dict[tuple[str, Constraint], DependencyInfo] = {}
        self.sources: list[SourceRef] = []
        self.indexes: dict[tuple[str, str], CatalogIndex] = {}
        self.existing: list[Entry] = []
        self.existing_by_name: dict[str, Entry] = {}
        self._candidates: dict[tuple[int, int], list[Entry]] = {}
        self._view_constraints: dict[int, tuple[BundleView, list[Any]]] = {}
        self._queue: deque[Entry] = deque()
        self.sub_of_entry: dict[str, str] = {}

    # -- inputs ---------------------------------------------------------------------

    def load_catalogs(self) -> None:
        """Load every visible catalog; any failure fails the whole namespace."""
        start = time.perf_counter()
        visible = {self.namespace}
        if not self.request.exclude_global:
            visible.add(self.request.global_namespace)
        for ref in self.request.sources:
            if ref.namespace not in visible:
                continue
            try:
                catalog = ref.source.load()
            except OlmkitError as exc:
                raise ResolutionError(f"error using catalogsource {ref.namespace}/{ref.name}: {exc}") from exc
            self.sources.append(ref)
            self.indexes[(ref.name, ref.namespace)] = index_for(catalog, self.registry)
        self.timings["catalog"] = time.perf_counter() - start

    def _catalog_rank(self, ref: SourceRef, preferred: SourceRef | None) -> tuple[Any, ...]:
        return (
            0 if preferred is not None and ref is preferred else 1,
            -ref.priority,
            0 if ref.namespace == self.namespace else 1,
            ref.name,
        )

    # -- entries --------------------------------------------------------------------

    def _catalog_entry(self, ref: SourceRef, index: CatalogIndex, package: str, channel: str, name: str) -> Entry:
        entry_id = f"{ref.name}/{ref.namespace}/{channel}/{name}"
        entry = self.entries.get(entry_id)
        if entry is None:
            entry = Entry(entry_id, index.view(package, name), channel, ref, index)
            self.entries[entry_id] = entry
            self.order.append(entry_id)
            self._queue.append(entry)
        return entry

    def add_installed(self) -> None:
        """Installed CSVs become variables; those no subscription references are mandatory."""
        referenced = {s.installed_csv for s in self.request.subscriptions if s.installed_csv}
        identity_types = self.registry.identity_types
        for csv in sorted(self.request.installed, key=lambda c: c.name):
            package = ""
            view = BundleView(csv.name, "", csv.version, csv.properties, self.registry)
            for t in identity_types:
                for value in self._values(view, t, csv.name):
                    package = getattr(value, "package", "") or package
            view.package = package
            entry = Entry(f"@existing/{self.namespace}//{csv.name}", view, "", None, None, installed=csv)
            if csv.name not in referenced:
                entry.constraints.append(
                    Mandatory(f"clusterserviceversion {csv.name} exists and is not referenced by a subscription")
                )
            self.entries[entry.id] = entry
            self.order.append(entry.id)
            self.existing.append(entry)
            self.existing_by_name[csv.name] = entry
            self._queue.append(entry)

    def add_subscriptions(self) -> None:
        """One Mandatory variable per subscription, depending on its candidates in order."""
        for sub in sorted(self.request.subscriptions, key=lambda s: s.name):
            sub_id = f"subscription:{sub.name}"
            constraints: list[Constraint] = [Mandatory(f"subscription {sub.name} exists")]
            problem = self._subscription_problem(sub)
            if problem is not None:
                constraints.append(Prohibited(problem))
                self.subscription_vars.append(Variable(sub_id, constraints))
                continue
            current = self.existing_by_name.get(sub.installed_csv) if sub.installed_csv else None
            candidates = self._subscription_candidates(sub, current)
            ids = [c.id for c in candidates]
            for c in candidates:
                self.sub_of_entry.setdefault(c.id, sub.name)
                if current is not None:
                    c.constraints.append(Conflict(current.id))
                    c.replaces = current.view.name
            if current is not None:
                ids.append(current.id)
            if not ids:
                message = f"no operators found matching the criteria of subscription {sub.name}"
            elif len(ids) == 1:
                message = f"subscription {sub.name} requires {ids[0]}"
            else:
                message = f"subscription {sub.name} requires at least one of {join_ids(ids, 'or')}"
            dependency = Dependency(tuple(ids), message)
            constraints.append(dependency)
            self.deps[(sub_id, dependency)] = DependencyInfo(
                "subscription", sub_id, candidates=tuple(ids), subscription=sub
            )
            self.subscription_vars.append(Variable(sub_id, constraints))

    def _source(self, name: str, namespace: str) -> SourceRef | None:
        for ref in self.sources:
            if ref.name == name and ref.namespace == namespace:
                return ref
        return None

    def _subscription_problem(self, sub: SubscriptionRef) -> str | None:
        ref = self._source(sub.source, sub.source_namespace)
        if ref is None:
            return (
                f"no operators found from catalog {sub.source} in namespace {sub.source_namespace} "
                f"referenced by subscription {sub.name}"
            )
        catalog = self.indexes[(ref.name, ref.namespace)].catalog
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

    def _subscription_candidates(self, sub: SubscriptionRef, current: Entry | None) -> list[Entry]:
        ref = self._source(sub.source, sub.source_namespace)
        assert ref is not None
        index = self.indexes[(ref.name, ref.namespace)]
        channels = list(index.catalog.channels.get(sub.package, {}))
        if sub.channel:
            channels = [sub.channel]
        else:
            default = index.default_channel(sub.package)
            channels.sort(key=lambda ch: (ch != default, ch))
        current_version = None
        if current is not None and current.view.version:
            try:
                current_version = parse_version(current.view.version, tolerant=True)
            except ValueError:
                current_version = None
        out = []
        for ch in channels:
            if current is None and sub.starting_csv:
                # upstream picks the starting entry before sorting the channel, and sorts only
                # it: one skipped by a newer entry, off the chain, or in a broken channel is
                # still the subscription's candidate
                entries = index.catalog.channels[sub.package][ch].entries
                if any(e.name == sub.starting_csv for e in entries):
                    out.append(self._catalog_entry(ref, index, sub.package, ch, sub.starting_csv))
                continue
            for e in index.order(sub.package, ch):
                if current is not None:
                    name = current.view.name
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
                out.append(self._catalog_entry(ref, index, sub.package, ch, e.name))
        return out

    # -- bundle dependencies --------------------------------------------------------

    def _values(self, view: BundleView, type_name: str, bundle: str) -> tuple[Any, ...]:
        try:
            return view.values(type_name)
        except ValueError as exc:
            raise ResolutionError(f"bundle {bundle}: property {type_name}: {exc}") from exc

    def explore(self) -> None:
        """Build every reachable bundle's constraints, breadth first."""
        while self._queue:
            entry = self._queue.popleft()
            for template, dependency, info in self._bundle_constraints(entry):
                if template is not None:
                    entry.constraints.append(Prohibited(template.format(id=entry.id)))
                else:
                    assert dependency is not None
                    assert dependency.message is not None
                    entry.constraints.append(dependency)
                    self.deps[(entry.id, dependency)] = info

    def _bundle_constraints(self, entry: Entry) -> list[tuple[str | None, Dependency | None, Any]]:
        """A bundle's prohibitions and dependencies, built once per bundle (shared by its channels)."""
        view = entry.view
        cached = self._view_constraints.get(id(view))
        if cached is not None:
            return cached[1]
        out: list[tuple[str | None, Dependency | None, Any]] = []
        property_types = self.registry.property_types
        seen_types: dict[str, int] = {}
        for prop in view.properties:
            pt = property_types.get(prop.type)
            if pt is None:
                continue  # unknown property types are ignored, as upstream
            i = seen_types.get(prop.type, 0)
            seen_types[prop.type] = i + 1
            if pt.prohibits is not None:
                out.append((pt.prohibits, None, None))
            if pt.requirement is None:
                continue
            value = self._values(view, prop.type, view.name)[i]
            try:
                predicate = pt.requirement(value, _Context(self.registry, view.name))
            except ValueError as exc:
                raise ResolutionError(f"bundle {view.name}: property {prop.type}: {exc}") from exc
            ids = tuple(c.id for c in self._dependency_candidates(predicate, entry))
            message = f"bundle {view.name} requires an operator {predicate}"
            info = DependencyInfo(
                "requirement", view.name, predicate=predicate, property_type=prop.type, candidates=ids
            )
            out.append((None, Dependency(ids, message), info))
        self._view_constraints[id(view)] = (view, out)
        return out

    def _matches(self, predicate: Any, pid: int, view: BundleView) -> bool:
        hit = view.matched.get(pid)
        if hit is None:
            try:
                hit = bool(predicate.matches(view))
            except ValueError as exc:
                raise ResolutionError(f"bundle {view.name}: {exc}") from exc
            view.matched[pid] = hit
        return hit

    def _dependency_candidates(self, predicate: Any, dependent: Entry) -> list[Entry]:
        pid = predicate_id(predicate)
        # bundles of one package mostly repeat their requirements: gather each once per catalog
        key = (pid, id(dependent.source))
        cached = self._candidates.get(key)
        if cached is None:
            cached = self._gather(predicate, pid, dependent)
            self._candidates[key] = cached
        return cached

    def _gather(self, predicate: Any, pid: int, dependent: Entry) -> list[Entry]:
        out: list[Entry] = [e for e in self.existing if self._matches(predicate, pid, e.view)]
        lookups: Sequence[tuple[str, Hashable]] | None = getattr(predicate, "lookups", None)
        if lookups is None:
            single = getattr(predicate, "lookup", None)
            lookups = [single] if single is not None else None
        refs = sorted(self.sources, key=lambda r: self._catalog_rank(r, dependent.source))
        for ref in refs:
            index = self.indexes[(ref.name, ref.namespace)]
            if lookups is None:
                names: list[tuple[str, str]] | Any = index.all_bundles()
            elif len(lookups) == 1:
                names = index.lookup(*lookups[0])
            else:
                names = list(dict.fromkeys(n for lk in lookups for n in index.lookup(*lk)))
            keyed = []
            for package, name in names:
                if not self._matches(predicate, pid, index.view(package, name)):
                    continue
                default = index.default_channel(package)
                for ch in index.channels_of(package, name):
                    pos = index.position(package, ch, name)
                    if pos is None:
                        continue  # skipped by another entry of the channel
                    keyed.append((ch != default, package, ch, pos, name))
            keyed.sort()
            out += [self._catalog_entry(ref, index, pkg, ch, name) for _, pkg, ch, _, name in keyed]
        return out

    # -- invariants -----------------------------------------------------------------

    def add_invariants(self) -> None:
        """At most one bundle per uniqueness key (package, API ...) among the variables."""
        property_types = self.registry.property_types
        groups: dict[str, tuple[Any, list[str]]] = {}
        for entry_id in self.order:
            entry = self.entries[entry_id]
            seen: set[str] = set()
            for type_name in dict.fromkeys(p.type for p in entry.view.properties):
                pt = property_types.get(type_name)
                if pt is None or pt.uniqueness is None:
                    continue
                for value in self._values(entry.view, type_name, entry.view.name):
                    u = pt.uniqueness(value)
                    if u is None or u.key in seen:
                        continue
                    seen.add(u.key)
                    groups.setdefault(u.key, (u, []))[1].append(entry_id)
        for key, (u, ids) in groups.items():
            if len(ids) < 2:
                continue
            self.invariant_vars.append(
                Variable(
                    key,
                    (
                        Mandatory(u.mandatory_text.format(key=key)),
                        AtMost(1, tuple(ids), u.members_text.format(ids=join_ids(ids), key=key)),
                    ),
                )
            )

    # -- the whole ------------------------------------------------------------------

    def build(self) -> list[Variable]:
        """Every variable, anchors first: installed CSVs, subscriptions by name, bundles, invariants."""
        if self.request.operator_groups != 1:
            raise ResolutionError(f"expected 1 OperatorGroup in the namespace, found {self.request.operator_groups}")
        self.load_catalogs()
        start = time.perf_counter()
        self.add_installed()
        self.add_subscriptions()
        self.explore()
        self.add_invariants()
        variables: list[Variable] = []
        existing = [e for e in (self.entries[i] for i in self.order) if e.installed is not None]
        variables += [Variable(e.id, e.constraints) for e in existing]
        variables += self.subscription_vars
        variables += [
            Variable(self.entries[i].id, self.entries[i].constraints)
            for i in self.order
            if self.entries[i].installed is None
        ]
        variables += self.invariant_vars
        self.timings["variables"] = time.perf_counter() - start
        self.counters["variables"] = len(variables)
        self.counters["constraints"] = sum(len(v.constraints) for v in variables)
        return variables


def _properties(raw: Sequence[Mapping[str, Any]]) -> tuple[Property, ...]:
    return tuple(Property(str(p.get("type")), p.get("value")) for p in raw)


# --------------------------------------------------------------------------- explanations


def _requirement_node(problem: Problem, applied: AppliedConstraint, message: str) -> ExplanationNode:
    info = problem.deps.get((applied.variable, applied.constraint))
    children: list[ExplanationNode] = []
    if info is not None and info.predicate is not None:
        failure = getattr(info.predicate, "failure_message", "")
        if failure:
            children.append(ExplanationNode(f"failure message: {failure}"))
        if info.candidates:
            children.append(
                ExplanationNode(
                    "candidates, in preference order (each is excluded by another constraint):",
                    [ExplanationNode(c) for c in info.candidates],
                )
            )
        else:
            children.append(ExplanationNode("no bundle in the visible catalogs or installed CSVs matches"))
        children.append(ExplanationNode(f"would satisfy it: a bundle {info.predicate} in a visible catalog"))
    return ExplanationNode(message, children)


def _subscription_node(problem: Problem, applied: AppliedConstraint) -> ExplanationNode:
    info = problem.deps.get((applied.variable, applied.constraint))
    children: list[ExplanationNode] = []
    if info is not None and info.subscription is not None:
        sub = info.subscription
        where = (
            f"package {sub.package}, channel {sub.channel or '(default)'}, catalog {sub.source_namespace}/{sub.source}"
        )
        children.append(ExplanationNode(where))
        if not info.candidates:
            children.append(
                ExplanationNode(
                    "would satisfy it: a bundle of that package and channel that can be installed"
                    + (
                        f" (one that replaces, skips or skipRange-covers {sub.installed_csv})"
                        if sub.installed_csv
                        else ""
                    )
                )
            )
        for c in info.candidates:
            entry = problem.entries.get(c)
            reqs = []
            if entry is not None:
                for constraint in entry.constraints:
                    if isinstance(constraint, Dependency) and constraint.message:
                        reqs.append(ExplanationNode(constraint.message))
            children.append(ExplanationNode(f"candidate {c}", reqs))
    return ExplanationNode(str(applied), children)


def _node(problem: Problem, applied: AppliedConstraint) -> ExplanationNode:
    c = applied.constraint
    text = str(applied)
    if isinstance(c, Dependency):
        if applied.variable.startswith("subscription:"):
            return _subscription_node(problem, applied)
        return _requirement_node(problem, applied, text)
    if isinstance(c, Prohibited) and applied.variable.startswith("subscription:"):
        return ExplanationNode(
            text, [ExplanationNode("would satisfy it: fix the subscription's source, package, channel or startingCSV")]
        )
    if isinstance(c, Prohibited):
        return ExplanationNode(text, [ExplanationNode("would satisfy it: a bundle that is not deprecated")])
    if isinstance(c, AtMost):
        return ExplanationNode(
            text, [ExplanationNode("would satisfy it: keep only one of them (drop a subscription or an installed CSV)")]
        )
    if isinstance(c, Conflict):
        return ExplanationNode(text, [ExplanationNode("an upgrade replaces the installed CSV: both cannot stay")])
    if isinstance(c, Mandatory):
        return ExplanationNode(text)
    return ExplanationNode(text)


def explain(problem: Problem, applied: Sequence[AppliedConstraint]) -> tuple[ExplanationNode, ...]:
    """Trees for a conflicting set, grouped by the variable the constraints apply to."""
    groups: dict[str, list[AppliedConstraint]] = {}
    for a in applied:
        groups.setdefault(a.variable, []).append(a)
    roots = []
    for variable in sorted(groups, key=lambda v: (not v.startswith("subscription:"), v)):
        label = _label(problem, variable)
        roots.append(ExplanationNode(label, [_node(problem, a) for a in groups[variable]]))
    return tuple(roots)


def _label(problem: Problem, variable: str) -> str:
    if variable.startswith("subscription:"):
        return f"subscription {variable.split(':', 1)[1]}"
    entry: Any = problem.entries.get(variable)
    if entry is None:
        return f"rule {variable}"
    if entry.installed is not None:
        return f"installed {variable}"
    return f"bundle {variable}"


# --------------------------------------------------------------------------- the pipeline


def _cel_count() -> int:
    return 0


def resolve(request: ResolutionRequest) -> Resolution:
    """Resolve as the resolver did before graphs (timings and counters aside)."""
    return _resolve(request)


def _resolve(request: ResolutionRequest) -> Resolution:
    start = time.perf_counter()
    problem = Problem(request)
    cel_before = _cel_count()
    try:
        variables = problem.build()
        solve_start = time.perf_counter()
        chosen = solve(variables, backend=request.backend)
        problem.timings["solve"] = time.perf_counter() - solve_start
    except NotSatisfiable as exc:
        problem.timings["total"] = time.perf_counter() - start
        return Resolution(
            namespace=request.namespace,
            status="unsatisfiable",
            message=str(exc),
            reason=CONSTRAINTS_NOT_SATISFIABLE,
            explanation=explain(problem, exc.applied),
            timings=problem.timings,
            counters=problem.counters,
        )
    except OlmkitError as exc:
        problem.timings["total"] = time.perf_counter() - start
        return Resolution(
            namespace=request.namespace,
            status="error",
            message=str(exc),
            reason=ERROR_PREVENTED_RESOLUTION,
            timings=problem.timings,
            counters=problem.counters,
        )
    problem.counters["cel_evaluations"] = _cel_count() - cel_before
    steps = _steps(problem, [v.id for v in chosen])
    problem.timings["total"] = time.perf_counter() - start
    return Resolution(
        namespace=request.namespace, status="ok", steps=steps, timings=problem.timings, counters=problem.counters
    )


def _matching_subscriptions(problem: Problem, entry: Entry) -> list[SubscriptionRef]:
    assert entry.source is not None
    out = []
    for sub in problem.request.subscriptions:
        if sub.package != entry.view.package:
            continue
        if sub.channel and sub.channel != entry.channel:
            continue
        if sub.source and (sub.source, sub.source_namespace) != (entry.source.name, entry.source.namespace):
            continue
        out.append(sub)
    return out


def _steps(problem: Problem, chosen: list[str]) -> list[Step]:
    steps = []
    for var_id in chosen:
        entry = problem.entries.get(var_id)
        if entry is None or entry.source is None or entry.index is None:
            continue  # subscriptions, invariants, installed CSVs
        subs = _matching_subscriptions(problem, entry)
        name = entry.view.name
        if subs and name in problem.existing_by_name and all(s.current_csv == name for s in subs):
            continue  # already the current CSV
        bundle: Any = entry.index.bundle(entry.view.package, name)
        steps.append(
            Step(
                bundle=name,
                package=entry.view.package,
                version=entry.view.version,
                channel=entry.channel,
                catalog=entry.source.name,
                catalog_namespace=entry.source.namespace,
                replaces=entry.replaces,
                subscription=min((s.name for s in subs), default=None),
                image=getattr(bundle, "image", None),
                properties=entry.view.properties,
                content=bundle,
            )
        )
    return steps
