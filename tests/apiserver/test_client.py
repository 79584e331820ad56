"""The official Python client (``kubernetes``) against the API server: what a store backend on it relies on."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client, config, dynamic, watch  # a test dependency (pyproject's test extra)

from tests.apiserver.conftest import GADGET_CRD, InProcessServer

SUB = ("operators.coreos.com", "v1alpha1", "subscriptions")


@pytest.fixture
def api(in_process: InProcessServer) -> Iterator[Any]:
    api_client = config.new_client_from_config(config_file=str(in_process.kubeconfig))
    yield api_client
    api_client.close()


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": name}}


def _sub(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"name": name, "channel": "stable", "source": "cat", "sourceNamespace": "olm"},
    }


def test_create_list_with_label_selector_and_patch(api: Any) -> None:
    """Typed client: create, list with a server-side label selector, strategic merge patch."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("ns", _cm("a", app="web", tier="front"))
    v1.create_namespaced_config_map("ns", _cm("b", app="web", tier="db"))
    v1.create_namespaced_config_map("ns", _cm("c", app="other"))
    selected = v1.list_namespaced_config_map("ns", label_selector="app=web,tier!=db")
    patched = v1.patch_namespaced_config_map("a", "ns", {"data": {"extra": "1"}})

    assert ["a"] == [i.metadata.name for i in selected.items]
    assert {"k": "a", "extra": "1"} == patched.data
    assert int(patched.metadata.resource_version) > int(selected.metadata.resource_version)


def test_pagination_with_limit_and_continue(api: Any) -> None:
    """limit and continue walk a list page by page."""
    v1 = client.CoreV1Api(api)
    for n in range(5):
        v1.create_namespaced_config_map("ns", _cm(f"p{n}"))
    names, token = [], None
    while True:
        page = v1.list_namespaced_config_map("ns", limit=2, _continue=token)
        names += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        if not token:
            break

    assert ["p0", "p1", "p2", "p3", "p4"] == names


def test_custom_objects_and_the_status_subresource(api: Any) -> None:
    """Custom objects: create, merge patch of spec, status only through the status subresource."""
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(*SUB[:2], "ns", SUB[2], _sub("s1"))
    custom.patch_namespaced_custom_object(
        *SUB[:2], "ns", SUB[2], "s1", {"spec": {"channel": "fast"}, "status": {"state": "x"}}
    )
    custom.patch_namespaced_custom_object_status(*SUB[:2], "ns", SUB[2], "s1", {"status": {"state": "AtLatestKnown"}})
    got = custom.get_namespaced_custom_object(*SUB[:2], "ns", SUB[2], "s1")

    assert "fast" == got["spec"]["channel"]
    assert {"state": "AtLatestKnown"} == got["status"]
    assert 2 == got["metadata"]["generation"]


def test_watch_delivers_every_change_in_order(api: Any, in_process: InProcessServer) -> None:
    """A watch from a list's resourceVersion sees each later change once, in order."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("ns", _cm("seed"))  # resourceVersion 0 would mean "with initial events"
    start = v1.list_namespaced_config_map("ns").metadata.resource_version
    events: list[tuple[str, str, str]] = []

    def consume() -> None:
        for event in watch.Watch().stream(
            v1.list_namespaced_config_map, "ns", resource_version=start, timeout_seconds=30
        ):
            obj = event["object"]
            events.append((event["type"], obj.metadata.name, obj.data.get("k") if obj.data else ""))
            if event["type"] == "DELETED":
                break

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.3)
    v1.create_namespaced_config_map("ns", _cm("w"))
    v1.patch_namespaced_config_map("w", "ns", {"data": {"k": "changed"}})
    v1.delete_namespaced_config_map("w", "ns")
    reader.join(40)

    assert [("ADDED", "w", "w"), ("MODIFIED", "w", "changed"), ("DELETED", "w", "changed")] == events


def test_watch_with_a_label_selector_sees_objects_enter_and_leave(api: Any) -> None:
    """A relabel that makes an object match is ADDED, one that makes it stop matching is DELETED."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("ns", _cm("other"))
    start = v1.list_namespaced_config_map("ns").metadata.resource_version
    events: list[tuple[str, str]] = []

    def consume() -> None:
        stream = watch.Watch().stream(
            v1.list_namespaced_config_map, "ns", label_selector="app=web", resource_version=start, timeout_seconds=30
        )
        for event in stream:
            events.append((event["type"], event["object"].metadata.labels.get("app")))
            if len(events) == 4:
                break

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.3)
    v1.create_namespaced_config_map("ns", _cm("l", app="web"))
    v1.patch_namespaced_config_map("l", "ns", {"metadata": {"labels": {"app": "db"}}})
    v1.patch_namespaced_config_map("l", "ns", {"data": {"k": "unseen"}})
    v1.patch_namespaced_config_map("l", "ns", {"metadata": {"labels": {"app": "web"}}})
    v1.patch_namespaced_config_map("l", "ns", {"data": {"k": "seen"}})
    reader.join(40)

    assert [("ADDED", "web"), ("DELETED", "web"), ("ADDED", "web"), ("MODIFIED", "web")] == events


