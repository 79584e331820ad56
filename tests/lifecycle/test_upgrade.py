"""Upgrades: one hop per resolution along replaces/skips/skipRange, OperatorConditions, CRDs, bundle objects."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from olmkit.testing import HookRecorder
from tests.lifecycle.harness import B, Cluster, crd, write_catalog

GVK = ("example.io", "v1", "Widget")


def _published(tmp_path: Path, bundles: list[B], channel: list[str] | None = None) -> Path:
    return write_catalog(tmp_path / "catalog", bundles, {"widget": channel} if channel else None)


def _cluster(make_cluster: Callable[..., Cluster], catalog: Path, **options: object) -> Cluster:
    cluster = make_cluster(**options)
    cluster.catalog_source("test", catalog, poll="10m")
    cluster.operator_group()
    cluster.subscribe("widget", source="test")
    return cluster


def _csv_phases(cluster: Cluster) -> dict[str, str]:
    return {name: cluster.phase(name) for name in cluster.names("csv")}


@pytest.mark.kube
def test_upgrade_walks_the_chain_one_version_at_a_time(tmp_path: Path, make_cluster: Callable[..., Cluster]) -> None:
    """Each hop is its own InstallPlan; every intermediate version reaches Succeeded before the next hop.

    v1 → v2 (replaces) → v4 (replaces v2 and skips v3, which is never installed) → v5 (skipRange
    also covering v4, but replaces v4 too).
    """
    v1 = B("widget", "1.0.0", owns=(GVK,))
    cluster = _cluster(make_cluster, _published(tmp_path, [v1]))
    cluster.reconcile()
    assert {"widget.v1.0.0": "Succeeded"} == _csv_phases(cluster)

    bundles = [
        v1,
        B("widget", "2.0.0", replaces="widget.v1.0.0", owns=(GVK,)),
        B("widget", "3.0.0", replaces="widget.v2.0.0", owns=(GVK,)),
        B("widget", "4.0.0", replaces="widget.v2.0.0", skips=("widget.v3.0.0",), owns=(GVK,)),
        B("widget", "5.0.0", replaces="widget.v4.0.0", skip_range=">=4.0.0 <5.0.0", owns=(GVK,)),
    ]
    _published(tmp_path, bundles)
    recorder = HookRecorder()
    recorder.attach(cluster.pm)
    cluster.clock.advance(600)  # the registry poll re-reads the catalog
    outcome = cluster.reconcile()
    recorder.undo()

    assert outcome.stable, outcome.pending
    assert {"widget.v5.0.0": "Succeeded"} == _csv_phases(cluster)
    hops = [(p["spec"]["clusterServiceVersionNames"], p["status"]["phase"]) for p in cluster.plans()]
    assert [
        (["widget.v1.0.0"], "Complete"),
        (["widget.v2.0.0"], "Complete"),
        (["widget.v4.0.0"], "Complete"),
        (["widget.v5.0.0"], "Complete"),
    ] == hops
    succeeded = [
        c.kwargs["csv"]["metadata"]["name"]
        for c in recorder.calls
        if c.name == "olmkit_csv_phase_changed" and c.kwargs["new_phase"] == "Succeeded"
    ]
    assert ["widget.v2.0.0", "widget.v4.0.0", "widget.v5.0.0"] == succeeded
    replaced = [
        (c.kwargs["csv"]["metadata"]["name"], c.kwargs["new_phase"])
        for c in recorder.calls
        if c.name == "olmkit_csv_phase_changed" and c.kwargs["new_phase"] in ("Replacing", "Deleting")
    ]
    assert ("widget.v1.0.0", "Replacing") == replaced[0]
    assert ("widget.v4.0.0", "Deleting") in replaced
    sub = cluster.get("sub", "widget")
    assert "widget.v5.0.0" == sub["status"]["installedCSV"]
    assert "AtLatestKnown" == sub["status"]["state"]
    deployment = cluster.get("deploy", "widget")
    v5 = cluster.get("csv", "widget.v5.0.0")
    assert [v5["metadata"]["uid"]] == [r["uid"] for r in deployment["metadata"]["ownerReferences"]]
    assert "example.invalid/widget:5.0.0" == deployment["spec"]["template"]["spec"]["containers"][0]["image"]


def test_skip_range_on_the_head_jumps_straight_to_it(tmp_path: Path, make_cluster: Callable[..., Cluster]) -> None:
    """An installed version inside the head's skipRange upgrades to the head in one hop."""
    v1 = B("widget", "1.0.0", owns=(GVK,))
    cluster = _cluster(make_cluster, _published(tmp_path, [v1]))
    cluster.reconcile()
    _published(
        tmp_path,
        [
            v1,
            B("widget", "1.1.0", replaces="widget.v1.0.0", owns=(GVK,)),
            B("widget", "1.2.0", replaces="widget.v1.1.0", skip_range=">=1.0.0 <1.2.0", owns=(GVK,)),
        ],
    )
    cluster.clock.advance(600)
    cluster.reconcile()

    assert [["widget.v1.0.0"], ["widget.v1.2.0"]] == [p["spec"]["clusterServiceVersionNames"] for p in cluster.plans()]
    assert {"widget.v1.2.0": "Succeeded"} == _csv_phases(cluster)


