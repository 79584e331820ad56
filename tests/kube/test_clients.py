"""Two clients of one API server: write conflicts, the controllers' retries, what a store on a
server can and cannot decide (a kind's scope), and the requests a one-shot read makes."""

from __future__ import annotations

import time

import pytest

from olmkit.kube import KubeStore, connect
from olmkit.lifecycle.runtime import Controller, ControllerManager, Key, Reporter, WatchSpec
from olmkit.store import Conflict, NotFound, retry_on_conflict
from tests.kube.conftest import cm


@pytest.fixture
def other(serve):
    """A second client of the module's server (another process would be the same to the server)."""
    store = connect(serve.kubeconfig)
    yield store
    store.close()


def test_a_stale_write_from_another_client_conflicts(kube: KubeStore, other: KubeStore, ns: str) -> None:
    """Both clients read; one writes; the other's write carries a stale resourceVersion: Conflict
    naming the object and both resourceVersions, and nothing of it is written."""
    kube.create(cm("shared", ns, n="0"))
    mine = kube.get("v1", "ConfigMap", "shared", ns)
    theirs = other.get("v1", "ConfigMap", "shared", ns)
    written = other.update({**theirs, "data": {"n": "theirs"}})

    with pytest.raises(Conflict) as info:
        kube.update({**mine, "data": {"n": "mine"}})

    assert (mine["metadata"]["resourceVersion"], written["metadata"]["resourceVersion"]) == (
        info.value.expected,
        info.value.actual,
    )
    assert f"ConfigMap {ns}/shared" in str(info.value)
    assert {"n": "theirs"} == kube.get("v1", "ConfigMap", "shared", ns)["data"]
    with pytest.raises(Conflict):
        kube.patch(
            "v1", "ConfigMap", "shared", {"metadata": {"resourceVersion": mine["metadata"]["resourceVersion"]}}, ns
        )
    with pytest.raises(Conflict):
        kube.delete("v1", "ConfigMap", "shared", ns, resource_version=mine["metadata"]["resourceVersion"])


def test_retry_on_conflict_wins_against_another_client(kube: KubeStore, other: KubeStore, ns: str) -> None:
    """A read-modify-write that loses once to another client succeeds on the next attempt."""
    kube.create(cm("counter", ns, n="0"))
    attempts = []

    def bump():
        obj = kube.get("v1", "ConfigMap", "counter", ns)
        if not attempts:
            other.patch("v1", "ConfigMap", "counter", {"data": {"n": "10"}}, ns)
        attempts.append(obj["metadata"]["resourceVersion"])
        obj["data"]["n"] = str(int(obj["data"]["n"]) + 1)
        return kube.update(obj)

    assert "11" == retry_on_conflict(bump, attempts=3, backoff=0)["data"]["n"]
    assert 2 == len(attempts)


class _Errors(Reporter):
    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def on_error(self, key: Key, error: BaseException, attempt: int, retry_in: float) -> None:
        self.errors.append(error)


def test_the_controllers_retry_a_conflict_through_their_work_queue(kube: KubeStore, other: KubeStore, ns: str) -> None:
    """A reconcile that conflicts with another client's write is retried by the manager (rate-limited
    requeue) and then succeeds: conflicts are raised by the store and handled above it."""
    kube.create(cm("target", ns, n="0"))

    class Bump(Controller):
        name = "bump"
        watches = (WatchSpec("v1", "ConfigMap"),)
        raced = False

        def reconcile(self, namespace: str, name: str) -> None:
            if namespace != ns or name != "target":
                return
            obj = kube.get("v1", "ConfigMap", name, namespace)
            if obj["data"].get("done"):
                return
            if not Bump.raced:
                Bump.raced = True
                other.patch("v1", "ConfigMap", name, {"data": {"n": "1"}}, namespace)
            kube.update({**obj, "data": {**obj["data"], "done": "yes"}})

    errors = _Errors()
    manager = ControllerManager(kube, [Bump()], reporter=errors)
    outcome = manager.run_until_stable(timeout=30)

    assert outcome.stable
    assert [Conflict] == [type(e) for e in errors.errors]
    assert {"n": "1", "done": "yes"} == kube.get("v1", "ConfigMap", "target", ns)["data"]


def test_discovery_decides_a_served_kinds_scope(kube: KubeStore) -> None:
    """register_kind cannot change what the server serves: for a served kind discovery wins; it
    declares the scope of kinds the server does not serve (yet)."""
    kube.register_kind("v1", "ConfigMap", namespaced=False)
    kube.register_kind("example.io/v1", "Widget", namespaced=False)

    assert kube.is_namespaced("v1", "ConfigMap")
    assert not kube.is_namespaced("rbac.authorization.k8s.io/v1", "ClusterRole")
    assert not kube.is_namespaced("example.io/v1", "Widget")
    assert kube.is_namespaced("example.io/v1", "Gadget")
    with pytest.raises(NotFound, match="serves no kind Widget"):
        kube.get("example.io/v1", "Widget", "w")


def test_watching_a_kind_the_server_does_not_serve_asks_discovery_once_in_a_while(kube: KubeStore) -> None:
    """Controllers poll their watches all the time: a kind with no CRD yet (OLM's, before its CRDs
    are installed) is not asked for again on every poll."""
    for _ in range(20):
        with kube.watch("nothing.example.io/v1", "Nothing", timeout=0) as watch:
            assert [] == list(watch)

    assert kube.request_count <= 2  # /apis/nothing.example.io/v1, then /apis/nothing.example.io


