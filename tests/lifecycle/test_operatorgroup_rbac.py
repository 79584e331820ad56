"""The RBAC of OperatorGroups, row by row of the spec's tables: the group's aggregated ClusterRoles, the
per-API ClusterRoles of owned CRDs and APIServices, and the CSV's permissions in the target namespaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.lifecycle.groups import OG, group, install
from tests.lifecycle.harness import ALL_MODES, V1A1, B, Cluster

RBAC = "rbac.authorization.k8s.io/v1"
WIDGET = ("example.io", "v1", "Widget")
OWNER = {"olm.owner": "widget.v1.0.0", "olm.owner.namespace": "operators", "olm.owner.kind": "ClusterServiceVersion"}
APISERVICE = {
    "apiservicedefinitions": {
        "owned": [{"name": "sprockets", "group": "sprockets.example.io", "version": "v1alpha1", "kind": "Sprocket"}]
    }
}


def cluster_role(cluster: Cluster, name: str) -> dict[str, Any]:
    role = cluster.get("clusterrole", name, None)
    return {"labels": role["metadata"].get("labels"), "rules": role.get("rules")}


def names(cluster: Cluster, kind: str, namespace: str | None = None) -> list[str]:
    return sorted(cluster.names(kind, namespace))


@pytest.fixture
def widget(make: Callable[..., Cluster]) -> Callable[..., Cluster]:
    """``widget(**group_spec)``: widget.v1.0.0 (owning widgets.example.io and an APIService) installed."""

    def build(**spec: Any) -> Cluster:
        cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES, spec=APISERVICE))
        group(cluster, **spec)
        install(cluster, "widget")
        assert "Succeeded" == cluster.phase("widget.v1.0.0")
        return cluster

    return build


def owned(cluster: Cluster, kind: str, ns: str = "operators") -> list[dict[str, Any]]:
    """The Roles or RoleBindings the InstallPlan made for the CSV's permissions."""
    csv = cluster.get("csv", "widget.v1.0.0", ns)
    k = cluster.store.list(RBAC, kind, ns)
    return [o for o in k if any(r["uid"] == csv["metadata"]["uid"] for r in o["metadata"].get("ownerReferences") or ())]


# --------------------------------------------------------------------------- the group's ClusterRoles


@pytest.mark.parametrize("suffix", ["admin", "edit", "view"])
def test_a_group_gets_an_aggregated_cluster_role_per_suffix(make: Callable[..., Cluster], suffix: str) -> None:
    """<group>-<suffix> aggregates olm.opgroup.permissions/aggregate-to-<suffix>: <group>; it goes with the group."""
    cluster = make()
    group(cluster, name="team")
    cluster.reconcile()

    role = cluster.get("clusterrole", f"team-{suffix}", None)
    assert {"clusterRoleSelectors": [{"matchLabels": {f"olm.opgroup.permissions/aggregate-to-{suffix}": "team"}}]} == (
        role["aggregationRule"]
    )
    expected = {"olm.owner": "team", "olm.owner.namespace": "operators", "olm.owner.kind": "OperatorGroup"}
    assert expected == role["metadata"]["labels"]

    cluster.store.delete(OG, "OperatorGroup", "team", "operators")
    cluster.reconcile()

    assert not cluster.exists("clusterrole", f"team-{suffix}", None)


# --------------------------------------------------------------------------- per API


