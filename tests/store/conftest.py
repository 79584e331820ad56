"""Fixtures of the store tests: every API test runs on both backends."""

from __future__ import annotations

import itertools

import pytest

from olmkit.store import MemoryStore, SqliteStore


class Clock:
    """A clock that ticks one second per reading, from 2024-01-01T00:00:00Z."""

    def __init__(self) -> None:
        self._ticks = itertools.count()

    def __call__(self) -> float:
        return 1704067200.0 + next(self._ticks)


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    """A fresh store of each backend, with a ticking clock."""
    if request.param == "memory":
        s = MemoryStore(clock=Clock())
    else:
        s = SqliteStore(tmp_path / "cluster.db", clock=Clock(), poll_interval=0.01)
    yield s
    s.close()


@pytest.fixture(params=["memory", "sqlite"])
def small_store(request, tmp_path):
    """A store of each backend that keeps only 20 events of history."""
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
