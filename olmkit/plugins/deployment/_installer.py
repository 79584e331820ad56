"""The ``deployment`` install strategy's work (see :mod:`olmkit.plugins.deployment`).

Imported when an install needs it: registering the strategy imports neither this nor the
lifecycle and store modules it uses.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import orjson

from olmkit.lifecycle.kinds import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    DEPLOYMENT,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
)
from olmkit.lifecycle.status import find_condition, owner_reference
from olmkit.lifecycle.strategy import InstallContext, StrategyError, StrategyStatus, owner_labels
from olmkit.store import AlreadyExists, NotFound

__all__ = ["DEFAULT_ACCOUNT", "PROJECTED_ANNOTATIONS", "RBAC_GROUP", "DeploymentInstaller", "rule_granted"]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
#: Kubernetes creates this account in every namespace; nothing needs to create it.
DEFAULT_ACCOUNT: Final = "default"
#: the OperatorGroup annotations of a member CSV, projected into its pod templates (the
#: operator reads the namespaces to watch from there, through the downward API)
PROJECTED_ANNOTATIONS: Final = ("olm.operatorGroup", "olm.operatorNamespace", "olm.targetNamespaces")


def _project(csv: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The Deployment spec with the CSV's OperatorGroup annotations on its pod template (OLM's keys win)."""
    csv_annotations = (csv.get("metadata") or {}).get("annotations") or {}
    projected = {k: str(csv_annotations[k]) for k in PROJECTED_ANNOTATIONS if k in csv_annotations}
    if not projected:
        return spec
    template = dict(spec.get("template") or {})
    meta = dict(template.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), **projected}
    return {**spec, "template": {**template, "metadata": meta}}


def _spec(csv: Mapping[str, Any]) -> Mapping[str, Any]:
    install = (csv.get("spec") or {}).get("install") or {}
    spec = install.get("spec") if isinstance(install, Mapping) else None
    if spec is None:
        return {}
    if not isinstance(spec, Mapping):
        raise StrategyError("spec.install.spec must be an object")
    return spec


