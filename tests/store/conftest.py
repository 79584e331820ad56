"""Fixtures of the store tests: every API test runs on every backend.

``kube`` is the :class:`~olmkit.kube.KubeStore` talking HTTPS to the API server of ``olmkit
serve`` (the same :class:`~olmkit.apiserver.app.ApiServer`, run in this process, without OLM's
controllers) over a fresh memory store per test, rather than one server with a namespace per
test: the contract tests name fixed namespaces and cluster-scoped objects, count
resourceVersions from the test's start (:func:`rv`), read timestamps from an injected clock
(:class:`Clock`) and, for ``small_store``, need a server that keeps 20 events, none of which a
shared server gives. A fresh in-process server costs about 0.1 s (the whole kube run of these
tests about 10 s). Remote-only behaviour (an ``olmkit serve`` process shared by a module, broken
watches, 410 re-lists, two clients, the commands) is in tests/kube.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from olmkit.store import MemoryStore, SqliteStore

BACKENDS = ["memory", "sqlite", "kube"]


class Clock:
    """A clock that ticks one second per reading, from 2024-01-01T00:00:00Z."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def reset(self) -> None:
        """Start again from 2024-01-01T00:00:00Z."""
        self._ticks = itertools.count()

    def __call__(self) -> float:
        return 1704067200.0 + next(self._ticks)


@pytest.fixture(scope="session")
def pki_dir(tmp_path_factory) -> Path:
    """One certificate authority and token for every in-process API server of the session."""
    return tmp_path_factory.mktemp("kube-pki")


@pytest.fixture(scope="session")
def closing() -> Iterator[list[threading.Thread]]:
    """Servers being stopped in the background (a stop waits up to 0.5 s for the watch hub's
    thread); all are joined when the session ends."""
    threads: list[threading.Thread] = []
    yield threads
    for thread in threads:
        thread.join(timeout=30)


#: The CustomResourceDefinition of the kind of a group no API server knows that the contract tests use.
THING_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.example.io"},
    "spec": {
        "group": "example.io",
        "scope": "Namespaced",
        "names": {"kind": "Thing", "plural": "things", "singular": "thing", "listKind": "ThingList"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}

#: resourceVersions the fixture's own writes used, by store: tests name the n-th write of the test as rv(store, n)
_BASE_RV: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def settled(store: Any, quiet: float = 0.1, timeout: float = 10.0) -> None:
    """Wait until a store's watches recorded no change for ``quiet`` seconds (at most ``timeout``).

    On the kube backend a kind's reads come from its informer once one runs (as a controller's
    do); the server's garbage collection reaches it as watch events, after the delete that
    caused it (on a cluster the collector is asynchronous as well). The local stores collect in
    the delete itself: nothing to wait for.
    """
    if store.embedded:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = store.latest_resource_version()
        store.wait_for_change(seen, quiet)
        if store.latest_resource_version() == seen:
            return


def rv(store: Any, n: int) -> str:
    """The resourceVersion of the test's ``n``-th write (after what the fixture wrote)."""
    return str(_BASE_RV.get(store, 0) + n)


def _kube_store(
    served: MemoryStore,
    pki_dir: Path,
    tmp_path: Path,
    closing: list[threading.Thread],
    history: int = 10_000,
    clock: Any = None,
) -> Iterator[Any]:
    """A KubeStore on a fresh in-process API server over ``served``; yields it, then stops both."""
    from olmkit.kube import connect
    from tests.apiserver.conftest import start_in_process

    (tmp_path / "pki").symlink_to(pki_dir, target_is_directory=True)
    served.create(THING_CRD)  # as a cluster that has the CRD installed
    if isinstance(clock, Clock):
        clock.reset()
    server = start_in_process(served, tmp_path, shutdown_timeout=0.01, bookmark_interval=0.2)
    kube = connect(server.kubeconfig, history=history)
    _BASE_RV[kube] = 1
    # a controller process watches the kinds it cares about from its start: watches from a
    # resourceVersion before an informer existed are Expired (history starts at its list)
    kube.informer("v1", "ConfigMap")
    try:
        yield kube
    finally:
        kube.close()
        thread = threading.Thread(target=server.close, daemon=True)
        thread.start()
        closing.append(thread)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path, pki_dir, closing):
    """A fresh store of each backend, with a ticking clock."""
    if request.param == "kube":
        clock = Clock()
        yield from _kube_store(MemoryStore(clock=clock), pki_dir, tmp_path, closing, clock=clock)
        return
    if request.param == "memory":
        s = MemoryStore(clock=Clock())
    else:
        s = SqliteStore(tmp_path / "cluster.db", clock=Clock(), poll_interval=0.01)
    yield s
    s.close()


@pytest.fixture(params=["memory", "sqlite"])
def local_store(request, tmp_path):
    """A fresh store of each local backend: for the few behaviours only olmkit's own stores have
    (register_kind changing a kind's scope: an API server's discovery decides it on a cluster;
    tests/kube has the kube side)."""
    s = MemoryStore(clock=Clock()) if request.param == "memory" else SqliteStore(tmp_path / "cluster.db", clock=Clock())
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def small_store(request, tmp_path, pki_dir, closing):
    """A store of each backend that keeps only 20 events of history."""
    if request.param == "kube":
        yield from _kube_store(MemoryStore(history=20), pki_dir, tmp_path, closing, history=20)
        return
    if request.param == "memory":
        s = MemoryStore(history=20)
    else:
        s = SqliteStore(tmp_path / "cluster.db", history=20, poll_interval=0.01)
    yield s
    s.close()


def cm(name, namespace="default", labels=None, data=None, **meta):
    """A ConfigMap manifest."""
    metadata = {"name": name, "namespace": namespace, **meta}
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


def owner_ref(obj):
    """An ownerReference pointing at ``obj``."""
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
    }


RBAC_ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}
