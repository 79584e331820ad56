"""What only a remote store shows about watches: connections break, servers restart, history runs out.

The informer behind a kind's watches resumes a broken watch from the last resourceVersion it
saw (no change lost, no list), and lists again when the server answers 410 Gone, turning the
difference into events (again, no change lost to a watcher).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from olmkit.kube import connect
from olmkit.store import Expired, MemoryStore, StoreError, WatchEvent
from tests.apiserver.conftest import start_in_process, start_serve
from tests.kube.conftest import Proxy, cm, kubeconfig_via, port_of, watching


def collect(store, after: str, count: int, namespace: str | None = None, timeout: float = 15.0) -> list[WatchEvent]:
    """The next ``count`` ConfigMap events after ``after`` (fewer if ``timeout`` passes first)."""
    seen: list[WatchEvent] = []
    deadline = time.monotonic() + timeout
    with store.watch("v1", "ConfigMap", namespace, resource_version=after, timeout=timeout) as watch:
        for event in watch:
            seen.append(event)
            if len(seen) >= count or time.monotonic() > deadline:
                break
    return seen


def names(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.object["metadata"]["name"]) for e in events]


def test_a_dropped_watch_connection_resumes_without_losing_a_change(serve, tmp_path: Path, ns: str) -> None:
    """Every connection to the server is cut while a change is made: the informer reconnects, resumes
    from its resourceVersion (no new list) and the watcher sees the change."""
    proxy = Proxy(port_of(serve.url))
    store = connect(kubeconfig_via(serve.kubeconfig, proxy.port, tmp_path / "via-proxy"))
    try:
        with store.watch("v1", "ConfigMap", ns, timeout=0) as first:
            assert [] == list(first)
            start = first.resource_version
        informer = store.informer("v1", "ConfigMap")
        assert informer is not None
        watching(informer)

        assert proxy.drop() >= 1  # the informer's watch (at least) was open
        with connect(serve.kubeconfig) as direct:  # another client, not through the proxy
            direct.create(cm("while-cut", ns))
        seen = collect(store, start, 1, ns)

        assert [("ADDED", "while-cut")] == names(seen)
        assert informer.resumes >= 1
        assert 0 == informer.relists
    finally:
        store.close()
        proxy.close()


def test_a_watch_resumes_across_a_server_restart(tmp_path: Path) -> None:
    """olmkit serve stops and starts again on the same SQLite store (another port): the informer
    resumes from its resourceVersion and sees what was written while it was down and after."""
    directory = tmp_path / "server"
    server = start_serve(directory, "--no-controllers", kubectl=False)
    proxy = Proxy(port_of(server.url))
    store = connect(kubeconfig_via(server.kubeconfig, proxy.port, tmp_path / "via-proxy"))
    try:
        store.create(cm("before", "default"))
        with store.watch("v1", "ConfigMap", "default", timeout=0) as first:
            assert [("ADDED", "before")] == names(list(first))
            start = first.resource_version
        informer = store.informer("v1", "ConfigMap")
        assert informer is not None
        watching(informer)

        server.stop()
        server = start_serve(directory, "--no-controllers", kubectl=False)
        proxy.target_port = port_of(server.url)
        with connect(server.kubeconfig) as direct:
            direct.create(cm("while-down", "default"))
        store.create(cm("after", "default"))
        seen = collect(store, start, 2, "default")

        assert [("ADDED", "while-down"), ("ADDED", "after")] == names(seen)
        assert informer.resumes >= 1
        assert 0 == informer.relists
    finally:
        store.close()
        proxy.close()
        server.stop()


def test_a_watch_past_the_servers_history_lists_again_and_loses_nothing(tmp_path: Path) -> None:
    """The informer is cut off while more changes happen than the server keeps: resuming gets 410
    Gone, the informer lists again, and watchers get the difference as events (a deletion too)."""
    served = MemoryStore(history=5)
    server = start_in_process(served, tmp_path, shutdown_timeout=0.05, bookmark_interval=0.3)
    assert server.api.hub is not None
    server.api.hub.buffer_size = 3  # the server's watch cache: keep little, so the gap is gone
    proxy = Proxy(port_of(server.url))
    store = connect(kubeconfig_via(server.kubeconfig, proxy.port, tmp_path / "via-proxy"))
    try:
        served.create(cm("keep", "default"))
        served.create(cm("gone", "default"))
        with store.watch("v1", "ConfigMap", timeout=0) as first:
            assert [("ADDED", "gone"), ("ADDED", "keep")] == names(list(first))
            start = first.resource_version
        informer = store.informer("v1", "ConfigMap")
        assert informer is not None
        watching(informer)

        proxy.refuse()
        proxy.drop()
        for i in range(8):
            served.create(cm(f"new{i}", "default"))
        served.delete("v1", "ConfigMap", "gone", "default")
        proxy.refuse(False)
        seen = collect(store, start, 9)

        assert 1 == informer.relists, (informer.rv, informer.resumes, names(seen))
        assert sorted([("DELETED", "gone")] + [("ADDED", f"new{i}") for i in range(8)]) == sorted(names(seen))
        listed = sorted(o["metadata"]["name"] for o in informer.snapshot()[0])
        assert ["keep", *(f"new{i}" for i in range(8))] == listed
    finally:
        store.close()
        proxy.close()
        server.close()


def test_watch_timeout_zero_makes_no_request(kube, ns: str) -> None:
    """Once a kind's informer runs, watch(timeout=0) (what the controllers call on every poll) reads
    its buffer: no request, and a write of this process is in it at once."""
    with kube.watch("v1", "ConfigMap", ns, timeout=0) as watch:
        list(watch)
        start = watch.resource_version
    kube.create(cm("a", ns))
    before = kube.request_count

    for _ in range(20):
        with kube.watch("v1", "ConfigMap", ns, resource_version=start, timeout=0) as watch:
            seen = list(watch)

    assert [("ADDED", "a")] == names(seen)
    assert before == kube.request_count


def test_a_first_watch_from_an_earlier_list_sees_what_changed_since(kube, ns: str) -> None:
    """get -w lists, then watches from the list's resourceVersion: the kind's informer, started by
    that watch, replays the changes since then (other kinds' writes in between do not matter)."""
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns}}
    listed = kube.list("v1", "Secret", ns)  # from the server: no informer yet
    kube.create(secret)
    kube.create(cm("other-kind", ns))

    with kube.watch("v1", "Secret", ns, resource_version=listed.resource_version, timeout=0) as watch:
        seen = [(e.type, e.object["metadata"]["name"]) for e in watch]

    assert [("ADDED", "s")] == seen
    assert ["s"] == [o["metadata"]["name"] for o in kube.list("v1", "Secret", ns)]  # the cache is right too


