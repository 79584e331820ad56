"""The InstallPlan controller (Catalog Operator): approve, then create every step's resource.

Phases: ``Planning`` → ``RequiresApproval`` (``spec.approval: Manual`` until
``spec.approved``) → ``Installing`` → ``Complete``, or ``Failed`` with an ``Installed=False``
condition saying which step failed and why. Steps run in plan order (CSVs, CRDs, the
rest); each step's status (``Created``, ``Present``, ``UnsupportedResource``) is written
as the plan goes (after its CRDs, then every few steps), so a process killed half-way leaves a
plan the next run finishes: creating is idempotent (an existing object is updated in place
and reported ``Present``).

Ownership: namespaced objects of a bundle get an ownerReference to the CSV they install
with (they go when it goes, unless a newer CSV took them over); cluster-scoped ones get
the ``olm.owner`` labels instead. CRDs are never owned: they outlive their operators.
CRD updates follow the CRD upgrade rules (:mod:`olmkit.lifecycle.crds`).

Before it creates anything, an ``Installing`` plan needs exactly one OperatorGroup managing
its namespace, and the group's service account if it names one; otherwise it stays
``Installing`` with ``Installed=False`` (``InstallCheckFailed``, upstream's message) and goes
on once the group is fixed.

A plan created by hand with only ``spec.clusterServiceVersionNames`` and
``spec.source``/``spec.sourceNamespace`` is planned from that catalog first.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from olmkit.errors import OlmkitError
from olmkit.lifecycle.context import LifecycleContext
from olmkit.lifecycle.events import approval_message
from olmkit.lifecycle.kinds import (
    CATALOG_SOURCE,
    CRD,
    CSV,
    INSTALL_PLAN,
    OPERATOR_GROUP,
    SERVICE_ACCOUNT,
    SUBSCRIPTION,
    kind_of,
)
from olmkit.lifecycle.operatorgroups import CLEANUP_FINALIZER, group_annotations, install_plan_problem
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec
from olmkit.lifecycle.status import owner_reference, set_condition, spec_of, status_of
from olmkit.lifecycle.strategy import owner_labels
from olmkit.store import AlreadyExists, Invalid, NotFound, Object, StoreError, WatchEvent

__all__ = ["InstallPlanController", "StepError"]

DONE_STEPS: Final = frozenset({"Created", "Present", "UnsupportedResource"})


class StepError(OlmkitError):
    """A step's resource could not be created or updated."""


def _replaced_csvs(steps: list[dict[str, Any]]) -> dict[str, str | None]:
    """CSV name -> the CSV it replaces, from the plan's CSV steps."""
    out: dict[str, str | None] = {}
    for step in steps:
        resource = step.get("resource") or {}
        if resource.get("kind") == CSV.kind:
            manifest = orjson.loads(resource.get("manifest") or "{}")
            out[str(resource.get("name"))] = (
                ((manifest.get("spec") or {}).get("replaces")) if isinstance(manifest, dict) else None
            )
    return out


