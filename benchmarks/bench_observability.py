"""What observability costs the lifecycle: the metrics plugin, and recording Events.

Runs the install workload of ``bench_lifecycle.py`` (every namespace subscribes to
postgres-operator, which pulls in cert-manager-lite, and storage-operator; a fresh SQLite
store reconciled until stable on a fake clock) in one process, in interleaved rounds:

* ``metrics on``: every built-in plugin (the default);
* ``metrics off``: ``OLMKIT_DISABLE_PLUGINS=metrics``;
* ``metrics off, no Events``: also Event recording replaced by a no-op (to show what
  writing Events costs; olmkit has no switch for it).

Rounds alternate between the variants so that a loaded machine slows them alike; the
median of each is reported, with the metrics plugin's overhead. Run with::

    .venv/bin/python benchmarks/bench_observability.py --namespaces 50 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lifecycle import _seed

from olmkit.lifecycle import FakeClock, build_manager
from olmkit.lifecycle.events import EventRecorder
from olmkit.manager import DISABLE_ENV, get_plugin_manager
from olmkit.store import SqliteStore

VARIANTS = ("metrics on", "metrics off", "metrics off, no Events")


def one_round(variant: str, namespaces: int, workdir: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds to install into a fresh store, and the reconciles it took."""
    os.environ.pop(DISABLE_ENV, None)
    if variant != "metrics on":
        os.environ[DISABLE_ENV] = "metrics"
    record = EventRecorder.record
    if variant.endswith("no Events"):
        EventRecorder.record = lambda self, *args, **kwargs: None  # type: ignore[method-assign]
    try:
        pm = get_plugin_manager(entrypoints=False)
        assert pm.has_plugin("olmkit.plugins.metrics") == (variant == "metrics on")
        with SqliteStore(str(Path(tempfile.mkdtemp(dir=workdir)) / "c.db")) as store:
            _seed(store, namespaces, "catalog", ("postgres-operator", "storage-operator"))
            manager = build_manager(store, pm, clock=FakeClock())
            start, cpu = time.perf_counter(), time.process_time()
            outcome = manager.run_until_stable(timeout=3600)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            assert outcome.stable, outcome.pending
            return seconds, cpu, outcome.reconciles
    finally:
        EventRecorder.record = record  # type: ignore[method-assign]
        os.environ.pop(DISABLE_ENV, None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cpus: dict[str, list[float]] = {v: [] for v in VARIANTS}
    reconciles: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("OLMKIT_CACHE_DIR", str(Path(tmp) / "cache"))
        one_round("metrics on", 1, Path(tmp))  # warm the catalog cache and imports
        for _ in range(args.rounds):
            for variant in VARIANTS:
                seconds, cpu, count = one_round(variant, args.namespaces, Path(tmp))
                times[variant].append(seconds)
                cpus[variant].append(cpu)
                reconciles[variant] = count
    median = {v: statistics.median(t) for v, t in times.items()}
    cpu = {v: statistics.median(t) for v, t in cpus.items()}
    print(f"install, {args.namespaces} namespaces, {args.rounds} interleaved rounds\n")
    print("| variant | wall median s | wall min-max s | CPU median s | reconciles |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for v in VARIANTS:
        spread = f"{min(times[v]):.3f}-{max(times[v]):.3f}"
        print(f"| {v} | {median[v]:.3f} | {spread} | {cpu[v]:.3f} | {reconciles[v]} |")
    for label, table in (("wall", median), ("CPU", cpu)):
        overhead = (table["metrics on"] / table["metrics off"] - 1) * 100
        events = (table["metrics off"] / table["metrics off, no Events"] - 1) * 100
        print(f"\n{label}: metrics plugin {overhead:+.1f}% (target <= 5%); recording Events {events:+.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
