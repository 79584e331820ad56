"""What one API request costs through the kube store backend against ``olmkit serve``: CPU on each side.

A fresh ``olmkit serve --no-controllers`` process (SQLite store) and, in this process, a
:class:`olmkit.kube.KubeStore` whose informer watches the kind written (as a controller
process's does, so every write also costs a watch event on both sides). Then, for ConfigMaps
and for ClusterServiceVersions (the example postgres-operator CSV: a large object the server
validates against its schema), ``N`` of each request a controller sends:

* ``create``: POST;
* ``update``: PUT of the object with one annotation changed;
* ``status``: PUT of the ``status`` subresource with one field changed;
* ``get``: GET through a second store that has no informer (the first one answers from its cache).

Each phase reports wall time and the CPU time of the client (this process: the request, the
informer's watch thread) and of the server process (``/proc/PID/stat``), per request. Run with::

    .venv/bin/python benchmarks/bench_kube_requests.py --requests 300 --rounds 3

Rounds are interleaved (every phase once per round); the table has each figure's median.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.lifecycle.served: the tests' launcher

from proc_stats import process_cpu

from tests.lifecycle.served import serve_no_controllers

CSV_FILE = (
    Path(__file__).resolve().parents[1]
    / "examples/bundles/postgres-operator.v2.4.0/manifests/postgres-operator.v2.4.0.clusterserviceversion.yaml"
)
NAMESPACE = "bench"


def _client_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _objects(kind: str, n: int, round_: int) -> list[dict[str, Any]]:
    if kind == "ConfigMap":
        return [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{round_}-{i}", "namespace": NAMESPACE, "labels": {"app": "bench"}},
                "data": {"key": "value " * 20, "index": str(i)},
            }
            for i in range(n)
        ]
    csv = yaml.safe_load(CSV_FILE.read_text())
    made = []
    for i in range(n):
        obj = {**csv, "metadata": {**csv["metadata"], "name": f"csv-{round_}-{i}", "namespace": NAMESPACE}}
        made.append(obj)
    return made


def _phase(served_pid: int, calls: list[Callable[[], Any]]) -> dict[str, float]:
    server0, client0, start = process_cpu(served_pid), _client_cpu(), time.perf_counter()
    for call in calls:
        call()
    wall = time.perf_counter() - start
    server, client = process_cpu(served_pid) - server0, _client_cpu() - client0
    n = len(calls)
    return {"wall": wall / n * 1e3, "client": client / n * 1e3, "server": server / n * 1e3}


def one_round(store: Any, reader: Any, served_pid: int, kind: str, n: int, round_: int) -> dict[str, dict[str, float]]:
    api_version = "v1" if kind == "ConfigMap" else "operators.coreos.com/v1alpha1"
    objects = _objects(kind, n, round_)
    created: list[dict[str, Any]] = []
    results = {"create": _phase(served_pid, [lambda o=o: created.append(store.create(o)) for o in objects])}
    updated: list[dict[str, Any]] = []

    def update(obj: dict[str, Any]) -> None:
        obj["metadata"].setdefault("annotations", {})["bench"] = "updated"
        updated.append(store.update(obj))

    results["update"] = _phase(served_pid, [lambda o=o: update(o) for o in created])

    def status(obj: dict[str, Any]) -> None:
        obj["status"] = {**(obj.get("status") or {}), "phase": "Pending", "message": f"round {round_}"}
        store.update_status(obj)

    results["status"] = _phase(served_pid, [lambda o=o: status(o) for o in updated])
    names = [o["metadata"]["name"] for o in created]
    results["get"] = _phase(served_pid, [lambda m=m: reader.get(api_version, kind, m, NAMESPACE) for m in names])
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help="requests of each verb and kind per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from olmkit.kube import connect

    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        os.environ.setdefault("OLMKIT_CACHE_DIR", str(directory / "cache"))
        served = serve_no_controllers(directory / "serve", directory / "pki")
        try:
            store, reader = connect(served.kubeconfig), connect(served.kubeconfig)
            store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            kinds = ("ConfigMap", "ClusterServiceVersion")
            for kind in kinds:  # as a controller process watches what it writes
                api_version = "v1" if kind == "ConfigMap" else "operators.coreos.com/v1alpha1"
                store.informer(api_version, kind)
                reader.resource(api_version, kind)
            one_round(store, reader, served.process.pid, "ConfigMap", 20, -1)  # warm connections and imports
            runs: dict[tuple[str, str], list[dict[str, float]]] = {}
            loads = []
            for round_ in range(args.rounds):
                for kind in kinds:
                    measured = one_round(store, reader, served.process.pid, kind, args.requests, round_)
                    for verb, figures in measured.items():
                        runs.setdefault((kind, verb), []).append(figures)
                loads.append(os.getloadavg()[0])
            store.close()
            reader.close()
        finally:
            served.stop()
    print(f"{args.requests} requests of each kind and verb per round, {args.rounds} interleaved rounds; ")
    print(f"load average (1 min) after each round: {', '.join(f'{x:.2f}' for x in loads)}\n")
    print("| kind | request | wall ms | client CPU ms | server CPU ms | both CPU ms |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for (kind, verb), figures in runs.items():
        med = {k: statistics.median(f[k] for f in figures) for k in ("wall", "client", "server")}
        both = med["client"] + med["server"]
        print(f"| {kind} | {verb} | {med['wall']:.2f} | {med['client']:.2f} | {med['server']:.2f} | {both:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
