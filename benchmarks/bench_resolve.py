"""Resolution at scale on gen_catalog workloads (pytest-benchmark; not in the default run).

Workloads: /work/shared/bench/gen_catalog.py --seed 1 with (P, B, S) = (500, 10, 20),
(2000, 20, 50) and (10000, 20, 200), generated under /tmp. problem.json becomes a
ResolutionRequest (installed bundles become installed CSVs carrying their properties
annotation).

* ``test_resolve_warm``: resolutions against a loaded catalog whose graph is in memory,
  which is what the issue's resolution targets measure (every resolution still reloads
  the catalog source: ``timings["catalog"]``, kept apart in extra_info).
* ``test_resolve_cold``: the first resolution against a catalog never seen (its graph is
  neither in memory nor on disk: it is compiled and stored, and forgotten again before the
  next round).
* ``test_resolve_first``: the first resolution in a process, graph read from disk.
* ``test_resolve_command``: the whole ``olmkit resolve -f`` command from warm caches.
* ``test_resolve_command_cold``: the whole command with an empty cache directory.
* ``test_libsolv_command``: the reference, libsolv, on the same workloads (``make bench-compare``
  runs olmkit and libsolv interleaved, with peak memory and the ratio).

``olmkit bench resolve --workload DIR`` prints the same phase split for one workload.
Run: ``.venv/bin/python -m pytest benchmarks/bench_resolve.py --benchmark-only``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from olmkit._solver import IMPLEMENTATION
from olmkit._solver.backends import default_backend
from olmkit.cli.output import dump_yaml
from olmkit.cli.resolve import (
    LIBSOLV_SCRIPT,
    SYSTEM_PYTHON,
    find_generator,
    libsolv_missing,
    problem_objects,
    problem_request,
)
from olmkit.manager import get_plugin_manager
from olmkit.resolver import resolve
from olmkit.resolver._graph_cache import clear_graphs, graph_path

# ../shared beside the repository, or above a worktree (find_generator looks in both)
GEN = find_generator() or Path(__file__).resolve().parents[2] / "shared" / "bench" / "gen_catalog.py"
WORKLOADS = {"P500": (500, 10, 20), "P2000": (2000, 20, 50), "P10000": (10000, 20, 200)}


def _workload(packages: int, bundles: int, subs: int) -> Path:
    out = Path(f"/tmp/olmkit-resolve-{packages}x{bundles}x{subs}")
    if not (out / "problem.json").is_file():
        subprocess.run(
            [
                sys.executable,
                str(GEN),
                "--packages",
                str(packages),
                "--bundles",
                str(bundles),
                "--subscriptions",
                str(subs),
                "--seed",
                "1",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
    return out


def _info(resolution):
    timings = dict(resolution.timings)
    timings["resolution"] = timings.get("total", 0.0) - timings.get("catalog", 0.0)
    return {"timings": timings, "counters": dict(resolution.counters)}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_resolve_warm(benchmark, name):
    """Resolve the workload's namespace from a loaded catalog whose graph is in memory."""
    pm = get_plugin_manager(entrypoints=False)
    request = problem_request(_workload(*WORKLOADS[name]), pm)
    first = resolve(request)  # finds (or compiles) the graph
    assert "ok" == first.status
    benchmark.extra_info.update(encoder=IMPLEMENTATION, backend=default_backend(), first_run=_info(first))

    result = benchmark.pedantic(resolve, args=(request,), rounds=5, iterations=1)

    assert "ok" == result.status
    benchmark.extra_info.update(_info(result))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_resolve_cold(benchmark, name):
    """The first resolution against a new catalog: its graph is compiled (and stored)."""
    pm = get_plugin_manager(entrypoints=False)
    request = problem_request(_workload(*WORKLOADS[name]), pm)
    catalog = request.sources[0].source.load()
    stored = graph_path(catalog.digest, pm.registry, catalog.name)

    def cold():
        clear_graphs()
        stored.unlink(missing_ok=True)
        return resolve(request)

    result = benchmark.pedantic(cold, rounds=3, iterations=1)

    assert "ok" == result.status
    assert 1 == result.counters["graphs_compiled"]
    benchmark.extra_info.update(_info(result))


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_resolve_first(benchmark, name):
    """The first resolution in a process: the catalog's graph is read from disk."""
    pm = get_plugin_manager(entrypoints=False)
    request = problem_request(_workload(*WORKLOADS[name]), pm)
    assert "ok" == resolve(request).status  # stores the graph if it was not stored yet

    def first():
        clear_graphs()
        return resolve(request)

    result = benchmark.pedantic(first, rounds=3, iterations=1)

    assert "ok" == result.status
    assert 1 == result.counters["graphs_disk"]
    benchmark.extra_info.update(_info(result))