def test_watch_from_a_compacted_resource_version_is_410_gone(api: Any) -> None:
    """A resourceVersion older than the kept history: the watch fails with 410, as client libraries expect."""
    v1 = client.CoreV1Api(api)
    first = v1.create_namespaced_config_map("ns", _cm("old")).metadata.resource_version
    for n in range(10):
        v1.patch_namespaced_config_map("old", "ns", {"data": {"k": str(n)}})

    with pytest.raises(client.ApiException) as raised:
        for _ in watch.Watch().stream(v1.list_namespaced_config_map, "ns", resource_version=first, timeout_seconds=2):
            pass

    assert 410 == raised.value.status


def test_watch_bookmarks(api: Any) -> None:
    """With allowWatchBookmarks, an idle watch gets BOOKMARK events carrying the current resourceVersion."""
    v1 = client.CoreV1Api(api)
    rv = v1.create_namespaced_config_map("ns", _cm("bm")).metadata.resource_version
    seen = []
    w = watch.Watch()
    for event in w.stream(
        v1.list_namespaced_config_map, "ns", resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=3
    ):
        seen.append(event["type"])
        if event["type"] == "BOOKMARK":
            w.stop()

    assert ["BOOKMARK"] == seen
    assert int(w.resource_version) >= int(rv)


def test_dynamic_client_discovers_and_writes(api: Any) -> None:
    """The dynamic client finds OLM's kinds through discovery and creates, gets, patches and lists them."""
    dyn = dynamic.DynamicClient(api)
    subs = dyn.resources.get(api_version="operators.coreos.com/v1alpha1", kind="Subscription")
    subs.create(body=_sub("d1"), namespace="ns")
    subs.patch(
        name="d1", namespace="ns", body={"spec": {"channel": "beta"}}, content_type="application/merge-patch+json"
    )
    listed = subs.get(namespace="ns")

    assert ["d1"] == [i.metadata.name for i in listed.items]
    assert "beta" == listed.items[0].spec.channel
    assert subs.namespaced
    assert "sub" in subs.short_names


def test_leases_and_write_conflicts(api: Any) -> None:
    """coordination.k8s.io Leases: a replace with a stale resourceVersion is 409 Conflict."""
    leases = client.CoordinationV1Api(api)
    body = client.V1Lease(metadata=client.V1ObjectMeta(name="leader"), spec=client.V1LeaseSpec(holder_identity="a"))
    created = leases.create_namespaced_lease("ns", body)
    created.spec.holder_identity = "b"
    leases.replace_namespaced_lease("leader", "ns", created)
    created.spec.holder_identity = "c"

    with pytest.raises(client.ApiException) as raised:
        leases.replace_namespaced_lease("leader", "ns", created)

    assert 409 == raised.value.status
    assert "b" == leases.read_namespaced_lease("leader", "ns").spec.holder_identity


def test_deleting_a_namespace_deletes_what_is_in_it(api: Any, in_process: InProcessServer) -> None:
    """A Namespace goes with its content (other namespaces keep theirs)."""
    v1 = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    v1.create_namespace({"metadata": {"name": "gone"}})
    v1.create_namespaced_config_map("gone", _cm("x"))
    custom.create_namespaced_custom_object(*SUB[:2], "gone", SUB[2], {**_sub("s"), "metadata": {"name": "s"}})
    v1.create_namespaced_config_map("ns", _cm("kept"))

    v1.delete_namespace("gone")

    assert [] == v1.list_namespaced_config_map("gone").items
    assert [] == custom.list_namespaced_custom_object(*SUB[:2], "gone", SUB[2])["items"]
    assert ["kept"] == [i.metadata.name for i in v1.list_namespaced_config_map("ns").items]
    with pytest.raises(client.ApiException):
        v1.read_namespace("gone")


def test_not_found_and_already_exists(api: Any) -> None:
    """Errors come back as Status objects the client turns into ApiException with the right status."""
    v1 = client.CoreV1Api(api)
    v1.create_namespaced_config_map("ns", _cm("dup"))

    with pytest.raises(client.ApiException) as missing:
        v1.read_namespaced_config_map("missing", "ns")
    with pytest.raises(client.ApiException) as exists:
        v1.create_namespaced_config_map("ns", _cm("dup"))

    assert (404, 409) == (missing.value.status, exists.value.status)
    assert '"reason":"AlreadyExists"' in exists.value.body.replace(" ", "")


