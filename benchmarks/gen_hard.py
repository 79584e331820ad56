#!/usr/bin/env python3
"""Generate resolution problems where search matters, in gen_catalog.py's output format.

Same layout as ``shared/bench/gen_catalog.py`` (``OUT/catalog/<package>/index.json`` and
``OUT/problem.json``), so ``olmkit bench resolve --workload OUT`` and ``olmkit resolve``
run them. Channel heads are the preferred candidates, so the newest bundle of a package is
what a greedy search tries first. Ingredients, all from a fixed seed:

* **Providers with pairwise conflicts** (``--gadgets`` of them, ``--holes`` k): k
  subscribed packages, each with k bundles providing one of k shared APIs (at most one
  provider of an API may be installed: GVK uniqueness), and one greedy subscribed
  package whose newest k bundles provide those same APIs and whose oldest bundle
  provides its own. Each of its newest bundles leaves k packages for k - 1 APIs, a
  pigeonhole that propagation cannot see and a SAT solver refutes only with thousands
  of conflicts; the search must reject all k before it settles on the oldest.
* **Version-pinned diamonds**: a subscribed package whose newest bundle needs two
  packages (``olm.package.required`` ranges) that pin a shared package to disjoint
  versions; its older bundle agrees with both.
* **Long chains with unsatisfiable heads**: a chain of packages, each requiring the next
  one; the newest bundle of the last requires an API nobody provides, so every head of
  the chain fails and the search backtracks down the versions.
* **Filler** packages (plain version chains requiring earlier fillers' APIs) up to
  ``--packages``.
* ``--unsat``: one more pigeonhole of n + 1 subscribed packages and n APIs
  (``--core-holes``), so the problem is unsatisfiable and its minimal explanation is
  large: every package's dependency and every API's uniqueness, 2n + 1 constraints.

Calibration (``make bench-solver``, ``benchmarks/results/solver.md``): the defaults make
the P=500 and P=2000 problems cost CryptoMiniSat thousands of conflicts. The fixed suite
is :data:`SUITE`.

Usage: gen_hard.py --packages 2000 --seed 1 [--unsat] OUT
Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import random

#: The fixed suite: (name, packages, seed, unsatisfiable).
SUITE = (
    ("hard-500-s1", 500, 1, False),
    ("hard-500-s2", 500, 2, False),
    ("hard-2000-s1", 2000, 1, False),
    ("hard-2000-s2", 2000, 2, False),
    ("hard-unsat-500-s1", 500, 1, True),
    ("hard-unsat-2000-s1", 2000, 1, True),
)


def _gvk(name: str) -> dict[str, str]:
    return {"group": f"{name}.example.com", "version": "v1", "kind": name.replace("-", "").capitalize()}


class Catalog:
    """Packages as FBC blobs; bundles listed oldest first, channel head last."""

    def __init__(self) -> None:
        self.packages: dict[str, list[list[dict[str, object]]]] = {}
        self.subscriptions: list[str] = []

    def package(self, name: str, bundles: list[list[dict[str, object]]], subscribe: bool = False) -> None:
        """``bundles``: the properties (besides olm.package) of each version, oldest first."""
        self.packages[name] = bundles
        if subscribe:
            self.subscriptions.append(name)

    def write(self, out: str) -> None:
        for name, bundles in self.packages.items():
            versions = [f"1.{j}.0" for j in range(len(bundles))]
            names = [f"{name}.v{v}" for v in versions]
            blobs: list[dict[str, object]] = [{"schema": "olm.package", "name": name, "defaultChannel": "stable"}]
            entries = [{"name": names[0]}] + [
                {"name": names[j], "replaces": names[j - 1]} for j in range(1, len(names))
            ]
            blobs.append({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries})
            for j, props in enumerate(bundles):
                blobs.append(
                    {
                        "schema": "olm.bundle",
                        "package": name,
                        "name": names[j],
                        "image": f"example.invalid/{name}-bundle:v{versions[j]}",
                        "properties": [
                            {"type": "olm.package", "value": {"packageName": name, "version": versions[j]}},
                            *props,
                        ],
                    }
                )
            d = os.path.join(out, "catalog", name)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "index.json"), "w") as f:
                for b in blobs:
                    f.write(json.dumps(b, sort_keys=True) + "\n")
        subs = [{"package": n, "channel": "stable", "source": "bench"} for n in self.subscriptions]
        with open(os.path.join(out, "problem.json"), "w") as f:
            json.dump(
                {"namespace": "operators", "catalog": "bench", "subscriptions": subs, "installed": []},
                f,
                indent=1,
                sort_keys=True,
            )


def provides(api: str) -> dict[str, object]:
    return {"type": "olm.gvk", "value": _gvk(api)}


def requires(api: str) -> dict[str, object]:
    return {"type": "olm.gvk.required", "value": _gvk(api)}


def requires_package(name: str, version_range: str) -> dict[str, object]:
    return {"type": "olm.package.required", "value": {"packageName": name, "versionRange": version_range}}


def pigeonhole(cat: Catalog, tag: str, pigeons: int, holes: int, rng: random.Random) -> None:
    """``pigeons`` subscribed packages, each with one bundle per shared API (in random order)."""
    apis = [f"{tag}-api{h}" for h in range(holes)]
    for p in range(pigeons):
        order = apis[:]
        rng.shuffle(order)
        cat.package(f"{tag}-p{p}", [[provides(a)] for a in order], subscribe=True)


def gadget(cat: Catalog, tag: str, holes: int, rng: random.Random) -> None:
    """A greedy package whose newest bundles each close a pigeonhole of ``holes`` packages."""
    # the greedy package comes first: subscriptions are decided in order
    own = [[provides(f"{tag}-own")]]
    cat.package(f"{tag}-greedy", own + [[provides(f"{tag}-api{h}")] for h in range(holes)], subscribe=True)
    pigeonhole(cat, tag, holes, holes, rng)


def diamond(cat: Catalog, tag: str) -> None:
    """The newest top needs left and right, which pin base to disjoint versions."""
    cat.package(f"{tag}-base", [[], [], []])  # 1.0.0, 1.1.0, 1.2.0
    cat.package(f"{tag}-left", [[requires_package(f"{tag}-base", ">=1.0.0 <1.2.0")]])
    cat.package(f"{tag}-right", [[requires_package(f"{tag}-base", ">=1.2.0")]])
    cat.package(
        f"{tag}-top",
        [
            [requires_package(f"{tag}-left", ">=1.0.0")],
            [requires_package(f"{tag}-left", ">=1.0.0"), requires_package(f"{tag}-right", ">=1.0.0")],
        ],
        subscribe=True,
    )


def chain(cat: Catalog, tag: str, length: int, versions: int) -> None:
    """Each link requires the next one's API; the last link's newest bundle needs a missing API."""
    for i in range(length):
        nxt = [requires(f"{tag}-l{i + 1}")] if i + 1 < length else []
        bundles = [[provides(f"{tag}-l{i}"), *nxt] for _ in range(versions)]
        if i + 1 == length:
            bundles[-1] = [provides(f"{tag}-l{i}"), requires(f"{tag}-missing")]
        cat.package(f"{tag}-l{i}", bundles, subscribe=i == 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--packages", type=int, default=2000)
    ap.add_argument("--holes", type=int, default=7, help="APIs per conflict gadget (k)")
    ap.add_argument("--gadgets", type=int, default=None, help="conflict gadgets (default: packages // 250 + 1)")
    ap.add_argument("--unsat", action="store_true", help="add a pigeonhole of n + 1 packages for n APIs")
    ap.add_argument("--core-holes", type=int, default=8, help="APIs n of the --unsat pigeonhole")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    cat = Catalog()
    gadgets = a.gadgets if a.gadgets is not None else a.packages // 250 + 1
    for g in range(gadgets):
        gadget(cat, f"g{g}", a.holes, rng)
    for d in range(max(1, a.packages // 200)):
        diamond(cat, f"d{d}")
        chain(cat, f"c{d}", 8, 3)
    if a.unsat:
        pigeonhole(cat, "u", a.core_holes + 1, a.core_holes, rng)
    i = 0
    while len(cat.packages) < a.packages:
        name = f"f{i:05d}"
        reqs = [requires(f"f{rng.randrange(i):05d}")] if i and rng.random() < 0.5 else []
        cat.package(name, [[provides(name), *reqs] for _ in range(rng.randint(1, 6))], subscribe=rng.random() < 0.01)
        i += 1
    cat.write(a.out)
    print(f"{len(cat.packages)} packages, {len(cat.subscriptions)} subscriptions -> {a.out}")


if __name__ == "__main__":
    main()
