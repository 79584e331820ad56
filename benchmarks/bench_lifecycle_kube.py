"""The lifecycle through the kube store backend against ``olmkit serve``, beside the embedded store.

The install workload of ``bench_lifecycle.py`` (every namespace has an own-namespace
OperatorGroup and subscribes to postgres-operator, which pulls in cert-manager-lite, and
storage-operator: three operators per namespace), in interleaved rounds:

* ``embedded``: every controller on a fresh SQLite store, a fake clock (only the work is
  timed), as ``bench_lifecycle.py`` measures it;
* ``kube``: OLM's controllers in this process on a :class:`olmkit.kube.KubeStore`, against a
  fresh ``olmkit serve --no-controllers`` process (SQLite store; its simulated API server and
  kubelet establish CRDs and make Deployments available), on the wall clock, as
  ``olmkit reconcile --until-stable --kubeconfig`` runs. Timed from a cold start of the
  controllers (informers list and watch) until nothing is pending and every CSV Succeeded,
  and the controllers closed (their Leases released).

The seeding (CatalogSource, OperatorGroups, Subscriptions) is not timed. The API requests of
the kube run are counted on the server (its ``apiserver_request_total``, the increase over the
run; a watch counts when it ends, those still open are read from
``apiserver_longrunning_requests``) and split by verb, per installed operator. Both sides run on
the same machine: the server's work is included in the kube wall time. Run with::

    .venv/bin/python benchmarks/bench_lifecycle_kube.py --namespaces 50 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # tests.lifecycle.served: the tests' launcher

from bench_lifecycle import V1A1, _seed
from proc_stats import process_cpu

from olmkit.lifecycle import FakeClock, build_manager
from olmkit.lifecycle.runtime import RealClock
from olmkit.manager import get_plugin_manager
from olmkit.store import SqliteStore, Store
from tests.lifecycle.served import ServeProcess, metrics, serve_no_controllers

PACKAGES = ("postgres-operator", "storage-operator")
#: how the verbs of ``apiserver_request_total`` read in the table (the API server's verb names)
VERBS = ("LIST", "WATCH", "GET", "POST", "PUT", "PATCH", "APPLY", "DELETE")


def _succeeded(store: Store) -> int:
    csvs = store.list(V1A1, "ClusterServiceVersion")
    return sum(1 for c in csvs if (c.get("status") or {}).get("phase") == "Succeeded")


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) a process has used so far (``None`` where ``/proc`` cannot tell)."""
    try:
        return process_cpu(pid)
    except (OSError, IndexError):
        return None


def embedded_round(namespaces: int, workdir: Path) -> dict[str, Any]:
    """Install on a fresh SQLite store, every controller in this process, a fake clock."""
    with SqliteStore(str(Path(tempfile.mkdtemp(dir=workdir)) / "c.db")) as store:
        _seed(store, namespaces, "catalog", PACKAGES)  # type: ignore[arg-type]
        start, cpu = time.perf_counter(), time.process_time()
        with build_manager(store, get_plugin_manager(entrypoints=False), clock=FakeClock()) as manager:
            outcome = manager.run_until_stable(timeout=3600)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        assert outcome.stable, outcome.pending
        assert 3 * namespaces == _succeeded(store)
        return {"seconds": seconds, "reconciles": outcome.reconciles, "cpu": cpu, "server_cpu": 0.0}


def requests_made(served: ServeProcess) -> Counter[tuple[str, str]]:
    """The server's answered requests by (verb, resource), plus the watches open now (as WATCH).

    A non-resource request (discovery) counts under its path; the scrapes of ``/metrics`` do not count.
    """
    from prometheus_client.parser import text_string_to_metric_families

    counts: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(metrics(served)):
        for sample in family.samples:
            labels = sample.labels
            answered = sample.name == "apiserver_request_total" and labels.get("subresource") != "/metrics"
            if answered or sample.name == "apiserver_longrunning_requests":
                what = labels["resource"] + ("/" + labels["subresource"] if labels["subresource"] else "")
                counts[(labels["verb"], what or "(discovery)")] += int(sample.value)
    return counts


