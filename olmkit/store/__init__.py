"""The cluster store: Kubernetes-API-shaped object storage for the lifecycle controllers.

:class:`Store` is the interface (get, list, watch, create, update, update_status, patch,
delete); :class:`SqliteStore` is the embedded, persistent default shared by processes and
:class:`MemoryStore` the in-process one for tests. :func:`open_store` picks one the way the
command line does.

Example:
    store = open_store(":memory:")
    cm = store.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "a", "namespace": "default"}, "data": {"k": "v"}})

    def bump():
        obj = store.get("v1", "ConfigMap", "a", "default")
        obj["data"]["k"] += "!"
        return store.update(obj)  # Conflict when someone else wrote in between

    retry_on_conflict(bump, attempts=5)

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from olmkit._lazy import lazy_names

if TYPE_CHECKING:
    from olmkit.store._api import (
        CLUSTER_SCOPED_KINDS,
        EventType,
        Object,
        ObjectList,
        PatchType,
        Propagation,
        Selector,
        Store,
        Watch,
        WatchEvent,
        group_of,
        retry_on_conflict,
    )
    from olmkit.store.errors import AlreadyExists, Conflict, Expired, Forbidden, Invalid, NotFound, StoreError
    from olmkit.store.memory import MemoryStore
    from olmkit.store.selectors import LabelSelector, parse_selector
    from olmkit.store.sqlite import SqliteStore

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "DEFAULT_STORE_PATH",
    "STORE_ENV",
    "AlreadyExists",
    "Conflict",
    "EventType",
    "Expired",
    "Forbidden",
    "Invalid",
    "LabelSelector",
    "MemoryStore",
    "NotFound",
    "Object",
    "ObjectList",
    "PatchType",
    "Propagation",
    "Selector",
    "SqliteStore",
    "Store",
    "StoreError",
    "Watch",
    "WatchEvent",
    "default_store_path",
    "group_of",
    "open_store",
    "parse_selector",
    "retry_on_conflict",
]

#: the names this package gives, by the module that defines them, each imported on first use:
#: a command that opens no store (a resolution, a validation) pays for none of them, nor SQLite
_HOMES = {
    **dict.fromkeys(
        (
            "CLUSTER_SCOPED_KINDS",
            "EventType",
            "Object",
            "ObjectList",
            "PatchType",
            "Propagation",
            "Selector",
            "Store",
            "Watch",
            "WatchEvent",
            "group_of",
            "retry_on_conflict",
        ),
        "olmkit.store._api",
    ),
    **dict.fromkeys(
        ("AlreadyExists", "Conflict", "Expired", "Forbidden", "Invalid", "NotFound", "StoreError"),
        "olmkit.store.errors",
    ),
    **dict.fromkeys(("LabelSelector", "parse_selector"), "olmkit.store.selectors"),
    "MemoryStore": "olmkit.store.memory",
    "SqliteStore": "olmkit.store.sqlite",
}


__getattr__ = lazy_names(__name__, _HOMES)


DEFAULT_STORE_PATH = Path(".olmkit") / "cluster.db"
STORE_ENV = "OLMKIT_STORE"
MEMORY = ":memory:"
#: ``OLMKIT_STORE``/``--store`` value (alone or as ``kube:CONTEXT``) for the store on an API server.
KUBE = "kube"


def default_store_path(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> str:
    """Where the store is: ``path`` if given, else ``$OLMKIT_STORE``, else ``.olmkit/cluster.db``."""
    env = os.environ if env is None else env
    if path:
        return os.fspath(path)
    return env.get(STORE_ENV) or str(DEFAULT_STORE_PATH)


def open_store(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Store:
    """Open the store the way the command line does (``--store PATH``, ``OLMKIT_STORE``, the default).

    ``":memory:"`` gives a :class:`MemoryStore`; anything else is an SQLite file, except
    ``kube`` and ``kube:CONTEXT``, which name a store on an API server: those are opened by
    :func:`olmkit.kube.connect` (the command line does), not here.

    Raises:
        StoreError: the file cannot be opened as a store.
        Invalid: ``kube[:CONTEXT]`` was given.
    """
    where = default_store_path(path, env)
    if where == KUBE or where.startswith(KUBE + ":"):
        from olmkit.store.errors import Invalid

        raise Invalid(
            f"{where!r} names a store on a Kubernetes API server: open it with olmkit.kube.connect "
            "(on the command line: --kubeconfig PATH [--context NAME], or OLMKIT_STORE=kube[:CONTEXT])"
        )
    if where == MEMORY:
        from olmkit.store.memory import MemoryStore

        return MemoryStore()
    from olmkit.store.sqlite import SqliteStore

    return SqliteStore(where)
