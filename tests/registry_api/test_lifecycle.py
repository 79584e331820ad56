"""CatalogSources of ``sourceType: grpc`` on the embedded cluster: connection states, installs
through a registry server, and an unreachable server failing only the subscriptions that need it."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from olmkit.plugins.grpc_registry.server import RegistryServer
from tests.lifecycle.harness import V1A1, B, Cluster, write_catalog

WIDGET = ("example.io", "v1", "Widget")
GADGET = ("example.io", "v1", "Gadget")


@pytest.fixture
def make_cluster(tmp_path: Path, olmkit_pm: Any) -> Iterator[Callable[[], Cluster]]:
    made: list[Cluster] = []

    def make() -> Cluster:
        cluster = Cluster(tmp_path / f"cluster{len(made)}.db", olmkit_pm)
        made.append(cluster)
        cluster.operator_group()
        return cluster

    yield make
    for cluster in made:
        cluster.close()


def _grpc_source(cluster: Cluster, name: str, address: str, poll: str = "") -> None:
    spec: dict[str, Any] = {"sourceType": "grpc", "address": address}
    if poll:
        spec["updateStrategy"] = {"registryPoll": {"interval": poll}}
    cluster.apply(
        {"apiVersion": V1A1, "kind": "CatalogSource", "metadata": {"name": name, "namespace": "olm"}, "spec": spec}
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _states(cluster: Cluster, name: str) -> list[str]:
    prefix = f"catalogsource olm/{name}: "
    return [
        e[len(prefix) :].split(":")[0]
        for e in cluster.reporter.events
        if e.startswith(prefix) and "catalog loaded" not in e
    ]


def test_install_through_a_registry_server(
    tmp_path: Path, make_cluster: Callable[[], Cluster], serve: Callable[..., Any]
) -> None:
    """CONNECTING then READY with the address; the operator installs, its manifests fetched with GetBundle."""
    catalog = write_catalog(tmp_path / "catalog", [B("widget", "1.0.0", owns=(WIDGET,))])
    server = serve(catalog)
    address = f"127.0.0.1:{server.port}"
    cluster = make_cluster()
    _grpc_source(cluster, "remote", address)
    cluster.subscribe("widget", source="remote")

    outcome = cluster.reconcile()

    assert outcome.stable
    source = cluster.get("catsrc", "remote", "olm")
    assert ("READY", address) == (
        source["status"]["connectionState"]["lastObservedState"],
        source["status"]["connectionState"]["address"],
    )
    assert ["CONNECTING", "READY"] == _states(cluster, "remote")
    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    assert cluster.exists("crd", "widgets.example.io", None)


def test_unreachable_server_fails_only_its_subscriptions_until_it_comes_back(
    tmp_path: Path, make_cluster: Callable[[], Cluster], olmkit_pm: Any
) -> None:
    """A dead address: TRANSIENT_FAILURE, its subscription fails naming it, the other installs; then it recovers."""
    good = write_catalog(tmp_path / "good", [B("widget", "1.0.0", owns=(WIDGET,))])
    remote = write_catalog(tmp_path / "remote", [B("gadget", "1.0.0", owns=(GADGET,))])
    address = f"127.0.0.1:{_free_port()}"
    cluster = make_cluster()
    cluster.catalog_source("good", good)
    _grpc_source(cluster, "remote", address)
    cluster.subscribe("widget", source="good")
    cluster.subscribe("gadget", source="remote")

    assert cluster.reconcile().stable

    source = cluster.get("catsrc", "remote", "olm")
    assert "TRANSIENT_FAILURE" == source["status"]["connectionState"]["lastObservedState"]
    assert address in source["status"]["message"]
    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    failed = cluster.condition(cluster.get("sub", "gadget"), "ResolutionFailed")
    assert failed is not None
    assert "ErrorPreventedResolution" == failed["reason"]
    assert failed["message"].startswith(f"error using catalogsource olm/remote: registry server {address}")
    assert cluster.condition(cluster.get("sub", "widget"), "ResolutionFailed") is None
    assert ["CONNECTING", "TRANSIENT_FAILURE"] == _states(cluster, "remote")

    server = RegistryServer(remote, olmkit_pm, address=address, watch_interval=0)
    server.start()
    try:
        cluster.clock.advance(30)  # the failed source is retried
        assert cluster.reconcile().stable
    finally:
        server.stop(0)

    assert "READY" == cluster.get("catsrc", "remote", "olm")["status"]["connectionState"]["lastObservedState"]
    assert "Succeeded" == cluster.phase("gadget.v1.0.0")
    assert cluster.condition(cluster.get("sub", "gadget"), "ResolutionFailed") is None
    assert ["CONNECTING", "TRANSIENT_FAILURE", "READY"] == _states(cluster, "remote")


def test_registry_poll_rereads_the_server(
    tmp_path: Path, make_cluster: Callable[[], Cluster], serve: Callable[..., Any]
) -> None:
    """spec.updateStrategy.registryPoll.interval re-reads the server: a new version is installed."""
    catalog = write_catalog(tmp_path / "catalog", [B("widget", "1.0.0", owns=(WIDGET,))])
    server = serve(catalog, watch_interval=0)
    cluster = make_cluster()
    _grpc_source(cluster, "remote", f"127.0.0.1:{server.port}", poll="10m")
    cluster.subscribe("widget", source="remote")
    assert cluster.reconcile().stable
    assert "Succeeded" == cluster.phase("widget.v1.0.0")

    write_catalog(
        tmp_path / "catalog",
        [B("widget", "1.0.0", owns=(WIDGET,)), B("widget", "1.1.0", replaces="widget.v1.0.0", owns=(WIDGET,))],
    )
    assert server.check()
    cluster.clock.advance(600)
    assert cluster.reconcile().stable

    assert "Succeeded" == cluster.phase("widget.v1.1.0")
    assert "widget.v1.1.0" == cluster.get("sub", "widget")["status"]["installedCSV"]


def test_a_server_that_goes_away_after_ready_is_noticed_without_a_poll_interval(
    tmp_path: Path, make_cluster: Callable[[], Cluster], olmkit_pm: Any
) -> None:
    """READY, then the server stops: the next connection check says TRANSIENT_FAILURE; back: READY again."""
    catalog = write_catalog(tmp_path / "catalog", [B("widget", "1.0.0", owns=(WIDGET,))])
    address = f"127.0.0.1:{_free_port()}"
    server = RegistryServer(catalog, olmkit_pm, address=address, watch_interval=0)
    server.start()
    cluster = make_cluster()
    _grpc_source(cluster, "remote", address)
    try:
        assert cluster.reconcile().stable
        assert ["CONNECTING", "READY"] == _states(cluster, "remote")
    finally:
        server.stop(0)

    cluster.clock.advance(30)
    assert cluster.reconcile().stable
    assert ["CONNECTING", "READY", "TRANSIENT_FAILURE"] == _states(cluster, "remote")

    server = RegistryServer(catalog, olmkit_pm, address=address, watch_interval=0)
    server.start()
    try:
        cluster.clock.advance(30)
        assert cluster.reconcile().stable
    finally:
        server.stop(0)
    assert ["CONNECTING", "READY", "TRANSIENT_FAILURE", "READY"] == _states(cluster, "remote")


def test_example_catalog_installs_through_its_server(
    make_cluster: Callable[[], Cluster], serve: Callable[..., Any]
) -> None:
    """The example catalog served over gRPC: postgres-operator and its cert-manager-lite dependency install
    (their manifests come from the bundle directories the server reads for GetBundle)."""
    from tests.lifecycle.harness import EXAMPLES

    server = serve(EXAMPLES / "catalog")
    cluster = make_cluster()
    _grpc_source(cluster, "examples", f"127.0.0.1:{server.port}")
    cluster.subscribe("postgres-operator", channel="stable", source="examples")

    assert cluster.reconcile().stable

    assert "Succeeded" == cluster.phase("postgres-operator.v2.3.0")
    assert "Succeeded" == cluster.phase("cert-manager-lite.v1.2.0")
