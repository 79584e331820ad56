"""Fixtures for the cluster commands: a SQLite store in tmp_path and a runner for ``olmkit.cli.main``."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
import yaml

from olmkit.cli import main
from olmkit.store import STORE_ENV, SqliteStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "catalog"


@attrs.frozen
class Result:
    code: int
    out: str
    err: str


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """No user cache, no inherited store: every test gets its own."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(STORE_ENV, raising=False)


@pytest.fixture
def db(tmp_path):
    """The path of the test's SQLite store."""
    return str(tmp_path / "cluster.db")


@pytest.fixture
def olmkit(db, capsys):
    """``olmkit(*args)`` runs the command line on the test's store and returns code, stdout, stderr."""

    def run(*args: str) -> Result:
        code = main([*args, "--store", db])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def store(db):
    """The test's store, opened directly (to seed status and to check what commands wrote)."""
    with SqliteStore(db) as s:
        yield s


@pytest.fixture
def write(tmp_path):
    """``write(name, *docs)`` writes YAML documents (or raw text) to tmp_path/name and returns the path."""

    def make(name: str, *docs: object) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if len(docs) == 1 and isinstance(docs[0], str):
            path.write_text(docs[0])
        else:
            path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return str(path)

    return make


def catalog_source(name: str, namespace: str, path: str, priority: int = 0) -> dict:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"sourceType": "file", "path": path, "displayName": f"{name} operators", "priority": priority},
    }


@pytest.fixture
def examples(tmp_path, write, olmkit):
    """The example catalog as CatalogSource olm/examples, applied from a manifest with a relative path."""
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    relative = os.path.relpath(EXAMPLES, manifests)
    path = write("manifests/examples.yaml", catalog_source("examples", "olm", relative))
    result = olmkit("apply", "-f", path)
    assert 0 == result.code, result.err
    return path


@pytest.fixture
def mini_catalog(tmp_path):
    """A second catalog directory holding only cert-manager-lite."""
    root = tmp_path / "mini"
    root.mkdir()
    shutil.copy(EXAMPLES / "cert-manager-lite" / "catalog.yaml", root / "catalog.yaml")
    return str(root)


@pytest.fixture
def meanwhile(db):
    """``with meanwhile(change):`` runs ``change(store)`` on the test's store from another thread
    after ``delay`` seconds (another writer while a command waits or watches), and joins it."""

    @contextlib.contextmanager
    def run(change: Callable[[SqliteStore], object], delay: float = 0.5) -> Iterator[None]:
        def later() -> None:
            time.sleep(delay)
            with SqliteStore(db) as s:
                change(s)

        thread = threading.Thread(target=later)
        thread.start()
        try:
            yield
        finally:
            thread.join()

    return run


def set_channel(name: str, channel: str) -> Callable[[SqliteStore], object]:
    """A change for :func:`meanwhile`: Subscription default/NAME moves to ``channel``."""

    def change(s: SqliteStore) -> object:
        obj = s.get("operators.coreos.com/v1alpha1", "Subscription", name, "default")
        obj["spec"]["channel"] = channel
        return s.update(obj)

    return change
