"""Draw benchmarks/results/resolve-scaling.png from measurements (needs the bench extra's matplotlib).

Usage: ``python benchmarks/plot_resolve.py DIR OUT.png`` where DIR holds, per workload W in
500x10x20, 2000x20x50 and 10000x20x200 (see results/resolve.md for the commands):
``cold_W.json`` and ``disk_W.json`` (``olmkit bench resolve --workload /tmp/olmkit-resolve-W
--repeat 6 -o json``, with and without ``--cold``; of three runs, the one with the median
first resolution) and ``cmd_pyc_W`` (``/usr/bin/time -f "%e %U %S %M"`` lines of ``olmkit
resolve -f``, the last five are used).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

WORKLOADS = [("500x10x20", 500), ("2000x20x50", 2000), ("10000x20x200", 10000)]
BEFORE_FIRST = [0.94, 6.3, 54.6]  # resolve.md before issue 4's speed work
BEFORE_WARM = [0.27, 3.4, 34.4]
# first resolution with the graph compiled before the graph-compile work (main at 89384cc,
# medians of six runs measured in the same session as the figures; see resolve.md)
BEFORE_COMPILE = [0.40, 4.87, 22.5]


def main(directory: Path, out: Path) -> None:
    def run(kind: str, w: str) -> dict:
        return json.loads((directory / f"{kind}_{w}.json").read_text())

    def command(w: str) -> float:
        lines = (directory / f"cmd_pyc_{w}").read_text().splitlines()[-5:]
        return min(float(line.split()[0]) for line in lines)

    packages = [p for _, p in WORKLOADS]
    series = [
        ("before: first resolution", BEFORE_FIRST, {"linestyle": ":", "color": "0.55", "marker": "."}),
        ("before: warm resolution", BEFORE_WARM, {"linestyle": "--", "color": "0.55", "marker": "."}),
        (
            "before the compile work: first resolution, graph compiled",
            BEFORE_COMPILE,
            {"linestyle": "-.", "color": "0.55", "marker": "x"},
        ),
        (
            "first resolution, graph compiled (new catalog)",
            [run("cold", w)["first"]["timings"]["total"] for w, _ in WORKLOADS],
            {"marker": "o"},
        ),
        (
            "first resolution, graph from disk",
            [run("disk", w)["first"]["timings"]["total"] for w, _ in WORKLOADS],
            {"marker": "s"},
        ),
        (
            "warm resolution (incl. catalog source reload)",
            [run("disk", w)["warm"]["timings"]["total"] for w, _ in WORKLOADS],
            {"marker": "^"},
        ),
        (
            "warm resolution, catalog reload excluded",
            [run("disk", w)["warm"]["timings"]["resolution"] for w, _ in WORKLOADS],
            {"marker": "v"},
        ),
        ("whole `olmkit resolve -f` command, warm caches", [command(w) for w, _ in WORKLOADS], {"marker": "D"}),
        ("issue 4 resolution targets", [0.15, 0.5, 5.0], {"linestyle": ":", "color": "black"}),
    ]
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for label, ys, style in series:
        ax.plot(packages, ys, label=label, **style)
    ax.plot([2000], [1.0], "k*", markersize=11, label="issue 4 command target (P=2000)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("packages P (gen_catalog seed 1; B=10/20/20, S=20/50/200)")
    ax.set_ylabel("seconds (wall)")
    ax.set_title("olmkit resolution scaling (C encoder, CryptoMiniSat backend)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