def test_upgradeable_false_keeps_the_new_csv_pending(tmp_path: Path, make_cluster: Callable[..., Cluster]) -> None:
    """The old CSV's OperatorCondition Upgradeable=False holds the replacing CSV in Pending until it is lifted."""
    v1 = B("widget", "1.0.0", owns=(GVK,))
    cluster = _cluster(make_cluster, _published(tmp_path, [v1]))
    cluster.reconcile()
    condition = cluster.get("operatorcondition", "widget.v1.0.0")
    condition["spec"]["conditions"] = [
        {"type": "Upgradeable", "status": "False", "reason": "migration", "message": "The Operator is migrating."}
    ]
    cluster.store.update(condition)

    _published(tmp_path, [v1, B("widget", "2.0.0", replaces="widget.v1.0.0", owns=(GVK,))])
    cluster.clock.advance(600)
    cluster.reconcile()

    new = cluster.get("csv", "widget.v2.0.0")
    assert "Pending" == new["status"]["phase"]
    assert "OperatorConditionNotUpgradeable" == new["status"]["reason"]
    assert "The Operator is migrating." in new["status"]["message"]
    assert "Replacing" == cluster.phase("widget.v1.0.0")
    assert (
        not cluster.exists("deploy", "widget")
        or cluster.get("deploy", "widget")["metadata"]["ownerReferences"][0]["name"] == "widget.v1.0.0"
    )

    condition = cluster.get("operatorcondition", "widget.v1.0.0")
    condition["spec"]["conditions"][0]["status"] = "True"
    cluster.store.update(condition)
    cluster.reconcile()

    assert {"widget.v2.0.0": "Succeeded"} == _csv_phases(cluster)


def test_shared_crd_upgrade_refused_when_existing_resources_fail_the_new_schema(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """An upgrade whose CRD schema rejects an existing custom resource fails its InstallPlan, naming the resource."""
    loose = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "string"}}}}}
    strict = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}
    v1 = B("widget", "1.0.0", owns=(GVK,), crds=(crd("example.io", "Widget", schema=loose),))
    cluster = _cluster(make_cluster, _published(tmp_path, [v1]))
    cluster.reconcile()
    cluster.store.create(
        {
            "apiVersion": "example.io/v1",
            "kind": "Widget",
            "metadata": {"name": "big", "namespace": "apps"},
            "spec": {"size": "XL"},
        }
    )

    v2 = B("widget", "2.0.0", replaces="widget.v1.0.0", owns=(GVK,), crds=(crd("example.io", "Widget", schema=strict),))
    _published(tmp_path, [v1, v2])
    cluster.clock.advance(600)
    cluster.reconcile()

    plan = cluster.plans()[-1]
    assert "Failed" == plan["status"]["phase"]
    installed = cluster.condition(plan, "Installed")
    assert "InstallComponentFailed" == installed["reason"]
    assert "apps/big" in installed["message"]
    assert "spec.size" in installed["message"]
    stored = cluster.get("crd", "widgets.example.io", None)
    assert (
        "string"
        == stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"][
            "type"
        ]
    )
    sub = cluster.get("sub", "widget")
    assert "InstallPlanFailed" == cluster.condition(sub, "InstallPlanFailed")["type"]
    assert "UpgradeFailed" == sub["status"]["state"]