def kube_round(namespaces: int, workdir: Path) -> dict[str, Any]:
    """Install through a KubeStore against a fresh ``olmkit serve --no-controllers``, on the wall clock."""
    from olmkit.kube import connect

    directory = Path(tempfile.mkdtemp(dir=workdir))
    served = serve_no_controllers(directory, directory / "pki")
    try:
        with connect(served.kubeconfig) as seeding:
            _seed(seeding, namespaces, "catalog", PACKAGES)  # type: ignore[arg-type]
        before = requests_made(served)
        store = connect(served.kubeconfig)
        try:
            start, cpu, server_cpu = time.perf_counter(), time.process_time(), cpu_seconds(served.process.pid)
            with build_manager(store, get_plugin_manager(entrypoints=False), clock=RealClock()) as manager:
                outcome = manager.run_until_stable(timeout=600)
            seconds = time.perf_counter() - start  # with the release of the Leases, as `olmkit reconcile`
            cpu = time.process_time() - cpu  # this process: the controllers, the client, its informers
            server_after = cpu_seconds(served.process.pid)
            server_cpu = None if server_cpu is None or server_after is None else server_after - server_cpu
            assert outcome.stable, outcome.pending
            during = requests_made(served) - before
            client_requests = store.request_count
            assert 3 * namespaces == _succeeded(store)
        finally:
            store.close()
        return {
            "seconds": seconds,
            "reconciles": outcome.reconciles,
            "requests": during,
            "client_requests": client_requests,
            "cpu": cpu,
            "server_cpu": server_cpu,
        }
    finally:
        served.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"embedded": [], "kube": []}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("OLMKIT_CACHE_DIR", str(Path(tmp) / "cache"))
        embedded_round(1, Path(tmp))  # warm the catalog cache and the imports of both
        kube_round(1, Path(tmp))
        for _ in range(args.rounds):
            runs["embedded"].append(embedded_round(args.namespaces, Path(tmp)))
            runs["kube"].append(kube_round(args.namespaces, Path(tmp)))
    operators = 3 * args.namespaces
    median = {name: statistics.median(r["seconds"] for r in rs) for name, rs in runs.items()}
    print(f"install, {args.namespaces} namespaces x 3 operators, {args.rounds} interleaved rounds\n")
    print("| store | wall median s | min-max s | per operator ms | reconciles | CPU s, this process + server |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, rs in runs.items():
        seconds = [r["seconds"] for r in rs]
        cpu = statistics.median(r["cpu"] for r in rs)
        server = [r["server_cpu"] for r in rs]
        server_text = "?" if None in server else f"{statistics.median(server):.1f}"
        print(
            f"| {name} | {median[name]:.2f} | {min(seconds):.2f}-{max(seconds):.2f} | "
            f"{median[name] / operators * 1000:.1f} | {rs[-1]['reconciles']} | {cpu:.1f} + {server_text} |"
        )
    ratio = median["kube"] / median["embedded"]
    rounds = zip(runs["embedded"], runs["kube"], strict=True)
    per_round = ", ".join(f"{k['seconds'] / e['seconds']:.2f}" for e, k in rounds)
    verdict = "met" if ratio <= 3 else "NOT met"
    print(f"\nkube / embedded: {ratio:.2f}x (per round: {per_round}); target <= 3x: {verdict}")
    last = runs["kube"][-1]
    made: Counter[tuple[str, str]] = last["requests"]
    counts: Counter[str] = Counter()
    for (verb, _), n in made.items():
        counts[verb] += n
    total = sum(counts.values())
    print(f"\nAPI requests of the last kube round, counted on the server: {total}")
    print(f"({total / operators:.1f} per operator; the client counted {last['client_requests']})\n")
    print("| verb | requests | per operator |")
    print("| --- | ---: | ---: |")
    for verb in [*VERBS, *sorted(set(counts) - set(VERBS))]:
        if counts.get(verb):
            print(f"| {verb} | {counts[verb]} | {counts[verb] / operators:.2f} |")
    print("\n| verb | resource | requests | per operator |")
    print("| --- | --- | ---: | ---: |")
    for (verb, what), n in made.most_common():
        print(f"| {verb} | {what} | {n} | {n / operators:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
