"""``make bench-compare``: olmkit against libsolv on the same generated problem, whole commands, in one run.

For each size P (``--packages``, default 2000; ``gen_catalog.py --packages P --bundles 20
--subscriptions S --seed 1``, S from :data:`SUBSCRIPTIONS`), ``--repeat`` times, interleaved:

* ``resolve cold``: ``olmkit resolve -f manifests.yaml -o json`` with a fresh, empty
  ``OLMKIT_CACHE_DIR`` (no catalog cache, no stored graph: a catalog never seen);
* ``resolve warm``: the same command again, in the cache directory the cold run filled;
* ``libsolv``: ``benchmarks/libsolv_resolve.py`` under the system Python (``python3-solv``:
  Debian/Ubuntu ``apt-get install python3-solv``, Fedora ``dnf install python3-solv``); it
  parses the catalog's JSON itself every run, so it has no warm state. Without it the rows
  say so and olmkit still runs;
* ``validate cold``: ``olmkit catalog validate CATALOG`` with a fresh, empty cache directory;
* ``orjson parse``: ``benchmarks/parse_floor.py CATALOG``, the floor for loading (every file
  read, every blob parsed with orjson; its in-process time is the reference).

Each command's wall time and peak RSS are measured by GNU time (``/usr/bin/time``); the
table gives medians (and ranges) and the ratio olmkit / reference, against the targets of
the issue where it sets one. Writes the raw runs (``--json``), the table with the machine,
load averages and commands (``--markdown``) and, with two sizes or more, the scaling plot
(``--plot``, through ``plot_resolve.py``; needs matplotlib from the bench extra).

Usage::

    python benchmarks/compare.py [--packages 2000 ...] [--repeat 3] [--work DIR]

With one size the table goes to ``results/compare-PN.md`` (and ``.json``), with several to
``results/compare.md`` with the plot: a quick run does not replace the scaling set's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from olmkit.cli.resolve import SYSTEM_PYTHON, libsolv_missing

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))  # plot_resolve, beside this script


#: Subscriptions per size (the issue's P=2000 and P=10000 problems; the others in between).
SUBSCRIPTIONS = {500: 20, 1000: 30, 2000: 50, 5000: 100, 10000: 200}
BUNDLES = 20
#: The issue's targets: ``ratio`` (olmkit / reference at most), ``seconds``, ``mb`` (peak RSS).
TARGETS: dict[tuple[str, int], dict[str, float]] = {
    ("resolve cold", 2000): {"ratio": 1.0},
    ("resolve cold", 10000): {"seconds": 5.0, "mb": 600.0},
    ("resolve warm", 10000): {"seconds": 1.5},
    ("validate cold", 2000): {"ratio": 5.0},
    ("validate cold", 10000): {"seconds": 4.0, "mb": 400.0},
}
#: The olmkit rows and what each is compared with.
REFERENCE = {"resolve cold": "libsolv", "resolve warm": "libsolv", "validate cold": "orjson parse"}
TIMEOUT = 600


def subscriptions(packages: int) -> int:
    return SUBSCRIPTIONS.get(packages, max(10, packages // 50))


def olmkit_command() -> list[str]:
    """The ``olmkit`` console script beside this interpreter (as users run it), else ``-m olmkit``."""
    script = Path(sys.executable).parent / "olmkit"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "olmkit"]


#: GNU time: it forks the command from a small process, so the peak RSS is the command's own
#: (a child forked from this process, which holds a loaded catalog after :func:`prepare`,
#: would start from this process's peak: Linux carries it over ``exec``).
GNU_TIME = "/usr/bin/time"
#: whether this process adopts what commands leave running (:func:`adopt_orphans`)
ADOPTING = False


def adopt_orphans(on: bool = True) -> bool:
    """Become the child subreaper (Linux): the cache writers a command leaves behind when it
    exits (``olmkit`` detaches them) become this process's children, so :func:`settle` can
    wait for them before the next command (a warm run needs the cache they write).
    ``on=False`` stops adopting."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, int(on), 0, 0, 0) == 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def children() -> set[int]:
    """This process's children now (Linux ``/proc``; empty where it cannot tell)."""
    found: set[int] = set()
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            found.update(int(pid) for pid in listing.read_text().split())
        except OSError:
            continue
    return found


def settle(known: set[int]) -> float:
    """Wait for the orphans adopted since ``known`` was taken (children this process already had,
    such as servers a caller started, are left alone); how long that took (the writes left after
    the command)."""
    start = time.perf_counter()
    while True:
        adopted = children() - known
        if not adopted:
            return round(time.perf_counter() - start, 4)
        for pid in adopted:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                known.add(pid)  # another thread's child, reaped elsewhere


