"""CPU and memory of ``catalog validate``'s checks alone (everything after the load), in one process.

Loads the catalog cold (no cache), then runs ``validate_catalog`` once and prints its CPU time
(this process only: with ``--jobs 2`` the forked child's part is not in it), the problem count,
and VmRSS / VmHWM after the load and after the checks. Run it with two installs, interleaved,
to compare (each from its own virtualenv's python)::

    for i in 1 2 3; do
        /path/to/main/.venv/bin/python benchmarks/validate_checks.py W/catalog
        .venv/bin/python benchmarks/validate_checks.py W/catalog
    done

A fresh process per run: the checks' first run is the one measured (parser caches cold).
"""

from __future__ import annotations

import argparse
import gc
import os
import time

from proc_stats import memory_mb

from olmkit import get_plugin_manager
from olmkit.catalog import load_catalog_result
from olmkit.catalog.validate import validate_catalog


def memory() -> str:
    """VmRSS and VmHWM of this process, in MB."""
    pid = os.getpid()
    return f"rss {memory_mb(pid, 'VmRSS'):.0f} MB, hwm {memory_mb(pid, 'VmHWM'):.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("catalog")
    ap.add_argument("--jobs", type=int, default=1, help="1: checked here; 2: a forked child takes part")
    args = ap.parse_args()
    registry = get_plugin_manager(entrypoints=False).registry
    result = load_catalog_result(args.catalog, registry, cache=False)
    loaded = memory()
    enabled = gc.isenabled()
    start = time.process_time()
    problems = validate_catalog(result.catalog, registry, result.problems, jobs=args.jobs)
    cpu = time.process_time() - start
    print(f"checks {cpu:.3f} s CPU, {len(problems)} problems; after the load: {loaded}; after the checks: {memory()}")
    assert gc.isenabled() == enabled


if __name__ == "__main__":
    main()
