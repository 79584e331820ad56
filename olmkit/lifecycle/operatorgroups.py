"""OperatorGroups: target namespaces, membership, install modes and provided APIs.

An OperatorGroup selects the namespaces its member operators watch:
``spec.targetNamespaces`` when set, else the Namespaces ``spec.selector`` matches, else all
namespaces (``status.namespaces: [""]``). The ``operatorgroup`` controller keeps
``status.namespaces`` and ``status.lastUpdated`` current (and ``status.serviceAccountRef`` once
the service account ``spec.serviceAccountName`` names exists), creates the group's three
aggregated ClusterRoles (``<group>-admin|edit|view``), annotates the CSVs of its namespace
(``olm.operatorGroup``, ``olm.operatorNamespace``, ``olm.targetNamespaces``) and prunes
its ``olm.providedAPIs`` annotation to what the member CSVs still provide.

:class:`Membership` is the check the CSV phase machine runs before anything else, as
upstream's ``transitionCSVState`` does: the CSV carries its group's annotations,
the plugins accept the group's targets (the built-in one checks
``installModes``: ``UnsupportedOperatorGroup``), and its provided APIs do not collide with an intersecting group's
(``InterOperatorGroupOwnerConflict``, ``CannotModifyStaticOperatorGroupProvidedAPIs``).
These failures are not terminal: the CSV returns to ``Pending`` once the cause is gone.

.. versionadded:: 0.2
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from olmkit.lifecycle.context import LifecycleContext
from olmkit.lifecycle.kinds import CLUSTER_ROLE, CSV, DEPLOYMENT, NAMESPACE, OPERATOR_GROUP, SERVICE_ACCOUNT, Kind
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec
from olmkit.lifecycle.status import spec_of, status_of
from olmkit.lifecycle.strategy import OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL
from olmkit.store import AlreadyExists, NotFound, Object, Store, WatchEvent

__all__ = [
    "CLEANUP_FINALIZER",
    "COPIED_FROM_LABEL",
    "GROUP_FAILURE_REASONS",
    "OPERATOR_GROUP_ANNOTATION",
    "OPERATOR_NAMESPACE_ANNOTATION",
    "PROVIDED_APIS_ANNOTATION",
    "TARGET_NAMESPACES_ANNOTATION",
    "Membership",
    "OperatorGroupController",
    "Verdict",
    "aggregated_cluster_roles",
    "api_intersection",
    "descriptions",
    "format_apis",
    "group_annotations",
    "install_plan_problem",
    "is_copied",
    "operator_csvs",
    "owned_by",
    "parse_apis",
    "provided_apis",
    "providers_of",
    "target_namespaces",
]

#: the finalizer the CSV controller puts on every CSV (with its first write) to clean up after it
CLEANUP_FINALIZER: Final = "operators.coreos.com/csv-cleanup"
OPERATOR_GROUP_ANNOTATION: Final = "olm.operatorGroup"
OPERATOR_NAMESPACE_ANNOTATION: Final = "olm.operatorNamespace"
TARGET_NAMESPACES_ANNOTATION: Final = "olm.targetNamespaces"
PROVIDED_APIS_ANNOTATION: Final = "olm.providedAPIs"
#: marks a copied CSV (and copied RBAC) with the namespace of the operator it comes from
COPIED_FROM_LABEL: Final = "olm.copiedFrom"
COPIED_REASON: Final = "Copied"

GROUP_AGGREGATION_PREFIX: Final = "olm.opgroup.permissions/aggregate-to-"
KUBE_AGGREGATION_PREFIX: Final = "rbac.authorization.k8s.io/aggregate-to-"
SUFFIXES: Final = ("admin", "edit", "view")

OWNER_CONFLICT: Final = "InterOperatorGroupOwnerConflict"
STATIC_CONFLICT: Final = "CannotModifyStaticOperatorGroupProvidedAPIs"
INVALID_MODES: Final = "InvalidInstallModes"
NO_TARGETS: Final = "NoTargetNamespaces"

#: reasons of failures an OperatorGroup causes; a CSV leaves them for Pending once the cause is gone
GROUP_FAILURE_REASONS: Final = frozenset(
    {
        "NoOperatorGroup",
        "TooManyOperatorGroups",
        "UnsupportedOperatorGroup",
        OWNER_CONFLICT,
        STATIC_CONFLICT,
        INVALID_MODES,
        NO_TARGETS,
    }
)

_ALL: Final = ""


# --------------------------------------------------------------------------- pure helpers


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _annotate(store: Store, obj: Object, annotations: Mapping[str, str]) -> bool:
    """Write ``annotations`` over the object's own unless it carries them already; whether it wrote."""
    current = _annotations(obj)
    if all(current.get(k) == v for k, v in annotations.items()):
        return False
    store.update({**obj, "metadata": {**obj["metadata"], "annotations": {**current, **annotations}}})
    return True


