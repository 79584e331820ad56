"""Built-in plugin: upstream OLM's Prometheus metrics, and the resolver's and controllers' own.

Upstream's metrics keep upstream's names, types and labels:

============================================  =========  =============================================
``catalog_source_count``                      gauge      CatalogSources in the store
``catalogsource_ready{namespace,name}``       gauge      1 when the source is ``READY``, else 0
``catalog_source_snapshots_total{...}``       counter    catalog snapshots read (namespace, name)
``csv_count``                                 gauge      ClusterServiceVersions in the store
``csv_succeeded{namespace,name,version}``     gauge      1 when ``Succeeded``, else 0 (gone when deleted)
``csv_abnormal{namespace,name,version,...}``  gauge      1 per CSV not ``Succeeded`` (+ phase, reason)
``csv_upgrade_count``                         counter    CSVs that went ``Replacing``
``install_plan_count``                        gauge      InstallPlans in the store
``installplan_warnings_total``                counter    API warnings while applying steps (a step's
                                                         ``warnings``; the embedded store gives none)
``olm_resolution_duration_seconds{outcome}``  histogram  resolutions, ``succeeded`` / ``failed``
``subscription_count``                        gauge      Subscriptions in the store
``subscription_sync_total{name,...}``         counter    syncs per Subscription (installed, channel,
                                                         package, approval)
============================================  =========  =============================================

Gauges are read from the store at scrape time (a custom collector), so they are true
when scraped; counters and histograms count what this process did, from the hooks:
``olmkit_resolve`` (a wrapper), ``olmkit_csv_phase_changed``, ``olmkit_install_plan_step``,
``olmkit_catalog_loaded`` and ``olmkit_reconciled``. Recording is plain Python
arithmetic; ``prometheus_client`` is imported only when a ``/metrics`` endpoint is set up.

For running the resolver at scale, the ``olmkit_`` metrics add: problem size per
resolution (variables, constraints), seconds per resolution phase, the search's work
(guesses, backtracks, SAT solver calls), unsatisfiable resolutions by constraint type,
catalog load seconds and bundles, reconciles and their durations per controller, the
work queue's depth and retries, and InstallPlan steps by status.

Upstream's ``olm_resolution_duration_seconds`` is a summary with quantiles, which the
Python client cannot compute; it is a histogram here (``_count`` and ``_sum`` match).
``subscription_sync_total`` counts the syncs of the Subscription's namespace, since olmkit
resolves a namespace's Subscriptions together; the labels are the Subscription's current ones.

.. versionadded:: 0.2
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import attrs

from olmkit import hookimpl

__all__ = [
    "METRICS",
    "MetricsState",
    "OlmCollector",
    "olmkit_catalog_loaded",
    "olmkit_csv_phase_changed",
    "olmkit_install_plan_step",
    "olmkit_metric_collectors",
    "olmkit_reconciled",
    "olmkit_resolve",
]

V1A1: Final = "operators.coreos.com/v1alpha1"
#: upstream's label values of ``olm_resolution_duration_seconds``
SUCCEEDED: Final = "succeeded"
FAILED: Final = "failed"

DURATION_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SIZE_BUCKETS: Final = (10.0, 100.0, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0, 10_000_000.0)


@attrs.define
class Histogram:
    """Bucket counts, sum and count of observations (what a Prometheus histogram exposes)."""

    bounds: tuple[float, ...]
    counts: list[int] = attrs.field(init=False)
    total: float = 0.0
    count: int = 0

    def __attrs_post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.count += 1

    def copy(self) -> Histogram:
        twin = Histogram(self.bounds, total=self.total, count=self.count)
        twin.counts = list(self.counts)
        return twin


@attrs.define
class MetricsState:
    """What this process counted (counters and histograms); gauges come from the store at scrape time."""

    csv_upgrades: int = 0
    installplan_warnings: int = 0
    resolutions: dict[str, Histogram] = attrs.field(factory=dict)
    resolution_variables: Histogram = attrs.field(factory=lambda: Histogram(SIZE_BUCKETS))
    resolution_constraints: Histogram = attrs.field(factory=lambda: Histogram(SIZE_BUCKETS))
    resolution_phase_seconds: dict[str, float] = attrs.field(factory=dict)
    unsatisfiable: dict[str, int] = attrs.field(factory=dict)
    search: dict[str, int] = attrs.field(factory=dict)
    snapshots: dict[tuple[str, str], int] = attrs.field(factory=dict)
    catalog_loads: dict[str, Histogram] = attrs.field(factory=dict)
    catalog_bundles: dict[str, int] = attrs.field(factory=dict)
    reconciles: dict[tuple[str, str], int] = attrs.field(factory=dict)
    reconcile_seconds: dict[str, Histogram] = attrs.field(factory=dict)
    retries: dict[str, int] = attrs.field(factory=dict)
    queue_depth: int = 0
    namespace_syncs: dict[str, int] = attrs.field(factory=dict)
    install_plan_steps: dict[str, int] = attrs.field(factory=dict)
    lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    def observe_resolution(self, outcome: str, seconds: float, resolution: Any) -> None:
        counters: Mapping[str, int] = getattr(resolution, "counters", None) or {}
        timings: Mapping[str, float] = getattr(resolution, "timings", None) or {}
        with self.lock:
            self.resolutions.setdefault(outcome, Histogram(DURATION_BUCKETS)).observe(seconds)
            if "variables" in counters:
                self.resolution_variables.observe(float(counters["variables"]))
            if "constraints" in counters:
                self.resolution_constraints.observe(float(counters["constraints"]))
            for phase, spent in timings.items():
                if phase != "total":
                    self.resolution_phase_seconds[phase] = self.resolution_phase_seconds.get(phase, 0.0) + spent
            for name, n in counters.items():
                if name.startswith("sat_"):
                    self.search[name[len("sat_") :]] = self.search.get(name[len("sat_") :], 0) + n
            if getattr(resolution, "status", None) == "unsatisfiable":
                kinds = {k[len("unsat_") :]: v for k, v in counters.items() if k.startswith("unsat_")}
                for kind in kinds or {"unknown": 1}:
                    self.unsatisfiable[kind] = self.unsatisfiable.get(kind, 0) + 1


#: This process's counts (Prometheus counters are per process, as upstream's are).
METRICS = MetricsState()


# --------------------------------------------------------------------------- hooks: recording


@hookimpl(wrapper=True)
def olmkit_resolve(request: Any) -> Iterator[None]:
    """Time every resolution: ``olm_resolution_duration_seconds`` and the problem's size."""
    start = time.perf_counter()
    resolution = yield
    seconds = time.perf_counter() - start
    outcome = SUCCEEDED if resolution is not None and getattr(resolution, "ok", False) else FAILED
    METRICS.observe_resolution(outcome, seconds, resolution)
    return resolution


