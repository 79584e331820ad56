"""Two olmkit installs, interleaved, on the cold commands (``resolve``, ``catalog validate``) and warm ``resolve``.

For comparing a change with the tree it comes from on a shared machine, where only runs
interleaved in one sitting compare: each round runs every command once with install A, then
once with install B, each with a fresh, empty ``OLMKIT_CACHE_DIR`` (and waits for the cache
writer the command leaves behind before the next run). Wall time, CPU (user + system) and
peak RSS come from GNU time, as in ``compare.py``; the outputs of A and B are compared byte
for byte (text and ``-o json``, exit codes).

Usage::

    python benchmarks/ab_cold.py --a /work/main/.venv/bin/olmkit --b .venv/bin/olmkit \\
        --workload /tmp/olmkit-compare/P2000-B20-S50-seed1 [--repeat 3]

The workload is a ``gen_catalog.py`` output with ``manifests.yaml`` beside its ``catalog``
(``compare.py`` generates both); ``--catalog DIR`` adds a catalog to validate only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from olmkit.catalog import wait_for_writers


def run(olmkit: str, args: list[str], *, warm: bool = False) -> tuple[float, float, int, bytes, int]:
    """``olmkit args`` with a fresh cache (``warm``: filled by a first run, not measured):
    wall s, CPU s, peak RSS (KB), stdout, exit code."""
    cache = tempfile.mkdtemp(prefix="olmkit-ab-cache-")
    env = dict(os.environ, OLMKIT_CACHE_DIR=cache)
    if warm:
        subprocess.run([olmkit, *args], env=env, capture_output=True, check=False)
        wait_for_writers(Path(cache))
    with tempfile.NamedTemporaryFile("r") as stats:
        command = ["/usr/bin/time", "-f", "%e %U %S %M", "-o", stats.name, olmkit, *args]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        wall, user, system, rss = stats.read().split()[-4:]
    wait_for_writers(Path(cache))
    shutil.rmtree(cache, ignore_errors=True)
    return float(wall), float(user) + float(system), int(rss), done.stdout, done.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the reference olmkit executable")
    ap.add_argument("--b", required=True, help="the olmkit executable measured")
    ap.add_argument("--workload", type=Path, action="append", default=[], help="gen_catalog output (repeatable)")
    ap.add_argument("--catalog", type=Path, action="append", default=[], help="a catalog to validate only")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    commands: list[tuple[str, list[str], bool]] = []
    for w in args.workload:
        resolve = ["resolve", "-f", str(w / "manifests.yaml"), "-o", "json"]
        commands.append((f"resolve cold {w.name}", resolve, False))
        commands.append((f"resolve warm {w.name}", resolve, True))
        commands.append((f"validate cold {w.name}", ["catalog", "validate", str(w / "catalog")], False))
        commands.append(
            (f"validate cold -o json {w.name}", ["catalog", "validate", str(w / "catalog"), "-o", "json"], False)
        )
    for c in args.catalog:
        commands.append((f"validate cold {c.name}", ["catalog", "validate", str(c)], False))
        commands.append((f"validate cold -o json {c.name}", ["catalog", "validate", str(c), "-o", "json"], False))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        "| command | A wall (median, range) | A CPU | A peak RSS | B wall (median, range) | B CPU | B peak RSS "
        "| same output |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, cmd, warm in commands:
        runs: dict[str, list[tuple[float, float, int, bytes, int]]] = {"a": [], "b": []}
        for _ in range(args.repeat):
            for side in ("a", "b"):
                runs[side].append(run(getattr(args, side), cmd, warm=warm))
        same = all((r[3], r[4]) == (runs["a"][0][3], runs["a"][0][4]) for r in runs["a"] + runs["b"])
        cells = []
        for side in ("a", "b"):
            walls = [r[0] for r in runs[side]]
            cpu = statistics.median(r[1] for r in runs[side])
            rss = max(r[2] for r in runs[side]) // 1024
            cells.append(
                f"{statistics.median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}) | {cpu:.2f} s | {rss} MB"
            )
        print(f"| {label} | {cells[0]} | {cells[1]} | {'yes' if same else '**no**'} (exit {runs['a'][0][4]}) |")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
