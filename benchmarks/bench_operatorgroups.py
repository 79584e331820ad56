"""A global OperatorGroup at scale: N namespaces, M member CSVs, copied CSVs on and off.

The store is seeded with N Namespaces, one global OperatorGroup in ``operators`` and M CSVs
there (each owning one CRD, one Deployment, every install mode), as an InstallPlan would leave
them. The controllers then run on the real clock until stable ("steady state": every CSV
Succeeded, its per-API ClusterRoles made, and with copies on, M x N copied CSVs mirroring
Succeeded), in wall-clock and CPU seconds (on a shared machine the wall clock includes waiting
for a core). Then one more Namespace is created and the time until it holds all M copies is
measured. Object count and store size (the SQLite file after a checkpoint) are reported for
copies on and off (``OLMConfig`` ``cluster``, ``spec.features.disableCopiedCSVs: true``).
Run with::

    .venv/bin/python benchmarks/bench_operatorgroups.py --namespaces 500 --csvs 20
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from olmkit.lifecycle import LifecycleOptions, build_manager
from olmkit.manager import get_plugin_manager
from olmkit.store import SqliteStore

V1A1 = "operators.coreos.com/v1alpha1"
V1 = "operators.coreos.com/v1"
GROUP = "bench.example.io"
MODES = [{"type": t, "supported": True} for t in ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")]


def _crd(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"thing{i}s.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": f"Thing{i}",
                "plural": f"thing{i}s",
                "singular": f"thing{i}",
                "listKind": f"Thing{i}List",
            },
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }


def _csv(i: int) -> dict[str, Any]:
    name = f"op{i}"
    deployment = {
        "name": name,
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "m", "image": f"example.invalid/{name}:1.0.0"}]},
            },
        },
    }
    return {
        "apiVersion": V1A1,
        "kind": "ClusterServiceVersion",
        "metadata": {"name": f"{name}.v1.0.0", "namespace": "operators"},
        "spec": {
            "displayName": name,
            "version": "1.0.0",
            "installModes": MODES,
            "customresourcedefinitions": {
                "owned": [{"name": f"thing{i}s.{GROUP}", "version": "v1", "kind": f"Thing{i}"}]
            },
            "install": {"strategy": "deployment", "spec": {"deployments": [deployment]}},
        },
    }


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _copies(store: SqliteStore) -> int:
    return sum(1 for c in store.list(V1A1, "ClusterServiceVersion") if c["metadata"]["namespace"] != "operators")


def _size(path: Path) -> tuple[int, int, int]:
    """Objects, their bytes (as stored, JSON) and the bytes of the store file (WAL checkpointed first).

    The file also holds the watch history (the events table, compacted to a bounded length).
    """
    db = sqlite3.connect(path)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        objects = int(db.execute("SELECT count(*) FROM objects").fetchone()[0])
        data = int(db.execute("SELECT coalesce(sum(length(data)), 0) FROM objects").fetchone()[0])
    finally:
        db.close()
    return objects, data, os.path.getsize(path)


def run(namespaces: int, csvs: int, *, disabled: bool, workdir: Path) -> dict[str, Any]:
    """One scenario; returns its figures."""
    path = workdir / f"og-{'off' if disabled else 'on'}.db"
    pm = get_plugin_manager()
    with SqliteStore(str(path)) as store:
        for name in ["operators", *(f"ns-{n:03d}" for n in range(namespaces))]:
            store.create(_namespace(name))
        if disabled:
            store.create(
                {
                    "apiVersion": V1,
                    "kind": "OLMConfig",
                    "metadata": {"name": "cluster"},
                    "spec": {"features": {"disableCopiedCSVs": True}},
                }
            )
        store.create(
            {"apiVersion": V1, "kind": "OperatorGroup", "metadata": {"name": "global", "namespace": "operators"}}
        )
        for i in range(csvs):
            store.create(_crd(i))
            store.create(_csv(i))
        manager = build_manager(store, pm, options=LifecycleOptions())
        start, cpu = time.perf_counter(), time.process_time()
        outcome = manager.run_until_stable(timeout=600)
        steady, steady_cpu = time.perf_counter() - start, time.process_time() - cpu
        phases = {c.get("status", {}).get("phase") for c in store.list(V1A1, "ClusterServiceVersion", "operators")}
        copies = _copies(store)

        store.create(_namespace("late"))
        start, cpu = time.perf_counter(), time.process_time()
        late_outcome = manager.run_until_stable(timeout=60)
        late, late_cpu = time.perf_counter() - start, time.process_time() - cpu
        late_copies = len(store.list(V1A1, "ClusterServiceVersion", "late"))
        reconciles = manager.reconciles
    objects, data, size = _size(path)
    return {
        "copies": "off" if disabled else "on",
        "stable": outcome.stable and late_outcome.stable,
        "phases": sorted(str(p) for p in phases),
        "steady_s": steady,
        "steady_cpu_s": steady_cpu,
        "copied_csvs": copies,
        "late_s": late,
        "late_cpu_s": late_cpu,
        "late_copies": late_copies,
        "objects": objects,
        "objects_mb": data / 1e6,
        "store_mb": size / 1e6,
        "reconciles": reconciles,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=500)
    parser.add_argument("--csvs", type=int, default=20)
    parser.add_argument("--only", choices=["on", "off"], default=None, help="run one scenario")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-og-") as tmp:
        for disabled in (False, True):
            if args.only and args.only != ("off" if disabled else "on"):
                continue
            figures = run(args.namespaces, args.csvs, disabled=disabled, workdir=Path(tmp))
            print(
                f"copies {figures['copies']:>3}: steady state {figures['steady_s']:.2f} s "
                f"(CPU {figures['steady_cpu_s']:.2f} s) "
                f"({figures['copied_csvs']} copied CSVs, phases {figures['phases']}, stable {figures['stable']}); "
                f"new namespace {figures['late_s'] * 1000:.0f} ms (CPU {figures['late_cpu_s'] * 1000:.0f} ms, "
                f"{figures['late_copies']} copies); "
                f"{figures['objects']} objects ({figures['objects_mb']:.1f} MB of JSON), "
                f"store file {figures['store_mb']:.1f} MB; "
                f"{figures['reconciles']} reconciles"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