def test_send_initial_events_ends_with_a_bookmark(in_process: InProcessServer) -> None:
    """sendInitialEvents: the current objects as ADDED, then a BOOKMARK marking the end of them."""
    for name in ("i1", "i2"):
        in_process.http.json("POST", "/api/v1/namespaces/ns/configmaps", _cm(name))
    query = "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
    response = in_process.http.request("GET", f"/api/v1/namespaces/ns/configmaps?{query}&timeoutSeconds=1")
    events = [orjson.loads(line) for line in response.data.splitlines()]

    assert [("ADDED", "i1"), ("ADDED", "i2")] == [(e["type"], e["object"]["metadata"]["name"]) for e in events[:2]]
    assert "BOOKMARK" == events[2]["type"]
    assert {"k8s.io/initial-events-end": "true"} == events[2]["object"]["metadata"]["annotations"]


def test_label_transitions_in_history_replayed_to_a_late_watch(in_process: InProcessServer) -> None:
    """A watch that starts after the changes (read from the store's history) reports the same transitions."""
    base = "/api/v1/namespaces/ns/configmaps"
    merge = "application/merge-patch+json"
    in_process.http.json("POST", base, _cm("seed"))  # resourceVersion 0 would mean "from now, with initial events"
    _, listed = in_process.http.json("GET", base)
    in_process.http.json("POST", base, _cm("h", app="web"))
    in_process.http.json("PATCH", f"{base}/h", {"metadata": {"labels": {"app": "db"}}}, content_type=merge)
    in_process.http.json("PATCH", f"{base}/h", {"metadata": {"labels": {"app": "web"}}}, content_type=merge)
    start = listed["metadata"]["resourceVersion"]

    response = in_process.http.request(
        "GET", f"{base}?watch=true&labelSelector=app%3Dweb&resourceVersion={start}&timeoutSeconds=1"
    )
    events = [orjson.loads(line) for line in response.data.splitlines()]

    assert ["ADDED", "DELETED", "ADDED"] == [e["type"] for e in events]


def test_delete_propagation_policies(api: Any) -> None:
    """Background deletes what the object owns; Orphan leaves it, without the owner reference."""
    v1 = client.CoreV1Api(api)
    results = {}
    for policy in ("Background", "Orphan"):
        owner = v1.create_namespaced_config_map("ns", _cm(f"owner-{policy.lower()}"))
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner.metadata.name, "uid": owner.metadata.uid}
        dependent = _cm(f"dep-{policy.lower()}")
        dependent["metadata"]["ownerReferences"] = [ref]
        v1.create_namespaced_config_map("ns", dependent)
        v1.delete_namespaced_config_map(owner.metadata.name, "ns", propagation_policy=policy)
        left = {i.metadata.name: i for i in v1.list_namespaced_config_map("ns").items}
        results[policy] = left.get(f"dep-{policy.lower()}")

    assert results["Background"] is None
    assert results["Orphan"] is not None
    assert results["Orphan"].metadata.owner_references is None


def test_watchers_of_several_kinds_each_get_their_events_intact(tmp_path: Any) -> None:
    """Changes of several kinds, read from the store in one pass, reach every watcher of each kind
    whole and in order, whether written through the API or straight into the store (as the
    server's own controllers write)."""
    from olmkit.store import MemoryStore
    from tests.apiserver.conftest import start_in_process

    store = MemoryStore()
    server = start_in_process(store, tmp_path, bookmark_interval=60)
    try:
        server.http.json("POST", "/api/v1/namespaces/ns/configmaps", _cm("seed"))
        start = server.http.json("GET", "/api/v1/namespaces/ns/configmaps")[1]["metadata"]["resourceVersion"]
        paths = {"ConfigMap": "/api/v1/namespaces/ns/configmaps", "Secret": "/api/v1/namespaces/ns/secrets"}
        streams = [
            (kind, server.http.request("GET", f"{path}?watch=true&resourceVersion={start}", preload=False))
            for kind, path in paths.items()
            for _ in range(2)
        ]
        written: dict[str, list[dict[str, Any]]] = {"ConfigMap": [], "Secret": []}
        for n in range(6):
            secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s{n}"}, "data": {"n": "MQ=="}}
            _, made = server.http.json("POST", paths["Secret"], secret)
            written["Secret"].append(made)
            if n % 2:
                written["ConfigMap"].append(server.http.json("POST", paths["ConfigMap"], _cm(f"c{n}", n=str(n)))[1])
            else:  # straight into the store, between two API writes
                made = store.create({**_cm(f"c{n}", n=str(n)), "metadata": {"name": f"c{n}", "namespace": "ns"}})
                written["ConfigMap"].append(made)

        for kind, response in streams:
            received = []
            lines = response.stream(amt=None)
            buffer = b""
            for chunk in lines:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    received.append(orjson.loads(line))
                if len(received) >= 6:
                    break
            response.release_conn()

            assert ["ADDED"] * 6 == [e["type"] for e in received]
            names = [o["metadata"]["name"] for o in written[kind]]
            assert names == [e["object"]["metadata"]["name"] for e in received]
            for sent, event in zip(written[kind], received, strict=True):
                assert {**sent, "apiVersion": "v1", "kind": kind} == event["object"]
    finally:
        server.close()


