"""What goes wrong, and how each failure shows: bundles without content, Deployments that never
become available, unhealthy catalogs, CSVs without an OperatorGroup or a strategy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from tests.lifecycle.harness import V1A1, B, Cluster, bundle_blob, crd, csv_manifest, write_catalog

GVK = ("example.io", "v1", "Widget")


def _cluster(make_cluster: Callable[..., Cluster], catalog: Path, **options: object) -> Cluster:
    cluster = make_cluster(**options)
    cluster.catalog_source("test", catalog)
    cluster.operator_group()
    cluster.subscribe("widget", source="test")
    return cluster


@pytest.mark.kube
def test_bundle_without_content_fails_with_bundle_unpack_failed(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """A chosen bundle with no inline manifests and a registry image: BundleUnpackFailed names the bundle."""
    catalog = write_catalog(tmp_path / "catalog", [B("widget", "1.0.0", owns=(GVK,), inline=False)])
    cluster = _cluster(make_cluster, catalog)

    outcome = cluster.reconcile()

    assert outcome.stable
    failed = cluster.condition(cluster.get("sub", "widget"), "BundleUnpackFailed")
    assert "BundleUnpackFailed" == failed["reason"]
    assert "bundle widget.v1.0.0 (image example.invalid/widget-bundle:v1.0.0)" in failed["message"]
    assert [] == cluster.plans()
    assert [] == cluster.names("csv")


def test_bundle_unpack_failed_message_is_per_subscription(tmp_path: Path, make_cluster: Callable[..., Cluster]) -> None:
    """Two subscriptions whose bundles both cannot be unpacked: each one's message names its own bundle."""
    gadget = ("example.io", "v1", "Gadget")
    catalog = write_catalog(
        tmp_path / "catalog",
        [B("widget", "1.0.0", owns=(GVK,), inline=False), B("gadget", "2.0.0", owns=(gadget,), inline=False)],
    )
    cluster = _cluster(make_cluster, catalog)
    cluster.subscribe("gadget", source="test")

    cluster.reconcile()

    widget = cluster.condition(cluster.get("sub", "widget"), "BundleUnpackFailed")["message"]
    gadget_message = cluster.condition(cluster.get("sub", "gadget"), "BundleUnpackFailed")["message"]
    assert widget.startswith("bundle widget.v1.0.0 (image ")
    assert "gadget" not in widget
    assert gadget_message.startswith("bundle gadget.v2.0.0 (image ")
    assert "widget" not in gadget_message


def test_a_subscription_whose_bundle_is_fine_names_the_bundle_it_waits_for(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """A subscription with a good bundle, blocked by another's, says which bundle it waits for."""
    gadget = ("example.io", "v1", "Gadget")
    catalog = write_catalog(
        tmp_path / "catalog",
        [B("widget", "1.0.0", owns=(GVK,), inline=False), B("gadget", "2.0.0", owns=(gadget,))],
    )
    cluster = _cluster(make_cluster, catalog)
    cluster.subscribe("gadget", source="test")

    cluster.reconcile()

    message = cluster.condition(cluster.get("sub", "gadget"), "BundleUnpackFailed")["message"]
    assert message.startswith("waiting for the namespace's other bundles, which could not be unpacked: ")
    assert "bundle widget.v1.0.0 (image " in message


@pytest.mark.kube
def test_deployment_that_never_becomes_available_fails_the_install_after_the_timeout(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """Without the simulated kubelet the CSV waits in Installing, then fails with InstallCheckFailed."""
    catalog = write_catalog(tmp_path / "catalog", [B("widget", "1.0.0", owns=(GVK,))])
    cluster = _cluster(make_cluster, catalog, kubelet=False, install_timeout=120)
    start = cluster.clock.now()

    outcome = cluster.reconcile()

    assert outcome.stable
    csv = cluster.get("csv", "widget.v1.0.0")
    assert "Failed" == csv["status"]["phase"]
    assert "InstallCheckFailed" == csv["status"]["reason"]
    assert csv["status"]["message"].startswith('install timeout: waiting for deployment "widget"')
    assert cluster.clock.now() - start >= 120
    assert ["Pending", "InstallReady", "Installing", "Failed"] == [c["phase"] for c in csv["status"]["conditions"]]


def test_a_never_ready_pod_template_fails_even_with_the_kubelet(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """The simulated kubelet leaves a template annotated never-ready unavailable; other CSVs still succeed."""
    catalog = write_catalog(
        tmp_path / "catalog",
        [
            B("widget", "1.0.0", owns=(GVK,), never_ready=True),
            B("gadget", "1.0.0", owns=(("example.io", "v1", "Gadget"),)),
        ],
    )
    cluster = _cluster(make_cluster, catalog, install_timeout=60)
    cluster.subscribe("gadget", source="test")

    cluster.reconcile()

    assert "Failed" == cluster.phase("widget.v1.0.0")
    assert "Succeeded" == cluster.phase("gadget.v1.0.0")
    assert 0 == cluster.get("deploy", "widget")["status"]["availableReplicas"]


@pytest.mark.kube
def test_unreachable_catalog_source_is_reported_everywhere(
    tmp_path: Path, make_cluster: Callable[..., Cluster]
) -> None:
    """A CatalogSource whose path is missing is TRANSIENT_FAILURE; its subscriptions say so and cannot resolve."""
    cluster = _cluster(make_cluster, tmp_path / "nowhere")

    outcome = cluster.reconcile()

    assert outcome.stable
    source = cluster.get("catsrc", "test", "olm")
    assert "TRANSIENT_FAILURE" == source["status"]["connectionState"]["lastObservedState"]
    assert "nowhere" in source["status"]["message"]
    sub = cluster.get("sub", "widget")
    unhealthy = cluster.condition(sub, "CatalogSourcesUnhealthy")
    assert ("True", "UnhealthyCatalogSourceFound") == (unhealthy["status"], unhealthy["reason"])
    assert [False] == [h["healthy"] for h in sub["status"]["catalogHealth"]]
    assert "ErrorPreventedResolution" == cluster.condition(sub, "ResolutionFailed")["reason"]

    write_catalog(tmp_path / "nowhere", [B("widget", "1.0.0", owns=(GVK,))])
    cluster.clock.advance(30)  # the failed source is retried on its own
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    sub = cluster.get("sub", "widget")
    assert "AllCatalogSourcesHealthy" == cluster.condition(sub, "CatalogSourcesUnhealthy")["reason"]
    assert cluster.condition(sub, "ResolutionFailed") is None


@pytest.mark.kube
def test_configmap_catalog_source(make_cluster: Callable[..., Cluster]) -> None:
    """A configmap CatalogSource serves the FBC in a ConfigMap; editing the ConfigMap re-reads it."""
    cluster = make_cluster()
    v1 = B("widget", "1.0.0", owns=(GVK,))
    blobs = [
        {"schema": "olm.package", "name": "widget", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "widget", "name": "stable", "entries": [{"name": v1.name}]},
        bundle_blob(v1),
    ]
    data = b"\n".join(orjson.dumps(b) for b in blobs).decode()
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "fbc", "namespace": "olm"},
            "data": {"catalog.json": data},
        },
        {
            "apiVersion": V1A1,
            "kind": "CatalogSource",
            "metadata": {"name": "test", "namespace": "olm"},
            "spec": {"sourceType": "configmap", "configMap": "fbc"},
        },
    )
    cluster.operator_group()
    cluster.subscribe("widget", source="test")
    cluster.reconcile()
    assert "Succeeded" == cluster.phase("widget.v1.0.0")

    v2 = B("widget", "2.0.0", replaces=v1.name, owns=(GVK,))
    blobs[1]["entries"] = [{"name": v1.name}, {"name": v2.name, "replaces": v1.name}]
    blobs.append(bundle_blob(v2))
    cm = cluster.get("cm", "fbc", "olm")
    cm["data"]["catalog.json"] = b"\n".join(orjson.dumps(b) for b in blobs).decode()
    cluster.store.update(cm)
    cluster.reconcile()

    assert {"widget.v2.0.0"} == set(cluster.names("csv"))


