"""Whole-process start-up time of ``olmkit`` commands, against ``python -c pass`` in the same run.

Every sample is a fresh process (as hyperfine measures), run round-robin so that load
changes on a shared machine hit every command alike. The store for ``get`` is a small
SQLite store made first (one CatalogSource and an installed operator).

    .venv/bin/python benchmarks/bench_startup.py [--runs 30] [--warmup 3] [--before SRC]

Prints a table: min / median / mean wall time per command and the ratio of the median
to ``python -c pass``'s median, with the targets (``--version`` <= 3x, ``get`` <= 6x).
``--before SRC`` also times the same commands of another source tree (e.g. ``git archive
main | tar -x -C SRC``), run with this interpreter and ``PYTHONPATH=SRC``, interleaved.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
OLMKIT = str(BIN / "olmkit")


def _seed(store: Path, env: dict[str, str]) -> None:
    steps = [
        ["apply", "-f", str(ROOT / "examples" / "demo" / "catalogsource-v1.yaml")],
        ["install", "postgres-operator", "-n", "demo", "--channel", "stable"],
        ["reconcile", "--until-stable"],
    ]
    for step in steps:
        subprocess.run([OLMKIT, *step, "--store", str(store)], env=env, check=True, capture_output=True)


def _time(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of one run of ``cmd``."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="samples per command (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="unrecorded runs first (default 3)")
    parser.add_argument("--before", default=None, metavar="SRC", help="also time this source tree's olmkit")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="olmkit-startup-"))
    try:
        env = {**os.environ, "OLMKIT_CACHE_DIR": str(tmp / "cache")}
        store = tmp / "cluster.db"
        _seed(store, env)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "olmkit --version": [OLMKIT, "--version"],
            "olmkit get csv -n demo": [OLMKIT, "get", "csv", "-n", "demo", "--store", str(store)],
            "olmkit get sub,csv -A": [OLMKIT, "get", "sub,csv", "-A", "--store", str(store)],
        }
        envs = dict.fromkeys(commands, env)
        if args.before:
            entry = [sys.executable, "-c", "import sys; from olmkit.cli import main; sys.exit(main())"]
            before_env = {**env, "PYTHONPATH": str(Path(args.before).resolve())}
            for name, cmd in list(commands.items())[1:]:
                commands[f"before: {name}"] = [*entry, *cmd[1:]]
                envs[f"before: {name}"] = before_env
        samples: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for index in range(args.warmup + args.runs):
            for name, cmd in commands.items():
                wall, used = _time(cmd, envs[name], tmp)  # not the source tree: '' on sys.path would import it
                if index >= args.warmup:
                    samples[name].append(wall)
                    cpu[name].append(used)
        base = statistics.median(samples["python -c pass"])
        base_min = min(samples["python -c pass"])
        base_cpu = statistics.median(cpu["python -c pass"])
        targets = {"olmkit --version": 3.0, "olmkit get csv -n demo": 6.0, "olmkit get sub,csv -A": 6.0}
        print(
            f"{'command':<34} {'min':>8} {'median':>8} {'cpu med':>8} {'x pass':>7} {'x (min)':>7} {'x (cpu)':>7} "
            f"{'target':>7}"
        )
        for name, values in samples.items():
            target = f"<= {targets[name]:.0f}x" if name in targets else ""
            print(
                f"{name:<34} {min(values) * 1000:6.1f}ms {statistics.median(values) * 1000:6.1f}ms "
                f"{statistics.median(cpu[name]) * 1000:6.1f}ms {statistics.median(values) / base:6.2f}x "
                f"{min(values) / base_min:6.2f}x {statistics.median(cpu[name]) / base_cpu:6.2f}x {target:>7}"
            )
        print(f"{args.runs} runs each, round-robin, after {args.warmup} warm-up rounds; load {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