@hookimpl
def olmkit_csv_phase_changed(csv: Mapping[str, Any], old_phase: str | None, new_phase: str, reason: str) -> None:
    """A CSV going ``Replacing`` is an upgrade (upstream counts ``csv_upgrade_count`` there)."""
    if new_phase == "Replacing" and old_phase != "Replacing":
        with METRICS.lock:
            METRICS.csv_upgrades += 1


@hookimpl
def olmkit_install_plan_step(plan: Mapping[str, Any], step: Mapping[str, Any], status: str) -> None:
    """Count steps by status, and the API warnings a step reports."""
    with METRICS.lock:
        METRICS.install_plan_steps[status] = METRICS.install_plan_steps.get(status, 0) + 1
        METRICS.installplan_warnings += len(step.get("warnings") or ())


@hookimpl
def olmkit_catalog_loaded(source: str, catalog: Any, seconds: float, cached: bool) -> None:
    """A catalog snapshot was read: ``catalog_source_snapshots_total``, load seconds and size."""
    namespace, _, name = source.rpartition("/")
    bundles = sum(map(len, getattr(catalog, "bundles", {}).values()))
    with METRICS.lock:
        key = (namespace, name)
        METRICS.snapshots[key] = METRICS.snapshots.get(key, 0) + 1
        METRICS.catalog_loads.setdefault("true" if cached else "false", Histogram(DURATION_BUCKETS)).observe(seconds)
        METRICS.catalog_bundles[source] = bundles


@hookimpl
def olmkit_reconciled(
    context: Any,
    controller: str,
    namespace: str,
    name: str,
    seconds: float,
    error: BaseException | None,
    queue_depth: int,
) -> None:
    """Reconciles per controller and result, their durations, retries and the work-queue depth."""
    with METRICS.lock:
        result = "error" if error is not None else "success"
        METRICS.reconciles[(controller, result)] = METRICS.reconciles.get((controller, result), 0) + 1
        METRICS.queue_depth = queue_depth
        if error is not None:
            METRICS.retries[controller] = METRICS.retries.get(controller, 0) + 1
            return
        hist = METRICS.reconcile_seconds.get(controller)
        if hist is None:
            hist = METRICS.reconcile_seconds[controller] = Histogram(DURATION_BUCKETS)
        hist.observe(seconds)
        if controller == "subscription":  # one key per namespace: every Subscription there was synced
            METRICS.namespace_syncs[name] = METRICS.namespace_syncs.get(name, 0) + 1


# --------------------------------------------------------------------------- scrape time


