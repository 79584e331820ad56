"""Two olmkit installs, interleaved, on the graph compile alone: CPU per phase and the memory it adds.

Each round runs, with install A then install B, a fresh process that loads the workload's
catalog (no cache) and compiles its graph once from the loader's columns (the cold
``resolve`` path, the cyclic GC off as there): the compile's CPU (process time) split by the
compiler's phases, the process's RSS before and after, and the SHA-256 of the stored graph
bytes (which must be equal). Only runs interleaved in one sitting compare on a shared machine.

Usage::

    python benchmarks/compile_ab.py --a /tmp/ci21/main/.venv/bin/python --b .venv/bin/python \\
        --workload /tmp/olmkit-compare/P2000-B20-S50-seed1 [--repeat 3]

Run it from outside both trees (each interpreter imports its own olmkit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess

#: this script's directory (the probe imports its helpers from it)
HERE = os.path.dirname(os.path.abspath(__file__))

PROBE = r"""
import gc, hashlib, json, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])  # the benchmarks' directory: proc_stats, resolve_phases
from proc_stats import memory_mb
from resolve_phases import CPU, wrap
from olmkit.manager import get_plugin_manager
from olmkit.catalog import load_catalog
from olmkit.resolver import _compile_columns as cc

registry = get_plugin_manager(entrypoints=False).registry
catalog = load_catalog(Path(sys.argv[1]) / "catalog", registry, cache=False)
columns = catalog.columns(build=False)
for name in ("entries", "classes", "_read_forms", "lists", "release"):
    wrap(cc.__name__, "_ColumnCompiler." + name, name)  # CPU[name]: the phase's CPU time
gc.disable()
before = memory_mb(os.getpid(), "VmRSS")
t = time.process_time()
graph = cc.compile_columns(catalog, columns, registry)
cpu = time.process_time() - t
after = memory_mb(os.getpid(), "VmRSS")
print(json.dumps({"cpu": cpu, "phases": CPU, "rss_added": round(after - before),
                  "graph": hashlib.sha256(graph.dumps()).hexdigest()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the reference install's python")
    ap.add_argument("--b", required=True, help="the measured install's python")
    ap.add_argument("--workload", required=True, help="a gen_catalog output (its catalog/ is compiled)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    print("load average at start:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for _ in range(args.repeat):
        for label, python in (("A", args.a), ("B", args.b)):
            out = subprocess.run([python, "-c", PROBE, args.workload, HERE], capture_output=True, text=True, check=True)
            runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("load average at end:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("| install | compile CPU (median, range) | entries | classes (of which _read_forms) | lists | RSS added |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label in ("A", "B"):
        rs = runs[label]
        cpu = [r["cpu"] for r in rs]

        def med(name: str, rs: list[dict] = rs) -> float:
            return statistics.median(r["phases"].get(name, 0.0) for r in rs)

        print(
            f"| {label} | {statistics.median(cpu):.3f} s ({min(cpu):.3f}-{max(cpu):.3f}) | {med('entries'):.3f} | "
            f"{med('classes'):.3f} ({med('_read_forms'):.3f}) | {med('lists'):.3f} | "
            f"{statistics.median(r['rss_added'] for r in rs)} MB |"
        )
    graphs = {r["graph"] for label in runs for r in runs[label]}
    print("graph bytes:", "identical" if len(graphs) == 1 else f"DIFFER ({len(graphs)} digests)")
    if len(graphs) != 1:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