class InstallPlanController(Controller):
    """Moves InstallPlans through their phases and creates their resources."""

    name = "installplan"

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx
        store = ctx.store

        def installing_in(event: WatchEvent) -> list[tuple[str, str]]:
            # a plan held for its namespace's OperatorGroup (or the group's service account) looks again
            ns = event.object["metadata"].get("namespace")
            return [
                (p["metadata"]["namespace"], p["metadata"]["name"])
                for p in store.list(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, ns)
                if status_of(p).get("phase") == "Installing"
            ]

        self.watches = (
            WatchSpec(INSTALL_PLAN.api_version, INSTALL_PLAN.kind),
            WatchSpec(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, installing_in),
            WatchSpec(SERVICE_ACCOUNT.api_version, SERVICE_ACCOUNT.kind, installing_in),
        )
        self._all_csvs: list[Object] | None = None
        self._replaces: dict[str, str | None] = {}

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        try:
            plan = store.get(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, name, namespace)
        except NotFound:
            return DONE
        status = status_of(plan)
        phase = status.get("phase") or ""
        if phase in ("Complete", "Failed"):
            return DONE
        if phase in ("", "Planning"):
            if not status.get("plan"):
                return self._plan_by_hand(plan)
            self._to_approval_phase(plan)
            return DONE
        if phase == "RequiresApproval":
            if spec_of(plan).get("approved"):
                plan = self._set_phase(plan, "Installing")
                self.ctx.event(f"installplan {namespace}/{name}: approved")
                self.ctx.record_event(plan, "Normal", "Approved", "the InstallPlan was approved; installing")
            return DONE
        problem = install_plan_problem(store, namespace)
        if problem is not None:
            return self._hold(plan, problem)
        return self._install(plan)

    def _hold(self, plan: Object, problem: str) -> Result:
        """No CSV is made while the namespace's OperatorGroup is unusable; the plan stays Installing and says why."""
        now = self.ctx.now()
        conditions = set_condition(
            status_of(plan).get("conditions"),
            "Installed",
            "False",
            reason="InstallCheckFailed",
            message=problem,
            now=now,
        )
        if conditions != status_of(plan).get("conditions"):
            self._set_phase(plan, "Installing", conditions=conditions)
            ns, name = plan["metadata"]["namespace"], plan["metadata"]["name"]
            self.ctx.event(f"installplan {ns}/{name}: attenuated service account query failed - {problem}")
        return DONE  # the group or its service account changing wakes the plan

    @staticmethod
    def _approval_phase(plan: Object) -> str:
        spec = spec_of(plan)
        return "RequiresApproval" if spec.get("approval") == "Manual" and not spec.get("approved") else "Installing"

    def _to_approval_phase(self, ip: Object, **extra: Any) -> None:
        phase = self._approval_phase(ip)
        stored = self._set_phase(ip, phase, **extra)
        if phase == "RequiresApproval":
            self.ctx.record_event(stored, "Normal", "RequiresApproval", approval_message(stored))

    def _set_phase(self, ip: Object, phase: str, **extra: Any) -> Object:
        status = {**status_of(ip), "phase": phase, **extra}
        return self.ctx.store.update_status({**ip, "status": status})

    # -- planning a hand-written plan ---------------------------------------------------

    def _plan_by_hand(self, plan: Object) -> Result:
        from olmkit.lifecycle.bundles import BundleUnpackError
        from olmkit.lifecycle.subscriptions import SubscriptionController
        from olmkit.resolver import Step

        spec = spec_of(plan)
        ns = plan["metadata"]["namespace"]
        names = spec.get("clusterServiceVersionNames") or []
        source, source_ns = spec.get("source"), spec.get("sourceNamespace") or ns
        try:
            if not names or not source:
                raise StepError("spec.clusterServiceVersionNames and spec.source are needed to plan this InstallPlan")
            catsrc = self.ctx.store.get(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind, str(source), str(source_ns))
            catalog = self.ctx.catalogs.snapshot(catsrc)
            steps = []
            for csv_name in names:
                found = [
                    (pkg, b) for pkg, bundles in catalog.bundles.items() for n, b in bundles.items() if n == csv_name
                ]
                if not found:
                    raise StepError(f"bundle {csv_name} not found in catalogsource {source_ns}/{source}")
                package, bundle = found[0]
                channel = next(
                    (
                        c
                        for c, ch in catalog.channels.get(package, {}).items()
                        if any(e.name == csv_name for e in ch.entries)
                    ),
                    "",
                )
                inline = self.ctx.registry.inline_types
                steps.append(
                    Step(
                        bundle=csv_name,
                        package=package,
                        version=bundle.version,
                        channel=channel,
                        catalog=str(source),
                        catalog_namespace=str(source_ns),
                        subscription=csv_name,
                        image=bundle.image,
                        properties=tuple(p for p in bundle.properties if p.type not in inline),
                        content=bundle,
                    )
                )
            planner = SubscriptionController(self.ctx)
            plan_steps = planner._plan_steps(ns, plan["metadata"]["name"], steps)
        except (NotFound, BundleUnpackError, OlmkitError) as exc:
            message = str(exc) if not isinstance(exc, NotFound) else f"catalogsource {source_ns}/{source} not found"
            self._fail(plan, "InstallCheckFailed", message)
            return DONE
        catalogs = [f"{source_ns}/{source}"]
        self._to_approval_phase(plan, plan=plan_steps, catalogSources=catalogs)
        return DONE

    # -- installing ---------------------------------------------------------------------

    def _install(self, plan: Object) -> Result:
        ns, name = plan["metadata"]["namespace"], plan["metadata"]["name"]
        steps = [dict(s) for s in status_of(plan).get("plan") or ()]
        csvs: dict[str, Object] = {}
        self._all_csvs = None  # listed once per pass, for CRD upgrades
        self._replaces = _replaced_csvs(steps)
        # CRDs go first: a refused CRD upgrade must fail the plan before its CSV replaces anything
        order = sorted(range(len(steps)), key=lambda i: (steps[i].get("resource") or {}).get("kind") != CRD.kind)
        for position, i in enumerate(order):
            step = steps[i]
            resource = step.get("resource") or {}
            if step.get("status") in DONE_STEPS:
                continue
            try:
                obj = orjson.loads(resource.get("manifest") or "null")
                if not isinstance(obj, dict):
                    raise StepError("the step has no manifest")
                step["status"] = self._apply(ns, step, obj, csvs)
            except (OlmkitError, StoreError) as exc:
                message = (
                    f"error creating {resource.get('kind')} {resource.get('name')} for {step.get('resolving')}: {exc}"
                )
                steps[i] = step
                self._fail(plan, "InstallComponentFailed", message, plan=steps)
                self.ctx.pm.hook.olmkit_install_plan_step(plan=plan, step=step, status="Failed")
                return DONE
            steps[i] = step
            last_crd = resource.get("kind") == CRD.kind and (
                position + 1 == len(order) or (steps[order[position + 1]].get("resource") or {}).get("kind") != CRD.kind
            )
            if last_crd and position + 1 < len(order):
                # progress is recorded once the CRDs are in, then with the plan's end, as upstream
                # writes a plan's steps once per pass: a killed process redoes the rest, and
                # redoing a step is harmless (an existing object is updated and reported Present)
                plan = self._set_phase(plan, "Installing", plan=steps)
            self.ctx.pm.hook.olmkit_install_plan_step(plan=plan, step=step, status=step["status"])
        now = self.ctx.now()
        conditions = set_condition(status_of(plan).get("conditions"), "Installed", "True", now=now)
        plan = self._set_phase(plan, "Complete", plan=steps, conditions=conditions)
        csv_names = ", ".join(spec_of(plan).get("clusterServiceVersionNames") or [])
        self.ctx.event(f"installplan {ns}/{name}: Complete ({csv_names})")
        self.ctx.record_event(plan, "Normal", "InstallSucceeded", f"installed {csv_names} ({len(steps)} steps)")
        return DONE

    def _fail(self, ip: Object, reason: str, message: str, **extra: Any) -> None:
        now = self.ctx.now()
        conditions = set_condition(
            status_of(ip).get("conditions"), "Installed", "False", reason=reason, message=message, now=now
        )
        failed = self._set_phase(ip, "Failed", conditions=conditions, **extra)
        self.ctx.record_event(failed, "Warning", reason, message)
        self.ctx.event(f"installplan {ip['metadata']['namespace']}/{ip['metadata']['name']}: Failed: {message}")

    def _apply(self, ns: str, step: Mapping[str, Any], obj: dict[str, Any], csvs: dict[str, Object]) -> str:
        """Create or update one step's object; returns the step status."""
        store = self.ctx.store
        kind = kind_of(obj)
        namespaced = store.is_namespaced(kind.api_version, kind.kind)
        meta = dict(obj.get("metadata") or {})
        if namespaced:
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        obj = {**obj, "metadata": meta}
        if kind.kind == CRD.kind and kind.group == CRD.group:
            return self._apply_crd(ns, step, obj, self._replaces.get(str(step.get("resolving"))))
        if kind.kind == CSV.kind and kind.group == CSV.group:
            # made as the CSV controller's first write would leave it: with its cleanup
            # finalizer and its OperatorGroup's member annotations (one write less per CSV)
            finalizers = [f for f in meta.get("finalizers") or () if f != CLEANUP_FINALIZER]
            meta["finalizers"] = [*finalizers, CLEANUP_FINALIZER]
            groups = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, ns).items
            if len(groups) == 1:
                meta["annotations"] = {**(meta.get("annotations") or {}), **group_annotations(groups[0])}
            status, stored = self._create_or_update(obj)
            csvs[meta["name"]] = stored
            return status
        if kind.kind == SUBSCRIPTION.kind and kind.group == SUBSCRIPTION.group:
            try:
                store.create(obj)
            except AlreadyExists:
                return "Present"
            return "Created"
        owner = self._owner(ns, str(step.get("resolving")), csvs)
        if namespaced:
            refs = [r for r in meta.get("ownerReferences") or () if r.get("uid") != owner["metadata"]["uid"]]
            meta["ownerReferences"] = [*refs, owner_reference(owner, controller=False)]
        else:
            meta["labels"] = {**(meta.get("labels") or {}), **owner_labels(owner)}
        status, _ = self._create_or_update(obj, merge_owners=namespaced)
        return status

    def _owner(self, ns: str, csv_name: str, csvs: dict[str, Object]) -> Object:
        found = csvs.get(csv_name)
        if found is None:
            try:
                found = self.ctx.store.get(CSV.api_version, CSV.kind, csv_name, ns)
            except NotFound:
                raise StepError(f"clusterserviceversion {csv_name} does not exist (its step must come first)") from None
            csvs[csv_name] = found
        return found

    def _create_or_update(self, obj: dict[str, Any], *, merge_owners: bool = False) -> tuple[str, Object]:
        store = self.ctx.store
        try:
            return "Created", store.create(obj)
        except AlreadyExists:
            pass
        kind = kind_of(obj)
        meta = obj["metadata"]
        current = store.get(kind.api_version, kind.kind, meta["name"], meta.get("namespace"))
        cur_meta = dict(current["metadata"])
        cur_meta["labels"] = {**(cur_meta.get("labels") or {}), **(meta.get("labels") or {})}
        cur_meta["annotations"] = {**(cur_meta.get("annotations") or {}), **(meta.get("annotations") or {})}
        if merge_owners:
            refs = list(cur_meta.get("ownerReferences") or ())
            uids = {r.get("uid") for r in refs}
            refs += [r for r in meta.get("ownerReferences") or () if r.get("uid") not in uids]
            cur_meta["ownerReferences"] = refs
        elif "ownerReferences" in meta:
            cur_meta["ownerReferences"] = meta["ownerReferences"]
        body = {k: v for k, v in obj.items() if k not in ("metadata", "status")}
        updated = {**{k: v for k, v in current.items() if k == "status"}, **body, "metadata": cur_meta}
        try:
            stored = store.update(updated)
        except Invalid as exc:
            raise StepError(str(exc)) from None
        return "Present", stored

    def _apply_crd(self, ns: str, step: Mapping[str, Any], crd: dict[str, Any], replacing: str | None) -> str:
        from olmkit.lifecycle.crd_apply import apply_crd

        def all_csvs() -> list[Object]:
            if self._all_csvs is None:
                self._all_csvs = list(self.ctx.store.list(CSV.api_version, CSV.kind))
            return self._all_csvs

        return apply_crd(self.ctx, ns, str(step.get("resolving")), replacing, crd, all_csvs)
