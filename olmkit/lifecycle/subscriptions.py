"""The subscription controller (Catalog Operator): resolve a namespace, write its InstallPlan.

One key per namespace, as upstream's ``syncResolvingNamespace``:

1. bring every Subscription's status up to date with the cluster: the InstallPlan it
   references (``InstallPlanPending``, ``InstallPlanFailed``, ``InstallPlanMissing``), the
   CSV it installs (``installedCSV``, ``state`` ``AtLatestKnown`` / ``UpgradeAvailable`` /
   ``UpgradePending`` / ``UpgradeFailed``) and its catalogs' health
   (``CatalogSourcesUnhealthy``); a subscription generated for a dependency adopts the
   InstallPlan that created it. A change ends the pass (the write wakes the next one).
2. resolve when some subscription has something to do: no InstallPlan in flight and no CSV
   still installing or being replaced (so each version of an upgrade chain runs before the
   next hop), under a namespace lease so that two processes never both plan;
3. on failure set ``ResolutionFailed`` (``ConstraintsNotSatisfiable`` with the
   explanation tree, or ``ErrorPreventedResolution``) on every subscription;
4. on success get every new bundle's content (``BundleUnpackFailed`` when impossible),
   build the steps (CSVs, CRDs, bundle objects, the strategy's RBAC, Subscriptions for
   new dependencies) and create the InstallPlan, ``Manual`` when any subscription asks for
   manual approval, then point the subscriptions at it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from olmkit.catalog.graph import upgrades_from
from olmkit.catalog.sources import READY
from olmkit.errors import OlmkitError, PluginError
from olmkit.lifecycle.admission import AdmissionRefused, admit
from olmkit.lifecycle.bundles import BundleUnpackError, bundle_content
from olmkit.lifecycle.catalogs import source_label
from olmkit.lifecycle.context import LifecycleContext
from olmkit.lifecycle.events import approval_message
from olmkit.lifecycle.kinds import CATALOG_SOURCE, CSV, INSTALL_PLAN, NAMESPACE, OPERATOR_GROUP, SUBSCRIPTION
from olmkit.lifecycle.lease import Lease
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec
from olmkit.lifecycle.status import (
    find_condition,
    owner_reference,
    remove_condition,
    set_condition,
    spec_of,
    status_of,
)
from olmkit.lifecycle.strategy import InstallContext, StrategyError, installer_for
from olmkit.model import Property
from olmkit.resolver import InstalledCSV, Resolution, ResolutionRequest, SourceRef, Step, SubscriptionRef
from olmkit.resolver.manifests import EXCLUDE_GLOBAL_ANNOTATION, PROPERTIES_ANNOTATION, Manifest, _csv_properties
from olmkit.store import AlreadyExists, NotFound, Object, StoreError, WatchEvent

__all__ = [
    "GENERATED_BY_ANNOTATION",
    "STATE_AT_LATEST",
    "STATE_FAILED",
    "STATE_UPGRADE_AVAILABLE",
    "STATE_UPGRADE_PENDING",
    "SubscriptionController",
]

GENERATED_BY_ANNOTATION: Final = "operators.coreos.com/generated-by"

STATE_AT_LATEST: Final = "AtLatestKnown"
STATE_UPGRADE_AVAILABLE: Final = "UpgradeAvailable"
STATE_UPGRADE_PENDING: Final = "UpgradePending"
STATE_FAILED: Final = "UpgradeFailed"

RESOLUTION_FAILED: Final = "ResolutionFailed"
BUNDLE_UNPACK_FAILED: Final = "BundleUnpackFailed"
CATALOG_SOURCES_UNHEALTHY: Final = "CatalogSourcesUnhealthy"
INSTALL_PLAN_PENDING: Final = "InstallPlanPending"
INSTALL_PLAN_FAILED: Final = "InstallPlanFailed"
INSTALL_PLAN_MISSING: Final = "InstallPlanMissing"

UNFINISHED_PLAN_PHASES: Final = frozenset({"", "Planning", "RequiresApproval", "Installing"})
#: how long a namespace whose resolution hit an error waits before trying again (a resync)
ERROR_RETRY: Final = 30.0
LEASE_NAME: Final = "olmkit-resolver"
#: seconds a namespace's resolution Lease lasts after its last renewal
LEASE_DURATION: Final = 15
#: seconds after a renewal during which further resolutions of the namespace use the Lease
#: without writing it (at least ``LEASE_DURATION - LEASE_HOLD`` seconds are left for the work)
LEASE_HOLD: Final = LEASE_DURATION / 2
#: the digest of the resolution inputs an InstallPlan was made from
INPUTS_ANNOTATION: Final = "olmkit.io/resolution-inputs"
#: the Subscriptions an InstallPlan was made for, with the CSV it installs for each (JSON
#: ``{"name": "csv"}``): a Subscription whose write after the plan's creation failed adopts it
PLANNED_FOR_ANNOTATION: Final = "olmkit.io/planned-for"
#: InstallPlans kept per namespace (older finished ones are deleted, as upstream keeps 5)
KEEP_INSTALL_PLANS: Final = 5

#: Optional bundle objects the spec lets a bundle carry (other kinds are listed as
#: ``UnsupportedResource`` steps and not created).
BUNDLE_OBJECT_KINDS: Final = frozenset(
    {
        "Secret",
        "ConfigMap",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ServiceAccount",
        "Service",
        "PrometheusRule",
        "ServiceMonitor",
        "PodDisruptionBudget",
        "PriorityClass",
        "VerticalPodAutoscaler",
        "ConsoleYAMLSample",
        "ConsoleQuickStart",
        "ConsoleCLIDownload",
        "ConsoleLink",
    }
)


def _namespace_of(event: WatchEvent) -> list[tuple[str, str]]:
    ns = (event.object.get("metadata") or {}).get("namespace")
    return [("", str(ns))] if ns else []


def _subscription(obj: Mapping[str, Any]) -> SubscriptionRef:
    ns = str(obj["metadata"].get("namespace") or "")
    return SubscriptionRef.from_manifest(obj, ns)


def _source_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _random_suffix(n: int = 5) -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=n))


class SubscriptionController(Controller):
    """Resolves namespaces and writes their InstallPlans."""

    name = "subscription"

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx
        self.watches = (
            WatchSpec(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, _namespace_of),
            WatchSpec(CSV.api_version, CSV.kind, _namespace_of),
            WatchSpec(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, _namespace_of),
            WatchSpec(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, _namespace_of),
            WatchSpec(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind, self._catalog_changed),
        )
        # inputs of the last resolution per namespace that needed nothing (or failed for good)
        self._settled: dict[str, bytes] = {}
        # the namespaces' resolution Leases, kept between resolutions and released by close()
        self._leases: dict[str, Lease] = {}

    def _catalog_changed(self, event: WatchEvent) -> list[tuple[str, str]]:
        ns = str((event.object.get("metadata") or {}).get("namespace") or "")
        if ns != self.ctx.options.global_namespace:
            return [("", ns)]
        subs = self.ctx.store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind)
        return [("", n) for n in sorted({str(s["metadata"]["namespace"]) for s in subs})]

    # -- the pass -------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result | None:
        ns = name
        store = self.ctx.store
        subs = sorted(store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, ns), key=lambda o: o["metadata"]["name"])
        if not subs:
            self._settled.pop(ns, None)
            return DONE
        groups = list(store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, ns))
        exclude_global = any(
            str(((g.get("metadata") or {}).get("annotations") or {}).get(EXCLUDE_GLOBAL_ANNOTATION)) == "true"
            for g in groups
        )
        namespaces = [ns] if exclude_global else [ns, self.ctx.options.global_namespace]
        sources = self.ctx.catalogs.catalog_sources(namespaces)
        csvs = {c["metadata"]["name"]: c for c in store.list(CSV.api_version, CSV.kind, ns)}
        all_plans = list(store.list(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, ns))

        # 1. status upkeep (written before any resolution: a process waiting for the namespace's
        # Lease then finds nothing to write here, so it cannot make the resolver's writes conflict);
        # a subscription adopts the InstallPlan made for it whose reference was never written
        changed = False
        for sub in subs:
            kept = self._upkept(sub, csvs, sources, all_plans)
            if kept is not None:
                store.update_status({**sub, "status": kept})
                changed = True
        if changed:
            return DONE  # the status writes wake the next pass

        # 2. anything to do?
        if all(status_of(s).get("installPlanRef") and status_of(s).get("state") == STATE_UPGRADE_PENDING for s in subs):
            return DONE  # every subscription waits for its InstallPlan
        plans = self._referenced_plans(ns, subs)
        if any((status_of(p).get("phase") or "") in UNFINISHED_PLAN_PHASES for p in plans):
            return DONE  # the plan's progress wakes the next pass
        if any(_in_transition(c) for c in csvs.values()):
            return DONE  # resolve again once the install or upgrade under way has finished
        inputs = self._fingerprint(subs, csvs, groups, sources)
        if self._settled.get(ns) == inputs or any(_failed_with(p, inputs) for p in plans):
            return DONE  # nothing changed since the last answer (planning again would fail again)

        # 3. resolve under the namespace lease (kept for the next resolution; renewed when it is
        # half-way to expiry; released when the controllers stop)
        lease = self._leases.get(ns)
        if lease is None:
            lease = Lease(store, ns, LEASE_NAME, self.ctx.clock, LEASE_DURATION, hold=LEASE_HOLD)
        if not lease.acquire():
            return Result(requeue_after=1.0, waiting="another olmkit process is resolving this namespace")
        self._leases[ns] = lease
        return self._resolve_and_plan(ns, subs, csvs, groups, sources, exclude_global, inputs)

    def close(self) -> None:
        """Release the resolution Leases this controller holds, so that another process resolves at once."""
        leases, self._leases = self._leases, {}
        for lease in leases.values():
            with contextlib.suppress(StoreError):  # it expires on its own
                lease.release()

    def _resolve_and_plan(
        self,
        ns: str,
        subs: list[Object],
        csvs: Mapping[str, Object],
        groups: list[Object],
        sources: list[Object],
        exclude_global: bool,
        inputs: bytes,
    ) -> Result:
        unavailable = self._unavailable(sources)
        if unavailable:
            # only the subscriptions whose own catalog cannot be read fail; the others
            # resolve against the catalogs that can be
            kept = []
            for obj in subs:
                wanted = _subscription(obj)
                error = unavailable.get((wanted.source_namespace, wanted.source))
                if error is None:
                    kept.append(obj)
                    continue
                message = f"error using catalogsource {wanted.source_namespace}/{wanted.source}: {error}"
                self._fail_all([obj], RESOLUTION_FAILED, "ErrorPreventedResolution", message)
            subs = kept
            sources = [s for s in sources if _source_key(s) not in unavailable]
            if not subs:
                return Result(requeue_after=ERROR_RETRY, resync=True)
        try:
            request = self._request(ns, subs, csvs, len(groups), sources, exclude_global)
        except (OlmkitError, ValueError) as exc:
            self._fail_all(subs, RESOLUTION_FAILED, "ErrorPreventedResolution", str(exc))
            return Result(requeue_after=ERROR_RETRY, resync=True)
        try:
            resolution: Resolution = self.ctx.pm.hook.olmkit_resolve(request=request)
        except Exception as exc:  # a plugin's bug fails this namespace's resolution, not the controller
            plugin = self.ctx.pm.culprit(exc)
            if plugin is None:
                raise
            message = str(PluginError(f"failed during resolution: {exc!r}", plugin=plugin))
            self._fail_all(subs, RESOLUTION_FAILED, "ErrorPreventedResolution", message)
            self.ctx.event(f"namespace {ns}: resolution failed: {message}")
            return Result(requeue_after=ERROR_RETRY, resync=True)
        if not resolution.ok:
            message = resolution.message or "resolution failed"
            if resolution.explanation:
                tree = "\n".join(line for node in resolution.explanation for line in node.render())
                message = f"{message}\n{tree}"
            self._fail_all(subs, RESOLUTION_FAILED, resolution.reason or "ErrorPreventedResolution", message)
            self.ctx.event(f"namespace {ns}: resolution failed: {resolution.message}")
            self._record_resolution_failed(ns, subs, resolution.message or "resolution failed")
            if resolution.status == "unsatisfiable":
                self._settled[ns] = inputs  # terminal until something changes
                return DONE
            return Result(requeue_after=ERROR_RETRY, resync=True)

        steps_by_sub: dict[str, Step] = {}
        for step in resolution.steps:
            for sub in subs:
                if _matches(_subscription(sub), step):
                    steps_by_sub.setdefault(sub["metadata"]["name"], step)
        if not resolution.steps:
            self._clear_failures(subs)
            self._settled[ns] = inputs
            return DONE

        try:
            plan_name, plan = self._ensure_install_plan(ns, subs, resolution.steps, inputs, steps_by_sub)
        except _UnpackFailed as exc:
            self._fail_unpack(subs, steps_by_sub, exc.failures)
            for failure in exc.failures.values():
                self.ctx.event(f"namespace {ns}: {failure}")
            return Result(requeue_after=ERROR_RETRY, resync=True)
        self._gc_install_plans(ns)
        ref = {
            "apiVersion": INSTALL_PLAN.api_version,
            "kind": INSTALL_PLAN.kind,
            "name": plan_name,
            "namespace": ns,
            "uid": plan["metadata"]["uid"],
            "resourceVersion": plan["metadata"]["resourceVersion"],
        }
        generation = int(spec_of(plan).get("generation") or 1)
        refused = status_of(plan).get("phase") == "Failed"
        now = self.ctx.now()
        for sub in subs:
            status = status_of(sub)
            conditions = remove_condition(status.get("conditions"), RESOLUTION_FAILED, BUNDLE_UNPACK_FAILED)
            matched = steps_by_sub.get(sub["metadata"]["name"])
            if matched is not None and refused:
                # the plan failed as it was made: point at it (InstallPlanFailed says why) but
                # keep currentCSV, so the same inputs are recognised and not planned again
                status.update(installPlanRef=ref, installPlanGeneration=generation, lastUpdated=now)
            elif matched is not None:
                if matched.replaces and matched.bundle != status.get("currentCSV"):
                    self.ctx.record_event(
                        sub,
                        "Normal",
                        "UpgradePending",
                        f"upgrading from {matched.replaces} to {matched.bundle} (installplan {plan_name})",
                    )
                status.update(
                    currentCSV=matched.bundle,
                    installPlanRef=ref,
                    installplan={
                        "apiVersion": INSTALL_PLAN.api_version,
                        "kind": INSTALL_PLAN.kind,
                        "name": plan_name,
                        "uuid": ref["uid"],
                    },
                    installPlanGeneration=generation,
                    state=STATE_UPGRADE_PENDING,
                    lastUpdated=now,
                )
            status["conditions"] = conditions
            # with what the next pass's upkeep would add at once (InstallPlanPending ...)
            status = self._upkept({**sub, "status": status}, csvs, sources) or status
            self._write_status(sub, status)
        return DONE

    # -- status upkeep ------------------------------------------------------------------

    def _upkept(
        self, sub: Object, csvs: Mapping[str, Object], sources: list[Object], plans: Sequence[Object] = ()
    ) -> dict[str, Any] | None:
        """The subscription's status brought up to date with the cluster; ``None`` when it is up to date.

        ``plans``: the namespace's InstallPlans, for adopting one made for the subscription
        that it does not reference yet (:meth:`_adopt`).
        """
        store, now = self.ctx.store, self.ctx.now()
        ns = sub["metadata"]["namespace"]
        status = status_of(sub)
        before = orjson.dumps(status, option=orjson.OPT_SORT_KEYS)
        if plans:
            self._adopt(sub, status, plans)
        conditions = list(status.get("conditions") or ())

        # a subscription generated for a dependency adopts the InstallPlan that created it
        generated_by = (sub["metadata"].get("annotations") or {}).get(GENERATED_BY_ANNOTATION)
        if not status.get("installPlanRef") and generated_by:
            try:
                plan = store.get(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, generated_by, ns)
            except NotFound:
                plan = None
            if plan is not None:
                status["installPlanRef"] = {
                    "apiVersion": INSTALL_PLAN.api_version,
                    "kind": INSTALL_PLAN.kind,
                    "name": generated_by,
                    "namespace": ns,
                    "uid": plan["metadata"]["uid"],
                }
                status["state"] = STATE_UPGRADE_PENDING
                status["currentCSV"] = spec_of(sub).get("startingCSV") or ""

        # the referenced InstallPlan
        plan_failed = False
        ref = status.get("installPlanRef") or {}
        if ref.get("name"):
            try:
                plan = store.get(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, ref["name"], ns)
            except NotFound:
                plan = None
            if plan is None:
                conditions = remove_condition(conditions, INSTALL_PLAN_PENDING, INSTALL_PLAN_FAILED)
                conditions = set_condition(
                    conditions,
                    INSTALL_PLAN_MISSING,
                    "True",
                    reason="ReferencedInstallPlanNotFound",
                    message=f"installplan {ref['name']} not found",
                    now=now,
                )
            else:
                phase = status_of(plan).get("phase") or ""
                conditions = remove_condition(conditions, INSTALL_PLAN_MISSING)
                if phase in UNFINISHED_PLAN_PHASES:
                    conditions = remove_condition(conditions, INSTALL_PLAN_FAILED)
                    conditions = set_condition(
                        conditions, INSTALL_PLAN_PENDING, "True", reason=phase or "InstallPlanNotYetReconciled", now=now
                    )
                elif phase == "Failed":
                    plan_failed = True
                    failed = find_condition(status_of(plan).get("conditions"), "Installed") or {}
                    conditions = remove_condition(conditions, INSTALL_PLAN_PENDING)
                    conditions = set_condition(
                        conditions,
                        INSTALL_PLAN_FAILED,
                        "True",
                        reason=str(failed.get("reason") or "InstallPlanFailed"),
                        message=str(failed.get("message") or ""),
                        now=now,
                    )
                else:
                    conditions = remove_condition(conditions, INSTALL_PLAN_PENDING, INSTALL_PLAN_FAILED)

        # the CSV it installs
        current = status.get("currentCSV") or ""
        if current:
            csv = csvs.get(current)
            if csv is None:
                status["state"] = STATE_FAILED if plan_failed else STATE_UPGRADE_PENDING
            else:
                status["installedCSV"] = current
                status["state"] = STATE_UPGRADE_AVAILABLE if self._upgrade_available(sub, csv) else STATE_AT_LATEST

        # catalog health
        health: list[dict[str, Any]] = []
        unhealthy = []
        for src in sources:
            state = ((status_of(src).get("connectionState") or {}).get("lastObservedState")) or ""
            healthy = state == READY
            if not healthy:
                unhealthy.append(source_label(src))
            health.append(
                {
                    "catalogSourceRef": {
                        "apiVersion": CATALOG_SOURCE.api_version,
                        "kind": CATALOG_SOURCE.kind,
                        "name": src["metadata"]["name"],
                        "namespace": src["metadata"]["namespace"],
                        "uid": src["metadata"].get("uid", ""),
                    },
                    "healthy": healthy,
                }
            )
        old_health = {
            (h["catalogSourceRef"]["namespace"], h["catalogSourceRef"]["name"]): h
            for h in status.get("catalogHealth") or ()
        }
        for h in health:
            key = (h["catalogSourceRef"]["namespace"], h["catalogSourceRef"]["name"])
            was = old_health.get(key)
            h["lastUpdated"] = was["lastUpdated"] if was and was.get("healthy") == h["healthy"] else now
        status["catalogHealth"] = health
        if not sources:
            conditions = set_condition(
                conditions,
                CATALOG_SOURCES_UNHEALTHY,
                "True",
                reason="NoCatalogSourcesFound",
                message="dependency resolution requires at least one catalogsource",
                now=now,
            )
        elif unhealthy:
            conditions = set_condition(
                conditions,
                CATALOG_SOURCES_UNHEALTHY,
                "True",
                reason="UnhealthyCatalogSourceFound",
                message="targeted catalogsource " + ", ".join(unhealthy) + " unhealthy",
                now=now,
            )
        else:
            conditions = set_condition(
                conditions,
                CATALOG_SOURCES_UNHEALTHY,
                "False",
                reason="AllCatalogSourcesHealthy",
                message="all available catalogsources are healthy",
                now=now,
            )
        status["conditions"] = conditions
        if orjson.dumps(status, option=orjson.OPT_SORT_KEYS) == before:
            return None
        status["lastUpdated"] = now
        return status

    def _adopt(self, sub: Object, status: dict[str, Any], plans: Sequence[Object]) -> None:
        """Point ``status`` at the newest InstallPlan made for the subscription after the one it references.

        The controller creates a plan, then writes each subscription's reference to it; when
        that write fails (a conflict with another writer, a lost connection, a killed process)
        the next pass must not resolve again and make a second plan for the same step. A plan
        was made for the subscription when it is among the plan's owners (by uid) and in its
        :data:`PLANNED_FOR_ANNOTATION`, with a generation above the subscription's
        ``installPlanGeneration``. A plan refused as it was made (``Failed``) is referenced
        without moving ``currentCSV``, as when it was made.
        """
        meta = sub["metadata"]
        seen = int(status.get("installPlanGeneration") or 0)
        best: tuple[int, Object, str] | None = None
        for plan in plans:
            generation = int(spec_of(plan).get("generation") or 0)
            if generation <= seen or (best is not None and generation <= best[0]):
                continue
            bundle = _planned_for(plan, meta)
            if bundle is not None:
                best = (generation, plan, bundle)
        if best is None:
            return
        generation, plan, bundle = best
        plan_meta = plan["metadata"]
        ref = {
            "apiVersion": INSTALL_PLAN.api_version,
            "kind": INSTALL_PLAN.kind,
            "name": plan_meta["name"],
            "namespace": plan_meta["namespace"],
            "uid": plan_meta["uid"],
            "resourceVersion": plan_meta["resourceVersion"],
        }
        status.update(installPlanRef=ref, installPlanGeneration=generation)
        if status_of(plan).get("phase") == "Failed":
            return
        current = status.get("currentCSV")
        if current and current != bundle:
            message = f"upgrading from {current} to {bundle} (installplan {plan_meta['name']})"
            self.ctx.record_event(sub, "Normal", "UpgradePending", message)
        status.update(
            currentCSV=bundle,
            installplan={
                "apiVersion": INSTALL_PLAN.api_version,
                "kind": INSTALL_PLAN.kind,
                "name": plan_meta["name"],
                "uuid": plan_meta["uid"],
            },
            state=STATE_UPGRADE_PENDING,
        )
        self.ctx.event(f"subscription {meta['namespace']}/{meta['name']}: adopted installplan {plan_meta['name']}")

    def _upgrade_available(self, sub: Object, csv: Object) -> bool:
        """Whether the subscribed channel has a bundle that upgrades the installed CSV."""
        ref = _subscription(sub)
        try:
            obj = self.ctx.store.get(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind, ref.source, ref.source_namespace)
            catalog = self.ctx.catalogs.snapshot(obj)
        except (NotFound, OlmkitError):
            return False
        package = catalog.packages.get(ref.package)
        channel = ref.channel or (package.default_channel if package is not None else None)
        entries = catalog.channels.get(ref.package, {}).get(channel or "")
        if entries is None:
            return False
        name = csv["metadata"]["name"]
        version = spec_of(csv).get("version")
        return any(
            upgrades_from(e, name, str(version) if version else None) is not None and e.name != name
            for e in entries.entries
        )

    def _referenced_plans(self, ns: str, subs: list[Object]) -> list[Object]:
        """The InstallPlans the subscriptions reference (those that exist)."""
        plans = []
        for sub in subs:
            ref = status_of(sub).get("installPlanRef") or {}
            if ref.get("name"):
                try:
                    plans.append(self.ctx.store.get(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, ref["name"], ns))
                except NotFound:
                    continue
        return plans

    def _fingerprint(
        self, subs: list[Object], csvs: Mapping[str, Object], groups: list[Object], sources: list[Object]
    ) -> bytes:
        data = [
            [
                (s["metadata"]["name"], spec_of(s), status_of(s).get("installedCSV"), status_of(s).get("currentCSV"))
                for s in subs
            ],
            [
                (
                    n,
                    spec_of(c).get("version"),
                    spec_of(c).get("replaces"),
                    (c["metadata"].get("annotations") or {}).get(PROPERTIES_ANNOTATION),
                    status_of(c).get("reason") == "Copied",
                )
                for n, c in sorted(csvs.items())
            ],
            [(g["metadata"]["name"], g["metadata"].get("annotations")) for g in groups],
            [(source_label(s), spec_of(s), status_of(s).get("catalogDigest")) for s in sources],
        ]
        return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS, default=str)).digest()

    # -- resolution ---------------------------------------------------------------------

    def _request(
        self,
        ns: str,
        subs: list[Object],
        csvs: Mapping[str, Object],
        group_count: int,
        sources: list[Object],
        exclude_global: bool,
    ) -> ResolutionRequest:
        refs = []
        for sub in subs:
            try:
                refs.append(_subscription(sub))
            except ValueError as exc:
                raise OlmkitError(f"subscription {ns}/{sub['metadata']['name']}: {exc}") from None
        installed = []
        for name, csv in sorted(csvs.items()):
            status = status_of(csv)
            if status.get("reason") == "Copied" or csv["metadata"].get("deletionTimestamp"):
                continue
            packages = {r.package for r in refs if r.installed_csv == name}
            package = next(iter(packages)) if len(packages) == 1 else None
            version = spec_of(csv).get("version")
            installed.append(
                InstalledCSV(
                    name=name,
                    version=str(version) if version is not None else None,
                    properties=_csv_properties(
                        Manifest(csv, f"clusterserviceversion {ns}/{name}"), package, self.ctx.pm
                    ),
                    replaces=spec_of(csv).get("replaces"),
                    phase=status.get("phase"),
                )
            )
        source_refs = []
        for src in sources:
            priority = spec_of(src).get("priority", 0)
            source_refs.append(
                SourceRef(
                    src["metadata"]["name"],
                    src["metadata"]["namespace"],
                    self.ctx.catalogs.resolution_source(src),
                    priority if isinstance(priority, int) and not isinstance(priority, bool) else 0,
                )
            )
        return ResolutionRequest(
            namespace=ns,
            registry=self.ctx.registry,
            subscriptions=refs,
            installed=installed,
            sources=source_refs,
            operator_groups=group_count,
            global_namespace=self.ctx.options.global_namespace,
            exclude_global=exclude_global,
            backend=self.ctx.options.backend,
        )

    # -- the InstallPlan ----------------------------------------------------------------

    def _ensure_install_plan(
        self,
        ns: str,
        subs: list[Object],
        steps: Sequence[Step],
        inputs: bytes,
        steps_by_sub: Mapping[str, Step],
    ) -> tuple[str, Object]:
        """Create the InstallPlan for ``steps``, or reuse an unfinished one made for them.

        Reused: a plan for the same CSVs whose status was never written (a crash right after
        its creation), or an unfinished one made from these very resolution inputs (its
        subscriptions' writes failed and it was not adopted: made by a version that did not
        record whom it was for).
        """
        store = self.ctx.store
        csv_names = [s.bundle for s in steps]
        plans = list(store.list(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, ns))
        for plan in plans:
            if spec_of(plan).get("clusterServiceVersionNames") != csv_names:
                continue
            name = plan["metadata"]["name"]
            phase = status_of(plan).get("phase")
            if not phase:
                try:
                    return name, self._write_plan_status(plan, self._plan_steps(ns, name, steps))
                except AdmissionRefused as exc:
                    return name, self._refuse(plan, exc)
            if phase in UNFINISHED_PLAN_PHASES and _made_from(plan, inputs):
                return name, plan
        approval = "Automatic"
        if any(spec_of(s).get("installPlanApproval") == "Manual" for s in subs):
            approval = "Manual"
        generation = 1 + max(
            [int(spec_of(p).get("generation") or 0) for p in plans]
            + [int(status_of(s).get("installPlanGeneration") or 0) for s in subs]
        )
        owners = [owner_reference(s, controller=False) for s in subs]
        planned_for = orjson.dumps({sub: step.bundle for sub, step in sorted(steps_by_sub.items())}).decode()
        while True:
            name = f"install-{_random_suffix()}"
            refusal: AdmissionRefused | None = None
            try:
                plan_steps = self._plan_steps(ns, name, steps)
            except AdmissionRefused as exc:
                refusal, plan_steps = exc, []
            try:
                plan = store.create(
                    {
                        "apiVersion": INSTALL_PLAN.api_version,
                        "kind": INSTALL_PLAN.kind,
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "ownerReferences": owners,
                            "annotations": {INPUTS_ANNOTATION: inputs.hex(), PLANNED_FOR_ANNOTATION: planned_for},
                        },
                        "spec": {
                            "clusterServiceVersionNames": csv_names,
                            "approval": approval,
                            "approved": approval == "Automatic",
                            "generation": generation,
                        },
                    }
                )
            except AlreadyExists:
                continue
            break
        if refusal is not None:
            return name, self._refuse(plan, refusal)
        plan = self._write_plan_status(plan, plan_steps)
        self.ctx.event(
            f"namespace {ns}: installplan {name} ({approval}) for "
            + ", ".join(f"{s.bundle}" + (f" (replaces {s.replaces})" if s.replaces else "") for s in steps)
        )
        return name, plan

    def _refuse(self, plan: Object, refusal: AdmissionRefused) -> Object:
        """Fail a new InstallPlan whose objects the admission checks refused.

        The plan stays, ``Failed`` with ``InstallCheckFailed`` and the checks' messages, so the
        refusal shows on it and on its Subscriptions, and it is not planned again until
        something it was made from changes.
        """
        now = self.ctx.now()
        conditions = set_condition(
            None, "Installed", "False", reason="InstallCheckFailed", message=str(refusal), now=now
        )
        status = {"phase": "Failed", "plan": [], "conditions": conditions}
        self.ctx.event(f"installplan {plan['metadata']['namespace']}/{plan['metadata']['name']} refused: {refusal}")
        return self.ctx.store.update_status({**plan, "status": status})

    def _write_plan_status(self, plan: Object, steps: list[dict[str, Any]]) -> Object:
        approval = spec_of(plan).get("approval")
        phase = "RequiresApproval" if approval == "Manual" and not spec_of(plan).get("approved") else "Installing"
        catalogs = sorted({f"{s['resource']['sourceNamespace']}/{s['resource']['sourceName']}" for s in steps})
        status = {"phase": phase, "plan": steps, "catalogSources": catalogs, "conditions": []}
        stored = self.ctx.store.update_status({**plan, "status": status})
        if phase == "RequiresApproval":
            self.ctx.record_event(stored, "Normal", "RequiresApproval", approval_message(stored))
        return stored

    def _plan_steps(self, ns: str, plan_name: str, steps: Sequence[Step]) -> list[dict[str, Any]]:
        """The InstallPlan's steps for the resolved bundles, CSVs first, then CRDs, then the rest."""
        csv_steps: list[dict[str, Any]] = []
        crd_steps: list[dict[str, Any]] = []
        rest: list[dict[str, Any]] = []
        install_ctx = InstallContext(self.ctx.store, self.ctx.now)
        failures: dict[str, BundleUnpackError] = {}
        for step in steps:
            try:
                content = bundle_content(self.ctx.pm, step.content, name=step.bundle, image=step.image)
            except BundleUnpackError as exc:
                failures[step.bundle] = exc
                continue

            csv = self._csv_manifest(ns, step, content.csv)
            csv_steps.append(_plan_step(step, csv))
            crd_steps += [_plan_step(step, crd) for crd in content.crds]
            for obj in content.objects:
                supported = obj.get("kind") in BUNDLE_OBJECT_KINDS
                rest.append(_plan_step(step, obj, "Unknown" if supported else "UnsupportedResource"))
            try:
                installer = installer_for(self.ctx.registry, csv, install_ctx)
                rest += [_plan_step(step, obj) for obj in installer.plan_objects(csv)]
            except StrategyError:
                pass  # the CSV controller reports the unknown strategy on the CSV
            if step.subscription is None:
                rest.append(_plan_step(step, self._generated_subscription(ns, plan_name, step)))
        if failures:
            raise _UnpackFailed(failures)
        self._admit_steps(ns, steps, csv_steps + crd_steps + rest)
        return csv_steps + crd_steps + rest

    def _admit_steps(self, ns: str, steps: Sequence[Step], plan_steps: list[dict[str, Any]]) -> None:
        """Run the admission checks on every object the plan would install.

        Raises:
            AdmissionRefused: a check refused some; names each object and why.
        """
        registry, store = self.ctx.registry, self.ctx.store
        if not registry.admission_checks:
            return
        images = {s.bundle: s.image for s in steps}
        refused: list[str] = []
        bundles: list[str] = []
        for plan_step in plan_steps:
            resource = plan_step["resource"]
            obj = orjson.loads(resource["manifest"])
            if store.is_namespaced(obj.get("apiVersion", ""), obj.get("kind", "")):
                obj.setdefault("metadata", {}).setdefault("namespace", ns)
            bundle = str(plan_step.get("resolving") or "")
            problems = admit(registry, obj, store=store, bundle=bundle, bundle_image=images.get(bundle))
            if problems:
                refused.append(
                    f"{resource.get('kind')}/{resource.get('name')} of bundle {bundle}: " + "; ".join(problems)
                )
                bundles.append(bundle)
        if refused:
            raise AdmissionRefused("admission refused " + "; ".join(refused), bundle=bundles[0])

    def _csv_manifest(self, ns: str, step: Step, csv: Mapping[str, Any]) -> dict[str, Any]:
        meta = dict(csv.get("metadata") or {})
        annotations = dict(meta.get("annotations") or {})
        annotations[PROPERTIES_ANNOTATION] = orjson.dumps(
            {"properties": [_property_json(p) for p in step.properties]}
        ).decode()
        meta.update(namespace=ns, annotations=annotations)
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            meta.pop(key, None)
        spec = dict(csv.get("spec") or {})
        if step.replaces:
            spec["replaces"] = step.replaces
        else:
            spec.pop("replaces", None)
        return {"apiVersion": csv.get("apiVersion", CSV.api_version), "kind": CSV.kind, "metadata": meta, "spec": spec}

    def _generated_subscription(self, ns: str, plan_name: str, step: Step) -> dict[str, Any]:
        return {
            "apiVersion": SUBSCRIPTION.api_version,
            "kind": SUBSCRIPTION.kind,
            "metadata": {
                "name": step.generated_subscription,
                "namespace": ns,
                "annotations": {GENERATED_BY_ANNOTATION: plan_name},
            },
            "spec": {
                "source": step.catalog,
                "sourceNamespace": step.catalog_namespace,
                "name": step.package,
                "channel": step.channel,
                "startingCSV": step.bundle,
                "installPlanApproval": "Automatic",
            },
        }

    def _gc_install_plans(self, ns: str) -> None:
        """Delete finished InstallPlans beyond the newest :data:`KEEP_INSTALL_PLANS`."""
        plans = [
            p
            for p in self.ctx.store.list(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, ns)
            if status_of(p).get("phase") in ("Complete", "Failed")
        ]
        plans.sort(key=lambda p: (int(spec_of(p).get("generation") or 0), p["metadata"]["name"]))
        for plan in plans[: max(0, len(plans) - KEEP_INSTALL_PLANS)]:
            with contextlib.suppress(NotFound):
                self.ctx.store.delete(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, plan["metadata"]["name"], ns)

    # -- writing ------------------------------------------------------------------------

    def _write_status(self, sub: Object, status: dict[str, Any]) -> None:
        if status_of(sub) == status:
            return
        self.ctx.store.update_status({**sub, "status": status})

    def _unavailable(self, sources: list[Object]) -> dict[tuple[str, str], str]:
        """The catalog sources that have no snapshot and cannot load one, with the error."""
        out = {}
        for src in sources:
            try:
                self.ctx.catalogs.snapshot(src)
            except OlmkitError as exc:
                out[_source_key(src)] = str(exc)
        return out

    def _record_resolution_failed(self, ns: str, subs: Iterable[Object], message: str) -> None:
        """Upstream records ``ResolutionFailed`` on the Namespace; olmkit also on each Subscription."""
        try:
            namespace = self.ctx.store.get(NAMESPACE.api_version, NAMESPACE.kind, ns)
        except NotFound:
            namespace = {"apiVersion": NAMESPACE.api_version, "kind": NAMESPACE.kind, "metadata": {"name": ns}}
        self.ctx.record_event(namespace, "Warning", RESOLUTION_FAILED, message)
        for sub in subs:
            self.ctx.record_event(sub, "Warning", RESOLUTION_FAILED, message)

    def _fail_all(self, subs: Iterable[Object], type_: str, reason: str, message: str) -> None:
        now = self.ctx.now()
        for sub in subs:
            status = status_of(sub)
            status["conditions"] = set_condition(
                status.get("conditions"), type_, "True", reason=reason, message=message, now=now
            )
            self._write_status(sub, status)

    def _fail_unpack(
        self, subs: Iterable[Object], steps_by_sub: Mapping[str, Step], failures: Mapping[str, BundleUnpackError]
    ) -> None:
        """BundleUnpackFailed on every subscription: about its own bundle when that one failed,
        else naming the bundles (of other subscriptions or dependencies) the namespace waits for."""
        now = self.ctx.now()
        for sub in subs:
            step = steps_by_sub.get(sub["metadata"]["name"])
            own = failures.get(step.bundle) if step is not None else None
            if own is not None:
                message = str(own)
            else:
                message = "waiting for the namespace's other bundles, which could not be unpacked: " + "; ".join(
                    str(error) for error in failures.values()
                )
            status = status_of(sub)
            status["conditions"] = set_condition(
                status.get("conditions"),
                BUNDLE_UNPACK_FAILED,
                "True",
                reason="BundleUnpackFailed",
                message=message,
                now=now,
            )
            self._write_status(sub, status)

    def _clear_failures(self, subs: Iterable[Object]) -> None:
        for sub in subs:
            status = status_of(sub)
            status["conditions"] = remove_condition(status.get("conditions"), RESOLUTION_FAILED, BUNDLE_UNPACK_FAILED)
            self._write_status(sub, status)