@pytest.mark.parametrize(
    ("name", "suffix", "rule"),
    [
        (
            "widgets.example.io-v1-admin",
            "admin",
            {"apiGroups": ["example.io"], "resources": ["widgets"], "verbs": ["*"]},
        ),
        (
            "widgets.example.io-v1-edit",
            "edit",
            {"apiGroups": ["example.io"], "resources": ["widgets"], "verbs": ["create", "update", "patch", "delete"]},
        ),
        (
            "widgets.example.io-v1-view",
            "view",
            {"apiGroups": ["example.io"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]},
        ),
        (
            "widgets.example.io-v1-view-crdview",
            "view",
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "resourceNames": ["widgets.example.io"],
                "verbs": ["get"],
            },
        ),
        (
            "sprockets-v1alpha1-admin",
            "admin",
            {"apiGroups": ["sprockets.example.io"], "resources": ["sprockets"], "verbs": ["*"]},
        ),
        (
            "sprockets-v1alpha1-edit",
            "edit",
            {
                "apiGroups": ["sprockets.example.io"],
                "resources": ["sprockets"],
                "verbs": ["create", "update", "patch", "delete"],
            },
        ),
        (
            "sprockets-v1alpha1-view",
            "view",
            {"apiGroups": ["sprockets.example.io"], "resources": ["sprockets"], "verbs": ["get", "list", "watch"]},
        ),
    ],
    ids=[
        "crd-admin",
        "crd-edit",
        "crd-view",
        "crd-view-crdview",
        "apiservice-admin",
        "apiservice-edit",
        "apiservice-view",
    ],
)
def test_each_owned_api_gets_its_cluster_roles(
    widget: Callable[..., Cluster], name: str, suffix: str, rule: dict[str, Any]
) -> None:
    """One ClusterRole per row of the spec's tables: verbs, aggregation labels, owner labels; gone with the CSV."""
    cluster = widget()

    labels = {
        f"rbac.authorization.k8s.io/aggregate-to-{suffix}": "true",
        f"olm.opgroup.permissions/aggregate-to-{suffix}": "og",
        **OWNER,
    }
    assert {"labels": labels, "rules": [rule]} == cluster_role(cluster, name)

    cluster.store.delete(V1A1, "Subscription", "widget", "operators")
    cluster.store.delete(V1A1, "ClusterServiceVersion", "widget.v1.0.0", "operators")
    cluster.reconcile()

    assert not cluster.exists("clusterrole", name, None)


def test_a_csv_in_conflict_gets_no_per_api_roles(make: Callable[..., Cluster]) -> None:
    """InterOperatorGroupOwnerConflict: no per-API ClusterRoles for the losing CSV's group."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster)
    group(cluster, ns="other", name="other")
    install(cluster, "widget")
    install(cluster, "widget", ns="other")

    assert "InterOperatorGroupOwnerConflict" == cluster.get("csv", "widget.v1.0.0", "other")["status"]["reason"]
    labels = cluster.get("clusterrole", "widgets.example.io-v1-admin", None)["metadata"]["labels"]
    assert ("og", "operators") == (labels["olm.opgroup.permissions/aggregate-to-admin"], labels["olm.owner.namespace"])


@pytest.mark.kube
def test_a_shared_per_api_role_is_not_rewritten_by_a_second_namespace(make: Callable[..., Cluster]) -> None:
    """The same API provided in two namespaces: the second namespace's CSV leaves the per-API ClusterRoles
    the first one made as they are (no write: same resourceVersion); once the first CSV goes, they are
    generated again for the second."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    roles = [f"widgets.example.io-v1-{suffix}" for suffix in ("admin", "edit", "view", "view-crdview")]
    group(cluster, targetNamespaces=["operators"])
    install(cluster, "widget")
    before = {name: cluster.get("clusterrole", name, None)["metadata"] for name in roles}

    group(cluster, ns="team", name="team", targetNamespaces=["team"])
    install(cluster, "widget", ns="team")

    assert "Succeeded" == cluster.phase("widget.v1.0.0", "team")
    after = {name: cluster.get("clusterrole", name, None)["metadata"] for name in roles}
    assert {n: m["resourceVersion"] for n, m in before.items()} == {n: m["resourceVersion"] for n, m in after.items()}
    assert {"operators"} == {m["labels"]["olm.owner.namespace"] for m in after.values()}

    cluster.store.delete(V1A1, "Subscription", "widget", "operators")
    cluster.store.delete(V1A1, "ClusterServiceVersion", "widget.v1.0.0", "operators")
    cluster.reconcile()

    regenerated = [cluster.get("clusterrole", name, None)["metadata"]["labels"] for name in roles]
    group_labels = [v for labels in regenerated for k, v in labels.items() if k.startswith("olm.opgroup.")]
    assert (["team"] * 4, ["team"] * 4) == ([labels["olm.owner.namespace"] for labels in regenerated], group_labels)


# --------------------------------------------------------------------------- permissions


