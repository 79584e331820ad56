"""Copied CSVs: one per target namespace of an active member, mirroring its status with reason Copied,
removed when the source or the target goes, and switched off for global operators by the OLMConfig."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.lifecycle.groups import OG, annotations, group, install, namespace
from tests.lifecycle.harness import ALL_MODES, V1A1, B, Cluster

WIDGET = ("example.io", "v1", "Widget")
CSV = "widget.v1.0.0"


def copies(cluster: Cluster) -> list[str]:
    """Namespaces holding a copy of widget.v1.0.0."""
    return sorted(
        c["metadata"]["namespace"]
        for c in cluster.store.list(V1A1, "ClusterServiceVersion")
        if c["metadata"]["name"] == CSV and c["metadata"]["namespace"] != "operators"
    )


def olm_config(cluster: Cluster, disabled: bool) -> None:
    cluster.apply(
        {
            "apiVersion": OG,
            "kind": "OLMConfig",
            "metadata": {"name": "cluster"},
            "spec": {"features": {"disableCopiedCSVs": disabled}},
        }
    )


@pytest.fixture
def widget(make: Callable[..., Cluster]) -> Callable[..., Cluster]:
    """``widget(*namespaces, **group_spec)``: Namespaces, a group, widget.v1.0.0 installed in ``operators``."""

    def build(*namespaces: str, **spec: Any) -> Cluster:
        cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
        for name in ("operators", *namespaces):
            namespace(cluster, name)
        group(cluster, **spec)
        install(cluster, "widget")
        assert "Succeeded" == cluster.phase(CSV)
        return cluster

    return build


@pytest.mark.kube
def test_a_global_operator_is_copied_into_every_other_namespace(widget: Callable[..., Cluster]) -> None:
    """Copies: source spec, group annotations without olm.targetNamespaces, olm.copiedFrom, status with Copied."""
    cluster = widget("team-a", "team-b")
    source = cluster.get("csv", CSV)

    assert ["team-a", "team-b"] == copies(cluster)
    copy = cluster.get("csv", CSV, "team-a")
    assert "operators" == copy["metadata"]["labels"]["olm.copiedFrom"]
    expected = {k: v for k, v in annotations(source).items() if k != "olm.targetNamespaces"}
    assert expected == annotations(copy)
    assert {"olm.operatorGroup": "og", "olm.operatorNamespace": "operators"}.items() <= annotations(copy).items()
    assert source["spec"] == copy["spec"]
    status = copy["status"]
    assert ("Succeeded", "Copied") == (status["phase"], status["reason"])
    assert "The operator is running in operators but is managing this namespace" == status["message"]
    assert source["status"]["conditions"] == status["conditions"]
    assert not copy["metadata"].get("finalizers")
    assert [] == cluster.names("deploy", "team-a")


def test_a_namespace_created_later_gets_its_copy_and_a_deleted_one_loses_it(widget: Callable[..., Cluster]) -> None:
    """Namespaces come and go; the copies follow."""
    cluster = widget("team-a")

    namespace(cluster, "team-c")
    cluster.store.delete("v1", "Namespace", "team-a")
    cluster.reconcile()

    assert ["team-c"] == copies(cluster)


def test_named_targets_are_copied_into_and_retargeting_prunes(widget: Callable[..., Cluster]) -> None:
    """Only the targets get copies (not the operator's namespace); a dropped target loses its copy."""
    cluster = widget("team-a", "team-b", "team-c", targetNamespaces=["operators", "team-a", "team-b"])
    assert ["team-a", "team-b"] == copies(cluster)

    group(cluster, targetNamespaces=["operators", "team-b"])
    cluster.reconcile()

    assert ["team-b"] == copies(cluster)


def test_copies_mirror_the_source_status(widget: Callable[..., Cluster]) -> None:
    """The source fails (its Deployment is gone and stays unavailable): the copy says Failed, reason Copied."""
    cluster = widget("team-a", targetNamespaces=["operators", "team-a"])
    deploy = cluster.get("deploy", "widget")
    deploy["spec"]["template"]["metadata"]["annotations"]["olmkit.io/simulate"] = "never-ready"
    cluster.store.update(deploy)
    cluster.reconcile()

    source = cluster.get("csv", CSV)
    copy = cluster.get("csv", CSV, "team-a")
    assert source["status"]["phase"] == copy["status"]["phase"]
    assert "Succeeded" != copy["status"]["phase"]
    assert "Copied" == copy["status"]["reason"]


@pytest.mark.kube
def test_copies_go_with_the_source(widget: Callable[..., Cluster]) -> None:
    """Uninstalling the operator deletes every copy."""
    cluster = widget("team-a", "team-b")

    cluster.store.delete(V1A1, "Subscription", "widget", "operators")
    cluster.store.delete(V1A1, "ClusterServiceVersion", CSV, "operators")
    cluster.reconcile()

    assert [] == copies(cluster)


@pytest.mark.kube
def test_a_deleted_copy_comes_back(widget: Callable[..., Cluster]) -> None:
    """Copies are kept, not just made: deleting one by hand recreates it."""
    cluster = widget("team-a")

    cluster.store.delete(V1A1, "ClusterServiceVersion", CSV, "team-a")
    cluster.reconcile()

    assert ["team-a"] == copies(cluster)


def test_a_csv_that_is_not_an_active_member_has_no_copies(widget: Callable[..., Cluster]) -> None:
    """A second group makes the CSV fail (TooManyOperatorGroups): its copies go, and come back with one group."""
    cluster = widget("team-a")

    group(cluster, name="second")
    cluster.reconcile()
    assert [] == copies(cluster)

    cluster.store.delete(OG, "OperatorGroup", "second", "operators")
    cluster.reconcile()
    assert ["team-a"] == copies(cluster)


@pytest.mark.kube
def test_disable_copied_csvs_removes_the_copies_of_global_operators_and_enabling_brings_them_back(
    widget: Callable[..., Cluster],
) -> None:
    """OLMConfig cluster, spec.features.disableCopiedCSVs true: no copies; false: copies again."""
    cluster = widget("team-a", "team-b")

    olm_config(cluster, True)
    cluster.reconcile()
    assert [] == copies(cluster)
    assert "Succeeded" == cluster.phase(CSV)

    namespace(cluster, "team-c")
    cluster.reconcile()
    assert [] == copies(cluster)

    olm_config(cluster, False)
    cluster.reconcile()
    assert ["team-a", "team-b", "team-c"] == copies(cluster)


def test_disable_copied_csvs_keeps_the_copies_of_operators_with_named_targets(widget: Callable[..., Cluster]) -> None:
    """The switch is for operators watching all namespaces; named targets keep their copies."""
    cluster = widget("team-a", targetNamespaces=["operators", "team-a"])

    olm_config(cluster, True)
    cluster.reconcile()

    assert ["team-a"] == copies(cluster)


def test_a_copy_never_replaces_an_operator_of_the_same_name(make: Callable[..., Cluster]) -> None:
    """A namespace with a CSV of its own under the same name keeps it: no copy overwrites it."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    for name in ("operators", "team-a", "team-b"):
        namespace(cluster, name)
    own = {"displayName": "mine", "install": {"strategy": "deployment", "spec": {"deployments": []}}}
    cluster.apply(
        {
            "apiVersion": V1A1,
            "kind": "ClusterServiceVersion",
            "metadata": {"name": CSV, "namespace": "team-a"},
            "spec": own,
        }
    )
    group(cluster)
    install(cluster, "widget")

    assert "Succeeded" == cluster.phase(CSV)
    assert "Copied" == cluster.get("csv", CSV, "team-b")["status"]["reason"]
    mine = cluster.get("csv", CSV, "team-a")
    assert own == mine["spec"]
    assert "olm.copiedFrom" not in (mine["metadata"].get("labels") or {})
    assert ("Failed", "NoOperatorGroup") == (mine["status"]["phase"], mine["status"]["reason"])


def test_an_upgrade_replaces_the_copies(make: Callable[..., Cluster], tmp_path: Any) -> None:
    """widget 1.0.0 -> 1.1.0 under a global group: the old CSV's copies go, the new one's come,
    and the per-API ClusterRoles now belong to the new CSV."""
    from tests.lifecycle.harness import write_catalog

    old = B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES)
    cluster = make(old)
    for name in ("operators", "team-a"):
        namespace(cluster, name)
    group(cluster)
    install(cluster, "widget")
    assert ["team-a"] == copies(cluster)

    write_catalog(
        tmp_path / "catalog", [old, B("widget", "1.1.0", owns=(WIDGET,), replaces=CSV, install_modes=ALL_MODES)]
    )
    cluster.clock.advance(3600)
    cluster.store.delete(V1A1, "CatalogSource", "test", "olm")
    cluster.catalog_source("test", tmp_path / "catalog")
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.1.0")
    assert not cluster.exists("csv", CSV, "team-a")
    assert "Copied" == cluster.get("csv", "widget.v1.1.0", "team-a")["status"]["reason"]
    role = cluster.get("clusterrole", "widgets.example.io-v1-admin", None)
    assert "widget.v1.1.0" == role["metadata"]["labels"]["olm.owner"]


@pytest.mark.kube
def test_each_copy_is_written_twice_on_its_way_to_succeeded(make: Callable[..., Cluster]) -> None:
    """Copies wait until the source rests: created once and given its Succeeded status once, not rewritten
    at every phase the source passes (the cost that dominates a global group over many namespaces)."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    for name in ("operators", *(f"team-{n}" for n in range(5))):
        namespace(cluster, name)
    group(cluster)
    assert [] == cluster.names("csv", None)
    # opened before the install (no CSV yet, so no initial ADDED), read after it
    with cluster.store.watch(V1A1, "ClusterServiceVersion", timeout=0) as watch:
        install(cluster, "widget")
        writes = [
            (e.type, e.object["metadata"]["namespace"])
            for e in watch
            if e.object["metadata"]["namespace"] != "operators"
        ]

    assert 5 == len(copies(cluster))
    assert sorted([("ADDED", f"team-{n}") for n in range(5)] + [("MODIFIED", f"team-{n}") for n in range(5)]) == sorted(
        writes
    )


def condition(cluster: Cluster) -> tuple[str, str, str]:
    found = cluster.condition(cluster.get("olmconfig", "cluster", None), "DisabledCopiedCSVs")
    assert found is not None
    return found["status"], found["reason"], found["message"]


def test_the_olm_config_says_how_the_copies_stand(widget: Callable[..., Cluster]) -> None:
    """DisabledCopiedCSVs: False/CopiedCSVsEnabled while copies are on, True/CopiedCSVsDisabled once they are gone."""
    cluster = widget("team-a")

    olm_config(cluster, False)
    cluster.reconcile()
    assert ("False", "CopiedCSVsEnabled", "Copied CSVs are enabled and present across the cluster") == condition(
        cluster
    )

    olm_config(cluster, True)
    cluster.reconcile()
    expected = (
        "True",
        "CopiedCSVsDisabled",
        "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in "
        "AllNamespace mode",
    )
    assert expected == condition(cluster)


def test_protected_namespaces_keep_their_copies_when_copies_are_disabled(make: Callable[..., Cluster]) -> None:
    """With copies disabled, a global operator is still copied into the run's protected namespaces."""
    cluster = make(
        B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES), protected_copied_csv_namespaces=["openshift"]
    )
    for name in ("operators", "openshift", "team-a"):
        namespace(cluster, name)
    group(cluster)
    olm_config(cluster, True)
    install(cluster, "widget")

    assert ["openshift"] == copies(cluster)
    assert "True" == condition(cluster)[0]