class _UnpackFailed(Exception):
    """Bundles of a resolution whose content could not be obtained, by bundle name."""

    def __init__(self, failures: Mapping[str, BundleUnpackError]) -> None:
        super().__init__("; ".join(map(str, failures.values())))
        self.failures = dict(failures)


def _made_from(plan: Mapping[str, Any], inputs: bytes) -> bool:
    """Whether an InstallPlan was made from these very resolution inputs."""
    return bool((plan["metadata"].get("annotations") or {}).get(INPUTS_ANNOTATION) == inputs.hex())


def _failed_with(plan: Mapping[str, Any], inputs: bytes) -> bool:
    """Whether an InstallPlan failed, and was made from these very resolution inputs."""
    return status_of(plan).get("phase") == "Failed" and _made_from(plan, inputs)


def _planned_for(plan: Mapping[str, Any], sub_meta: Mapping[str, Any]) -> str | None:
    """The CSV an InstallPlan was made to install for a subscription (by its metadata); ``None``: not for it."""
    meta = plan["metadata"]
    if not any(ref.get("uid") == sub_meta.get("uid") for ref in meta.get("ownerReferences") or ()):
        return None
    try:
        planned = orjson.loads((meta.get("annotations") or {}).get(PLANNED_FOR_ANNOTATION) or "{}")
    except orjson.JSONDecodeError:
        return None
    bundle = planned.get(sub_meta.get("name")) if isinstance(planned, dict) else None
    return bundle if isinstance(bundle, str) and bundle else None