@pytest.mark.kube
def test_a_global_group_lifts_the_permissions_to_cluster_roles(widget: Callable[..., Cluster]) -> None:
    """Targets "" (all namespaces): each Role and RoleBinding of the CSV becomes a ClusterRole and ClusterRoleBinding
    of the same name, with the owner labels; the Role also lets the operator read Namespaces."""
    cluster = widget()
    (role,) = owned(cluster, "Role")
    (binding,) = owned(cluster, "RoleBinding")

    lifted = cluster.get("clusterrole", role["metadata"]["name"], None)
    assert OWNER == lifted["metadata"]["labels"]
    namespaces = {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}
    assert [*role["rules"], namespaces] == lifted["rules"]
    lifted_binding = cluster.get("clusterrolebinding", binding["metadata"]["name"], None)
    assert OWNER == lifted_binding["metadata"]["labels"]
    assert binding["subjects"] == lifted_binding["subjects"]
    expected_ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]}
    assert expected_ref == lifted_binding["roleRef"]

    cluster.store.delete(V1A1, "ClusterServiceVersion", "widget.v1.0.0", "operators")
    cluster.reconcile()

    assert not cluster.exists("clusterrole", role["metadata"]["name"], None)
    assert not cluster.exists("clusterrolebinding", binding["metadata"]["name"], None)


def test_named_targets_get_copies_of_the_roles(widget: Callable[..., Cluster]) -> None:
    """Targets other than the operator's namespace get its Roles and RoleBindings, labelled as copies;
    a namespace that stops being a target loses them; no cluster-wide twins are made."""
    cluster = widget(targetNamespaces=["operators", "team-a", "team-b"])
    (role,) = owned(cluster, "Role")
    (binding,) = owned(cluster, "RoleBinding")
    labels = {**OWNER, "olm.copiedFrom": "operators"}

    for ns in ("team-a", "team-b"):
        copy = cluster.get("role", role["metadata"]["name"], ns)
        assert labels == copy["metadata"]["labels"]
        assert role["rules"] == copy["rules"]
        copied_binding = cluster.get("rolebinding", binding["metadata"]["name"], ns)
        assert labels == copied_binding["metadata"]["labels"]
        assert (binding["subjects"], binding["roleRef"]) == (copied_binding["subjects"], copied_binding["roleRef"])
    assert not cluster.exists("clusterrole", role["metadata"]["name"], None)

    group(cluster, targetNamespaces=["operators", "team-a"])
    cluster.reconcile()

    assert [role["metadata"]["name"]] == names(cluster, "role", "team-a")
    assert [] == names(cluster, "role", "team-b")
    assert [] == names(cluster, "rolebinding", "team-b")


def test_narrowing_a_global_group_removes_the_lifted_roles(widget: Callable[..., Cluster]) -> None:
    """From all namespaces to named ones: the cluster-wide twins go, the copies come."""
    cluster = widget()
    (role,) = owned(cluster, "Role")
    assert cluster.exists("clusterrole", role["metadata"]["name"], None)

    group(cluster, targetNamespaces=["operators", "team-a"])
    cluster.reconcile()

    assert not cluster.exists("clusterrole", role["metadata"]["name"], None)
    assert cluster.exists("role", role["metadata"]["name"], "team-a")


def test_uninstalling_removes_the_copied_roles(widget: Callable[..., Cluster]) -> None:
    """The CSV goes: its copied Roles and RoleBindings in the target namespaces go too."""
    cluster = widget(targetNamespaces=["operators", "team-a"])

    cluster.store.delete(V1A1, "Subscription", "widget", "operators")
    cluster.store.delete(V1A1, "ClusterServiceVersion", "widget.v1.0.0", "operators")
    cluster.reconcile()

    assert [] == names(cluster, "role", "team-a")
    assert [] == names(cluster, "rolebinding", "team-a")


@pytest.mark.kube
def test_generated_cluster_roles_deleted_by_hand_come_back(widget: Callable[..., Cluster]) -> None:
    """A per-API ClusterRole or a lifted one deleted by someone is generated again."""
    cluster = widget()
    (role,) = owned(cluster, "Role")

    for name in ("widgets.example.io-v1-view-crdview", role["metadata"]["name"]):
        cluster.store.delete(RBAC, "ClusterRole", name)
    cluster.reconcile()

    assert cluster.exists("clusterrole", "widgets.example.io-v1-view-crdview", None)
    assert cluster.exists("clusterrole", role["metadata"]["name"], None)