def test_a_stray_copy_is_removed(widget: Callable[..., Cluster]) -> None:
    """A copy made by someone else where none belongs (copies disabled) is deleted again."""
    cluster = widget("team-a")
    olm_config(cluster, True)
    cluster.reconcile()
    stray = cluster.get("csv", CSV)
    meta = {"name": CSV, "namespace": "team-a", "labels": {"olm.copiedFrom": "operators"}}
    cluster.apply({"apiVersion": V1A1, "kind": "ClusterServiceVersion", "metadata": meta, "spec": stray["spec"]})

    cluster.reconcile()

    assert [] == copies(cluster)
    assert "True" == condition(cluster)[0]


def test_a_selector_group_copies_into_the_namespaces_it_selects(make: Callable[..., Cluster]) -> None:
    """Labelling a namespace into a selector group's targets brings the copy and the copied Roles; unlabelling
    takes them away."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    namespace(cluster, "operators", team="x")
    namespace(cluster, "team-a", team="x")
    namespace(cluster, "team-b")
    group(cluster, selector={"matchLabels": {"team": "x"}})
    install(cluster, "widget")
    assert "Succeeded" == cluster.phase(CSV)
    assert ["team-a"] == copies(cluster)
    roles = cluster.names("role", "team-a")
    assert 1 == len(roles)

    namespace(cluster, "team-b", team="x")
    namespace(cluster, "team-a")
    cluster.reconcile()

    assert ["team-b"] == copies(cluster)
    assert roles == cluster.names("role", "team-b")
    assert [] == cluster.names("role", "team-a")
    assert "operators,team-b" == annotations(cluster.get("csv", CSV))["olm.targetNamespaces"]