@pytest.mark.kube
def test_optional_objects_follow_their_csv(cluster: Cluster) -> None:
    """Same-named bundle objects are updated in place, renamed ones replaced, and all go with the last CSV."""
    cluster.subscribe("postgres-operator", channel="stable", starting_csv="postgres-operator.v2.2.0", approval="Manual")
    cluster.reconcile()
    cluster.approve(cluster.plans()[-1]["metadata"]["name"])
    cluster.reconcile()
    assert "Succeeded" == cluster.phase("postgres-operator.v2.2.0")
    config = cluster.get("cm", "postgres-operator-defaults")
    assert "2.2.0" == config["data"]["version"]
    assert cluster.exists("prometheusrule", "postgres-operator-alerts")

    # the head 2.3.0 replaces 2.2.0 and renames the alerts object; its plan waits for approval
    assert ["postgres-operator.v2.3.0"] == cluster.plans()[-1]["spec"]["clusterServiceVersionNames"]
    cluster.approve(cluster.plans()[-1]["metadata"]["name"])
    cluster.reconcile()

    assert "postgres-operator.v2.3.0" == cluster.get("sub", "postgres-operator")["status"]["installedCSV"]
    assert not cluster.exists("csv", "postgres-operator.v2.2.0")
    upgraded = cluster.get("cm", "postgres-operator-defaults")
    assert "2.3.0" == upgraded["data"]["version"]
    assert config["metadata"]["uid"] == upgraded["metadata"]["uid"]
    assert not cluster.exists("prometheusrule", "postgres-operator-alerts")
    assert cluster.exists("prometheusrule", "postgres-operator-alerts-v2")

    cluster.store.delete("operators.coreos.com/v1alpha1", "Subscription", "postgres-operator", "operators")
    cluster.store.delete(
        "operators.coreos.com/v1alpha1", "ClusterServiceVersion", "postgres-operator.v2.3.0", "operators"
    )
    cluster.reconcile()

    assert not cluster.exists("csv", "postgres-operator.v2.3.0")
    assert not cluster.exists("cm", "postgres-operator-defaults")
    assert not cluster.exists("prometheusrule", "postgres-operator-alerts-v2")
    assert not cluster.exists("deploy", "postgres-operator")
    assert [] == [n for n in cluster.names("clusterrole", None) if n.startswith("postgres-operator.v2.3.0")]
    assert cluster.exists("crd", "postgresclusters.db.example.io", None)  # CRDs outlive their operators


@pytest.mark.kube
def test_a_served_crd_version_is_removed_only_after_it_stopped_being_served(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """Dropping a served version is refused; unserving it first, then dropping it, works and cleans storedVersions."""

    def versions(*spec: tuple[str, bool, bool]) -> dict[str, object]:
        widget = crd("example.io", "Widget")
        widget["spec"]["versions"] = [
            {"name": n, "served": served, "storage": storage, "schema": {"openAPIV3Schema": {"type": "object"}}}
            for n, served, storage in spec
        ]
        return widget

    old = ("example.io", "v1alpha1", "Widget")
    new = ("example.io", "v1", "Widget")
    v1 = B("widget", "1.0.0", owns=(old, new), crds=(versions(("v1alpha1", True, False), ("v1", True, True)),))
    cluster = _cluster(make_cluster, _published(tmp_path, [v1]))
    cluster.reconcile()
    cluster.store.update_status(
        {**cluster.get("crd", "widgets.example.io", None), "status": {"storedVersions": ["v1alpha1", "v1"]}}
    )

    dropped = B("widget", "2.0.0", replaces=v1.name, owns=(new,), crds=(versions(("v1", True, True)),))
    _published(tmp_path, [v1, dropped])
    cluster.clock.advance(600)
    cluster.reconcile()
    failed = cluster.condition(cluster.plans()[-1], "Installed")
    assert "Failed" == cluster.plans()[-1]["status"]["phase"]
    assert "v1alpha1" in failed["message"]
    assert "served" in failed["message"]

    unserved = B(
        "widget",
        "2.0.1",
        replaces=v1.name,
        owns=(new,),
        crds=(versions(("v1alpha1", False, False), ("v1", True, True)),),
    )
    removed = B("widget", "3.0.0", replaces=unserved.name, owns=(new,), crds=(versions(("v1", True, True)),))
    _published(tmp_path, [v1, unserved, removed])
    cluster.clock.advance(600)
    cluster.reconcile()

    assert {"widget.v3.0.0": "Succeeded"} == _csv_phases(cluster)
    stored = cluster.get("crd", "widgets.example.io", None)
    assert ["v1"] == [v["name"] for v in stored["spec"]["versions"]]
    assert ["v1"] == stored["status"]["storedVersions"]
