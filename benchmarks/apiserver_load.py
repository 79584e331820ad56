"""Load figures of ``olmkit serve`` (results in benchmarks/results/apiserver.md).

    .venv/bin/python benchmarks/apiserver_load.py [--mixed-seconds 20] [--watches 200] [--writes 1000]

1. ``kubectl get csv -A`` with 1,000 CSVs (the whole command, and the server's Table list alone);
2. N concurrent watches while M writes happen: every watch must receive every event, in order;
3. mixed writes at 50 requests/s (each Subscription created, merge-patched, status-patched and
   deleted, 20 ms apart): latency percentiles;
4. the server's resident memory with 10,000 objects listed and watched.

Each part starts ``olmkit serve --no-controllers`` on a fresh SQLite store in a temporary
directory (objects are seeded straight into the store before the server starts).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def csv(n: int) -> dict[str, Any]:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"operator-{n}.v1.0.{n % 7}",
            "namespace": f"ns-{n % 50}",
            "labels": {"operators.coreos.com/operator-" + str(n): ""},
            "annotations": {"capabilities": "Basic Install", "description": "x" * 400},
        },
        "spec": {
            "displayName": f"Operator {n}",
            "version": f"1.0.{n % 7}",
            "replaces": f"operator-{n}.v0.9.0",
            "description": "An operator of the benchmark. " * 10,
            "install": {"strategy": "deployment", "spec": {"deployments": [{"name": f"op-{n}", "spec": {}}]}},
        },
    }


class Server:
    """``olmkit serve --no-controllers`` on a store in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        env = {**os.environ, "OLMKIT_CACHE_DIR": str(directory / "cache")}
        self.log = (directory / "serve.log").open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "olmkit", "serve", "--store", str(directory / "cluster.db"),
             "--address", "127.0.0.1:0", "--no-controllers", "-q"],
            stdout=subprocess.PIPE, stderr=self.log, text=True, env=env,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("serving"):
            raise SystemExit(f"olmkit serve did not start: {line!r} {(directory / 'serve.log').read_text()}")
        self.url = line.split(" on ", 1)[1].split(" ", 1)[0]
        self.kubeconfig = directory / "kubeconfig"
        self.token = (directory / "pki" / "token").read_text().strip()
        self.ssl = ssl.create_default_context(cafile=str(directory / "pki" / "ca.crt"))

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.close()


def seed(directory: Path, objects: list[dict[str, Any]], phase: str | None = None) -> None:
    from olmkit.store import SqliteStore

    with SqliteStore(directory / "cluster.db") as store:
        for obj in objects:
            created = store.create(obj)
            if phase:
                store.update_status({**created, "status": {"phase": phase}})


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def part_get_csvs(tmp: Path, count: int, repeat: int) -> dict[str, Any]:
    directory = tmp / "get"
    directory.mkdir()
    seed(directory, [csv(n) for n in range(count)], phase="Succeeded")
    server = Server(directory)
    try:
        kubectl = shutil.which("kubectl") or "kubectl"
        cmd = [kubectl, "--kubeconfig", str(server.kubeconfig), "get", "csv", "-A"]
        subprocess.run(cmd, capture_output=True, check=True)  # warm discovery cache
        wall = []
        for _ in range(repeat):
            start = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            wall.append(time.perf_counter() - start)
        rows = len(done.stdout.splitlines()) - 1
        version = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True).stdout
        start = time.perf_counter()
        subprocess.run([kubectl, "version", "--client"], capture_output=True, check=True)
        kubectl_alone = time.perf_counter() - start
        server_only = asyncio.run(_time_list(server, repeat))
    finally:
        server.stop()
    return {
        "rows": rows,
        "kubectl_median_s": statistics.median(wall),
        "kubectl_version_alone_s": kubectl_alone,
        "server_list_median_s": statistics.median(server_only),
        "kubectl": version.splitlines()[0] if version else "",
    }


async def _time_list(server: Server, repeat: int) -> list[float]:
    import aiohttp

    times = []
    headers = {"Authorization": f"Bearer {server.token}", "Accept": TABLE}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.ssl)) as session:
        for _ in range(repeat):
            start = time.perf_counter()
            async with session.get(f"{server.url}/apis/operators.coreos.com/v1alpha1/clusterserviceversions",
                                   headers=headers) as response:  # fmt: skip
                await response.read()
            times.append(time.perf_counter() - start)
    return times


