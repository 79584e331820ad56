"""Speed and memory of ``olmkit catalog serve`` (the gRPC Registry API).

A script, not a pytest-benchmark module: every figure comes from a fresh ``olmkit catalog
serve`` process, as a catalog pod starts. For each workload it measures

* ready: from spawning the process until it prints that it serves (after the catalog is
  loaded and the port bound; health answers SERVING from then on, checked), "warm" with
  the catalog cache already written by an earlier run, "cold" with an empty cache;
* RSS: the server's resident memory when ready and its peak (VmHWM) after the RPCs below;
* ListBundles: streaming every bundle to a client in this process (first and second call);
* the client side: the grpc catalog source reading the whole catalog (ListPackages,
  GetPackage for each, ListBundles).

Usage::

    .venv/bin/python benchmarks/bench_grpc.py [--catalog DIR] [--generated-packages 2000] [--runs 3]
    .venv/bin/python benchmarks/bench_grpc.py --resolve-all   # community-operators-prod, every package

Results: benchmarks/results/grpc.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from proc_stats import memory_mb, process_cpu

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the repository (a clone); from a git worktree, the first such folder above it
SHARED = next((p / "shared" for p in ROOT.parents if (p / "shared" / "bench").is_dir()), ROOT.parent / "shared")
COMMUNITY = SHARED / "catalogs" / "community-operators-prod"
GENERATOR = SHARED / "bench" / "gen_catalog.py"
OLMKIT = [sys.executable, "-m", "olmkit"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_once(catalog: Path, cache: Path, *, cold: bool) -> dict[str, Any]:
    """One fresh server: ready time, RSS, ListBundles time, client read time."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from olmkit.plugins.grpc_registry._api import registry_pb2 as pb
    from olmkit.plugins.grpc_registry._api import registry_pb2_grpc as pb_grpc

    if cold and cache.exists():
        shutil.rmtree(cache)
    port = _free_port()
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(cache)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*OLMKIT, "catalog", "serve", str(catalog), "--address", f"127.0.0.1:{port}", "--watch-interval", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out: dict[str, Any] = {}
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        out["ready"] = time.perf_counter() - start
        match = re.search(r"serving (\d+) packages .*ready in ([\d.]+)s", line)
        if not match:
            raise SystemExit(f"server did not start: {line}{proc.stderr.read()}")
        out["packages"] = int(match.group(1))
        out["load_in_process"] = float(match.group(2))
        out["rss_ready"] = memory_mb(proc.pid, "VmRSS")
        with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 1 << 26)]) as ch:
            status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service="api.Registry"))
            assert status.status == health_pb2.HealthCheckResponse.SERVING
            stub = pb_grpc.RegistryStub(ch)
            for key in ("list_bundles_1", "list_bundles_2"):
                cpu, own, t = process_cpu(proc.pid), time.process_time(), time.perf_counter()
                n = sum(1 for _ in stub.ListBundles(pb.ListBundlesRequest(), timeout=120))
                out[key] = time.perf_counter() - t
                out[key + "_server_cpu"] = process_cpu(proc.pid) - cpu
                out[key + "_client_cpu"] = time.process_time() - own
            out["messages"] = n
        from olmkit.manager import get_plugin_manager
        from olmkit.plugins.grpc_registry.client import fetch_catalog

        registry = get_plugin_manager().registry
        t = time.perf_counter()
        fetched = fetch_catalog(f"127.0.0.1:{port}", registry, name="bench")
        out["client_read"] = time.perf_counter() - t
        out["bundles"] = sum(map(len, fetched.bundles.values()))
        out["rss_peak"] = memory_mb(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    return out


def _row(name: str, runs: list[dict[str, Any]]) -> str:
    def rng(key: str, fmt: str = "{:.2f}") -> str:
        values = [r[key] for r in runs]
        lo, med, hi = min(values), statistics.median(values), max(values)
        return f"{fmt.format(lo)}-{fmt.format(hi)} (median {fmt.format(med)})"

    r0 = runs[0]
    return (
        f"| {name} | {r0['packages']} / {r0['bundles']} / {r0['messages']} | {rng('ready')} s | "
        f"{rng('load_in_process')} s | {rng('rss_ready', '{:.0f}')} MB | {rng('rss_peak', '{:.0f}')} MB | "
        f"{rng('list_bundles_1')} s | {rng('list_bundles_2')} s (CPU: server {rng('list_bundles_2_server_cpu')} s, "
        f"client {rng('list_bundles_2_client_cpu')} s) | {rng('client_read')} s |"
    )


def resolve_all() -> None:
    """Every package of community-operators-prod on its default channel: files vs served, byte for byte."""
    import attrs

    from olmkit.catalog import load_catalog
    from olmkit.cli.output import dump_json
    from olmkit.manager import get_plugin_manager
    from olmkit.plugins.grpc_registry.client import fetch_catalog
    from olmkit.plugins.grpc_registry.server import serve_for_tests
    from olmkit.resolver import SourceRef
    from olmkit.resolver.manifests import Manifest, build_request

    pm = get_plugin_manager()
    server = serve_for_tests(COMMUNITY, pm, watch_interval=0)
    try:
        files = load_catalog(COMMUNITY, pm.registry, name="community")
        served = fetch_catalog(f"127.0.0.1:{server.port}", pm.registry, name="community")
    finally:
        server.stop(0)

    class Fixed:
        def __init__(self, catalog: Any) -> None:
            self.name, self.catalog = "community", catalog

        def load(self) -> Any:
            return self.catalog

        def health(self) -> Any:
            return None

    same = ok = 0
    start = time.perf_counter()
    for package in sorted(files.packages):
        objs = [
            {"kind": "OperatorGroup", "metadata": {"name": "og", "namespace": "ops"}},
            {
                "kind": "Subscription",
                "metadata": {"name": package, "namespace": "ops"},
                "spec": {"name": package, "source": "community", "sourceNamespace": "ops"},
            },
        ]
        answers = []
        for catalog in (files, served):
            request = build_request([Manifest(o, "<bench>") for o in objs], pm=pm, namespace="ops")
            request = attrs.evolve(request, sources=(SourceRef("community", "ops", Fixed(catalog), 0),))
            answers.append(dump_json(pm.hook.olmkit_resolve(request=request).to_json(explain=True)))
        if answers[0] != answers[1]:
            print(f"DIFFERENT: {package}")
        else:
            same += 1
            ok += '"status": "ok"' in answers[0]
    took = time.perf_counter() - start
    total = len(files.packages)
    print(f"{same}/{total} packages resolve byte-identically ({ok} resolved, the rest fail alike); {took:.1f}s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--catalog", type=Path, default=COMMUNITY)
    ap.add_argument("--generated-packages", type=int, default=2000, help="0: skip the generated catalog")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--resolve-all", action="store_true")
    args = ap.parse_args()
    if args.resolve_all:
        resolve_all()
        return
    print(
        "| workload | packages / bundles / ListBundles messages | ready (spawn → serving) | of which load | "
        "RSS ready | RSS peak | ListBundles 1st | ListBundles 2nd | client reads all |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="olmkit-bench-grpc-") as tmp:
        cache = Path(tmp) / "cache"
        run_once(args.catalog, cache, cold=True)  # writes the cache
        print(
            _row(
                f"{args.catalog.name}, warm cache",
                [run_once(args.catalog, cache, cold=False) for _ in range(args.runs)],
            )
        )
        print(_row(f"{args.catalog.name}, cold", [run_once(args.catalog, cache, cold=True) for _ in range(args.runs)]))
        if args.generated_packages:
            gen = Path(tmp) / "gen"
            subprocess.run(
                [
                    sys.executable,
                    str(GENERATOR),
                    "--packages",
                    str(args.generated_packages),
                    "--bundles",
                    "20",
                    "--subscriptions",
                    "10",
                    "--seed",
                    "1",
                    str(gen),
                ],
                check=True,
                capture_output=True,
            )
            name = f"generated P={args.generated_packages}x20"
            print(_row(f"{name}, cold", [run_once(gen / "catalog", cache, cold=True) for _ in range(args.runs)]))
            print(_row(f"{name}, warm cache", [run_once(gen / "catalog", cache, cold=False) for _ in range(args.runs)]))


if __name__ == "__main__":
    main()
