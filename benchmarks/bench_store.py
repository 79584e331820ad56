"""The SQLite store at 10k objects: create, get, update, list (pytest-benchmark; not in the default run).

Objects are ConfigMap-sized (~1 KB, labels, data) spread over 10 namespaces; the seed is fixed.
Run: ``.venv/bin/python -m pytest benchmarks/bench_store.py --benchmark-only -p no:randomly``.
"""

from __future__ import annotations

import itertools
import random

import pytest

from olmkit.store import SqliteStore

N = 10_000
NAMESPACES = [f"ns{i}" for i in range(10)]


def manifest(i: int, rng: random.Random) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"obj-{i}",
            "namespace": NAMESPACES[i % len(NAMESPACES)],
            "labels": {"app": f"app-{i % 50}", "tier": rng.choice(["web", "db", "cache"])},
            "annotations": {"note": "x" * 200},
        },
        "data": {f"key{k}": "".join(rng.choices("abcdefgh", k=60)) for k in range(10)},
    }


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """A store holding 10k objects."""
    store = SqliteStore(tmp_path_factory.mktemp("bench") / "cluster.db")
    rng = random.Random(1)
    for i in range(N):
        store.create(manifest(i, rng))
    yield store
    store.close()


def test_create_10k(benchmark, tmp_path_factory):
    """10k creates into an empty store, one transaction each."""
    rng = random.Random(1)
    objects = [manifest(i, rng) for i in range(N)]
    dirs = itertools.count()

    def setup():
        store = SqliteStore(tmp_path_factory.mktemp(f"create{next(dirs)}") / "cluster.db")
        return (store,), {}

    def create_all(store):
        for obj in objects:
            store.create(obj)
        store.close()

    benchmark.pedantic(create_all, setup=setup, rounds=3, iterations=1)
    benchmark.extra_info["objects"] = N


def test_get(benchmark, loaded):
    """One get from a 10k-object store."""
    names = itertools.cycle([(f"obj-{i}", NAMESPACES[i % 10]) for i in random.Random(2).sample(range(N), 1000)])

    def get():
        name, ns = next(names)
        return loaded.get("v1", "ConfigMap", name, ns)

    benchmark(get)


def test_update(benchmark, loaded):
    """One read-modify-write update (get + update with the resourceVersion check) in a 10k-object store."""
    names = itertools.cycle([(f"obj-{i}", NAMESPACES[i % 10]) for i in random.Random(3).sample(range(N), 1000)])
    counter = itertools.count()

    def update():
        name, ns = next(names)
        obj = loaded.get("v1", "ConfigMap", name, ns)
        obj["data"]["key0"] = str(next(counter))
        return loaded.update(obj)

    benchmark(update)


def test_list_all(benchmark, loaded):
    """List all 10k objects across namespaces."""
    result = benchmark(loaded.list, "v1", "ConfigMap")
    assert N == len(result)


def test_list_namespace(benchmark, loaded):
    """List one namespace (1k objects)."""
    result = benchmark(loaded.list, "v1", "ConfigMap", "ns3")
    assert N // 10 == len(result)


def test_list_selector(benchmark, loaded):
    """List all namespaces with a set-based label selector (~200 matches of 10k)."""
    result = benchmark(loaded.list, "v1", "ConfigMap", None, "app in (app-1,app-2,app-3),tier!=cache")
    assert 0 < len(result) < N
