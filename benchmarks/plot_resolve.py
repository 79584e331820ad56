"""Draw benchmarks/results/resolve-scaling.png from measurements (needs the bench extra's matplotlib).

``make bench-compare`` (``benchmarks/compare.py``) draws it with :func:`plot_compare`: whole
commands, olmkit cold and warm against libsolv and ``catalog validate`` against the orjson
floor over the sizes measured, with peak memory. ``python benchmarks/plot_resolve.py
--compare results/compare.json OUT.png`` redraws it from the raw figures.

The earlier, in-process figures: ``python benchmarks/plot_resolve.py DIR OUT.png`` where DIR holds, per workload W in
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


#: how each compare.py row is drawn: (label, style)
COMPARE_SERIES = {
    ("resolve cold", False): ("olmkit resolve, cold (empty cache)", {"marker": "o", "color": "C0"}),
    ("resolve warm", False): ("olmkit resolve, warm (caches filled)", {"marker": "s", "color": "C1"}),
    ("resolve cold", True): ("libsolv (python3-solv, parses the JSON)", {"marker": "^", "color": "C3"}),
    ("validate cold", False): ("olmkit catalog validate, cold", {"marker": "D", "color": "C2"}),
    ("validate cold", True): ("orjson parse of every blob (floor)", {"marker": "v", "color": "0.5"}),
}


def plot_compare(rows: list[dict], out: Path) -> None:
    """Wall time (median, with the range) and peak RSS against P of compare.py's rows."""
    fig, (ax, mem) = plt.subplots(1, 2, figsize=(11, 4.6), dpi=110)
    for (case, reference), (label, style) in COMPARE_SERIES.items():
        mine = sorted((r for r in rows if r["case"] == case), key=lambda r: r["packages"])
        wall_key, peak_key = ("reference_wall", "reference_peak_mb") if reference else ("wall", "peak_mb")
        points = [(r["packages"], r[wall_key], r[peak_key]) for r in mine if r[wall_key] is not None]
        if not points:
            continue
        xs = [p for p, _, _ in points]
        mid = [w["median"] for _, w, _ in points]
        err = [[w["median"] - w["min"] for _, w, _ in points], [w["max"] - w["median"] for _, w, _ in points]]
        ax.errorbar(xs, mid, yerr=err, label=label, capsize=2, **style)
        if peak_key == "reference_peak_mb" and case.startswith("validate"):
            continue  # the floor script's memory says nothing about loading
        mem.plot(xs, [m["median"] for _, _, m in points], label=label, **style)
    targets = [
        (r["packages"], r["target"]["seconds"], r["case"]) for r in rows if (r.get("target") or {}).get("seconds")
    ]
    for i, (packages, seconds, case) in enumerate(targets):
        ax.plot([packages], [seconds], "k*", markersize=10, label="issue 20 targets" if i == 0 else None)
        ax.annotate(case, (packages, seconds), fontsize=6, xytext=(4, 2), textcoords="offset points")
    limits = [(r["packages"], r["target"]["mb"], r["case"]) for r in rows if (r.get("target") or {}).get("mb")]
    for i, (packages, mb, case) in enumerate(limits):
        mem.plot([packages], [mb], "k*", markersize=10, label="issue 20 targets" if i == 0 else None)
        mem.annotate(case, (packages, mb), fontsize=6, xytext=(4, 2), textcoords="offset points")
    sizes = sorted({r["packages"] for r in rows})
    for a in (ax, mem):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xticks(sizes, [str(p) for p in sizes])
        a.minorticks_off()
        a.set_xlabel("packages P (gen_catalog --bundles 20 --seed 1; 20 bundles each)")
        a.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("seconds (wall, whole command; median and range)")
    ax.set_title("olmkit against libsolv and the orjson floor")
    mem.set_ylabel("peak RSS (MB)")
    mem.set_title("peak memory")
    ax.legend(fontsize=7, loc="upper left")
    mem.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        plot_compare(json.loads(Path(sys.argv[2]).read_text())["rows"], Path(sys.argv[3]))
    else:
        main(Path(sys.argv[1]), Path(sys.argv[2]))