def is_copied(csv: Mapping[str, Any]) -> bool:
    """Whether a CSV is a copy OLM made in a target namespace (not an operator of its own)."""
    if status_of(csv).get("reason") == COPIED_REASON or COPIED_FROM_LABEL in _labels(csv):
        return True
    operator_ns = _annotations(csv).get(OPERATOR_NAMESPACE_ANNOTATION)
    return operator_ns is not None and operator_ns != (csv.get("metadata") or {}).get("namespace")


def _selector(group: Mapping[str, Any]) -> Mapping[str, Any] | None:
    selector = spec_of(group).get("selector")
    if not isinstance(selector, Mapping):
        return None
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return None
    return selector


def target_namespaces(store: Store, group: Mapping[str, Any]) -> list[str]:
    """The namespaces a group selects, sorted; ``[""]`` for all namespaces.

    ``spec.targetNamespaces`` wins over ``spec.selector``; with neither, the group is global.
    """
    names = [str(n) for n in spec_of(group).get("targetNamespaces") or () if n]
    if names:
        return sorted(set(names))
    selector = _selector(group)
    if selector is None:
        return [_ALL]
    return sorted(ns["metadata"]["name"] for ns in store.list(NAMESPACE.api_version, NAMESPACE.kind, None, selector))


def group_annotations(group: Mapping[str, Any]) -> dict[str, str]:
    """The annotations a member CSV of ``group`` carries (targets only once the status says them)."""
    meta = group["metadata"]
    out = {OPERATOR_GROUP_ANNOTATION: str(meta["name"]), OPERATOR_NAMESPACE_ANNOTATION: str(meta["namespace"])}
    namespaces = status_of(group).get("namespaces")
    if isinstance(namespaces, list):
        out[TARGET_NAMESPACES_ANNOTATION] = ",".join(sorted(str(n) for n in namespaces))
    return out


def descriptions(csv: Mapping[str, Any], section: str, which: str = "owned") -> list[Mapping[str, Any]]:
    """A CSV's ``owned`` (or ``required``) CRD or APIService descriptions (``section``)."""
    defs = spec_of(csv).get(section) or {}
    items = defs.get(which) if isinstance(defs, Mapping) else None
    return [d for d in items or () if isinstance(d, Mapping)]


def provided_apis(csv: Mapping[str, Any]) -> frozenset[str]:
    """``Kind.version.group`` of every CRD and APIService the CSV owns."""
    out = set()
    for desc in descriptions(csv, "customresourcedefinitions"):
        group = str(desc.get("name") or "").partition(".")[2]
        out.add(f"{desc.get('kind')}.{desc.get('version')}.{group}")
    for desc in descriptions(csv, "apiservicedefinitions"):
        out.add(f"{desc.get('kind')}.{desc.get('version')}.{desc.get('group')}")
    return frozenset(out)


def parse_apis(text: str | None) -> frozenset[str]:
    """The APIs of an ``olm.providedAPIs`` annotation."""
    return frozenset(a.strip() for a in (text or "").split(",") if a.strip())


def format_apis(apis: Iterable[str]) -> str:
    """An ``olm.providedAPIs`` annotation: sorted, comma-separated."""
    return ",".join(sorted(apis))


def _reach(group: Mapping[str, Any]) -> frozenset[str]:
    """The namespaces a group covers for intersection: its targets plus its own namespace."""
    namespaces = status_of(group).get("namespaces")
    targets = [str(n) for n in namespaces] if isinstance(namespaces, list) else []
    return frozenset([*targets, str(group["metadata"]["namespace"])])


def _meets(a: frozenset[str], b: frozenset[str]) -> bool:
    return _ALL in a or _ALL in b or bool(a & b)


