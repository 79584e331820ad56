#!/usr/bin/python3
"""Resolve a gen_catalog workload with libsolv, for comparison (``make bench-solver``).

Runs under the system Python with the OS's libsolv bindings (Debian/Ubuntu:
``apt-get install python3-solv``; Fedora: ``dnf install python3-solv``), not in olmkit's
virtualenv. Only the standard library and ``solv`` are used.

Translation, where libsolv's semantics apply: a bundle is a solvable (name = package,
evr = version); ``olm.gvk`` is a provide ``gvk(group/version/kind)``, and every provider
also conflicts with it (libsolv ignores a solvable's conflict with itself), which is OLM's
one-provider-per-API rule; ``olm.gvk.required`` requires it; ``olm.package.required`` with a
``>=X`` range requires ``package >= X``. One version per package is libsolv's own rule.
Subscriptions are install jobs by name; libsolv prefers the highest version where OLM
prefers the channel head. ``olm.constraint`` (CEL, any/all/not) has no libsolv equivalent
and is left out, so the answers are not compared, only the times.

Prints one JSON object: ``{"status", "installed", "load_seconds", "solve_seconds",
"peak_rss_mb", "solvables"}``; ``solve_seconds`` is the best of ``--repeat`` solves.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time


def peak_rss_mb() -> float:
    """This process's peak RSS: the kernel's VmHWM where there is one (getrusage's maximum carries over
    ``exec`` the peak of the process this one was forked from, e.g. a Python with a catalog loaded)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    import solv

    t0 = time.perf_counter()
    pool = solv.Pool()
    pool.setarch("noarch")
    repo = pool.add_repo("catalog")
    catalog = os.path.join(a.workload, "catalog")
    count = 0
    for package in sorted(os.listdir(catalog)):
        with open(os.path.join(catalog, package, "index.json")) as f:
            blobs = [json.loads(line) for line in f if line.strip()]
        for b in blobs:
            if b.get("schema") != "olm.bundle":
                continue
            props = b.get("properties", [])
            version = next(p["value"]["version"] for p in props if p["type"] == "olm.package")
            s = repo.add_solvable()
            s.name = b["package"]
            s.evr = version
            s.arch = "noarch"
            s.add_deparray(solv.SOLVABLE_PROVIDES, pool.rel2id(s.nameid, pool.str2id(version), solv.REL_EQ))
            for p in props:
                v = p["value"]
                if p["type"] == "olm.gvk":
                    dep = pool.str2id(f"gvk({v['group']}/{v['version']}/{v['kind']})")
                    s.add_deparray(solv.SOLVABLE_PROVIDES, dep)
                    s.add_deparray(solv.SOLVABLE_CONFLICTS, dep)
                elif p["type"] == "olm.gvk.required":
                    s.add_deparray(solv.SOLVABLE_REQUIRES, pool.str2id(f"gvk({v['group']}/{v['version']}/{v['kind']})"))
                elif p["type"] == "olm.package.required":
                    rng = v.get("versionRange", "")
                    name = pool.str2id(v["packageName"])
                    if rng.startswith(">=") and " " not in rng:
                        dep = pool.rel2id(name, pool.str2id(rng[2:]), solv.REL_GT | solv.REL_EQ)
                    else:
                        dep = name
                    s.add_deparray(solv.SOLVABLE_REQUIRES, dep)
            count += 1
    repo.internalize()
    pool.createwhatprovides()
    with open(os.path.join(a.workload, "problem.json")) as f:
        problem = json.load(f)
    jobs = [
        pool.Job(solv.Job.SOLVER_INSTALL | solv.Job.SOLVER_SOLVABLE_NAME, pool.str2id(sub["package"]))
        for sub in problem["subscriptions"]
    ]
    load = time.perf_counter() - t0
    best = None
    status, installed = "ok", 0
    for _ in range(max(1, a.repeat)):
        t = time.perf_counter()
        solver = pool.Solver()
        problems = solver.solve(jobs)
        installed = 0 if problems else len(solver.transaction().newsolvables())
        status = "unsatisfiable" if problems else "ok"
        took = time.perf_counter() - t
        best = took if best is None else min(best, took)
    print(
        json.dumps(
            {
                "status": status,
                "installed": installed,
                "solvables": count,
                "load_seconds": round(load, 4),
                "solve_seconds": round(best or 0.0, 4),
                "peak_rss_mb": peak_rss_mb(),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
