"""Fixtures of the lifecycle tests: clusters on every store backend, catalogs, a private catalog cache.

Every test that builds its cluster through ``make_cluster`` (or ``cluster``/``make``) runs on
each backend its markers allow (test ids end in ``[memory]``, ``[sqlite]``, ``[kube]``); see
:func:`make_cluster`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from olmkit.store import MemoryStore
from tests.lifecycle.harness import EXAMPLES, B, Cluster, ServedCluster, write_catalog
from tests.lifecycle.served import ServeProcess, ServerPool

#: every backend, in the order the test ids show them
BACKENDS = ("memory", "sqlite", "kube")
#: ``OLMKIT_TEST_KUBE=all`` runs every cluster test on kube too, not only the ``kube``-marked set
KUBE_ENV = "OLMKIT_TEST_KUBE"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``backend`` (see :func:`make_cluster` for which tests get which backends)."""
    if "backend" not in metafunc.fixturenames:
        return
    only = metafunc.definition.get_closest_marker("backends")
    on_kube = metafunc.definition.get_closest_marker("kube") is not None or os.environ.get(KUBE_ENV) == "all"
    names = [b for b in BACKENDS if b != "kube" or on_kube]
    if only is not None:
        names = [b for b in names if b in only.args]
    metafunc.parametrize("backend", names)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lifecycle test gets its own on-disk catalog cache."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


class ServedPools:
    """A :class:`ServerPool` per served-side set-up: with the simulated kubelet, and without."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pools: dict[bool, ServerPool] = {}

    def take(self, kubelet: bool) -> ServeProcess:
        if kubelet not in self.pools:
            name = "kubelet" if kubelet else "no-kubelet"
            self.pools[kubelet] = ServerPool(self.root / name, () if kubelet else ("--no-simulated-kubelet",))
        return self.pools[kubelet].take()

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()


@pytest.fixture(scope="module")
def served_pools(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedPools]:
    """``olmkit serve --no-controllers`` processes for the kube backend, started one ahead.

    Per module, not per session: no server outlives the tests that use it (a test elsewhere
    may wait for every child process of the test run, as bench-compare's ``settle`` does).
    """
    pools = ServedPools(tmp_path_factory.mktemp("served"))
    yield pools
    pools.close()


@pytest.fixture
def make_cluster(
    tmp_path: Any, olmkit_pm: Any, backend: str, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Cluster]]:
    """``make_cluster(**options)``: a cluster on the test's backend (``memory``, ``sqlite`` or ``kube``).

    * ``memory``, ``sqlite``: every controller in this process on an embedded store (a
      :class:`~olmkit.store.MemoryStore`, an SQLite file in ``tmp_path``). Every cluster test
      runs on both.
    * ``kube``: OLM's controllers in this process over the kube store, against a fresh
      ``olmkit serve --no-controllers`` (its simulated API server and kubelet play the cluster;
      ``kubelet=False`` picks a server started with ``--no-simulated-kubelet``). One server per
      cluster, not one shared: the tests use fixed namespaces (``operators``, ``olm``) and
      cluster-scoped objects (CRDs, ClusterRoles) that would collide, and a server starts in
      about 0.35 s, while the previous test runs (:class:`~tests.lifecycle.served.ServerPool`).

    Tests marked ``kube`` run on kube too: 31 of the 80 cluster tests that can, because all of
    them there take about 2.5 minutes (each install goes through HTTP, the informers and the served
    side's kubelet); ``OLMKIT_TEST_KUBE=all`` runs every one (they all pass). The marked set
    covers each part of the lifecycle through the API at least once: installs (a dependency,
    the workload and RBAC a CSV owns, manual approval, an unsatisfiable subscription, one
    operator in two namespaces), upgrades (a chain walked one version at a time, CRD
    versions, optional objects), failures (an install timeout with no kubelet, a bundle
    without content, an unreachable catalog, a ConfigMap catalog, a missing required CRD),
    OperatorGroups (membership, a label selector, retargeting, conflicting groups), copied
    CSVs (created, following their source, deleted copies coming back, the OLMConfig switch,
    two writes per copy), Events (install and upgrade, approval, ``get events`` and
    ``describe`` through ``--kubeconfig``), generated cluster RBAC and the metrics endpoint.
    The rest exercise the same controllers' decisions on other inputs; what the kube store
    changes (reads from informer caches, writes over HTTP, the status subresource, watch
    delivery) is the same for every decision, and the store-contract tests check it on its
    own. Timeouts and polls in fake time work on kube too: the clock is the controllers', on
    the client (see :class:`~tests.lifecycle.harness.ServedCluster`).

    A test marked ``backends(NAMES...)`` runs only on those (an in-process memory store cannot
    be reached by the command line, for one).
    """
    made: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster: Cluster
        if backend == "sqlite":
            cluster = Cluster(tmp_path / f"cluster{len(made)}.db", olmkit_pm, **options)
        elif backend == "memory":
            cluster = Cluster(None, olmkit_pm, store=MemoryStore(), **options)
        else:
            pools: ServedPools = request.getfixturevalue("served_pools")
            cluster = ServedCluster(pools.take(options.get("kubelet", True)), olmkit_pm, **options)
        made.append(cluster)
        return cluster

    yield make
    for cluster in made:
        cluster.close()


@pytest.fixture
def cluster(make_cluster: Callable[..., Cluster]) -> Cluster:
    """A cluster with the example catalog in the global namespace and an OperatorGroup in ``operators``."""
    c = make_cluster()
    c.catalog_source("examples", EXAMPLES / "catalog")
    c.operator_group()
    return c


@pytest.fixture
def make(tmp_path: Path, make_cluster: Callable[..., Cluster]) -> Callable[..., Cluster]:
    """``make(*bundles, **options)``: a cluster with a catalog of the bundles (no OperatorGroup yet)."""

    def build(*bundles: B, **options: Any) -> Cluster:
        catalog = write_catalog(tmp_path / "catalog", bundles)
        cluster = make_cluster(**options)
        cluster.catalog_source("test", catalog)
        return cluster

    return build
