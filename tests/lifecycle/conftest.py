from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lifecycle.harness import EXAMPLES, B, Cluster, write_catalog


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every lifecycle test gets its own on-disk catalog cache."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def make_cluster(tmp_path: Any, olmkit_pm: Any) -> Iterator[Callable[..., Cluster]]:
    """``make_cluster(**options)``: an embedded cluster on an SQLite store in ``tmp_path``."""
    made: list[Cluster] = []

    def make(**options: Any) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster{len(made)}.db", olmkit_pm, **options)
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