def _direct_csv(cluster: Cluster, b: B, **changes: object) -> None:
    csv = csv_manifest(b)
    csv["metadata"]["namespace"] = "operators"
    csv["spec"].update(changes)
    cluster.apply(csv)


def test_csv_without_operator_group_fails_until_one_exists(make_cluster: Callable[..., Cluster]) -> None:
    """A CSV in a namespace without an OperatorGroup is Failed/NoOperatorGroup; adding one lets it install."""
    cluster = make_cluster()
    b = B("widget", "1.0.0")
    _direct_csv(cluster, b)
    cluster.reconcile()

    csv = cluster.get("csv", b.name)
    assert ("Failed", "NoOperatorGroup") == (csv["status"]["phase"], csv["status"]["reason"])

    cluster.operator_group()
    cluster.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "widget", "namespace": "operators"}}
    )
    cluster.reconcile()
    csv = cluster.get("csv", b.name)
    # the service account exists but nothing grants its rules: requirements not met
    assert ("Pending", "RequirementsNotMet") == (csv["status"]["phase"], csv["status"]["reason"])
    account = next(r for r in csv["status"]["requirementStatus"] if r["kind"] == "ServiceAccount")
    assert "PresentNotSatisfied" == account["status"]
    assert ["NotSatisfied"] == [d["status"] for d in account["dependents"]]

    cluster.apply(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "any", "namespace": "operators"},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "any", "namespace": "operators"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "any"},
            "subjects": [{"kind": "ServiceAccount", "name": "widget", "namespace": "operators"}],
        },
    )
    cluster.reconcile()
    assert "Succeeded" == cluster.phase(b.name)


@pytest.mark.kube
def test_csv_waits_for_its_required_crd(make_cluster: Callable[..., Cluster]) -> None:
    """A CSV whose required CRD is missing stays Pending/RequirementsNotMet and installs once it appears."""
    cluster = make_cluster()
    cluster.operator_group()
    b = B("widget", "1.0.0", requires=(GVK,))
    _direct_csv(cluster, b, install={"strategy": "deployment", "spec": {"deployments": []}})
    cluster.reconcile()

    csv = cluster.get("csv", b.name)
    assert ("Pending", "RequirementsNotMet") == (csv["status"]["phase"], csv["status"]["reason"])
    assert [("widgets.example.io", "NotPresent")] == [
        (r["name"], r["status"]) for r in csv["status"]["requirementStatus"]
    ]

    cluster.apply(crd("example.io", "Widget"))
    cluster.reconcile()
    assert "Succeeded" == cluster.phase(b.name)


def test_unknown_install_strategy_fails_the_csv(make_cluster: Callable[..., Cluster]) -> None:
    """A CSV whose strategy no plugin registers is Failed/InvalidInstallStrategy, naming the known ones."""
    cluster = make_cluster()
    cluster.operator_group()
    b = B("widget", "1.0.0")
    _direct_csv(cluster, b, install={"strategy": "helm", "spec": {}})
    cluster.reconcile()

    csv = cluster.get("csv", b.name)
    assert ("Failed", "InvalidInstallStrategy") == (csv["status"]["phase"], csv["status"]["reason"])
    assert "install strategy 'helm' is not supported (known: deployment)" == csv["status"]["message"]
