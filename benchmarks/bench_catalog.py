"""Catalog loading, indexing and validation at scale (pytest-benchmark; not in the default run).

Workloads are generated under /tmp by /work/shared/bench/gen_catalog.py with seed 1:
``--packages 2000 --bundles 20`` (40k bundles) and ``--packages 10000 --bundles 20``
(200k bundles); the real catalog is ../shared/catalogs/community-operators-prod.
Run: ``.venv/bin/python -m pytest benchmarks/bench_catalog.py --benchmark-only``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from olmkit.catalog import load_catalog_result
from olmkit.catalog.validate import validate_path
from olmkit.manager import get_plugin_manager

REAL = Path("/work/shared/catalogs/community-operators-prod")
GEN = Path("/work/shared/bench/gen_catalog.py")


def _workload(packages: int) -> Path:
    out = Path(f"/tmp/olmkit-bench-{packages}x20")
    if not (out / "catalog").is_dir():
        subprocess.run(
            [sys.executable, str(GEN), "--packages", str(packages), "--bundles", "20", "--subscriptions", "10",
             "--seed", "1", str(out)],
            check=True,
            capture_output=True,
        )
    return out / "catalog"


@pytest.fixture(scope="module")
def registry():
    return get_plugin_manager(entrypoints=False).registry


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def test_real_catalog_cold(benchmark, registry):
    """The real catalog loaded and indexed, no cache (target <= 0.3 s)."""
    result = benchmark.pedantic(lambda: load_catalog_result(REAL, registry, cache=False), rounds=5)
    assert 6467 == sum(len(b) for b in result.catalog.bundles.values())


def test_40k_cold_validated(benchmark, registry):
    """40k bundles loaded, indexed and validated, no cache (target <= 1.5 s)."""
    path = _workload(2000)
    _, problems, cached = benchmark.pedantic(lambda: validate_path(path, registry, cache=False), rounds=3)
    assert not cached


def test_40k_from_cache(benchmark, registry):
    """40k bundles loaded, indexed and validated from the cache (target <= 0.2 s)."""
    path = _workload(2000)
    validate_path(path, registry)
    _, _, cached = benchmark.pedantic(lambda: validate_path(path, registry), rounds=5)
    assert cached


def test_200k_cold(benchmark, registry):
    """200k bundles loaded and indexed, no cache (target <= 8 s, peak memory <= 1.5 GB)."""
    path = _workload(10000)
    result = benchmark.pedantic(lambda: load_catalog_result(path, registry, cache=False), rounds=1)
    assert 150000 < sum(len(b) for b in result.catalog.bundles.values())