def measure(command: Sequence[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``command``: its wall time, CPU time, peak RSS, exit code and output; then wait for what
    it left running (``after``: the seconds its detached cache writes went on)."""
    timed = Path(GNU_TIME).is_file()
    with tempfile.TemporaryDirectory(prefix="olmkit-compare-") as tmp:
        figures = Path(tmp) / "time"
        prefix = [GNU_TIME, "-f", "%e %U %S %M", "-o", str(figures)] if timed else []
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        known = children()
        start = time.perf_counter()
        try:
            done = subprocess.run([*prefix, *command], capture_output=True, env=env, timeout=TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"{' '.join(command)}: no answer after {TIMEOUT} s") from None
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        if timed and figures.is_file():
            last = figures.read_text().split("\n")[-2].split()  # GNU time may write a status line first
            wall, cpu, peak = float(last[0]), float(last[1]) + float(last[2]), int(last[3]) / 1024
        else:  # without GNU time: the CPU is the command's, the peak an upper bound (any child's so far)
            cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
            peak = usage.ru_maxrss / 1024
    after = settle(known) if ADOPTING else 0.0
    return {
        "wall": round(wall, 4),
        "cpu": round(cpu, 4),
        "peak_mb": round(peak, 1),
        "after": after,
        "code": done.returncode,
        "stdout": done.stdout.decode(errors="replace"),
        "stderr": done.stderr.decode(errors="replace"),
        "load": round(os.getloadavg()[0], 2),
    }


def prepare(work: Path, packages: int, generator: Path) -> Path:
    """The workload of size ``packages`` under ``work`` (generated once) with its manifests."""
    subs = subscriptions(packages)
    workload = work / f"P{packages}-B{BUNDLES}-S{subs}-seed1"
    if not (workload / "manifests.yaml").is_file():
        args = ["--packages", str(packages), "--bundles", str(BUNDLES), "--subscriptions", str(subs), "--seed", "1"]
        subprocess.run([sys.executable, str(generator), *args, str(workload)], check=True, stdout=subprocess.DEVNULL)
        from olmkit.cli.output import dump_yaml
        from olmkit.cli.resolve import problem_objects
        from olmkit.manager import get_plugin_manager

        objects = problem_objects(workload, get_plugin_manager(), cache=False)
        manifests = dump_yaml({"apiVersion": "v1", "kind": "List", "items": objects})
        (workload / "manifests.yaml").write_text(manifests)
    return workload


def run_size(workload: Path, repeat: int, python: str, libsolv: bool, log: Any = sys.stderr) -> dict[str, list]:
    """Every case ``repeat`` times, interleaved; each olmkit run in a cache directory of its own."""
    olmkit = olmkit_command()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in (*REFERENCE, "libsolv", "orjson parse")}
    for _ in range(repeat):
        cache = Path(tempfile.mkdtemp(prefix="olmkit-compare-cache-"))
        try:
            env = dict(os.environ, OLMKIT_CACHE_DIR=str(cache))
            resolve = [*olmkit, "resolve", "-f", str(workload / "manifests.yaml"), "-o", "json"]
            runs["resolve cold"].append(measure(resolve, env))
            runs["resolve warm"].append(measure(resolve, env))
            if libsolv:
                runs["libsolv"].append(
                    measure([python, str(HERE / "libsolv_resolve.py"), str(workload), "--repeat", "1"])
                )
            shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir()
            runs["validate cold"].append(measure([*olmkit, "catalog", "validate", str(workload / "catalog")], env))
            floor = measure([sys.executable, str(HERE / "parse_floor.py"), str(workload / "catalog")])
            if floor["code"] == 0:
                floor["parse_seconds"] = json.loads(floor["stdout"])["seconds"]
            runs["orjson parse"].append(floor)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        log.write(f"{workload.name}: " + ", ".join(f"{k} {v[-1]['wall']:.2f} s" for k, v in runs.items() if v) + "\n")
    for name, found in runs.items():
        for run in found:
            check(name, run)
    return runs


def check(name: str, run: dict[str, Any]) -> None:
    """A failed command makes the comparison meaningless: stop and say why."""
    allowed = {"resolve cold": (0, 1), "resolve warm": (0, 1), "validate cold": (0, 1)}.get(name, (0,))
    if run["code"] not in allowed:
        last = (run["stderr"].strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{name}: exit {run['code']}: {last}")


def figure(runs: list[dict[str, Any]], key: str = "wall") -> dict[str, float] | None:
    """Median, min and max of one figure over the runs (``None`` without runs)."""
    values = [r[key] for r in runs]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def parse_seconds(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parse floor's runs with its in-process time as their wall time (the reference)."""
    return [{**r, "wall": r["parse_seconds"]} for r in runs]


def summary(results: dict[int, dict[str, list]]) -> list[dict[str, Any]]:
    """One row per size and olmkit case: medians, the reference's, the ratio and the target's verdict."""
    rows = []
    for packages, runs in sorted(results.items()):
        for case, reference in REFERENCE.items():
            mine = runs.get(case, [])
            if not mine:
                continue
            theirs = parse_seconds(runs.get(reference, [])) if reference == "orjson parse" else runs.get(reference, [])
            wall, peak = figure(mine), figure(mine, "peak_mb")
            ref_wall, ref_peak = figure(theirs), figure(theirs, "peak_mb")
            assert wall is not None
            assert peak is not None
            ratio = wall["median"] / ref_wall["median"] if ref_wall and ref_wall["median"] > 0 else None
            target = TARGETS.get((case, packages))
            rows.append(
                {
                    "packages": packages,
                    "case": case,
                    "wall": wall,
                    "cpu": figure(mine, "cpu"),
                    "peak_mb": peak,
                    "after": statistics.median(r.get("after", 0.0) for r in mine),
                    "reference": reference,
                    "reference_wall": ref_wall,
                    "reference_cpu": figure(theirs, "cpu"),
                    "reference_peak_mb": ref_peak,
                    "ratio": ratio,
                    "target": target,
                    "met": met(target, wall["median"], peak["median"], ratio),
                }
            )
    return rows


def met(target: dict[str, float] | None, seconds: float, mb: float, ratio: float | None) -> bool | None:
    """Whether the medians meet the target (``None``: no target, or a ratio without its reference)."""
    if not target:
        return None
    if "ratio" in target and ratio is None:
        return None
    return (
        ("ratio" not in target or (ratio is not None and ratio <= target["ratio"]))
        and ("seconds" not in target or seconds <= target["seconds"])
        and ("mb" not in target or mb <= target["mb"])
    )


def _seconds(f: dict[str, float] | None) -> str:
    if f is None:
        return "-"
    if f["min"] == f["max"]:
        return f"{f['median']:.2f} s"
    return f"{f['median']:.2f} s ({f['min']:.2f}-{f['max']:.2f})"


def _cpu(f: dict[str, float] | None) -> str:
    return "-" if f is None else f"{f['median']:.2f} s"


def _target_text(target: dict[str, float] | None) -> str:
    if not target:
        return ""
    parts = []
    if "ratio" in target:
        parts.append(f"<= {target['ratio']:g}x the reference")
    if "seconds" in target:
        parts.append(f"<= {target['seconds']:g} s")
    if "mb" in target:
        parts.append(f"<= {target['mb']:g} MB")
    return ", ".join(parts)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table, the issue's columns plus the ratio."""
    lines = [
        "| work | olmkit (median, range) | CPU | peak RSS | cache writes after exit | reference | reference time "
        "| CPU | its peak RSS | olmkit / reference | target | met? |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        verb = "catalog validate" if r["case"].startswith("validate") else "resolve"
        when = r["case"].split()[1]
        bundles = r["packages"] * BUNDLES
        count = f"{bundles // 1000}k" if bundles >= 1000 else str(bundles)
        work = f"`{verb}`, P={r['packages']} ({count} bundles), {when}"
        ref_peak = "-" if r["reference_peak_mb"] is None else f"{r['reference_peak_mb']['median']:.0f} MB"
        if r["reference"] == "orjson parse" and r["reference_wall"] is not None:
            ref_peak += " (whole process)"
        verdict = {True: "yes", False: "**no**", None: ""}[r["met"]]
        lines.append(
            f"| {work} | {_seconds(r['wall'])} | {_cpu(r.get('cpu'))} | {r['peak_mb']['median']:.0f} MB "
            f"| {r['after']:.2f} s | {r['reference']} "
            f"| {_seconds(r['reference_wall'])} | {_cpu(r.get('reference_cpu'))} | {ref_peak} | "
            + ("-" if r["ratio"] is None else f"{r['ratio']:.2f}")
            + f" | {_target_text(r['target'])} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    loads = meta["load_averages"]
    return "\n".join(
        [
            "# olmkit against libsolv and the orjson floor (generated by `make bench-compare`)",
            "",
            f"Run {meta['started']} on {meta['machine']}, {meta['cpus']} CPUs, Python {meta['python']}; "
            f"load average during the runs {min(loads):.2f}-{max(loads):.2f} (1 minute). "
            f"{meta['repeat']} runs of every command, interleaved. libsolv: {meta['libsolv']}.",
            "",
            "Workloads: `gen_catalog.py --packages P --bundles 20 --subscriptions S --seed 1` with S = "
            + ", ".join(f"{subscriptions(p)} (P={p})" for p in meta["sizes"])
            + '. Whole commands, wall time and peak RSS of each (`/usr/bin/time -f "%e %U %S %M"`): '
            "`olmkit resolve -f manifests.yaml -o json` cold (fresh `OLMKIT_CACHE_DIR`) and warm (the same "
            "directory after the cold run), `/usr/bin/python3 benchmarks/libsolv_resolve.py W --repeat 1` (it parses "
            "the JSON every run: cold and warm alike), `olmkit catalog validate W/catalog` cold, and "
            "`benchmarks/parse_floor.py W/catalog` (reference: its in-process read-and-parse time). "
            "olmkit leaves its cache writes to a detached child once its output is out: the next command "
            'waits for it ("cache writes after exit"), the figures do not include it. CPU: user + system '
            "time of the command and the children it waited for (the parse floor's: the whole process); on a "
            "busy machine it is steadier than the wall time.",
            "",
            table(rows),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", "-P", type=int, nargs="+", default=[2000], help="sizes (default 2000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of every command (default 3)")
    ap.add_argument("--work", default="/tmp/olmkit-compare", help="where workloads are generated (kept)")
    ap.add_argument("--system-python", default=SYSTEM_PYTHON, help="the Python with python3-solv")
    ap.add_argument("--json", default=None, help="raw runs (default results/compare.json, one size: compare-PN.json)")
    ap.add_argument("--markdown", default=None, help="the table (default results/compare.md, one size: compare-PN.md)")
    ap.add_argument("--plot", default=str(RESULTS / "resolve-scaling.png"), help="the scaling plot (two sizes or more)")
    a = ap.parse_args(argv)
    # the scaling set's figures (results/compare.md, the plot) are not replaced by a run of one size
    stem = "compare" if len(a.packages) > 1 else f"compare-P{a.packages[0]}"
    a.json = str(RESULTS / f"{stem}.json") if a.json is None else a.json
    a.markdown = str(RESULTS / f"{stem}.md") if a.markdown is None else a.markdown

    global ADOPTING
    ADOPTING = adopt_orphans()
    if not ADOPTING:
        sys.stderr.write("cannot wait for detached cache writers here (not Linux): warm runs may find no cache\n")
    try:
        return _run(a)
    finally:
        if ADOPTING:  # an in-process caller (the tests) does not stay a subreaper
            ADOPTING = not adopt_orphans(on=False)


def _run(a: argparse.Namespace) -> int:
    from olmkit.cli.resolve import find_generator

    generator = find_generator()
    if generator is None:
        sys.exit("gen_catalog.py not found: set OLMKIT_GEN_CATALOG to its path")
    missing = libsolv_missing(a.system_python)
    if missing:
        sys.stderr.write(f"libsolv skipped: {missing}\n")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    # byte-compiled as ``make`` leaves it: with PYTHONDONTWRITEBYTECODE set, a module edited since
    # would be compiled from source by every command
    import olmkit

    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(olmkit.__file__).parent)], check=False)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = {}
    for packages in a.packages:
        workload = prepare(work, packages, generator)
        results[packages] = run_size(workload, max(1, a.repeat), a.system_python, missing is None)
    rows = summary(results)
    loads = [r["load"] for runs in results.values() for found in runs.values() for r in found]
    meta = {
        "started": started,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "repeat": a.repeat,
        "sizes": a.packages,
        "libsolv": "python3-solv under " + a.system_python if missing is None else f"not run ({missing})",
        "load_averages": loads or [0.0],
    }
    text = markdown(rows, meta)
    sys.stdout.write(text)
    if a.json:
        raw = {
            str(p): {
                case: [{k: v for k, v in r.items() if k not in ("stdout", "stderr")} for r in found]
                for case, found in runs.items()
            }
            for p, runs in results.items()
        }
        Path(a.json).write_text(json.dumps({"meta": meta, "rows": rows, "runs": raw}, indent=1) + "\n")
    if a.markdown:
        Path(a.markdown).write_text(text)
    if a.plot and len(results) > 1:
        from plot_resolve import plot_compare

        plot_compare(rows, Path(a.plot))
        sys.stderr.write(f"plot written to {a.plot}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