def test_a_first_watch_from_before_the_servers_history_is_expired(tmp_path: Path) -> None:
    """... unless the server no longer has the changes since that resourceVersion: Expired (the
    caller lists again)."""
    served = MemoryStore(history=5)
    server = start_in_process(served, tmp_path, shutdown_timeout=0.05, bookmark_interval=0.3)
    assert server.api.hub is not None
    server.api.hub.buffer_size = 3  # the server's watch cache: keep little
    store = connect(server.kubeconfig)
    try:
        served.create(cm("first", "default"))  # resourceVersion 1: a watch from "0" would list instead
        listed = store.list("v1", "Secret", "default")
        for i in range(5):
            served.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"s{i}", "namespace": "default"}})
        for i in range(10):
            served.create(cm(f"c{i}", "default"))

        with pytest.raises(Expired):
            list(store.watch("v1", "Secret", "default", resource_version=listed.resource_version, timeout=10))
    finally:
        store.close()
        server.close()


def test_closing_the_store_ends_its_watches(serve) -> None:
    """A watch waiting for changes ends with a StoreError when its store is closed (no busy wait)."""
    store = connect(serve.kubeconfig)
    watch = store.watch("v1", "ConfigMap", "nowhere", timeout=None)

    store.close()

    with pytest.raises(StoreError, match="its store was closed"):
        next(watch)


def test_sync_problem_names_the_kinds_whose_watch_is_not_open(serve, tmp_path: Path, ns: str) -> None:
    """No informer, or every watch open: no problem. The server unreachable: the kinds whose watch broke,
    without a request; reachable again: none once the watches are reopened."""
    proxy = Proxy(port_of(serve.url))
    store = connect(kubeconfig_via(serve.kubeconfig, proxy.port, tmp_path / "via-proxy"))
    try:
        before = store.sync_problem()
        informers = [store.informer("v1", "ConfigMap"), store.informer("v1", "Secret")]
        for informer in informers:
            watching(informer)
        requests = store.request_count
        open_ = store.sync_problem()
        asked = store.request_count - requests

        proxy.refuse()
        proxy.drop()
        deadline = time.monotonic() + 5
        # every watch was cut: wait until each informer has seen it, or one that has not yet would
        # still count as open here and drop only after it was waited for below
        while any(informer.watching for informer in informers) and time.monotonic() < deadline:
            time.sleep(0.02)
        broken = store.sync_problem()
        proxy.refuse(False)
        for informer in informers:
            watching(informer)
        back = store.sync_problem()
    finally:
        store.close()
        proxy.close()

    assert (None, None, None) == (before, open_, back)
    assert broken in (
        "no watch open for 2 of 2 kinds (ConfigMap, Secret)",
        "no watch open for 1 of 2 kinds (ConfigMap)",
        "no watch open for 1 of 2 kinds (Secret)",
    )
    assert 0 == asked