async def _watchers(url: str, token: str, ca: str, start_rv: str, watchers: int, writes: int, conn: Any) -> None:
    """In a process of its own: open the watches, say so, collect every event, report."""
    import aiohttp

    headers = {"Authorization": f"Bearer {token}"}
    base = f"{url}/api/v1/namespaces/bench/configmaps"
    received: list[list[tuple[str, str]]] = [[] for _ in range(watchers)]
    opened = 0
    connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca), limit=watchers + 20)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:

        async def watch(i: int) -> None:
            nonlocal opened
            query = f"?watch=true&resourceVersion={start_rv}&timeoutSeconds=600"
            async with session.get(base + query, headers=headers) as response:
                opened += 1
                if opened == watchers:
                    conn.send("ready")
                async for line in response.content:
                    event = orjson.loads(line)
                    received[i].append((event["type"], event["object"]["data"]["n"]))
                    if len(received[i]) == writes:
                        return

        await asyncio.wait_for(asyncio.gather(*(watch(i) for i in range(watchers))), 600)
    expected = [("ADDED" if n < 50 else "MODIFIED", str(n)) for n in range(writes)]
    conn.send((sum(1 for got in received if got == expected), time.time()))


def _watcher_process(url: str, token: str, ca: str, start_rv: str, watchers: int, writes: int, conn: Any) -> None:
    asyncio.run(_watchers(url, token, ca, start_rv, watchers, writes, conn))


async def _watches(server: Server, watchers: int, writes: int) -> dict[str, Any]:
    import multiprocessing

    import aiohttp

    headers = {"Authorization": f"Bearer {server.token}"}
    merge = {**headers, "Content-Type": "application/merge-patch+json"}
    base = f"{server.url}/api/v1/namespaces/bench/configmaps"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.ssl)) as session:
        async with session.post(base, json={"metadata": {"name": "seed"}}, headers=headers) as r:
            start_rv = (await r.json())["metadata"]["resourceVersion"]
        ours, theirs = multiprocessing.Pipe()
        ca = str(server.directory / "pki" / "ca.crt")
        args = (server.url, server.token, ca, start_rv, watchers, writes, theirs)
        child = multiprocessing.get_context("spawn").Process(target=_watcher_process, args=args)
        child.start()
        assert ours.recv() == "ready"
        start = time.perf_counter()
        started_wall = time.time()
        latencies = []
        for n in range(writes):
            body = {"metadata": {"name": f"w{n % 50}"}, "data": {"n": str(n)}}
            began = time.perf_counter()
            if n < 50:
                async with session.post(base, json=body, headers=headers) as r:
                    assert r.status == 201, await r.text()
            else:
                patch = orjson.dumps({"data": {"n": str(n)}})
                async with session.patch(f"{base}/w{n % 50}", data=patch, headers=merge) as r:
                    assert r.status == 200, await r.text()
            latencies.append(time.perf_counter() - began)
        written = time.perf_counter() - start
        complete, finished_wall = await asyncio.get_running_loop().run_in_executor(None, ours.recv)
        child.join(60)
    return {
        "watchers": watchers,
        "writes": writes,
        "complete_in_order": complete,
        "write_s": written,
        "write_p50_ms": percentile(latencies, 50) * 1000,
        "write_p99_ms": percentile(latencies, 99) * 1000,
        "all_delivered_s": finished_wall - started_wall,
    }


def part_watches(tmp: Path, watchers: int, writes: int) -> dict[str, Any]:
    directory = tmp / "watch"
    directory.mkdir()
    server = Server(directory)
    try:
        return asyncio.run(_watches(server, watchers, writes))
    finally:
        server.stop()


