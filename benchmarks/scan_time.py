"""CPU time of the C scan alone (``LineScanner.scan``) over every file of a catalog, best of N.

For comparing the scan of two installs on one machine: run it with each install's Python,
from outside the worktree, interleaved::

    python benchmarks/scan_time.py /tmp/olmkit-compare/P2000-B20-S50-seed1/catalog 7

One catalog load (no cache) records the readings the loader gives the scanner and every file
it scans; then each round scans them all with a fresh scanner: ``scan`` (the C call and the
Python wrapper that copies its outputs) and ``olm_scan_file`` alone; then ``scan_files`` over
the same files in the loader's batches (one call and one copy of the outputs per batch). With
``RAW_ONLY=N`` in the environment, N more rounds of the C call alone follow (for ``perf record``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from olmkit import get_plugin_manager
from olmkit._solver import _scan
from olmkit.catalog import load_catalog_result

rec: dict[str, Any] = {"readings": None, "files": [], "batches": []}
init, scan = _scan.LineScanner.__init__, _scan.LineScanner.scan


def pinit(self: Any, readings: Any = ()) -> None:
    readings = list(readings)
    rec["readings"] = readings
    init(self, readings)


def pscan(self: Any, data: bytes) -> Any:
    rec["files"].append(bytes(data))
    return scan(self, data)


def pscan_files(self: Any, data: Any) -> Any:
    batch = list(map(bytes, data))
    rec["files"].extend(batch)
    if batch:
        rec["batches"].append(batch)
    return scan_files(self, data)


scan_files = getattr(_scan.LineScanner, "scan_files", None)
_scan.LineScanner.__init__ = pinit  # type: ignore[method-assign]
_scan.LineScanner.scan = pscan  # type: ignore[method-assign]
if scan_files is not None:
    _scan.LineScanner.scan_files = pscan_files  # type: ignore[method-assign]
registry = get_plugin_manager(entrypoints=False).registry
load_catalog_result(sys.argv[1], registry, cache=False)
_scan.LineScanner.__init__, _scan.LineScanner.scan = init, scan  # type: ignore[method-assign]
if scan_files is not None:
    _scan.LineScanner.scan_files = scan_files  # type: ignore[method-assign]
files = rec["files"]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
best_w = best_c = 1e9
raw_w = 1e9
for _ in range(n):
    sc = _scan.LineScanner(rec["readings"])
    w, c = time.perf_counter(), time.process_time()
    for d in files:
        sc.scan(d)
    best_w = min(best_w, time.perf_counter() - w)
    best_c = min(best_c, time.process_time() - c)
    # the C call alone
    sc = _scan.LineScanner(rec["readings"])
    lib, ffi, s = sc._lib, sc._ffi, sc._s
    w = time.process_time()
    for d in files:
        lib.olm_scan_file(s, ffi.from_buffer(d), len(d))
    raw_w = min(raw_w, time.process_time() - w)
mb = sum(map(len, files)) / 1e6
print(f"{len(files)} files {mb:.1f} MB: scan best wall {best_w:.4f} s cpu {best_c:.4f} s;", end=" ")
print(f"olm_scan_file alone cpu {raw_w:.4f} s")
batches = rec["batches"]
if batches:  # the loader's way: a batch of files per call (the batches the load gave the scanner)
    best_b = 1e9
    for _ in range(n):
        sc = _scan.LineScanner(rec["readings"])
        c = time.process_time()
        for batch in batches:
            sc.scan_files(batch)
        best_b = min(best_b, time.process_time() - c)
    print(f"scan_files in {len(batches)} batches: best cpu {best_b:.4f} s")
if os.environ.get("RAW_ONLY"):
    for _ in range(int(os.environ["RAW_ONLY"])):
        sc = _scan.LineScanner(rec["readings"])
        lib, ffi, s = sc._lib, sc._ffi, sc._s
        for d in files:
            lib.olm_scan_file(s, ffi.from_buffer(d), len(d))
