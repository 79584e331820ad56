"""Two olmkit installs, interleaved: the whole-process time of ``resolve`` and ``catalog validate``.

For start-up work (imports, class creation, plugin loading): each round runs every command once
with install A and once with install B, in alternating order, each with a fresh, empty
``OLMKIT_CACHE_DIR``; wall time comes from ``time.perf_counter`` around the process, CPU
(user + system) from ``wait4``. Prints median / min per command and install, and B - A of
the medians; the load average before and after. Standard output and exit codes of A and B
must be equal (checked on every run).

Usage::

    python benchmarks/startup_ab.py --a /tmp/ref/.venv/bin/olmkit --b .venv/bin/olmkit \\
        --workload /tmp/olmkit-compare/P2000-B20-S50-seed1 [--workload ...] [--runs 15]

A workload is a ``gen_catalog.py`` output with ``manifests.yaml`` beside its ``catalog``; a small
one (a few packages) shows start-up alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from olmkit.catalog import wait_for_writers


def run(olmkit: str, args: list[str]) -> tuple[float, float, bytes, int]:
    """Wall s, CPU s, stdout and exit code of ``olmkit args`` with a fresh cache directory."""
    cache = tempfile.mkdtemp(prefix="olmkit-startup-ab-")
    env = dict(os.environ, OLMKIT_CACHE_DIR=cache)
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen([olmkit, *args], env=env, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        stdout = out.read()
    wait_for_writers(Path(cache))  # the detached cache writer
    shutil.rmtree(cache, ignore_errors=True)
    return wall, usage.ru_utime + usage.ru_stime, stdout, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the reference olmkit executable")
    ap.add_argument("--b", required=True, help="the olmkit executable measured")
    ap.add_argument("--workload", type=Path, action="append", default=[], help="gen_catalog output (repeatable)")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    commands = {}
    for w in args.workload:
        commands[f"resolve {w.name}"] = ["resolve", "-f", str(w / "manifests.yaml"), "-o", "json"]
        commands[f"validate {w.name}"] = ["catalog", "validate", str(w / "catalog")]
    print(f"load average before: {os.getloadavg()}")
    times: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for index in range(args.runs + 1):
        for name, argv in commands.items():
            order = (("A", args.a), ("B", args.b)) if index % 2 else (("B", args.b), ("A", args.a))
            outputs = {}
            for label, olmkit in order:
                wall, cpu, stdout, code = run(olmkit, argv)
                outputs[label] = (stdout, code)
                if index:  # the first round warms the page cache
                    times.setdefault((name, label), []).append((wall, cpu))
            if outputs["A"] != outputs["B"]:
                raise SystemExit(f"{name}: outputs differ between A and B")
    print(f"load average after: {os.getloadavg()}")
    print(f"{'command':40} {'A wall':>8} {'B wall':>8} {'B-A':>7}  {'A cpu':>8} {'B cpu':>8} {'B-A':>7}  (medians, s)")
    for name in commands:
        a, b = times[(name, "A")], times[(name, "B")]
        aw, bw = statistics.median(t[0] for t in a), statistics.median(t[0] for t in b)
        ac, bc = statistics.median(t[1] for t in a), statistics.median(t[1] for t in b)
        print(f"{name:40} {aw:8.3f} {bw:8.3f} {bw - aw:+7.3f}  {ac:8.3f} {bc:8.3f} {bc - ac:+7.3f}")


if __name__ == "__main__":
    main()
