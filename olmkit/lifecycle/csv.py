"""The ClusterServiceVersion controller (OLM Operator): the CSV phase machine.

Phases and reasons are upstream's::

    (none) ──► Pending (RequirementsUnknown)
    Pending ──► Pending (RequirementsNotMet | OperatorConditionNotUpgradeable)
            └─► InstallReady (AllRequirementsMet) ──► Installing (InstallSucceeded / InstallWaiting)
    Installing ──► Succeeded (InstallSucceeded) | Failed (InstallCheckFailed, after the install timeout)
    Succeeded ──► Failed (RequirementsNotMet | ComponentUnhealthy)
    Failed ──► Pending (NeedsReinstall) once requirements and components are healthy again
    any ──► Replacing (BeingReplaced) when a CSV with ``spec.replaces`` naming it exists
    Replacing ──► Deleting (Replaced) once the newest CSV of the replacement chain Succeeded
    Deleting ──► removed
    any ──► Failed (NoOperatorGroup | TooManyOperatorGroups) without exactly one OperatorGroup
    any ──► Failed (UnsupportedOperatorGroup | InterOperatorGroupOwnerConflict | ...) see
            :mod:`olmkit.lifecycle.operatorgroups`; back to Pending once the cause is gone

Requirements (``status.requirementStatus``): owned and required CRDs present and
Established, required APIServices present, plus what the install strategy needs
(service accounts and their permissions for ``deployment``). The workload comes from the
CSV's install strategy plugin. Each CSV gets an OperatorCondition of its own name; a CSV
that replaces another stays ``Pending`` while the old one's OperatorCondition says
``Upgradeable=False``. A finalizer removes the cluster-scoped objects a CSV owns (by the
``olm.owner`` labels) when it is deleted; namespaced ones go through their ownerReferences.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from olmkit.lifecycle.context import LifecycleContext
from olmkit.lifecycle.kinds import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    CRD,
    CSV,
    DEPLOYMENT,
    OPERATOR_CONDITION,
    OPERATOR_GROUP,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
)
from olmkit.lifecycle.operatorgroups import (
    CLEANUP_FINALIZER,
    PROVIDED_APIS_ANNOTATION,
    Membership,
    descriptions,
    group_annotations,
    is_copied,
    operator_csvs,
    parse_apis,
    provided_apis,
    providers_of,
)
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec, owners_of, parse_rfc3339
from olmkit.lifecycle.status import find_condition, owner_reference, spec_of, status_of
from olmkit.lifecycle.strategy import (
    OWNER_KIND_LABEL,
    OWNER_LABEL,
    OWNER_NAMESPACE_LABEL,
    InstallContext,
    Installer,
    StrategyError,
    installer_for,
)
from olmkit.store import NotFound, Object, WatchEvent

__all__ = ["CLEANUP_FINALIZER", "ClusterServiceVersionController", "upgradeable"]

#: how often an Installing CSV re-checks its workload while it waits
INSTALL_POLL: Final = 5.0
#: how many phase transitions ``status.conditions`` keeps
HISTORY: Final = 20

#: cluster-scoped kinds a CSV may own through the ``olm.owner`` labels
_CLUSTER_OWNED: Final = (
    (CLUSTER_ROLE.api_version, CLUSTER_ROLE.kind),
    (CLUSTER_ROLE_BINDING.api_version, CLUSTER_ROLE_BINDING.kind),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("console.openshift.io/v1", "ConsoleYAMLSample"),
    ("console.openshift.io/v1", "ConsoleQuickStart"),
    ("console.openshift.io/v1", "ConsoleCLIDownload"),
    ("console.openshift.io/v1", "ConsoleLink"),
)


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"])


def upgradeable(condition: Mapping[str, Any] | None) -> tuple[bool, str]:
    """Whether an OperatorCondition lets its CSV be replaced, and the message when it does not.

    ``spec.overrides`` (an administrator's) win over ``status.conditions`` (the operator's,
    v2) and ``spec.conditions`` (the operator's, v1).
    """
    if condition is None:
        return True, ""
    spec = spec_of(condition)
    for source in (spec.get("overrides"), status_of(condition).get("conditions"), spec.get("conditions")):
        found = find_condition(source if isinstance(source, list) else None, "Upgradeable")
        if found is not None:
            if str(found.get("status")) == "False":
                return False, str(found.get("message") or found.get("reason") or "")
            return True, ""
    return True, ""


class ClusterServiceVersionController(Controller):
    """Runs the CSV phase machine."""

    name = "clusterserviceversion"

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx
        self.membership = Membership(ctx)
        store = ctx.store

        def csvs_in(namespace: str | None) -> list[tuple[str, str]]:
            return [
                (c["metadata"]["namespace"], c["metadata"]["name"])
                for c in store.list(CSV.api_version, CSV.kind, namespace)
            ]

        def by_crd(event: WatchEvent) -> list[tuple[str, str]]:
            name = event.object["metadata"]["name"]
            out = []
            for csv in operator_csvs(store):
                crds = descriptions(csv, "customresourcedefinitions", "owned")
                crds += descriptions(csv, "customresourcedefinitions", "required")
                if any(d.get("name") == name for d in crds):
                    out.append((csv["metadata"]["namespace"], csv["metadata"]["name"]))
            return out

        def by_namespace(event: WatchEvent) -> list[tuple[str, str]]:
            return csvs_in(event.object["metadata"].get("namespace") or None)

        def by_cluster_rbac(event: WatchEvent) -> list[tuple[str, str]]:
            # generated cluster RBAC names its owner: only that CSV (or none, for a group's) looks again
            labels = event.object["metadata"].get("labels") or {}
            if labels.get(OWNER_KIND_LABEL) == CSV.kind and labels.get(OWNER_LABEL):
                return [(str(labels.get(OWNER_NAMESPACE_LABEL) or ""), str(labels[OWNER_LABEL]))]
            if labels.get(OWNER_KIND_LABEL):
                return []
            return [_key(c) for c in operator_csvs(store)]

        seen: dict[tuple[str, str], tuple[frozenset[str], tuple[str, ...]]] = {}

        def by_group(event: WatchEvent) -> list[tuple[str, str]]:
            # the group's members; and when the group gave up APIs or namespaces (or went), every
            # CSV providing one of its APIs: a conflict with it may be gone (a group that only grew
            # cannot have resolved one)
            obj = event.object
            apis = parse_apis((obj["metadata"].get("annotations") or {}).get(PROVIDED_APIS_ANNOTATION))
            reach = tuple(sorted(str(n) for n in (obj.get("status") or {}).get("namespaces") or ()))
            key = _key(obj)
            before = seen.pop(key, None)
            if event.type != "DELETED":
                seen[key] = (apis, reach)
            if before is not None and event.type != "DELETED" and before[1] == reach and before[0] <= apis:
                return by_namespace(event)
            return by_namespace(event) + providers_of(store, apis | (before[0] if before else frozenset()))

        def by_same_apis(event: WatchEvent) -> list[tuple[str, str]]:
            # a provider gone: CSVs that conflicted with it over its APIs may proceed now
            if event.type != "DELETED" or is_copied(event.object):
                return []
            return providers_of(store, provided_apis(event.object))

        def by_owner(event: WatchEvent) -> list[tuple[str, str]]:
            return owners_of(event.object, CSV.kind)

        def by_condition(event: WatchEvent) -> list[tuple[str, str]]:
            ns, name = event.object["metadata"].get("namespace"), event.object["metadata"]["name"]
            out = [(str(ns), str(name))]
            for csv in store.list(CSV.api_version, CSV.kind, ns):
                if spec_of(csv).get("replaces") == name:
                    out.append((str(ns), csv["metadata"]["name"]))
            return out

        def own(event: WatchEvent) -> list[tuple[str, str]]:
            # copies in target namespaces have no phases of their own: their changes need no pass
            if is_copied(event.object) and event.type != "DELETED":
                return []
            return [_key(event.object)]

        def by_replaces(event: WatchEvent) -> list[tuple[str, str]]:
            if is_copied(event.object):
                return []
            ns = event.object["metadata"].get("namespace")
            replaces = spec_of(event.object).get("replaces")
            return [(str(ns), str(replaces))] if replaces else []

        self.watches = (
            WatchSpec(CSV.api_version, CSV.kind, own),
            WatchSpec(CSV.api_version, CSV.kind, by_replaces),
            WatchSpec(CSV.api_version, CSV.kind, by_same_apis),
            WatchSpec(CRD.api_version, CRD.kind, by_crd),
            WatchSpec(DEPLOYMENT.api_version, DEPLOYMENT.kind, by_owner),
            WatchSpec(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, by_group),
            WatchSpec(OPERATOR_CONDITION.api_version, OPERATOR_CONDITION.kind, by_condition),
            WatchSpec(SERVICE_ACCOUNT.api_version, SERVICE_ACCOUNT.kind, by_namespace),
            WatchSpec(ROLE.api_version, ROLE.kind, by_namespace),
            WatchSpec(ROLE_BINDING.api_version, ROLE_BINDING.kind, by_namespace),
            WatchSpec(CLUSTER_ROLE.api_version, CLUSTER_ROLE.kind, by_cluster_rbac),
            WatchSpec(CLUSTER_ROLE_BINDING.api_version, CLUSTER_ROLE_BINDING.kind, by_cluster_rbac),
        )

    # -- the machine ----------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        try:
            csv = store.get(CSV.api_version, CSV.kind, name, namespace)
        except NotFound:
            return DONE
        meta = csv["metadata"]
        if meta.get("deletionTimestamp"):
            self._cleanup(csv)
            return DONE
        status = status_of(csv)
        if is_copied(csv):
            return DONE
        if CLEANUP_FINALIZER not in (meta.get("finalizers") or ()):
            claimed = {**meta, "finalizers": [*(meta.get("finalizers") or ()), CLEANUP_FINALIZER]}
            groups = list(store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace))
            if len(groups) == 1:  # the group's member annotations, which the membership check writes next
                claimed["annotations"] = {**(meta.get("annotations") or {}), **group_annotations(groups[0])}
            store.update({**csv, "metadata": claimed})
            return DONE  # the update wakes the next pass

        phase = status.get("phase") or ""
        groups = list(store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace))
        if len(groups) != 1:
            if len(groups) == 0:
                return self._to(csv, "Failed", "NoOperatorGroup", "csv in namespace with no operatorgroups")
            return self._to(
                csv,
                "Failed",
                "TooManyOperatorGroups",
                "csv created in namespace with multiple operatorgroups, can't pick one automatically",
            )
        verdict = self.membership.check(csv, groups[0])
        if verdict is not None:
            return self._to(csv, verdict.phase, verdict.reason, verdict.message) if verdict.phase else DONE
        self._ensure_operator_condition(csv)

        replacer = self._replacer(csv)
        if replacer is not None and phase not in ("Replacing", "Deleting"):
            return self._to(
                csv, "Replacing", "BeingReplaced", f"being replaced by csv: {namespace}/{replacer['metadata']['name']}"
            )

        if phase == "":
            return self._to(csv, "Pending", "RequirementsUnknown", "requirements not yet checked")
        if phase == "Replacing":
            return self._replacing(csv, replacer)
        if phase == "Deleting":
            store.delete(CSV.api_version, CSV.kind, name, namespace)
            self.ctx.event(f"csv {namespace}/{name}: deleted (replaced)")
            return DONE
        step = {
            "Pending": self._pending,
            "InstallReady": self._install,
            "Installing": self._installing,
            "Succeeded": self._succeeded,
            "Failed": self._failed,
        }.get(phase)
        if step is None:
            return DONE
        try:
            installer = installer_for(self.ctx.registry, csv, InstallContext(store, self.ctx.now))
        except StrategyError as exc:
            return self._to(csv, "Failed", "InvalidInstallStrategy", str(exc))
        try:
            return step(csv, installer)
        except StrategyError as exc:  # the strategy found the CSV's install spec malformed
            return self._to(csv, "Failed", "InvalidInstallStrategy", str(exc))

    def _pending(self, csv: Object, installer: Installer) -> Result:
        replaces = spec_of(csv).get("replaces")
        if replaces:
            ns = csv["metadata"]["namespace"]
            try:
                condition = self.ctx.store.get(OPERATOR_CONDITION.api_version, OPERATOR_CONDITION.kind, replaces, ns)
            except NotFound:
                condition = None
            ok, message = upgradeable(condition)
            if not ok:
                return self._to(
                    csv, "Pending", "OperatorConditionNotUpgradeable", f"The operator is not upgradeable: {message}"
                )
        met, requirements = self._requirements(csv, installer)
        if not met:
            return self._to(
                csv,
                "Pending",
                "RequirementsNotMet",
                "one or more requirements couldn't be found",
                requirementStatus=requirements,
            )
        return self._to(
            csv,
            "InstallReady",
            "AllRequirementsMet",
            "all requirements found, attempting install",
            requirementStatus=requirements,
        )

    def _install(self, csv: Object, installer: Installer) -> Result:
        installer.install(csv)
        return self._to(csv, "Installing", "InstallSucceeded", "waiting for install components to report healthy")

    def _installing(self, csv: Object, installer: Installer) -> Result:
        check = installer.check(csv)
        if check.healthy:
            return self._to(csv, "Succeeded", "InstallSucceeded", "install strategy completed with no errors")
        if check.failed:
            return self._to(csv, "Failed", "InstallCheckFailed", check.message)
        started = status_of(csv).get("lastTransitionTime")
        elapsed = self.ctx.clock.now() - parse_rfc3339(started) if started else 0.0
        timeout = self.ctx.options.install_timeout
        if elapsed >= timeout:
            return self._to(csv, "Failed", "InstallCheckFailed", f"install timeout: {check.message}")
        self._to(csv, "Installing", "InstallWaiting", f"installing: {check.message}")
        return Result(
            requeue_after=min(INSTALL_POLL, max(timeout - elapsed, 0.01)),
            waiting=f"{check.message} (install times out in {timeout - elapsed:.0f}s)",
        )

    def _succeeded(self, csv: Object, installer: Installer) -> Result:
        met, requirements = self._requirements(csv, installer)
        if not met:
            return self._to(
                csv, "Failed", "RequirementsNotMet", "requirements no longer met", requirementStatus=requirements
            )
        check = installer.check(csv)
        if not check.healthy:
            return self._to(csv, "Failed", "ComponentUnhealthy", f"installing: {check.message}")
        return DONE

    def _failed(self, csv: Object, installer: Installer) -> Result:
        reason = status_of(csv).get("reason")
        if reason == "InvalidInstallStrategy":
            return self._to(csv, "Pending", "NeedsReinstall", "install strategy is supported now")
        met, requirements = self._requirements(csv, installer)
        if not met:
            if reason == "RequirementsNotMet":
                return self._to(
                    csv, "Failed", "RequirementsNotMet", "requirements no longer met", requirementStatus=requirements
                )
            return DONE
        if reason == "RequirementsNotMet" or installer.check(csv).healthy:
            return self._to(
                csv, "Pending", "NeedsReinstall", "calculated deployment install is bad; requirements met again"
            )
        return DONE

    def _replacing(self, csv: Object, replacer: Object | None) -> Result:
        ns = csv["metadata"]["namespace"]
        if replacer is None:
            return self._to(csv, "Pending", "NeedsReinstall", "the csv replacing it is gone")
        leaf, seen = replacer, {csv["metadata"]["name"]}
        while True:
            seen.add(leaf["metadata"]["name"])
            nxt = self._replacer(leaf)
            if nxt is None or nxt["metadata"]["name"] in seen:
                break
            leaf = nxt
        if status_of(leaf).get("phase") == "Succeeded":
            return self._to(
                csv,
                "Deleting",
                "Replaced",
                "has been replaced by a newer ClusterServiceVersion that has successfully installed.",
            )
        return Result(waiting=f"waiting for {ns}/{leaf['metadata']['name']} to succeed")

    # -- helpers --------------------------------------------------------------------------

    def _replacer(self, csv: Object) -> Object | None:
        """The CSV in the namespace whose ``spec.replaces`` names this one."""
        name = csv["metadata"]["name"]
        for other in self.ctx.store.list(CSV.api_version, CSV.kind, csv["metadata"]["namespace"]):
            if spec_of(other).get("replaces") == name and not other["metadata"].get("deletionTimestamp"):
                return other
        return None

    def _requirements(self, csv: Object, installer: Installer) -> tuple[bool, list[dict[str, Any]]]:
        store = self.ctx.store
        out: list[dict[str, Any]] = []
        for which in ("owned", "required"):
            for desc in descriptions(csv, "customresourcedefinitions", which):
                name = str(desc.get("name") or "")
                entry = {"group": CRD.group, "version": "v1", "kind": CRD.kind, "name": name}
                try:
                    crd = store.get(CRD.api_version, CRD.kind, name)
                except NotFound:
                    out.append({**entry, "status": "NotPresent", "message": "CRD is not present"})
                    continue
                established = find_condition(status_of(crd).get("conditions"), "Established")
                if established is None or established.get("status") != "True":
                    out.append(
                        {
                            **entry,
                            "status": "PresentNotAvailable",
                            "message": "CRD is present but the Established condition is False (not available)",
                            "uuid": crd["metadata"].get("uid", ""),
                        }
                    )
                    continue
                out.append(
                    {
                        **entry,
                        "status": "Present",
                        "message": "CRD is present and Established condition is true",
                        "uuid": crd["metadata"].get("uid", ""),
                    }
                )
        for desc in descriptions(csv, "apiservicedefinitions", "required"):
            name = f"{desc.get('version')}.{desc.get('group')}"
            entry = {"group": "apiregistration.k8s.io", "version": "v1", "kind": "APIService", "name": name}
            try:
                store.get("apiregistration.k8s.io/v1", "APIService", name)
            except NotFound:
                out.append({**entry, "status": "NotPresent", "message": "APIService not found"})
                continue
            out.append({**entry, "status": "Present", "message": "APIService is present"})
        out.extend(installer.requirements(csv))
        met = all(r.get("status") == "Present" for r in out)
        return met, out

    def _ensure_operator_condition(self, csv: Object) -> None:
        ns, name = csv["metadata"]["namespace"], csv["metadata"]["name"]
        install = spec_of(csv).get("install") or {}
        spec = install.get("spec") if isinstance(install, Mapping) else None
        spec = spec if isinstance(spec, Mapping) else {}
        deployments = sorted({str(d.get("name")) for d in spec.get("deployments") or () if isinstance(d, Mapping)})
        accounts = sorted(
            {
                str(p.get("serviceAccountName"))
                for key in ("permissions", "clusterPermissions")
                for p in spec.get(key) or ()
                if isinstance(p, Mapping) and p.get("serviceAccountName")
            }
        )
        store = self.ctx.store
        try:
            current = store.get(OPERATOR_CONDITION.api_version, OPERATOR_CONDITION.kind, name, ns)
        except NotFound:
            store.create(
                {
                    "apiVersion": OPERATOR_CONDITION.api_version,
                    "kind": OPERATOR_CONDITION.kind,
                    "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner_reference(csv)]},
                    "spec": {"deployments": deployments, "serviceAccounts": accounts},
                }
            )
            return
        cspec = spec_of(current)
        if cspec.get("deployments") != deployments or cspec.get("serviceAccounts") != accounts:
            store.update({**current, "spec": {**cspec, "deployments": deployments, "serviceAccounts": accounts}})

    def _cleanup(self, csv: Object) -> None:
        """A deleted CSV: remove the cluster-scoped objects it owns, then let it go."""
        store = self.ctx.store
        meta = csv["metadata"]
        selector = {OWNER_LABEL: meta["name"], OWNER_NAMESPACE_LABEL: meta["namespace"]}
        for api_version, kind in _CLUSTER_OWNED:
            for obj in store.list(api_version, kind, label_selector={"matchLabels": selector}):
                with contextlib.suppress(NotFound):
                    store.delete(api_version, kind, obj["metadata"]["name"])
        finalizers = [f for f in meta.get("finalizers") or () if f != CLEANUP_FINALIZER]
        if finalizers != list(meta.get("finalizers") or ()):
            store.update({**csv, "metadata": {**meta, "finalizers": finalizers}})

    def _to(self, csv: Object, phase: str, reason: str, message: str, **extra: Any) -> Result:
        """Record a phase (a no-op when phase, reason, message and extras are unchanged)."""
        status = status_of(csv)
        old_phase = status.get("phase") or None
        same = (
            status.get("phase") == phase
            and status.get("reason") == reason
            and status.get("message") == message
            and all(status.get(k) == v for k, v in extra.items())
        )
        if same:
            return DONE
        noted = old_phase != phase or status.get("reason") != reason or status.get("message") != message
        now = self.ctx.now()
        status.update(extra)
        status.update(phase=phase, reason=reason, message=message, lastUpdateTime=now)
        if old_phase != phase:
            status["lastTransitionTime"] = now
            history = [
                *(status.get("conditions") or ()),
                {
                    "phase": phase,
                    "reason": reason,
                    "message": message,
                    "lastUpdateTime": now,
                    "lastTransitionTime": now,
                },
            ]
            status["conditions"] = history[-HISTORY:]
        stored = self.ctx.store.update_status({**csv, "status": status})
        # upstream records an Event whenever phase, reason or message change (SetPhaseWithEventIfChanged)
        if noted:
            self.ctx.record_event(stored, "Warning" if phase == "Failed" else "Normal", reason, message)
        if old_phase != phase:
            ns, name = csv["metadata"]["namespace"], csv["metadata"]["name"]
            self.ctx.event(f"csv {ns}/{name}: {phase} ({reason})" + (f": {message}" if phase in ("Failed",) else ""))
            self.ctx.pm.hook.olmkit_csv_phase_changed(csv=stored, old_phase=old_phase, new_phase=phase, reason=reason)
        return DONE