def test_a_bookmark_passes_the_changes_of_other_kinds(in_process: InProcessServer) -> None:
    """A watch's BOOKMARK carries the latest resourceVersion the server has read, past writes of
    other kinds made after the watch's last event (a client resuming from it skips them)."""
    base = "/api/v1/namespaces/ns"
    in_process.http.json("POST", f"{base}/configmaps", _cm("seen"))
    start = in_process.http.json("GET", f"{base}/configmaps")[1]["metadata"]["resourceVersion"]
    response = in_process.http.request(
        "GET", f"{base}/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion={start}", preload=False
    )
    in_process.http.json("POST", f"{base}/configmaps", _cm("last"))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    written = in_process.http.json("POST", f"{base}/secrets", secret)[1]["metadata"]["resourceVersion"]

    events, buffer = [], b""
    for chunk in response.stream(amt=None):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            events.append(orjson.loads(line))
        if events and events[-1]["type"] == "BOOKMARK":
            break
    response.release_conn()

    assert [("ADDED", "last"), ("BOOKMARK", None)] == [(e["type"], e["object"]["metadata"].get("name")) for e in events]
    assert int(events[-1]["object"]["metadata"]["resourceVersion"]) >= int(written)


def test_a_slow_catalog_build_does_not_replace_a_newer_one(tmp_path: Any) -> None:
    """Discovery that listed the CRDs before one was written, and ends after a later discovery
    saw it, leaves the newer catalog in place: the new kind stays served."""
    from olmkit.store import MemoryStore
    from tests.apiserver.conftest import start_in_process

    gate, entered = threading.Event(), threading.Event()

    class SlowFirstCrdList(MemoryStore):
        hold = False

        def list(self, api_version: str, kind: str, namespace: Any = None, label_selector: Any = None) -> Any:
            listed = super().list(api_version, kind, namespace, label_selector)
            if kind == "CustomResourceDefinition" and self.hold:
                self.hold = False
                entered.set()
                gate.wait(10)
            return listed

    store = SlowFirstCrdList()
    server = start_in_process(store, tmp_path)
    try:
        store.hold = True
        server.api._crd_changes += 1  # as after a CRD change
        slow = threading.Thread(target=server.http.json, args=("GET", "/apis"))
        slow.start()
        assert entered.wait(10)
        assert 201 == server.http.json("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", GADGET_CRD)[0]
        assert 200 == server.http.json("GET", "/apis/example.io/v1")[0]
        gate.set()
        slow.join(10)

        status, listed = server.http.json("GET", "/apis/example.io/v1")
    finally:
        gate.set()
        server.close()

    assert 200 == status
    assert ["gadgets"] == [r["name"] for r in listed["resources"]]


def test_a_watch_over_sqlite_gets_writes_of_this_process_and_of_others_in_order(tmp_path: Any) -> None:
    """Over a store that reports this process's writes as they commit, a watch gets them (written
    through the API, or straight into the store by another thread) and another process's writes
    (another store object on the file), all in order."""
    from olmkit.store import SqliteStore
    from tests.apiserver.conftest import start_in_process

    store = SqliteStore(tmp_path / "c.db")
    other = SqliteStore(tmp_path / "c.db")
    server = start_in_process(store, tmp_path, bookmark_interval=60)
    try:
        path = "/api/v1/namespaces/ns/configmaps"
        start = server.http.json("GET", path)[1]["metadata"]["resourceVersion"]
        stream = server.http.request("GET", f"{path}?watch=true&resourceVersion={start}", preload=False)
        names = []
        for n in range(6):
            name = f"c{n}"
            names.append(name)
            if n % 3 == 0:
                server.http.json("POST", path, _cm(name))
            elif n % 3 == 1:
                writer = threading.Thread(
                    target=store.create, args=({**_cm(name), "metadata": {"name": name, "namespace": "ns"}},)
                )
                writer.start()
                writer.join()
            else:
                other.create({**_cm(name), "metadata": {"name": name, "namespace": "ns"}})
        received: list[dict[str, Any]] = []
        buffer = b""
        deadline = time.monotonic() + 10
        for chunk in stream.stream(amt=None):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                received.append(orjson.loads(line))
            if len(received) >= 6 or time.monotonic() > deadline:
                break
        stream.release_conn()

        assert names == [e["object"]["metadata"]["name"] for e in received]
        assert ["ADDED"] * 6 == [e["type"] for e in received]
    finally:
        server.close()
        other.close()
        store.close()
