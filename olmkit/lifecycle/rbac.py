"""The RBAC OLM generates for the members of an OperatorGroup (the tables of the OperatorGroup spec).

* per owned CRD: ClusterRoles ``<crd>-<version>-admin`` (``*``), ``-edit`` (create, update,
  patch, delete), ``-view`` (get, list, watch) on the resource, and ``-view-crdview`` (get on
  the CustomResourceDefinition itself);
* per owned APIService: ``<name>-<version>-admin|edit|view`` likewise;
* each labelled ``rbac.authorization.k8s.io/aggregate-to-<suffix>: "true"`` and
  ``olm.opgroup.permissions/aggregate-to-<suffix>: <group>``, so the cluster's and the
  group's aggregated roles pick them up;
* the CSV's ``permissions``: for a group targeting all namespaces, each Role and RoleBinding
  the CSV owns in its namespace lifted to a ClusterRole and ClusterRoleBinding of the same name
  (plus reading Namespaces, as upstream adds); otherwise copied into each target namespace.

Everything generated carries the ``olm.owner`` labels of the CSV; copies in other namespaces
also ``olm.copiedFrom: <operator namespace>``.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from olmkit.lifecycle.kinds import CLUSTER_ROLE, CLUSTER_ROLE_BINDING, ROLE, ROLE_BINDING
from olmkit.lifecycle.operatorgroups import (
    COPIED_FROM_LABEL,
    GROUP_AGGREGATION_PREFIX,
    KUBE_AGGREGATION_PREFIX,
    descriptions,
)
from olmkit.lifecycle.strategy import owner_labels

__all__ = ["VERBS", "api_cluster_roles", "copied_role", "lifted_role"]

VERBS: Final[Mapping[str, tuple[str, ...]]] = {
    "admin": ("*",),
    "edit": ("create", "update", "patch", "delete"),
    "view": ("get", "list", "watch"),
}
#: what a global operator may also do with Namespaces (upstream grants it with the lifted roles)
NAMESPACE_RULE: Final = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}


def _owned(csv: Mapping[str, Any], section: str) -> list[Mapping[str, Any]]:
    return [d for d in descriptions(csv, section) if d.get("name")]


def _role(name: str, suffix: str, group_name: str, csv: Mapping[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": CLUSTER_ROLE.api_version,
        "kind": CLUSTER_ROLE.kind,
        "metadata": {
            "name": name,
            "labels": {
                KUBE_AGGREGATION_PREFIX + suffix: "true",
                GROUP_AGGREGATION_PREFIX + suffix: group_name,
                **owner_labels(csv),
            },
        },
        "rules": [rule],
    }


def api_cluster_roles(csv: Mapping[str, Any], group_name: str) -> list[dict[str, Any]]:
    """The per-API ClusterRoles of a member CSV of ``group_name``."""
    out: list[dict[str, Any]] = []
    for desc in _owned(csv, "customresourcedefinitions"):
        crd = str(desc["name"])
        plural, _, api_group = crd.partition(".")
        prefix = f"{crd}-{desc.get('version')}"
        for suffix, verbs in VERBS.items():
            rule = {"apiGroups": [api_group], "resources": [plural], "verbs": list(verbs)}
            out.append(_role(f"{prefix}-{suffix}", suffix, group_name, csv, rule))
        crdview = {
            "apiGroups": ["apiextensions.k8s.io"],
            "resources": ["customresourcedefinitions"],
            "resourceNames": [crd],
            "verbs": ["get"],
        }
        out.append(_role(f"{prefix}-view-crdview", "view", group_name, csv, crdview))
    for desc in _owned(csv, "apiservicedefinitions"):
        prefix = f"{desc['name']}-{desc.get('version')}"
        for suffix, verbs in VERBS.items():
            rule = {"apiGroups": [str(desc.get("group") or "")], "resources": [str(desc["name"])], "verbs": list(verbs)}
            out.append(_role(f"{prefix}-{suffix}", suffix, group_name, csv, rule))
    return out


def lifted_role(obj: Mapping[str, Any], csv: Mapping[str, Any]) -> dict[str, Any]:
    """A Role or RoleBinding of the operator's namespace as its cluster-wide twin (all namespaces)."""
    meta = {"name": obj["metadata"]["name"], "labels": owner_labels(csv)}
    if obj["kind"] == ROLE.kind:
        rules = [*(obj.get("rules") or ()), NAMESPACE_RULE]
        return {"apiVersion": CLUSTER_ROLE.api_version, "kind": CLUSTER_ROLE.kind, "metadata": meta, "rules": rules}
    ref = dict(obj.get("roleRef") or {})
    return {
        "apiVersion": CLUSTER_ROLE_BINDING.api_version,
        "kind": CLUSTER_ROLE_BINDING.kind,
        "metadata": meta,
        "roleRef": {
            "apiGroup": ref.get("apiGroup", "rbac.authorization.k8s.io"),
            "kind": CLUSTER_ROLE.kind,
            "name": ref.get("name"),
        },
        "subjects": list(obj.get("subjects") or ()),
    }


def copied_role(obj: Mapping[str, Any], csv: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """A Role or RoleBinding of the operator's namespace copied into target ``namespace``."""
    labels = {**owner_labels(csv), COPIED_FROM_LABEL: str(csv["metadata"]["namespace"])}
    out: dict[str, Any] = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {"name": obj["metadata"]["name"], "namespace": namespace, "labels": labels},
    }
    if obj["kind"] == ROLE_BINDING.kind:
        out["roleRef"] = dict(obj.get("roleRef") or {})
        out["subjects"] = list(obj.get("subjects") or ())
    else:
        out["rules"] = list(obj.get("rules") or ())
    return out
