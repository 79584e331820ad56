"""The members of OperatorGroups: their generated RBAC and their copied CSVs.

For every CSV that is an active member of its namespace's OperatorGroup (past the group
checks of the phase machine, not failed for a group reason), the ``operatorgroup-members``
controller keeps:

* the per-API ClusterRoles and the RBAC of the CSV's ``permissions`` in the target
  namespaces (:mod:`olmkit.lifecycle.rbac`), except while the CSV is failed with
  ``InterOperatorGroupOwnerConflict``;
* a copy of the CSV in every target namespace other than its own (every Namespace for a
  global group): the source's spec, labels and annotations without ``olm.targetNamespaces``,
  the label ``olm.copiedFrom: <operator namespace>``, and the source's status with reason
  ``Copied``. Copies go when the source goes, stops being an active member, or its group stops
  targeting their namespace; an ``OLMConfig`` named ``cluster`` with
  ``spec.features.disableCopiedCSVs: true`` removes the copies of operators that watch all
  namespaces, except in the protected namespaces of the run's options (those of groups with
  named targets stay, as upstream keeps them).

The ``olmconfig`` controller reports on that OLMConfig's ``DisabledCopiedCSVs`` condition
whether the copies of the operators watching all namespaces are where they should be.

.. versionadded:: 0.2
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, Final

from olmkit.lifecycle.context import LifecycleContext
from olmkit.lifecycle.kinds import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    CSV,
    NAMESPACE,
    OLM_CONFIG,
    OPERATOR_GROUP,
    ROLE,
    ROLE_BINDING,
)
from olmkit.lifecycle.operatorgroups import (
    COPIED_FROM_LABEL,
    COPIED_REASON,
    GROUP_FAILURE_REASONS,
    KUBE_AGGREGATION_PREFIX,
    OPERATOR_GROUP_ANNOTATION,
    OPERATOR_NAMESPACE_ANNOTATION,
    OWNER_CONFLICT,
    TARGET_NAMESPACES_ANNOTATION,
    ensure_object,
    is_copied,
    owned_by,
)
from olmkit.lifecycle.rbac import api_cluster_roles, copied_role, lifted_role
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec, owners_of, parse_rfc3339
from olmkit.lifecycle.status import set_condition, spec_of, status_of
from olmkit.lifecycle.strategy import OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL
from olmkit.store import AlreadyExists, NotFound, Object, Store, WatchEvent

__all__ = ["MemberController", "OLMConfigController", "copied_csvs_disabled"]

OLM_CONFIG_NAME: Final = "cluster"
_ALL: Final = ""
#: the key name that stands for every member CSV of the key's namespace
EVERY_MEMBER: Final = ""
#: phases a CSV passes through on its way to Succeeded; its copies wait until it rests in one
PASSING_PHASES: Final = frozenset({"Pending", "InstallReady", "Installing"})
#: seconds a CSV rests in a passing phase before it is copied
SETTLE: Final = 2.0


def copied_csvs_disabled(store: Any) -> bool:
    """Whether the ``cluster`` OLMConfig turns copied CSVs off (for operators watching all namespaces)."""
    try:
        config = store.get(OLM_CONFIG.api_version, OLM_CONFIG.kind, OLM_CONFIG_NAME)
    except NotFound:
        return False
    features = spec_of(config).get("features") or {}
    return isinstance(features, dict) and features.get("disableCopiedCSVs") is True


def _namespace_names(store: Store) -> set[str]:
    return {ns["metadata"]["name"] for ns in store.list(NAMESPACE.api_version, NAMESPACE.kind)}


def _every_group_namespace(store: Store) -> list[tuple[str, str]]:
    """A key for every member of every namespace that has an OperatorGroup."""
    groups = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind)
    return [(ns, EVERY_MEMBER) for ns in sorted({g["metadata"]["namespace"] for g in groups})]


def _fields(rbac: Object) -> tuple[str, ...]:
    """The fields that make a Role (its rules) or a RoleBinding (its roleRef and subjects)."""
    return ("rules",) if rbac["kind"] == ROLE.kind else ("roleRef", "subjects")


def _source_key(csv: Object) -> tuple[str, str]:
    meta = csv["metadata"]
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    source_ns = labels.get(COPIED_FROM_LABEL) or annotations.get(OPERATOR_NAMESPACE_ANNOTATION) or ""
    return str(source_ns), str(meta["name"])


def _active(csv: Object, group: Object) -> bool:
    status = status_of(csv)
    if not status.get("phase"):
        return False
    if status.get("phase") == "Failed" and status.get("reason") in GROUP_FAILURE_REASONS:
        return False
    annotations = csv["metadata"].get("annotations") or {}
    return bool(annotations.get(OPERATOR_GROUP_ANNOTATION) == group["metadata"]["name"])


class MemberController(Controller):
    """Keeps the RBAC and the copies of every member CSV."""

    name = "operatorgroup-members"

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx
        store = ctx.store
        #: per source CSV, the namespaces holding its copies: read from the store once, then kept
        #: as this controller writes them (and as the watch sees copies deleted by others)
        self._index: dict[tuple[str, str], set[str]] | None = None
        #: per source CSV, its resourceVersion when its copies were last brought in line with it
        self._synced: dict[tuple[str, str], str] = {}
        #: per member CSV, what its RBAC was last generated from
        self._rbac_for: dict[tuple[str, str], tuple[str, ...]] = {}

        def by_csv(event: WatchEvent) -> list[tuple[str, str]]:
            if is_copied(event.object):
                # this controller's own writes to copies need no pass; a copy deleted, or made, by
                # someone else does (the index learns of it, and the pass removes or remakes it)
                source, where = _source_key(event.object), event.object["metadata"]["namespace"]
                if self._index is None:
                    return [source] if event.type == "DELETED" else []
                known = self._index.setdefault(source, set())
                if event.type == "DELETED":
                    known.discard(where)
                    return [source]
                if where not in known:
                    known.add(where)
                    return [source]
                return []
            return [(event.object["metadata"]["namespace"], event.object["metadata"]["name"])]

        def by_group(event: WatchEvent) -> list[tuple[str, str]]:
            return [(event.object["metadata"]["namespace"], EVERY_MEMBER)]

        def by_namespace(event: WatchEvent) -> list[tuple[str, str]]:
            name = event.object["metadata"]["name"]
            groups = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind)
            hit = {
                g["metadata"]["namespace"]
                for g in groups
                if {_ALL, name} & set(status_of(g).get("namespaces") or ()) or g["metadata"]["namespace"] == name
            }
            return [(ns, EVERY_MEMBER) for ns in sorted(hit)]

        def by_config(event: WatchEvent) -> list[tuple[str, str]]:
            return _every_group_namespace(store)

        def by_owner(event: WatchEvent) -> list[tuple[str, str]]:
            owners = owners_of(event.object, CSV.kind)
            for owner in owners:
                self._rbac_for.pop(owner, None)  # its RBAC changed: generate it again
            return owners

        def by_deleted_cluster_rbac(event: WatchEvent) -> list[tuple[str, str]]:
            # generated cluster RBAC deleted (by hand, or with a replaced CSV that last claimed it):
            # every member generates its RBAC again
            labels = event.object["metadata"].get("labels") or {}
            if event.type != "DELETED" or labels.get(OWNER_KIND_LABEL) != CSV.kind:
                return []
            self._rbac_for.clear()
            return _every_group_namespace(store)

        self.watches = (
            WatchSpec(CLUSTER_ROLE.api_version, CLUSTER_ROLE.kind, by_deleted_cluster_rbac),
            WatchSpec(CLUSTER_ROLE_BINDING.api_version, CLUSTER_ROLE_BINDING.kind, by_deleted_cluster_rbac),
            WatchSpec(CSV.api_version, CSV.kind, by_csv),
            WatchSpec(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, by_group),
            WatchSpec(NAMESPACE.api_version, NAMESPACE.kind, by_namespace),
            WatchSpec(OLM_CONFIG.api_version, OLM_CONFIG.kind, by_config),
            WatchSpec(ROLE.api_version, ROLE.kind, by_owner),
            WatchSpec(ROLE_BINDING.api_version, ROLE_BINDING.kind, by_owner),
        )

    # -- reconcile ------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        namespaces = functools.cache(lambda: _namespace_names(store))  # listed once per pass, if needed
        if name == EVERY_MEMBER:
            results = [
                self._member(csv, namespaces)
                for csv in store.list(CSV.api_version, CSV.kind, namespace)
                if not is_copied(csv)
            ]
            delays = [r.requeue_after for r in results if r.requeue_after is not None]
            return Result(requeue_after=min(delays), waiting="copies wait for the CSV to settle") if delays else DONE
        try:
            csv = store.get(CSV.api_version, CSV.kind, name, namespace)
        except NotFound:
            self._rbac_for.pop((namespace, name), None)
            self._sync_copies(namespace, name, None, set())
            self._sync_copied_rbac(namespace, name, [], set())
            return DONE
        if is_copied(csv):
            return DONE
        return self._member(csv, namespaces)

    def _member(self, csv: Object, namespaces: Callable[[], set[str]]) -> Result:
        """Keep one member's RBAC and copies."""
        store = self.ctx.store
        namespace, name = csv["metadata"]["namespace"], csv["metadata"]["name"]
        groups = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace).items
        group = groups[0] if len(groups) == 1 else None
        targets = status_of(group).get("namespaces") if group is not None else None
        if (
            group is None
            or not isinstance(targets, list)
            or csv["metadata"].get("deletionTimestamp")
            or not _active(csv, group)
        ):
            self._sync_copies(namespace, name, csv, set())
            return DONE
        everywhere = targets == [_ALL]
        status = status_of(csv)
        # what the RBAC is made from: the CSV's spec, the group and its targets (owned Roles
        # changing and generated cluster RBAC deleted clear the entry)
        inputs = (
            str(csv["metadata"].get("uid")),
            str(csv["metadata"].get("generation")),
            str(group["metadata"].get("uid")),
            ",".join(str(t) for t in targets),
        )
        conflict = status.get("phase") == "Failed" and status.get("reason") == OWNER_CONFLICT
        if not conflict and self._rbac_for.get((namespace, name)) != inputs:
            self._rbac(csv, group, targets)
            self._rbac_for[(namespace, name)] = inputs
        if everywhere:
            protected = set(self.ctx.options.protected_copied_csv_namespaces)
            wanted = protected if copied_csvs_disabled(store) else set(namespaces())
        else:
            wanted = {str(t) for t in targets}
        wanted.discard(namespace)
        unsettled = self._unsettled(csv)
        if unsettled and wanted - self.copies_of((namespace, name)):
            # a CSV on its way through Pending, InstallReady and Installing changes its status
            # every few moments: copy it once it rests (upstream copies it at every step)
            return Result(requeue_after=unsettled, waiting="copies wait for the CSV to settle")
        self._sync_copies(namespace, name, csv, wanted)
        return DONE

    def _unsettled(self, csv: Object) -> float:
        """Seconds until a CSV in a passing phase has rested long enough to be copied (0: copy now)."""
        status = status_of(csv)
        if status.get("phase") not in PASSING_PHASES or not status.get("lastTransitionTime"):
            return 0.0
        try:
            since = parse_rfc3339(str(status["lastTransitionTime"]))
        except ValueError:
            return 0.0
        return max(0.0, since + SETTLE - self.ctx.clock.now())

    # -- RBAC -----------------------------------------------------------------------------

    def _rbac(self, csv: Object, group: Object, targets: list[str]) -> None:
        store = self.ctx.store
        ns, name = csv["metadata"]["namespace"], csv["metadata"]["name"]
        for role in api_cluster_roles(csv, group["metadata"]["name"]):
            if not self._claimed_elsewhere(role, ns):
                ensure_object(store, role, ("rules",))
        owned = owned_by(store, csv, ROLE) + owned_by(store, csv, ROLE_BINDING)
        if targets == [_ALL]:
            for obj in owned:
                ensure_object(store, lifted_role(obj, csv), _fields(obj))
            self._sync_copied_rbac(ns, name, owned, set())
            return
        # a group that stopped targeting all namespaces: the lifted twins go
        for namespaced, cluster in ((ROLE, CLUSTER_ROLE), (ROLE_BINDING, CLUSTER_ROLE_BINDING)):
            for obj in owned:
                if obj["kind"] != namespaced.kind:
                    continue
                with contextlib.suppress(NotFound):
                    twin = store.get(cluster.api_version, cluster.kind, obj["metadata"]["name"])
                    labels = twin["metadata"].get("labels") or {}
                    if labels.get(OWNER_LABEL) == name and labels.get(OWNER_NAMESPACE_LABEL) == ns:
                        store.delete(cluster.api_version, cluster.kind, obj["metadata"]["name"])
        self._sync_copied_rbac(ns, name, owned, {str(t) for t in targets} - {ns})

    def _claimed_elsewhere(self, role: Object, namespace: str) -> bool:
        """Whether a per-API ClusterRole is as it should be and claimed by a live CSV of another namespace.

        The role is shared by every namespace whose operator provides the API. Upstream writes it
        only when its rules, its aggregation labels or its owner (the API, the same for every
        namespace) differ; here the owner labels name the CSV that made it, so a member in
        another namespace leaves a role alone while that CSV exists (its deletion removes the
        role, and the members generate it again). A CSV replaced in its own namespace takes the
        role over, as before, so that it outlives the CSV it replaces.
        """
        store = self.ctx.store
        meta = role["metadata"]
        try:
            current = store.get(CLUSTER_ROLE.api_version, CLUSTER_ROLE.kind, meta["name"])
        except NotFound:
            return False
        labels = current["metadata"].get("labels") or {}
        owner_ns = str(labels.get(OWNER_NAMESPACE_LABEL) or "")
        if labels.get(OWNER_KIND_LABEL) != CSV.kind or owner_ns in ("", namespace):
            return False
        aggregation = {k: v for k, v in meta["labels"].items() if k.startswith(KUBE_AGGREGATION_PREFIX)}
        if (
            current.get("rules") != role["rules"]
            or not aggregation.items() <= labels.items()
            or not set(meta["labels"]) <= set(labels)
        ):
            return False
        try:
            owner = store.get(CSV.api_version, CSV.kind, str(labels.get(OWNER_LABEL) or ""), owner_ns)
        except NotFound:
            return False
        return not owner["metadata"].get("deletionTimestamp")

    def _sync_copied_rbac(self, ns: str, name: str, owned: list[Object], targets: set[str]) -> None:
        """Copies of the owned Roles and RoleBindings in exactly ``targets``."""
        store = self.ctx.store
        selector = {"matchLabels": {OWNER_LABEL: name, OWNER_NAMESPACE_LABEL: ns, COPIED_FROM_LABEL: ns}}
        wanted = {(o["kind"], t, o["metadata"]["name"]) for o in owned for t in targets}
        for kind in (ROLE, ROLE_BINDING):
            for obj in store.list(kind.api_version, kind.kind, None, selector):
                meta = obj["metadata"]
                if (kind.kind, meta["namespace"], meta["name"]) not in wanted:
                    with contextlib.suppress(NotFound):
                        store.delete(kind.api_version, kind.kind, meta["name"], meta["namespace"])
        if not owned or not targets:
            return
        csv = {"kind": CSV.kind, "metadata": {"name": name, "namespace": ns}}
        for obj in owned:
            for target in sorted(targets):
                ensure_object(store, copied_role(obj, csv, target), _fields(obj))

    # -- copied CSVs ----------------------------------------------------------------------

    def copies_of(self, key: tuple[str, str]) -> set[str]:
        """The namespaces holding copies of the CSV ``(namespace, name)``, as this controller knows them."""
        if self._index is None:
            self._index = {}
            for copy in self.ctx.store.list(CSV.api_version, CSV.kind, None, COPIED_FROM_LABEL):
                source = _source_key(copy)
                self._index.setdefault(source, set()).add(copy["metadata"]["namespace"])
        return self._index.setdefault(key, set())

    def _sync_copies(self, ns: str, name: str, csv: Object | None, wanted: set[str]) -> None:
        """Copies of the CSV in exactly the ``wanted`` namespaces."""
        store = self.ctx.store
        have = self.copies_of((ns, name))
        for target in sorted(have - wanted):
            with contextlib.suppress(NotFound):
                current = store.get(CSV.api_version, CSV.kind, name, target)
                if (current["metadata"].get("labels") or {}).get(COPIED_FROM_LABEL) == ns:
                    store.delete(CSV.api_version, CSV.kind, name, target)
            have.discard(target)
        if csv is None:
            self._synced.pop((ns, name), None)
            return
        # a source unchanged since the last pass only needs its missing copies made
        version = str(csv["metadata"].get("resourceVersion"))
        todo = wanted if self._synced.get((ns, name)) != version else wanted - have
        for target in sorted(todo):
            if self._copy(csv, target, fresh=target not in have):
                have.add(target)
        self._synced[(ns, name)] = version

    def _copy(self, csv: Object, target: str, *, fresh: bool = False) -> bool:
        """Create or update the copy in ``target``; ``False`` when a CSV of its own has the name there.

        ``fresh``: no copy is known there, so creating comes first (no read).
        """
        store = self.ctx.store
        meta = csv["metadata"]
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != TARGET_NAMESPACES_ANNOTATION}
        labels = {**(meta.get("labels") or {}), COPIED_FROM_LABEL: meta["namespace"]}
        status = {
            **status_of(csv),
            "reason": COPIED_REASON,
            "message": f"The operator is running in {meta['namespace']} but is managing this namespace",
        }
        status.pop("lastUpdateTime", None)
        current: Object | None = None
        if not fresh:
            with contextlib.suppress(NotFound):
                current = store.get(CSV.api_version, CSV.kind, meta["name"], target)
        if current is None:
            body = {
                "apiVersion": csv["apiVersion"],
                "kind": csv["kind"],
                "metadata": {"name": meta["name"], "namespace": target, "labels": labels, "annotations": annotations},
                "spec": csv.get("spec") or {},
            }
            try:
                current = store.create(body)
            except AlreadyExists:
                current = store.get(CSV.api_version, CSV.kind, meta["name"], target)
        cmeta = current["metadata"]
        if (cmeta.get("labels") or {}).get(COPIED_FROM_LABEL) != meta["namespace"]:
            return False  # an operator of its own with the same name lives there: leave it alone
        if (
            cmeta.get("annotations") != annotations
            or cmeta.get("labels") != labels
            or current.get("spec") != csv.get("spec")
        ):
            current = store.update(
                {
                    **current,
                    "metadata": {**cmeta, "annotations": annotations, "labels": labels},
                    "spec": csv.get("spec"),
                }
            )
        have = status_of(current)
        have.pop("lastUpdateTime", None)
        if have != status:
            store.update_status({**current, "status": {**status, "lastUpdateTime": self.ctx.now()}})
        return True