def api_intersection(apis: frozenset[str], group: Mapping[str, Any], others: Iterable[Mapping[str, Any]]) -> str:
    """How a CSV's provided APIs sit with its group and the others (upstream's four outcomes).

    Returns ``"none"`` (nothing to do), ``"add"`` (union them into the group's annotation),
    ``"remove"`` (take them out of it) or ``"conflict"`` (an intersecting group provides one).
    """
    reach = _reach(group)
    me = (group["metadata"]["namespace"], group["metadata"]["name"])
    claimed: set[str] = set()
    for other in others:
        if (other["metadata"]["namespace"], other["metadata"]["name"]) == me:
            continue
        if _meets(reach, _reach(other)):
            claimed |= parse_apis(_annotations(other).get(PROVIDED_APIS_ANNOTATION))
    intersecting = bool(apis & claimed)
    subset = apis <= parse_apis(_annotations(group).get(PROVIDED_APIS_ANNOTATION))
    if subset and intersecting:
        return "remove"
    if intersecting:
        return "conflict"
    if not subset:
        return "add"
    return "none"


def providers_of(store: Store, apis: frozenset[str]) -> list[tuple[str, str]]:
    """``(namespace, name)`` of every CSV (not a copy) that provides one of ``apis``."""
    if not apis:
        return []
    return [
        (c["metadata"]["namespace"], c["metadata"]["name"]) for c in operator_csvs(store) if provided_apis(c) & apis
    ]


def operator_csvs(store: Store) -> list[Object]:
    """The CSVs of the namespaces that have an OperatorGroup, copies left out.

    Operators live next to their groups (a CSV elsewhere fails with ``NoOperatorGroup`` until
    one comes): reading only those namespaces skips the copies in every other namespace.
    """
    groups = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind)
    namespaces = sorted({g["metadata"]["namespace"] for g in groups})
    return [c for ns in namespaces for c in store.list(CSV.api_version, CSV.kind, ns) if not is_copied(c)]


def install_plan_problem(store: Store, namespace: str) -> str | None:
    """Why an InstallPlan in ``namespace`` cannot install yet, as upstream says it (``None``: it can).

    Exactly one OperatorGroup must manage the namespace (one whose status names its targets),
    and the service account it names in ``spec.serviceAccountName``, if any, must exist.
    """
    groups = [
        g
        for g in store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace)
        if status_of(g).get("namespaces")
    ]
    if not groups:
        return "no operator group found that is managing this namespace"
    if len(groups) > 1:
        return f"more than one operator group(s) are managing this namespace count={len(groups)}"
    account = spec_of(groups[0]).get("serviceAccountName")
    if account:
        try:
            store.get(SERVICE_ACCOUNT.api_version, SERVICE_ACCOUNT.kind, str(account), namespace)
        except NotFound:
            name = groups[0]["metadata"]["name"]
            return f"please make sure the service account exists. sa={account} operatorgroup={namespace}/{name}"
    return None


def aggregated_cluster_roles(group: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The group's three ClusterRoles, each aggregating the per-API roles labelled for it."""
    name = str(group["metadata"]["name"])
    labels = {
        OWNER_LABEL: name,
        OWNER_NAMESPACE_LABEL: str(group["metadata"]["namespace"]),
        OWNER_KIND_LABEL: OPERATOR_GROUP.kind,
    }
    return [
        {
            "apiVersion": CLUSTER_ROLE.api_version,
            "kind": CLUSTER_ROLE.kind,
            "metadata": {"name": f"{name}-{suffix}", "labels": labels},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {GROUP_AGGREGATION_PREFIX + suffix: name}}]},
            "rules": [],
        }
        for suffix in SUFFIXES
    ]


def owned_by(store: Store, owner: Mapping[str, Any], kind: Kind) -> list[Object]:
    """Objects of ``kind`` in the owner's namespace whose ownerReferences name it (by uid)."""
    uid = owner["metadata"].get("uid")
    return [
        o
        for o in store.list(kind.api_version, kind.kind, owner["metadata"]["namespace"])
        if any(ref.get("uid") == uid for ref in o["metadata"].get("ownerReferences") or ())
    ]


def ensure_object(store: Store, desired: Mapping[str, Any], fields: Sequence[str]) -> Object:
    """Create ``desired``, or update the stored one when its labels or ``fields`` differ."""
    meta = desired["metadata"]
    try:
        current = store.get(desired["apiVersion"], desired["kind"], meta["name"], meta.get("namespace"))
    except NotFound:
        try:
            return store.create(dict(desired))
        except AlreadyExists:
            current = store.get(desired["apiVersion"], desired["kind"], meta["name"], meta.get("namespace"))
    labels = {**_labels(current), **(meta.get("labels") or {})}
    if labels == _labels(current) and all(current.get(f) == desired.get(f) for f in fields):
        return current
    body = {**current, "metadata": {**current["metadata"], "labels": labels}}
    body.update({f: desired.get(f) for f in fields})
    return store.update(body)