def _plan_step(step: Step, obj: Mapping[str, Any], status: str = "Unknown") -> dict[str, Any]:
    """An InstallPlan step creating ``obj`` for the bundle of ``step``."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    return {
        "resolving": step.bundle,
        "resource": {
            "group": group,
            "version": version,
            "kind": obj["kind"],
            "name": (obj.get("metadata") or {}).get("name", ""),
            "sourceName": step.catalog,
            "sourceNamespace": step.catalog_namespace,
            "manifest": orjson.dumps(obj).decode(),
        },
        "status": status,
    }


def _in_transition(csv: Mapping[str, Any]) -> bool:
    """Whether a CSV is on its way somewhere on its own: being installed, or being replaced.

    Upstream resolves the next upgrade as soon as the previous CSV exists, so intermediate
    versions of a chain may never run; olmkit lets each one finish first. A CSV that is
    stuck (requirements not met, not upgradeable, failed) does not hold resolution up.
    """
    status = status_of(csv)
    phase = status.get("phase") or ""
    if phase in ("", "InstallReady", "Installing", "Replacing", "Deleting"):
        return True
    return phase == "Pending" and status.get("reason") in (None, "", "RequirementsUnknown")


def _matches(ref: SubscriptionRef, step: Step) -> bool:
    """Whether a subscription asks for the package, channel and catalog of a step (upstream's rule)."""
    if ref.package != step.package:
        return False
    if ref.channel and ref.channel != step.channel:
        return False
    return not (ref.source and (ref.source, ref.source_namespace) != (step.catalog, step.catalog_namespace))


def _property_json(prop: Property) -> dict[str, Any]:
    return {"type": prop.type, "value": prop.value}