#: the OLMConfig condition saying how copied CSVs stand
CONDITION: Final = "DisabledCopiedCSVs"
#: seconds between two evaluations of the condition
EVALUATE_EVERY: Final = 1.0


class OLMConfigController(Controller):
    """Keeps the ``DisabledCopiedCSVs`` condition of the ``cluster`` OLMConfig (upstream's reasons and messages)."""

    name = "olmconfig"

    def __init__(self, ctx: LifecycleContext, members: MemberController) -> None:
        self.ctx = ctx
        self.members = members
        self._present = False
        self._last: float | None = None
        key = [("", OLM_CONFIG_NAME)]

        def by_config(event: WatchEvent) -> list[tuple[str, str]]:
            if event.object["metadata"]["name"] == OLM_CONFIG_NAME:
                self._present = event.type != "DELETED"
            return [("", str(event.object["metadata"]["name"]))]

        def when_present(event: WatchEvent) -> list[tuple[str, str]]:
            return key if self._present else []

        self.watches = (
            WatchSpec(OLM_CONFIG.api_version, OLM_CONFIG.kind, by_config),
            WatchSpec(CSV.api_version, CSV.kind, when_present),
            WatchSpec(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, when_present),
            WatchSpec(NAMESPACE.api_version, NAMESPACE.kind, when_present),
        )

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        if name != OLM_CONFIG_NAME:
            return DONE
        try:
            config = store.get(OLM_CONFIG.api_version, OLM_CONFIG.kind, name)
        except NotFound:
            return DONE
        now = self.ctx.clock.now()
        if self._last is not None and now - self._last < EVALUATE_EVERY:
            # copies come by the thousand: look at most once a second
            return Result(requeue_after=self._last + EVALUATE_EVERY - now, waiting="the copied CSVs are counted")
        self._last = now
        enabled = not copied_csvs_disabled(store)
        off = self._off_target(enabled)
        if enabled:
            state = (
                "False",
                "CopiedCSVsEnabled",
                "Copied CSVs are enabled and at least one copied CSVs is missing"
                if off
                else "Copied CSVs are enabled and present across the cluster",
            )
        elif off:
            state = (
                "False",
                "CopiedCSVsDisabled",
                "Copied CSVs are disabled and at least one unexpected copied CSV was found for an operator "
                "installed in AllNamespace mode",
            )
        else:
            state = (
                "True",
                "CopiedCSVsDisabled",
                "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in "
                "AllNamespace mode",
            )
        status = status_of(config)
        conditions = set_condition(
            status.get("conditions"), CONDITION, state[0], reason=state[1], message=state[2], now=self.ctx.now()
        )
        if conditions != status.get("conditions"):
            store.update_status({**config, "status": {**status, "conditions": conditions}})
        return DONE

    def _off_target(self, enabled: bool) -> bool:
        """Whether an active member of a global group has its copies anywhere but where they belong."""
        store = self.ctx.store
        namespaces = _namespace_names(store)
        protected = set(self.ctx.options.protected_copied_csv_namespaces)
        for group in store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind):
            if status_of(group).get("namespaces") != [_ALL]:
                continue
            ns = group["metadata"]["namespace"]
            for csv in store.list(CSV.api_version, CSV.kind, ns):
                if is_copied(csv) or not _active(csv, group):
                    continue
                expected = (namespaces if enabled else protected) - {ns}
                if self.members.copies_of((ns, csv["metadata"]["name"])) != expected:
                    return True
        return False