def _command(tmp_path: Path, name: str) -> list[str]:
    """``olmkit resolve -f`` of a workload's manifests (written under ``tmp_path``)."""
    pm = get_plugin_manager(entrypoints=False)
    workload = _workload(*WORKLOADS[name])
    manifests = tmp_path / f"{name}.yaml"
    manifests.write_text(dump_yaml({"apiVersion": "v1", "kind": "List", "items": problem_objects(workload, pm)}))
    return [sys.executable, "-m", "olmkit", "resolve", "-f", str(manifests), "-o", "json"]


def _cached(cache: Path) -> bool:
    """Whether a command's catalog cache and graph have landed (they are written after it exits)."""
    return any(cache.glob("*.cache")) and any(cache.glob("resolver/*.graph"))


def test_resolve_command(benchmark, tmp_path):
    """``olmkit resolve -f`` at P=2000 with warm catalog and graph caches (target: 1 s)."""
    argv = _command(tmp_path, "P2000")
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run(argv, check=True, capture_output=True, env=env)  # warms the caches
    deadline = time.monotonic() + 60
    while not _cached(tmp_path / "cache") and time.monotonic() < deadline:
        time.sleep(0.1)

    done = benchmark.pedantic(
        subprocess.run, args=(argv,), kwargs={"capture_output": True, "env": env}, rounds=5, iterations=1
    )

    assert 0 == done.returncode
    assert b'"status": "ok"' in done.stdout


@pytest.mark.parametrize("name", ["P2000", "P10000"])
def test_resolve_command_cold(benchmark, tmp_path, name):
    """``olmkit resolve -f`` with an empty cache directory: a catalog never seen (compare with
    ``/usr/bin/python3 benchmarks/libsolv_resolve.py DIR --repeat 1`` on the same workload)."""
    argv = _command(tmp_path, name)
    rounds = iter(range(1000))

    def fresh():
        cache = tmp_path / f"cache-{next(rounds)}"
        return (argv,), {"capture_output": True, "env": {**os.environ, "OLMKIT_CACHE_DIR": str(cache)}}

    done = benchmark.pedantic(subprocess.run, setup=fresh, rounds=3, iterations=1)

    assert 0 == done.returncode
    assert b'"status": "ok"' in done.stdout


@pytest.mark.parametrize("name", ["P2000", "P10000"])
def test_libsolv_command(benchmark, name):
    """The reference: ``benchmarks/libsolv_resolve.py`` under the system Python on the same workload (it
    parses the catalog's JSON every run). Skipped, saying how to install it, without python3-solv."""
    missing = libsolv_missing()
    if missing:
        pytest.skip(missing)
    argv = [SYSTEM_PYTHON, str(LIBSOLV_SCRIPT), str(_workload(*WORKLOADS[name])), "--repeat", "1"]

    done = benchmark.pedantic(subprocess.run, args=(argv,), kwargs={"capture_output": True}, rounds=3)

    assert 0 == done.returncode
    benchmark.extra_info.update(json.loads(done.stdout))
