"""The lifecycle on the embedded SQLite store: installing and upgrading operators in many namespaces.

Each namespace subscribes to postgres-operator (which pulls in cert-manager-lite), and for
"install" to storage-operator too, from the example catalog; "install" reconciles a fresh store until stable
(resolution, InstallPlans, CRDs, RBAC, Deployments, CSV phases), "upgrade" then publishes the
newer catalog (``examples/catalog-v1`` → ``examples/catalog``) and reconciles again (two hops for
cert-manager-lite, one for postgres-operator, in every namespace). The clock is a fake one, so
only the work is timed. Run with::

    .venv/bin/python -m pytest benchmarks/bench_lifecycle.py --benchmark-only -p no:randomly
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from olmkit.lifecycle import FakeClock, build_manager
from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION
from olmkit.manager import get_plugin_manager
from olmkit.store import SqliteStore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
V1A1 = "operators.coreos.com/v1alpha1"


def _seed(store: SqliteStore, namespaces: int, catalog: str, packages: tuple[str, ...]) -> None:
    store.create(
        {
            "apiVersion": V1A1,
            "kind": "CatalogSource",
            "metadata": {
                "name": "examples",
                "namespace": "olm",
                "annotations": {MANIFEST_DIR_ANNOTATION: str(EXAMPLES)},
            },
            "spec": {"sourceType": "file", "path": catalog},
        }
    )
    for i in range(namespaces):
        ns = f"team-{i:03d}"
        store.create(
            {
                "apiVersion": "operators.coreos.com/v1",
                "kind": "OperatorGroup",
                "metadata": {"name": ns, "namespace": ns},
                # each namespace's operators watch that namespace: global groups providing the
                # same APIs would conflict (InterOperatorGroupOwnerConflict)
                "spec": {"targetNamespaces": [ns]},
            }
        )
        for package in packages:
            spec = {"name": package, "source": "examples", "sourceNamespace": "olm", "channel": "stable"}
            store.create(
                {
                    "apiVersion": V1A1,
                    "kind": "Subscription",
                    "metadata": {"name": package, "namespace": ns},
                    "spec": spec,
                }
            )


def _reconcile(store: SqliteStore, info: dict[str, Any]) -> None:
    manager = build_manager(store, get_plugin_manager(entrypoints=False), clock=FakeClock())
    outcome = manager.run_until_stable(timeout=3600)
    assert outcome.stable, outcome.pending
    info["reconciles"] = outcome.reconciles


@pytest.mark.parametrize("namespaces", [1, 10, 50])
def test_install(benchmark: Any, tmp_path_factory: Any, namespaces: int, monkeypatch: Any) -> None:
    """Install three operators (one a dependency) in every namespace, from an empty store."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    stores: list[SqliteStore] = []

    def setup() -> tuple[tuple[SqliteStore, dict[str, Any]], dict[str, Any]]:
        store = SqliteStore(str(tmp_path_factory.mktemp("store") / "c.db"))
        stores.append(store)
        _seed(store, namespaces, "catalog", ("postgres-operator", "storage-operator"))
        return (store, benchmark.extra_info), {}

    benchmark.pedantic(_reconcile, setup=setup, rounds=3, iterations=1)
    csvs = [c for c in stores[-1].list(V1A1, "ClusterServiceVersion") if c["status"]["phase"] == "Succeeded"]
    assert 3 * namespaces == len(csvs)
    benchmark.extra_info["namespaces"] = namespaces


@pytest.mark.parametrize("namespaces", [1, 10])
def test_upgrade(benchmark: Any, tmp_path_factory: Any, namespaces: int, monkeypatch: Any) -> None:
    """Publish the newer catalog over installed operators and walk every chain to its head."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    stores: list[SqliteStore] = []

    def setup() -> tuple[tuple[SqliteStore, dict[str, Any]], dict[str, Any]]:
        store = SqliteStore(str(tmp_path_factory.mktemp("store") / "c.db"))
        stores.append(store)
        _seed(store, namespaces, "catalog-v1", ("postgres-operator",))
        _reconcile(store, {})
        source = store.get(V1A1, "CatalogSource", "examples", "olm")
        source["spec"]["path"] = "catalog"
        store.update(source)
        return (store, benchmark.extra_info), {}

    benchmark.pedantic(_reconcile, setup=setup, rounds=3, iterations=1)
    heads = {c["metadata"]["name"] for c in stores[-1].list(V1A1, "ClusterServiceVersion")}
    assert {"postgres-operator.v2.3.0", "cert-manager-lite.v1.2.0"} == heads
    benchmark.extra_info["namespaces"] = namespaces
