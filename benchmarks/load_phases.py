"""CPU time of a catalog load (no cache) and of its bundle rows, and the memory it holds after.

For comparing the loader of two installs on one machine: run it with each install's Python,
interleaved, from outside both trees (``cd /tmp``)::

    python benchmarks/load_phases.py /tmp/olmkit-compare/P2000-B20-S50-seed1/catalog --repeat 3

Prints, per load, the CPU time (user + system) of the whole load and of
``ColumnBuilder._add_scanned`` (the bundle lines the C scan took), then VmRSS and VmHWM once
the last load is done (the catalog alive).
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from typing import Any

from proc_stats import memory_mb
from resolve_phases import CPU, wrap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("catalog")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from olmkit import get_plugin_manager
    from olmkit.catalog import _fast, load_catalog_result

    registry = get_plugin_manager(entrypoints=False).registry
    wrap(_fast.__name__, "ColumnBuilder._add_scanned", "scanned")
    kept: list[Any] = []
    for _ in range(args.repeat):
        kept.clear()  # the last load's catalog stays alive for the memory figure
        gc.collect()
        CPU.clear()
        start = time.process_time()
        kept.append(load_catalog_result(args.catalog, registry, cache=False))
        load = time.process_time() - start
        print(f"load {load:.3f} s CPU, bundle rows (_add_scanned) {CPU.get('scanned', 0.0):.3f} s")
    pid = os.getpid()
    print(f"VmRSS {memory_mb(pid, 'VmRSS'):.0f} MB, VmHWM {memory_mb(pid, 'VmHWM'):.0f} MB")


if __name__ == "__main__":
    main()