def test_a_kind_defined_by_a_new_crd_is_served_at_once(kube: KubeStore, ns: str) -> None:
    """Creating a CRD through the store makes its kind usable right away (discovery is asked again)."""
    assert kube.resource("gizmo.example.io/v1", "Gizmo") is None
    kube.create(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.gizmo.example.io"},
            "spec": {
                "group": "gizmo.example.io",
                "scope": "Namespaced",
                "names": {"kind": "Gizmo", "plural": "gizmos"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "subresources": {"status": {}},
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    }
                ],
            },
        }
    )

    made = kube.create(
        {"apiVersion": "gizmo.example.io/v1", "kind": "Gizmo", "metadata": {"name": "g", "namespace": ns}}
    )
    kube.update_status({**made, "status": {"phase": "Ready"}})

    assert {"phase": "Ready"} == kube.get("gizmo.example.io/v1", "Gizmo", "g", ns)["status"]


def test_reads_of_a_watched_kind_come_from_its_informer(kube: KubeStore, other: KubeStore, ns: str) -> None:
    """Once a kind is watched its gets and lists make no request, see this process's writes at
    once (deletions too) and another client's as soon as their events arrive."""
    with kube.watch("v1", "ConfigMap", ns, timeout=0) as watch:
        list(watch)
    kube.create(cm("mine", ns, k="v"))
    kube.create(cm("doomed", ns))
    kube.delete("v1", "ConfigMap", "doomed", ns)
    before = kube.request_count

    got = kube.get("v1", "ConfigMap", "mine", ns)
    listed = kube.list("v1", "ConfigMap", ns, label_selector="!absent")
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "doomed", ns)
    got["data"]["k"] = "changed by the caller"

    assert before == kube.request_count
    assert ["mine"] == [o["metadata"]["name"] for o in listed]
    assert {"k": "v"} == kube.get("v1", "ConfigMap", "mine", ns)["data"]  # callers get copies
    other.create(cm("theirs", ns))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(kube.list("v1", "ConfigMap", ns)) < 2:
        kube.wait_for_change(kube.latest_resource_version(), 0.5)
    assert ["mine", "theirs"] == [o["metadata"]["name"] for o in kube.list("v1", "ConfigMap", ns)]


def test_a_one_shot_read_makes_two_requests_and_starts_no_informer(serve, ns: str) -> None:
    """get of one object: discovery of its group version, then the GET. No list, no watch."""
    with connect(serve.kubeconfig) as fresh:
        with pytest.raises(NotFound):
            fresh.get("v1", "ConfigMap", "nothing", ns)

        assert {"GET": 2} == fresh.transport.requests
        assert fresh.latest_resource_version() is None  # no informer


def test_the_simulated_api_server_and_kubelet_never_run_against_an_api_server(kube: KubeStore, tmp_path) -> None:
    """The controllers on a store with an API server behind it: OLM's, not the simulated ones, even
    when the options ask for the embedded behaviour; on an embedded store they do run."""
    from olmkit.lifecycle import LifecycleOptions, build_manager
    from olmkit.manager import get_plugin_manager
    from olmkit.store import SqliteStore

    pm = get_plugin_manager(entrypoints=False)
    remote = build_manager(kube, pm, options=LifecycleOptions(embedded=True))
    with SqliteStore(str(tmp_path / "c.db")) as local:
        embedded = build_manager(local, pm)

    simulated = {name for name in embedded.controllers if name.startswith("simulated-")}
    assert {"simulated-apiserver", "simulated-kubelet"} <= simulated
    assert not remote.context.options.embedded
    assert set(remote.controllers) == set(embedded.controllers) - simulated


def test_the_servers_resource_version_moves_with_any_clients_write(kube: KubeStore, other: KubeStore, ns: str) -> None:
    """``server_resource_version`` asks the server (one request): another client's write, which this
    client has no informer to see, moves it to that write's resourceVersion; no write, no move."""
    before = kube.server_resource_version()
    requests = kube.request_count

    written = other.create(cm("moved", ns))

    after = kube.server_resource_version()
    assert before is not None
    assert written["metadata"]["resourceVersion"] == after != before
    assert after == kube.server_resource_version()
    assert 2 == kube.request_count - requests


def test_a_server_certificate_of_another_ca_is_refused(serve, tmp_path) -> None:
    """The requests olmkit writes itself go over connections the client's pool opened with the
    kubeconfig's CA: a server whose certificate that CA did not sign is not talked to."""
    import base64

    import yaml

    from olmkit.apiserver.certs import ensure_credentials
    from olmkit.kube import ApiUnreachable

    other = ensure_credentials(tmp_path / "other-pki", "127.0.0.1")
    config = yaml.safe_load(serve.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["certificate-authority-data"] = base64.b64encode(other.ca.read_bytes()).decode()
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    store = connect(tmp_path / "kubeconfig")
    try:
        with pytest.raises(ApiUnreachable) as info:
            store.get("v1", "Namespace", "default")
    finally:
        store.close()

    assert "certificate verify failed" in str(info.value)
