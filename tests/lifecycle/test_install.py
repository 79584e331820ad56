"""Installing operators end to end on the embedded store: Subscription → InstallPlan → CSV Succeeded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from olmkit.store import MemoryStore
from tests.lifecycle.harness import EXAMPLES, B, Cluster, csv_manifest


@pytest.mark.kube
def test_install_with_dependency(cluster: Cluster) -> None:
    """A subscription installs the channel head and, for the API it requires, a dependency (generated Subscription)."""
    cluster.subscribe("postgres-operator", channel="stable")

    outcome = cluster.reconcile()

    assert outcome.stable, outcome.pending
    assert ["install-" in n for n in cluster.names("ip")] == [True]
    plan = cluster.plans()[0]
    assert "Complete" == plan["status"]["phase"]
    assert ["postgres-operator.v2.3.0", "cert-manager-lite.v1.2.0"] == plan["spec"]["clusterServiceVersionNames"]
    kinds = [s["resource"]["kind"] for s in plan["status"]["plan"]]
    assert ["ClusterServiceVersion", "ClusterServiceVersion"] == kinds[:2]
    assert {"CustomResourceDefinition"} == set(kinds[2:5])
    assert "Subscription" == kinds[-1]
    assert all(s["status"] in ("Created", "Present") for s in plan["status"]["plan"])
    assert "Succeeded" == cluster.phase("postgres-operator.v2.3.0")
    assert "Succeeded" == cluster.phase("cert-manager-lite.v1.2.0")

    sub = cluster.get("sub", "postgres-operator")
    assert "AtLatestKnown" == sub["status"]["state"]
    assert "postgres-operator.v2.3.0" == sub["status"]["installedCSV"]
    assert plan["metadata"]["name"] == sub["status"]["installPlanRef"]["name"]
    dep = cluster.get("sub", "cert-manager-lite-stable-examples-olm")
    assert "cert-manager-lite.v1.2.0" == dep["spec"]["startingCSV"]
    assert plan["metadata"]["name"] == dep["metadata"]["annotations"]["operators.coreos.com/generated-by"]
    assert "cert-manager-lite.v1.2.0" == dep["status"]["installedCSV"]


@pytest.mark.kube
def test_installed_csv_carries_bundle_properties_and_owns_its_workload(cluster: Cluster) -> None:
    """The CSV gets the properties annotation; its Deployment, RBAC and service account are created and owned by it."""
    cluster.subscribe("cert-manager-lite", channel="stable")
    cluster.reconcile()

    csv = cluster.get("csv", "cert-manager-lite.v1.2.0")
    props = orjson.loads(csv["metadata"]["annotations"]["operatorframework.io/properties"])["properties"]
    assert {"type": "olm.package", "value": {"packageName": "cert-manager-lite", "version": "1.2.0"}} in props
    deployment = cluster.get("deploy", "cert-manager-lite")
    assert [csv["metadata"]["uid"]] == [r["uid"] for r in deployment["metadata"]["ownerReferences"]]
    assert 1 == deployment["status"]["availableReplicas"]
    account = cluster.get("sa", "cert-manager-lite")
    assert csv["metadata"]["uid"] in [r["uid"] for r in account["metadata"]["ownerReferences"]]
    roles = cluster.names("role")
    assert 1 == len(roles)
    assert roles[0].startswith("cert-manager-lite.v1.2.0-cert-manager-lite-")
    requirements = {(r["kind"], r["name"]): r["status"] for r in csv["status"]["requirementStatus"]}
    assert "Present" == requirements[("ServiceAccount", "cert-manager-lite")]
    assert "Present" == requirements[("CustomResourceDefinition", "certificates.certs.example.io")]
    condition = cluster.get("operatorcondition", "cert-manager-lite.v1.2.0")
    assert ["cert-manager-lite"] == condition["spec"]["deployments"]


@pytest.mark.kube
def test_manual_approval_waits_for_approve(cluster: Cluster) -> None:
    """With installPlanApproval Manual nothing is created until the plan is approved."""
    cluster.subscribe("cert-manager-lite", channel="stable", approval="Manual")
    cluster.reconcile()

    plan = cluster.plans()[0]
    assert "RequiresApproval" == plan["status"]["phase"]
    assert [] == cluster.names("csv")
    sub = cluster.get("sub", "cert-manager-lite")
    assert "UpgradePending" == sub["status"]["state"]
    assert "RequiresApproval" == cluster.condition(sub, "InstallPlanPending")["reason"]

    plan["spec"]["approved"] = True
    cluster.store.update(plan)
    cluster.reconcile()

    assert "Complete" == cluster.plans()[0]["status"]["phase"]
    assert "Succeeded" == cluster.phase("cert-manager-lite.v1.2.0")
    sub = cluster.get("sub", "cert-manager-lite")
    assert cluster.condition(sub, "InstallPlanPending") is None
    assert "AtLatestKnown" == sub["status"]["state"]


@pytest.mark.kube
def test_unsatisfiable_subscription_gets_resolution_failed_with_explanation(cluster: Cluster) -> None:
    """A subscription nothing can satisfy gets ResolutionFailed/ConstraintsNotSatisfiable naming the reason."""
    cluster.subscribe("legacy-monitor", channel="stable", starting_csv="legacy-monitor.v0.1.0")  # deprecated
    outcome = cluster.reconcile()

    assert outcome.stable
    sub = cluster.get("sub", "legacy-monitor")
    failed = cluster.condition(sub, "ResolutionFailed")
    assert failed is not None
    assert "ConstraintsNotSatisfiable" == failed["reason"]
    assert failed["message"].startswith("constraints not satisfiable:")
    assert "legacy-monitor.v0.1.0 is deprecated" in failed["message"]
    assert [] == cluster.plans()
    assert any("resolution failed" in e for e in cluster.reporter.events)


def test_missing_operator_group_prevents_resolution(make_cluster) -> None:  # type: ignore[no-untyped-def]
    """Without an OperatorGroup the namespace cannot be resolved (ErrorPreventedResolution)."""
    from tests.lifecycle.harness import EXAMPLES

    cluster = make_cluster()
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.subscribe("cert-manager-lite")
    outcome = cluster.reconcile()

    assert outcome.stable  # the retry is a resync, not pending work
    failed = cluster.condition(cluster.get("sub", "cert-manager-lite"), "ResolutionFailed")
    assert "ErrorPreventedResolution" == failed["reason"]
    assert "OperatorGroup" in failed["message"]


@pytest.mark.kube
def test_one_operator_in_two_namespaces_keeps_each_namespace_s_cluster_rbac(cluster: Cluster) -> None:
    """The same CSV in two namespaces gets cluster RBAC per namespace: neither overwrites nor deletes the other.

    Each namespace's group watches only its own namespace: two global groups providing the
    same APIs would conflict (InterOperatorGroupOwnerConflict).
    """
    cluster.operator_group("operators", targets=["operators"])
    cluster.operator_group("other", targets=["other"])
    for ns in ("operators", "other"):
        cluster.subscribe("postgres-operator", channel="stable", namespace=ns)
    cluster.reconcile()

    for ns in ("operators", "other"):
        assert "Succeeded" == cluster.phase("postgres-operator.v2.3.0", ns)
    bindings = [
        b
        for b in cluster.store.list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")
        if "postgres" in b["metadata"]["name"]
    ]
    assert ["operators", "other"] == sorted(b["subjects"][0]["namespace"] for b in bindings)

    cluster.store.delete("operators.coreos.com/v1alpha1", "Subscription", "postgres-operator", "other")
    cluster.store.delete("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "postgres-operator.v2.3.0", "other")
    cluster.reconcile()

    left = [
        b
        for b in cluster.store.list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")
        if "postgres" in b["metadata"]["name"]
    ]
    assert ["operators"] == [b["subjects"][0]["namespace"] for b in left]
    assert "Succeeded" == cluster.phase("postgres-operator.v2.3.0", "operators")


class Counting(MemoryStore):
    """A memory store that counts the writes it is asked for, by (method, kind), refused ones too."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: Counter[tuple[str, str]] = Counter()

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.asked["create", str(obj.get("kind"))] += 1
        return super().create(obj)

    def update(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.asked["update", str(obj.get("kind"))] += 1
        return super().update(obj)

    def update_status(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.asked["status", str(obj.get("kind"))] += 1
        return super().update_status(obj)


def _installed(
    olmkit_pm: Any, package: str, store: Counting | None = None, targets: list[str] | None = None
) -> tuple[Counting, Cluster]:
    """``package`` installed in ``operators`` (an OperatorGroup of ``targets``) on a fresh counting store."""
    store = store if store is not None else Counting()
    cluster = Cluster(None, olmkit_pm, store=store)
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.operator_group(targets=targets)
    cluster.subscribe(package, channel="stable")
    assert cluster.reconcile().stable
    return store, cluster


def test_a_crd_already_as_the_bundle_has_it_gets_no_update(olmkit_pm: Any) -> None:
    """Installing the same operator in a second namespace finds its CRDs as they are: no update is sent.

    (On an embedded store an update that changes nothing writes nothing; through an API
    server it still costs a request per CRD per namespace.)
    """
    store = Counting()
    cluster = Cluster(None, olmkit_pm, store=store)
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    for ns in ("operators", "other"):
        cluster.operator_group(ns, targets=[ns])
    cluster.subscribe("cert-manager-lite", channel="stable")
    assert cluster.reconcile().stable
    before = store.asked["update", "CustomResourceDefinition"]

    cluster.subscribe("cert-manager-lite", channel="stable", namespace="other")
    assert cluster.reconcile().stable

    assert "Succeeded" == cluster.phase("cert-manager-lite.v1.2.0", "other")
    assert "Present" in {s["status"] for s in cluster.plans("other")[0]["status"]["plan"]}
    assert before == store.asked["update", "CustomResourceDefinition"]


def test_the_install_strategy_does_not_create_the_service_account_the_plan_made(olmkit_pm: Any) -> None:
    """The InstallPlan creates the CSV's service account; the strategy finds it and sends no create (refused)."""
    store, cluster = _installed(olmkit_pm, "cert-manager-lite")

    assert "Succeeded" == cluster.phase("cert-manager-lite.v1.2.0")
    assert ["cert-manager-lite"] == cluster.names("sa")
    assert 1 == store.asked["create", "ServiceAccount"]


def test_an_install_plan_records_its_steps_after_its_crds_and_at_its_end(olmkit_pm: Any) -> None:
    """A plan's status is written when it is planned, once its CRDs are in (a killed process redoes the rest)
    and when it is Complete: three writes, however many steps it has."""
    store, cluster = _installed(olmkit_pm, "postgres-operator")

    (plan,) = cluster.plans()
    assert "Complete" == plan["status"]["phase"]
    assert len(plan["status"]["plan"]) > 10
    assert {"Created"} == {s["status"] for s in plan["status"]["plan"]}
    assert 3 == store.asked["status", "InstallPlan"]


def test_a_new_csv_gets_its_finalizer_and_group_annotations_without_an_update(olmkit_pm: Any) -> None:
    """An InstallPlan creates each CSV with the cleanup finalizer and its OperatorGroup's member annotations
    (no update follows); a CSV made otherwise gets both in the CSV controller's first write (one update)."""
    store, cluster = _installed(olmkit_pm, "postgres-operator", targets=["operators"])

    for name in ("postgres-operator.v2.3.0", "cert-manager-lite.v1.2.0"):
        csv = cluster.get("csv", name)
        assert "Succeeded" == csv["status"]["phase"]
        assert ["operators.coreos.com/csv-cleanup"] == csv["metadata"]["finalizers"]
        annotations = csv["metadata"]["annotations"]
        assert ("og", "operators", "operators") == (
            annotations["olm.operatorGroup"],
            annotations["olm.operatorNamespace"],
            annotations["olm.targetNamespaces"],
        )
    assert 0 == store.asked["update", "ClusterServiceVersion"]

    by_hand = csv_manifest(B("by-hand", "1.0.0"))
    cluster.apply(by_hand | {"metadata": {"name": "by-hand.v1.0.0", "namespace": "operators"}})
    cluster.reconcile()

    csv = cluster.get("csv", "by-hand.v1.0.0")
    assert ["operators.coreos.com/csv-cleanup"] == csv["metadata"]["finalizers"]
    assert "og" == csv["metadata"]["annotations"]["olm.operatorGroup"]
    assert 1 == store.asked["update", "ClusterServiceVersion"]


def test_a_subscription_is_written_with_its_install_plan_and_when_installed(olmkit_pm: Any) -> None:
    """An install writes a Subscription's status three times: the catalogs' health (before any resolution),
    the InstallPlan with InstallPlanPending in the same write (not one after the other), and the installed
    CSV (AtLatestKnown)."""

    class Recording(Counting):
        def __init__(self) -> None:
            super().__init__()
            self.written: list[dict[str, Any]] = []

        def update_status(self, obj: Mapping[str, Any]) -> dict[str, Any]:
            if obj.get("kind") == "Subscription":
                self.written.append(dict(obj["status"]))
            return super().update_status(obj)

    store = Recording()
    _, cluster = _installed(olmkit_pm, "storage-operator", store)

    health, planned, installed = store.written
    assert [True] == [h["healthy"] for h in health["catalogHealth"]]
    assert "installPlanRef" not in health
    assert ("UpgradePending", "storage-operator.v0.5.0") == (planned["state"], planned["currentCSV"])
    assert planned["installPlanRef"]["name"] == cluster.plans()[0]["metadata"]["name"]
    assert [True] == [h["healthy"] for h in planned["catalogHealth"]]
    conditions = {c["type"]: (c["status"], c.get("reason")) for c in planned["conditions"]}
    assert {
        "CatalogSourcesUnhealthy": ("False", "AllCatalogSourcesHealthy"),
        "InstallPlanPending": ("True", "Installing"),
    } == conditions
    assert ("AtLatestKnown", "storage-operator.v0.5.0") == (installed["state"], installed["installedCSV"])
    assert ["CatalogSourcesUnhealthy"] == [c["type"] for c in installed["conditions"]]
    assert installed == cluster.get("sub", "storage-operator")["status"]


def _lease_requests(cluster: Cluster) -> int | None:
    """API requests for Leases the served side answered so far (``None`` on an embedded store)."""
    from prometheus_client.parser import text_string_to_metric_families

    from tests.lifecycle.harness import ServedCluster
    from tests.lifecycle.served import metrics

    if not isinstance(cluster, ServedCluster):
        return None
    return sum(
        int(sample.value)
        for family in text_string_to_metric_families(metrics(cluster.served))
        for sample in family.samples
        if sample.name == "apiserver_request_total" and sample.labels.get("resource") == "leases"
    )


@pytest.mark.kube
def test_a_namespace_resolves_again_under_the_lease_it_holds(cluster: Cluster) -> None:
    """The namespace's resolution Lease is kept between resolutions: a second resolution soon after the
    first neither writes it (same resourceVersion) nor, through an API server, sends any request for it;
    when the controllers stop, the Lease is released for other processes."""
    cluster.subscribe("legacy-monitor", channel="stable", starting_csv="legacy-monitor.v0.1.0")  # deprecated
    assert cluster.reconcile().stable
    lease = cluster.store.get("coordination.k8s.io/v1", "Lease", "olmkit-resolver", "operators")
    requests = _lease_requests(cluster)

    cluster.subscribe("no-such-operator", channel="stable")
    assert cluster.reconcile().stable

    assert (
        "ConstraintsNotSatisfiable"
        == cluster.condition(cluster.get("sub", "no-such-operator"), "ResolutionFailed")["reason"]
    )
    assert requests == _lease_requests(cluster)  # before this test reads the Lease itself
    after = cluster.store.get("coordination.k8s.io/v1", "Lease", "olmkit-resolver", "operators")
    assert lease["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]
    assert after["spec"]["holderIdentity"]

    cluster.manager.close()

    released = cluster.store.get("coordination.k8s.io/v1", "Lease", "olmkit-resolver", "operators")
    assert "" == released["spec"]["holderIdentity"]


def test_a_lease_held_between_resolutions_keeps_another_process_out_until_released(
    olmkit_pm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process keeps the namespace's Lease after resolving; another process (another holder identity)
    with work for that namespace waits instead of resolving, and resolves as soon as the first one's
    controllers stop (they release the Lease)."""
    from olmkit.lifecycle import build_manager, lease

    cluster = Cluster(None, olmkit_pm, store=MemoryStore())
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.operator_group()
    cluster.subscribe("legacy-monitor", channel="stable", starting_csv="legacy-monitor.v0.1.0")  # deprecated
    assert cluster.reconcile().stable
    monkeypatch.setattr(lease, "_IDENTITY", "another-host/1/other")
    other = build_manager(cluster.store, olmkit_pm, clock=cluster.clock)

    cluster.subscribe("no-such-operator", channel="stable")
    waiting = other.run_until_stable(timeout=5)

    assert not waiting.stable
    assert any("another olmkit process is resolving this namespace" in p for p in waiting.pending)
    assert cluster.condition(cluster.get("sub", "no-such-operator"), "ResolutionFailed") is None

    cluster.manager.close()
    assert other.run_until_stable(timeout=5).stable

    failed = cluster.condition(cluster.get("sub", "no-such-operator"), "ResolutionFailed")
    assert failed is not None
    assert "ConstraintsNotSatisfiable" == failed["reason"]
    held = cluster.store.get("coordination.k8s.io/v1", "Lease", "olmkit-resolver", "operators")["spec"]
    assert "another-host/1/other" == held["holderIdentity"]
    other.close()
