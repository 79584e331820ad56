"""Resolution at scale on gen_catalog workloads (pytest-benchmark; not in the default run).

Workloads: /work/shared/bench/gen_catalog.py --seed 1 with (P, B, S) = (500, 10, 20),
(2000, 20, 50) and (10000, 20, 200), generated under /tmp. problem.json becomes a
ResolutionRequest (installed bundles become installed CSVs carrying their properties
annotation). Each benchmark resolves a warm catalog (loaded and indexed once), which
is what the issue's targets measure; `olmkit bench resolve` prints the phase split.
Run: ``.venv/bin/python -m pytest benchmarks/bench_resolve.py --benchmark-only``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from olmkit._solver import IMPLEMENTATION
from olmkit.cli.resolve import problem_request
from olmkit.manager import get_plugin_manager
from olmkit.resolver import resolve

GEN = Path("/work/shared/bench/gen_catalog.py")
WORKLOADS = {"P500": (500, 10, 20), "P2000": (2000, 20, 50), "P10000": (10000, 20, 200)}


def _workload(packages: int, bundles: int, subs: int) -> Path:
    out = Path(f"/tmp/olmkit-resolve-{packages}x{bundles}x{subs}")
    if not (out / "problem.json").is_file():
        subprocess.run(
            [sys.executable, str(GEN), "--packages", str(packages), "--bundles", str(bundles),
             "--subscriptions", str(subs), "--seed", "1", str(out)],
            check=True,
            capture_output=True,
        )
    return out


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_resolve_warm(benchmark, name):
    """Resolve the workload's namespace from a loaded, indexed catalog."""
    pm = get_plugin_manager(entrypoints=False)
    request = problem_request(_workload(*WORKLOADS[name]), pm)
    first = resolve(request)  # loads the catalog and builds the index
    assert "ok" == first.status
    benchmark.extra_info.update(encoder=IMPLEMENTATION, backend="cryptominisat", first_run=first.timings)

    result = benchmark.pedantic(resolve, args=(request,), rounds=3, iterations=1)

    assert "ok" == result.status
    benchmark.extra_info["timings"] = dict(result.timings)
    benchmark.extra_info["counters"] = dict(result.counters)