def _meta(obj: Mapping[str, Any], field: str) -> str:
    return str((obj.get("metadata") or {}).get(field) or "")


class _Families:
    """Builds ``prometheus_client`` metric families; counters keep their names exactly."""

    def __init__(self) -> None:
        from prometheus_client import utils
        from prometheus_client.core import Metric

        self._metric = Metric
        self._le: Callable[[float], str] = utils.floatToGoString

    def family(self, name: str, doc: str, typ: str) -> Any:
        return self._metric(name, doc, typ)

    def sample(self, family: Any, labels: Mapping[str, str], value: float) -> None:
        family.add_sample(family.name, dict(labels), float(value))

    def gauge(self, name: str, doc: str, value: float) -> Any:
        family = self.family(name, doc, "gauge")
        self.sample(family, {}, value)
        return family

    def counter(self, name: str, doc: str, values: Mapping[tuple[tuple[str, str], ...], float]) -> Any:
        family = self.family(name, doc, "counter")
        for labels, value in values.items():
            self.sample(family, dict(labels), value)
        return family

    def histogram(self, name: str, doc: str, series: Mapping[tuple[tuple[str, str], ...], Histogram]) -> Any:
        family = self.family(name, doc, "histogram")
        for labels, hist in series.items():
            running = 0
            for bound, n in zip((*hist.bounds, float("inf")), hist.counts, strict=True):
                running += n
                family.add_sample(f"{name}_bucket", {**dict(labels), "le": self._le(bound)}, float(running))
            family.add_sample(f"{name}_count", dict(labels), float(hist.count))
            family.add_sample(f"{name}_sum", dict(labels), hist.total)
        return family