async def _mixed(server: Server, rate: float, seconds: float) -> dict[str, Any]:
    import aiohttp

    headers = {"Authorization": f"Bearer {server.token}"}
    merge = {**headers, "Content-Type": "application/merge-patch+json"}
    subs = f"{server.url}/apis/operators.coreos.com/v1alpha1/namespaces/mixed/subscriptions"
    latencies: dict[str, list[float]] = {"create": [], "patch": [], "status": [], "delete": []}
    errors: dict[str, int] = {}

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.ssl, limit=64)) as session:

        async def one(n: int) -> None:
            op = ("create", "patch", "status", "delete")[n % 4]
            item = n // 4
            start = time.perf_counter()
            if op == "create":
                spec = {"name": f"p{item}", "source": "c", "sourceNamespace": "olm", "channel": "stable"}
                sub = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                       "metadata": {"name": f"s{item}"}, "spec": spec}  # fmt: skip
                request = session.post(subs, json=sub, headers=headers)
            elif op == "patch":
                request = session.patch(f"{subs}/s{item}", data=b'{"spec":{"channel":"fast"}}', headers=merge)
            elif op == "status":
                request = session.patch(f"{subs}/s{item}/status", data=b'{"status":{"state":"AtLatestKnown"}}',
                                        headers=merge)  # fmt: skip
            else:
                request = session.delete(f"{subs}/s{item}", headers=headers)
            async with request as response:
                await response.read()
                if response.status >= 300:
                    errors[f"{op} {response.status}"] = errors.get(f"{op} {response.status}", 0) + 1
            latencies[op].append(time.perf_counter() - start)

        tasks = []
        start = time.perf_counter()
        total = int(rate * seconds)
        for n in range(total):
            delay = start + n / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(n)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    everything = [v for values in latencies.values() for v in values]
    return {
        "requests": len(everything),
        "seconds": elapsed,
        "errors": errors,
        "p50_ms": percentile(everything, 50) * 1000,
        "p99_ms": percentile(everything, 99) * 1000,
        "max_ms": max(everything) * 1000,
        "by_op_p99_ms": {op: percentile(v, 99) * 1000 for op, v in latencies.items() if v},
    }


def part_mixed(tmp: Path, rate: float, seconds: float) -> dict[str, Any]:
    directory = tmp / "mixed"
    directory.mkdir()
    server = Server(directory)
    try:
        return asyncio.run(_mixed(server, rate, seconds))
    finally:
        server.stop()
        if os.environ.get("KEEP_LOG"):
            shutil.copy(directory / "serve.log", os.environ["KEEP_LOG"])


async def _touch_all(server: Server) -> None:
    import aiohttp

    headers = {"Authorization": f"Bearer {server.token}"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=server.ssl)) as session:
        for path in ("/apis/operators.coreos.com/v1alpha1/clusterserviceversions", "/api/v1/configmaps"):
            async with session.get(server.url + path, headers=headers) as response:
                await response.read()
            async with session.get(server.url + path, headers={**headers, "Accept": TABLE}) as response:
                await response.read()


def part_memory(tmp: Path, count: int) -> dict[str, Any]:
    directory = tmp / "memory"
    directory.mkdir()
    empty = Server(directory)
    empty_rss = empty.rss_mib()
    empty.stop()
    half = count // 2
    cms = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{n}", "namespace": f"ns-{n % 50}"},
         "data": {"k": "v" * 200}}
        for n in range(count - half)
    ]  # fmt: skip
    seed(directory, [csv(n) for n in range(half)] + cms)
    server = Server(directory)
    try:
        started = server.rss_mib()
        asyncio.run(_touch_all(server))
        after = server.rss_mib()
    finally:
        server.stop()
    return {"objects": count, "empty_rss_mib": empty_rss, "started_rss_mib": started, "after_lists_rss_mib": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--csvs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--watches", type=int, default=200)
    parser.add_argument("--writes", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--mixed-seconds", type=float, default=20.0)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--only", choices=["get", "watch", "mixed", "memory"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="olmkit-apiserver-bench-") as raw:
        tmp = Path(raw)
        parts = {
            "get": lambda: part_get_csvs(tmp, args.csvs, args.repeat),
            "watch": lambda: part_watches(tmp, args.watches, args.writes),
            "mixed": lambda: part_mixed(tmp, args.rate, args.mixed_seconds),
            "memory": lambda: part_memory(tmp, args.objects),
        }
        for name, run in parts.items():
            if args.only and name != args.only:
                continue
            print(name, orjson.dumps(run(), option=orjson.OPT_INDENT_2).decode(), flush=True)


if __name__ == "__main__":
    main()