# --------------------------------------------------------------------------- the CSV gate


@attrs.frozen
class Verdict:
    """What the membership check decided for a CSV.

    ``phase``/``reason``/``message`` set: record that phase. ``phase`` empty: the check
    wrote something (annotations, the group's provided APIs) or waits for the group's status;
    the change wakes the CSV again.
    """

    phase: str = ""
    reason: str = ""
    message: str = ""


WROTE: Final = Verdict()


class Membership:
    """The OperatorGroup checks of the CSV phase machine."""

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx

    def check(self, csv: Object, group: Object) -> Verdict | None:
        """``None`` when the CSV is an active member and may go on; else what to do."""
        store = self.ctx.store
        if _annotate(store, csv, group_annotations(group)):
            return WROTE
        targets_text = _annotations(csv).get(TARGET_NAMESPACES_ANNOTATION)
        if targets_text is None:
            return WROTE  # the group has no status yet: its controller sets it, which wakes this CSV
        if status_of(group).get("namespaces") == []:  # a selector that matches no namespace (not "": all)
            return Verdict("Failed", NO_TARGETS, "no targetNamespaces are matched operatorgroups namespace selection")
        status = status_of(csv)
        problem = self.ctx.pm.hook.olmkit_csv_targets_problem(csv=csv, targets=targets_text.split(","))
        if problem is not None:
            return Verdict("Failed", *problem)

        apis = provided_apis(csv)
        others: Iterable[Object] = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind) if apis else []
        outcome = api_intersection(apis, group, others)
        static = spec_of(group).get("staticProvidedAPIs") is True
        failed_for = status.get("reason") if status.get("phase") == "Failed" else None
        if static and outcome in ("add", "remove"):
            if failed_for != STATIC_CONFLICT:
                self._remove_deployments(csv)
            return Verdict(
                "Failed", STATIC_CONFLICT, "static provided api operatorgroup cannot be modified by these apis"
            )
        if outcome == "conflict":
            if failed_for != OWNER_CONFLICT:
                self._remove_deployments(csv)
            return Verdict("Failed", OWNER_CONFLICT, "intersecting operatorgroups provide the same apis")
        if outcome in ("add", "remove"):
            have = parse_apis(_annotations(group).get(PROVIDED_APIS_ANNOTATION))
            new = have | apis if outcome == "add" else have - apis
            _annotate(store, group, {PROVIDED_APIS_ANNOTATION: format_apis(new)})
            return WROTE

        if status.get("phase") == "Failed" and status.get("reason") in GROUP_FAILURE_REASONS:
            return Verdict("Pending", "RequirementsUnknown", "requirements not yet checked")
        if status.get("phase") in ("Succeeded", "Installing") and self._stale_deployments(csv, targets_text):
            return Verdict("Pending", "NeedsReinstall", "calculated deployment install is bad")
        return None

    def _stale_deployments(self, csv: Object, targets: str) -> bool:
        """Whether an operator Deployment still watches other namespaces than the group says."""
        for dep in owned_by(self.ctx.store, csv, DEPLOYMENT):
            template = ((dep.get("spec") or {}).get("template") or {}).get("metadata") or {}
            if (template.get("annotations") or {}).get(TARGET_NAMESPACES_ANNOTATION, targets) != targets:
                return True
        return False

    def _remove_deployments(self, csv: Object) -> None:
        ns, name = csv["metadata"]["namespace"], csv["metadata"]["name"]
        for dep in owned_by(self.ctx.store, csv, DEPLOYMENT):
            with contextlib.suppress(NotFound):
                self.ctx.store.delete(DEPLOYMENT.api_version, DEPLOYMENT.kind, dep["metadata"]["name"], ns)
            self.ctx.event(f"csv {ns}/{name}: deployment {dep['metadata']['name']} removed")


# --------------------------------------------------------------------------- the group controller