class OlmCollector:
    """Collects at scrape time: gauges from the store, counters from :data:`METRICS`.

    Args:
        store: the cluster store.
        state: the counts (default: this process's).
    """

    def __init__(self, store: Any, state: MetricsState | None = None) -> None:
        self.store = store
        self.state = state or METRICS

    def collect(self) -> Iterator[Any]:
        f = _Families()
        yield from self._catalog_operator(f)
        yield from self._olm_operator(f)
        yield from self._resolver(f)
        yield from self._controllers(f)

    def _catalog_operator(self, f: _Families) -> Iterator[Any]:
        store, state = self.store, self.state
        sources = list(store.list(V1A1, "CatalogSource"))
        yield f.gauge("catalog_source_count", "Number of catalog sources", len(sources))
        ready = f.family(
            "catalogsource_ready",
            "State of a CatalogSource. 1 indicates that the CatalogSource is in a READY state. "
            "0 indicates CatalogSource is in a Non READY state.",
            "gauge",
        )
        for src in sources:
            observed = ((src.get("status") or {}).get("connectionState") or {}).get("lastObservedState")
            labels = {"namespace": _meta(src, "namespace"), "name": _meta(src, "name")}
            f.sample(ready, labels, 1.0 if observed == "READY" else 0.0)
        yield ready
        with state.lock:
            snapshots = dict(state.snapshots)
            syncs = dict(state.namespace_syncs)
            warnings = state.installplan_warnings
        yield f.counter(
            "catalog_source_snapshots_total",
            "The number of times the catalog operator has requested a snapshot of data from a catalog source",
            {
                (("namespace", _meta(s, "namespace")), ("name", _meta(s, "name"))): snapshots.get(
                    (_meta(s, "namespace"), _meta(s, "name")), 0
                )
                for s in sources
            },
        )
        yield f.gauge("install_plan_count", "Number of install plans", len(store.list(V1A1, "InstallPlan")))
        subs = list(store.list(V1A1, "Subscription"))
        yield f.gauge("subscription_count", "Number of subscriptions", len(subs))
        sync_values: dict[tuple[tuple[str, str], ...], float] = {}
        for sub in subs:
            spec, status = sub.get("spec") or {}, sub.get("status") or {}
            key = (
                ("name", _meta(sub, "name")),
                ("installed", str(status.get("installedCSV") or "")),
                ("channel", str(spec.get("channel") or "")),
                ("package", str(spec.get("name") or "")),
                ("approval", str(spec.get("installPlanApproval") or "Automatic")),
            )
            sync_values[key] = sync_values.get(key, 0) + syncs.get(_meta(sub, "namespace"), 0)
        yield f.counter("subscription_sync_total", "Monotonic count of subscription syncs", sync_values)
        yield f.counter(
            "installplan_warnings_total",
            "monotonic count of resources that generated warnings when applied as part of an InstallPlan "
            "(for example, due to deprecation)",
            {(): warnings},
        )

    def _olm_operator(self, f: _Families) -> Iterator[Any]:
        csvs = list(self.store.list(V1A1, "ClusterServiceVersion"))
        yield f.gauge("csv_count", "Number of CSVs successfully registered", len(csvs))
        succeeded = f.family("csv_succeeded", "Successful CSV install", "gauge")
        abnormal = f.family("csv_abnormal", "CSV is not installed", "gauge")
        for csv in csvs:
            status = csv.get("status") or {}
            if status.get("reason") == "Copied":
                continue  # upstream leaves copied CSVs out
            labels = {
                "namespace": _meta(csv, "namespace"),
                "name": _meta(csv, "name"),
                "version": str((csv.get("spec") or {}).get("version") or ""),
            }
            phase = str(status.get("phase") or "")
            f.sample(succeeded, labels, 1.0 if phase == "Succeeded" else 0.0)
            if phase != "Succeeded":
                f.sample(abnormal, {**labels, "phase": phase, "reason": str(status.get("reason") or "")}, 1.0)
        yield succeeded
        yield abnormal
        with self.state.lock:
            upgrades = self.state.csv_upgrades
        yield f.counter("csv_upgrade_count", "Monotonic count of CSV upgrades", {(): upgrades})

    def _resolver(self, f: _Families) -> Iterator[Any]:
        state = self.state
        with state.lock:
            resolutions = {k: v.copy() for k, v in state.resolutions.items()}
            variables = state.resolution_variables.copy()
            constraints = state.resolution_constraints.copy()
            phases = dict(state.resolution_phase_seconds)
            unsat = dict(state.unsatisfiable)
            search = dict(state.search)
            loads = {k: v.copy() for k, v in state.catalog_loads.items()}
            bundles = dict(state.catalog_bundles)
        yield f.histogram(
            "olm_resolution_duration_seconds",
            "The duration of a dependency resolution attempt",
            {(("outcome", o),): resolutions.get(o) or Histogram(DURATION_BUCKETS) for o in (SUCCEEDED, FAILED)},
        )
        yield f.histogram(
            "olmkit_resolution_variables", "Solver variables per resolution (bundles considered)", {(): variables}
        )
        yield f.histogram(
            "olmkit_resolution_constraints", "Top-level solver constraints per resolution", {(): constraints}
        )
        yield f.counter(
            "olmkit_resolution_phase_seconds_total",
            "Seconds spent in each phase of resolution",
            {(("phase", p),): phases[p] for p in sorted(phases)},
        )
        yield f.counter(
            "olmkit_resolution_unsatisfiable_total",
            "Unsatisfiable resolutions, by the type of the constraints in the conflict",
            {(("constraint", k),): unsat[k] for k in sorted(unsat)},
        )
        yield f.counter(
            "olmkit_resolution_search_total",
            "What the solver's search did: guesses, backtracks, propagations, SAT solver calls, proofs",
            {(("counter", k),): search[k] for k in sorted(search)},
        )
        yield f.histogram(
            "olmkit_catalog_load_seconds",
            "Seconds to load a catalog snapshot (cached: read from the disk cache)",
            {(("cached", c),): loads[c] for c in sorted(loads)},
        )
        bundles_family = f.family("olmkit_catalog_bundles", "Bundles in the last snapshot of a catalog", "gauge")
        for source in sorted(bundles):
            f.sample(bundles_family, {"source": source}, bundles[source])
        yield bundles_family

    def _controllers(self, f: _Families) -> Iterator[Any]:
        state = self.state
        with state.lock:
            reconciles = dict(state.reconciles)
            seconds = {k: v.copy() for k, v in state.reconcile_seconds.items()}
            retries = dict(state.retries)
            depth = state.queue_depth
            steps = dict(state.install_plan_steps)
        yield f.counter(
            "olmkit_reconcile_total",
            "Reconciles per controller and result",
            {(("controller", c), ("result", r)): n for (c, r), n in sorted(reconciles.items())},
        )
        yield f.histogram(
            "olmkit_reconcile_duration_seconds",
            "Seconds per successful reconcile",
            {(("controller", c),): seconds[c] for c in sorted(seconds)},
        )
        yield f.counter(
            "olmkit_workqueue_retries_total",
            "Reconciles that failed and were queued again with backoff",
            {(("controller", c),): retries[c] for c in sorted(retries)},
        )
        yield f.gauge("olmkit_workqueue_depth", "Keys waiting in the work queue (ready or delayed)", depth)
        yield f.counter(
            "olmkit_install_plan_steps_total",
            "InstallPlan steps done, by status",
            {(("status", s),): steps[s] for s in sorted(steps)},
        )


@hookimpl
def olmkit_metric_collectors(store: Any) -> Iterator[Any]:
    """Upstream OLM's metrics and olmkit's own, read at scrape time."""
    yield OlmCollector(store)