def _entries(spec: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = spec.get(key) or []
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise StrategyError(f"spec.install.spec.{key} must be a list of objects")
    return items


def _covers(granted: Iterable[str] | None, wanted: str) -> bool:
    values = list(granted or ())
    return "*" in values or wanted in values


def rule_granted(rule: Mapping[str, Any], granted: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the rules ``granted`` allow everything ``rule`` asks for (``*`` wildcards honoured)."""
    granted = list(granted)
    verbs = rule.get("verbs") or []
    urls = rule.get("nonResourceURLs") or []
    for url in urls:
        for verb in verbs:
            if not any(_covers(g.get("nonResourceURLs"), url) and _covers(g.get("verbs"), verb) for g in granted):
                return False
    names = rule.get("resourceNames") or []
    for group in rule.get("apiGroups") or ([""] if not urls else []):
        for resource in rule.get("resources") or []:
            for verb in verbs:

                def allows(
                    g: Mapping[str, Any], group: str = group, resource: str = resource, verb: str = verb
                ) -> bool:
                    if not (_covers(g.get("apiGroups"), group) and _covers(g.get("resources"), resource)):
                        return False
                    if not _covers(g.get("verbs"), verb):
                        return False
                    limited = g.get("resourceNames")
                    return not limited or (bool(names) and all(n in limited for n in names))

                if not any(allows(g) for g in granted):
                    return False
    return True


def _exists(store: Any, kind: Any, name: str, namespace: str) -> bool:
    try:
        store.get(kind.api_version, kind.kind, name, namespace)
    except NotFound:
        return False
    return True


def _digest(data: Any) -> str:
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


class DeploymentInstaller:
    """Installs, checks and plans a CSV's Deployments and RBAC."""

    def __init__(self, context: InstallContext) -> None:
        self.context = context
        self.store = context.store

    # -- planning -----------------------------------------------------------------------

    def plan_objects(self, csv: Mapping[str, Any]) -> list[dict[str, Any]]:
        """A ServiceAccount per account, and a Role/RoleBinding or ClusterRole/ClusterRoleBinding per entry."""
        spec = _spec(csv)
        meta = csv["metadata"]
        ns, name = meta.get("namespace", ""), meta["name"]
        out: list[dict[str, Any]] = []
        accounts: list[str] = []
        for key, cluster in (("permissions", False), ("clusterPermissions", True)):
            for entry in _entries(spec, key):
                sa = str(entry.get("serviceAccountName") or "")
                if not sa:
                    raise StrategyError(f"spec.install.spec.{key}: serviceAccountName is required")
                if sa not in accounts and sa != DEFAULT_ACCOUNT:
                    accounts.append(sa)
                rules = list(entry.get("rules") or [])
                # cluster-wide objects are shared by every namespace: the same CSV installed in
                # two namespaces must not overwrite the other's binding
                role_name = f"{name}-{sa}-{_digest([ns, sa, rules] if cluster else [sa, rules])}"[:253]
                role_kind, binding_kind = (CLUSTER_ROLE, CLUSTER_ROLE_BINDING) if cluster else (ROLE, ROLE_BINDING)
                role_meta: dict[str, Any] = {"name": role_name}
                if not cluster:
                    role_meta["namespace"] = ns
                out.append(
                    {
                        "apiVersion": role_kind.api_version,
                        "kind": role_kind.kind,
                        "metadata": dict(role_meta),
                        "rules": rules,
                    }
                )
                out.append(
                    {
                        "apiVersion": binding_kind.api_version,
                        "kind": binding_kind.kind,
                        "metadata": dict(role_meta),
                        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind.kind, "name": role_name},
                        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
                    }
                )
        accounts_objs = [
            {
                "apiVersion": SERVICE_ACCOUNT.api_version,
                "kind": SERVICE_ACCOUNT.kind,
                "metadata": {"name": sa, "namespace": ns},
            }
            for sa in accounts
        ]
        return accounts_objs + out

    # -- requirements -------------------------------------------------------------------

    def _granted(self, ns: str, sa: str, *, cluster_only: bool) -> list[Mapping[str, Any]]:
        store = self.store

        def bound(binding: Mapping[str, Any]) -> bool:
            return any(
                s.get("kind") == "ServiceAccount" and s.get("name") == sa and (s.get("namespace") or ns) == ns
                for s in binding.get("subjects") or ()
            )

        def role_rules(ref: Mapping[str, Any], namespace: str | None) -> list[Mapping[str, Any]]:
            kind = CLUSTER_ROLE if ref.get("kind") == CLUSTER_ROLE.kind else ROLE
            try:
                role = store.get(kind.api_version, kind.kind, str(ref.get("name")), namespace)
            except NotFound:
                return []
            return list(role.get("rules") or [])

        rules: list[Mapping[str, Any]] = []
        for binding in store.list(CLUSTER_ROLE_BINDING.api_version, CLUSTER_ROLE_BINDING.kind):
            if bound(binding):
                rules += role_rules(binding.get("roleRef") or {}, None)
        if not cluster_only:
            for binding in store.list(ROLE_BINDING.api_version, ROLE_BINDING.kind, ns):
                if bound(binding):
                    rules += role_rules(binding.get("roleRef") or {}, ns)
        return rules

    def requirements(self, csv: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One entry per service account: present, and every permission rule granted to it."""
        spec = _spec(csv)
        ns = csv["metadata"].get("namespace", "")
        per_account: dict[str, list[tuple[bool, Mapping[str, Any]]]] = {}
        for key, cluster in (("permissions", False), ("clusterPermissions", True)):
            for perm in _entries(spec, key):
                sa = str(perm.get("serviceAccountName") or "")
                for rule in perm.get("rules") or []:
                    per_account.setdefault(sa, []).append((cluster, rule))
                per_account.setdefault(sa, [])
        out = []
        for sa, rules in per_account.items():
            entry: dict[str, Any] = {"group": "", "version": "v1", "kind": SERVICE_ACCOUNT.kind, "name": sa}
            if sa != DEFAULT_ACCOUNT:
                try:
                    account = self.store.get(SERVICE_ACCOUNT.api_version, SERVICE_ACCOUNT.kind, sa, ns)
                except NotFound:
                    out.append({**entry, "status": "NotPresent", "message": "Service account does not exist"})
                    continue
                entry["uuid"] = account["metadata"].get("uid", "")
            dependents = []
            granted_ns = self._granted(ns, sa, cluster_only=False)
            granted_cluster = self._granted(ns, sa, cluster_only=True)
            for cluster, rule in rules:
                ok = rule_granted(rule, granted_cluster if cluster else granted_ns)
                scope = "cluster" if cluster else "namespaced"
                dependents.append(
                    {
                        "group": RBAC_GROUP,
                        "version": "v1",
                        "kind": "PolicyRule",
                        "status": "Satisfied" if ok else "NotSatisfied",
                        "message": f"{scope} rule:{orjson.dumps(rule, option=orjson.OPT_SORT_KEYS).decode()}",
                    }
                )
            satisfied = all(d["status"] == "Satisfied" for d in dependents)
            out.append(
                {
                    **entry,
                    "status": "Present" if satisfied else "PresentNotSatisfied",
                    "message": "Service account exists"
                    if satisfied
                    else "Policy rule not satisfied for service account",
                    "dependents": dependents,
                }
            )
        return out

    # -- installing -----------------------------------------------------------------------

    def _deployments(self, csv: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, str]]]:
        for d in _entries(_spec(csv), "deployments"):
            name = d.get("name")
            spec = d.get("spec")
            if not isinstance(name, str) or not name or not isinstance(spec, Mapping):
                raise StrategyError("each spec.install.spec.deployments entry needs a name and a spec")
            labels = d.get("label") or {}
            yield name, dict(spec), {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}

    def install(self, csv: Mapping[str, Any]) -> None:
        """Create or update each Deployment (and the service accounts their pods use), owned by the CSV."""
        store = self.store
        ns = csv["metadata"]["namespace"]
        owner = owner_reference(csv)
        for name, raw, labels in self._deployments(csv):
            spec = _project(csv, raw)
            account = (((spec.get("template") or {}).get("spec") or {}).get("serviceAccountName")) or ""
            if account and account != DEFAULT_ACCOUNT and not _exists(store, SERVICE_ACCOUNT, account, ns):
                # usually the InstallPlan made it already; a read is cheaper than a refused create
                with contextlib.suppress(AlreadyExists):
                    store.create(
                        {
                            "apiVersion": SERVICE_ACCOUNT.api_version,
                            "kind": SERVICE_ACCOUNT.kind,
                            "metadata": {
                                "name": account,
                                "namespace": ns,
                                "ownerReferences": [{**owner, "controller": False}],
                            },
                        }
                    )
            body: dict[str, Any] = {
                "apiVersion": DEPLOYMENT.api_version,
                "kind": DEPLOYMENT.kind,
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {**labels, **owner_labels(csv)},
                    "ownerReferences": [owner],
                },
                "spec": spec,
            }
            try:
                store.create(body)
                continue
            except AlreadyExists:
                pass
            current = store.get(DEPLOYMENT.api_version, DEPLOYMENT.kind, name, ns)
            meta = current["metadata"]
            if (
                current.get("spec") == spec
                and meta.get("ownerReferences") == [owner]
                and all((meta.get("labels") or {}).get(k) == v for k, v in body["metadata"]["labels"].items())
            ):
                continue
            store.update(
                {
                    **current,
                    "metadata": {
                        **meta,
                        "labels": {**(meta.get("labels") or {}), **body["metadata"]["labels"]},
                        "ownerReferences": [owner],
                    },
                    "spec": spec,
                }
            )

    def check(self, csv: Mapping[str, Any]) -> StrategyStatus:
        """Healthy when every Deployment is rolled out and available."""
        ns = csv["metadata"]["namespace"]
        for name, _, _ in self._deployments(csv):
            try:
                dep = self.store.get(DEPLOYMENT.api_version, DEPLOYMENT.kind, name, ns)
            except NotFound:
                return StrategyStatus(False, f'deployment "{name}" not found')
            status = dep.get("status") or {}
            progressing = find_condition(status.get("conditions"), "Progressing")
            if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
                return StrategyStatus(False, f'deployment "{name}" exceeded its progress deadline', failed=True)
            desired = (dep.get("spec") or {}).get("replicas", 1)
            desired = desired if isinstance(desired, int) else 1
            if int(status.get("observedGeneration") or 0) < int(dep["metadata"].get("generation") or 1):
                return StrategyStatus(False, f'waiting for deployment "{name}" spec update to be observed')
            updated = int(status.get("updatedReplicas") or 0)
            available = int(status.get("availableReplicas") or 0)
            if updated < desired:
                return StrategyStatus(
                    False,
                    f'waiting for deployment "{name}" rollout: '
                    f"{updated} out of {desired} new replicas have been updated",
                )
            if available < desired:
                return StrategyStatus(
                    False,
                    f'waiting for deployment "{name}" rollout: {available} of {desired} updated replicas are available',
                )
        return StrategyStatus(True)