class OperatorGroupController(Controller):
    """Keeps each OperatorGroup's status, ClusterRoles, member annotations and provided APIs."""

    name = "operatorgroup"

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx
        store = ctx.store

        def every_group(event: WatchEvent) -> list[tuple[str, str]]:
            return [
                (g["metadata"]["namespace"], g["metadata"]["name"])
                for g in store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind)
            ]

        def groups_in(event: WatchEvent) -> list[tuple[str, str]]:
            ns = event.object["metadata"].get("namespace")
            return [
                (ns, g["metadata"]["name"]) for g in store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, ns)
            ]

        def group_of_csv(event: WatchEvent) -> list[tuple[str, str]]:
            return [] if is_copied(event.object) else groups_in(event)

        self.watches = (
            WatchSpec(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind),
            WatchSpec(NAMESPACE.api_version, NAMESPACE.kind, every_group),
            WatchSpec(CSV.api_version, CSV.kind, group_of_csv),
            WatchSpec(SERVICE_ACCOUNT.api_version, SERVICE_ACCOUNT.kind, groups_in),
        )

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        try:
            group = store.get(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, name, namespace)
        except NotFound:
            self._forget(namespace, name)
            return DONE
        if group["metadata"].get("deletionTimestamp"):
            return DONE
        targets = target_namespaces(store, group)
        status = status_of(group)
        account = self._account_ref(group)
        moved = sorted(status.get("namespaces") or ()) != targets or "namespaces" not in status
        if moved or status.get("serviceAccountRef") != account:
            if moved:
                status.update(namespaces=targets, lastUpdated=self.ctx.now())
            if account is None:
                status.pop("serviceAccountRef", None)
            else:
                status["serviceAccountRef"] = account
            group = store.update_status({**group, "status": status})
            if moved:
                where = "all namespaces" if targets == [_ALL] else ", ".join(targets) or "no namespace"
                self.ctx.event(f"operatorgroup {namespace}/{name}: targets {where}")
        for role in aggregated_cluster_roles(group):
            ensure_object(store, role, ("aggregationRule",))
        if len(store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace)) != 1:
            return DONE  # no group owns the CSVs of a namespace with two (TooManyOperatorGroups)
        members = [c for c in store.list(CSV.api_version, CSV.kind, namespace) if not is_copied(c)]
        wanted = group_annotations(group)
        for csv in members:
            if CLEANUP_FINALIZER not in (csv["metadata"].get("finalizers") or ()):
                continue  # a new CSV: the CSV controller writes these annotations with its finalizer
            with contextlib.suppress(NotFound):
                _annotate(store, csv, wanted)
        self._prune(group, members)
        return DONE

    def _account_ref(self, group: Object) -> dict[str, str] | None:
        """``status.serviceAccountRef``: the service account ``spec.serviceAccountName`` names, once it exists."""
        account = spec_of(group).get("serviceAccountName")
        if not account:
            return None
        ns = group["metadata"]["namespace"]
        try:
            found = self.ctx.store.get(SERVICE_ACCOUNT.api_version, SERVICE_ACCOUNT.kind, str(account), ns)
        except NotFound:
            return None
        return {
            "apiVersion": SERVICE_ACCOUNT.api_version,
            "kind": SERVICE_ACCOUNT.kind,
            "namespace": ns,
            "name": str(account),
            "uid": str(found["metadata"].get("uid", "")),
        }

    def _prune(self, group: Object, members: list[Object]) -> None:
        """Drop APIs from ``olm.providedAPIs`` that no member CSV provides any more (not for static groups)."""
        if spec_of(group).get("staticProvidedAPIs") is True:
            return
        have = parse_apis(_annotations(group).get(PROVIDED_APIS_ANNOTATION))
        if not have:
            return
        provided: set[str] = set()
        for csv in members:
            apis = provided_apis(csv)
            status = status_of(csv)
            if (
                apis - have
                and not csv["metadata"].get("deletionTimestamp")
                and status.get("phase") in (None, "", "Pending")
            ):
                return  # a new member is about to add its APIs: leave the annotation to it
            provided |= apis
        keep = have & provided
        if keep != have:
            _annotate(self.ctx.store, group, {PROVIDED_APIS_ANNOTATION: format_apis(keep)})

    def _forget(self, namespace: str, name: str) -> None:
        """A deleted group: remove its ClusterRoles."""
        store = self.ctx.store
        selector = {OWNER_LABEL: name, OWNER_NAMESPACE_LABEL: namespace, OWNER_KIND_LABEL: OPERATOR_GROUP.kind}
        for role in store.list(CLUSTER_ROLE.api_version, CLUSTER_ROLE.kind, None, {"matchLabels": selector}):
            with contextlib.suppress(NotFound):
                store.delete(CLUSTER_ROLE.api_version, CLUSTER_ROLE.kind, role["metadata"]["name"])
