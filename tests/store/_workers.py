"""Worker functions run in separate OS processes (spawned) by the multi-process store tests."""

from __future__ import annotations

import os
import signal
import time

from olmkit.store import SqliteStore, retry_on_conflict


def increment(path: str, name: str, times: int) -> None:
    """Read-modify-write a counter ConfigMap ``times`` times, retrying conflicts."""
    store = SqliteStore(path, busy_timeout=120)

    def bump() -> None:
        obj = store.get("v1", "ConfigMap", name, "default")
        obj["data"]["count"] = str(int(obj["data"]["count"]) + 1)
        obj["data"][f"pid-{os.getpid()}"] = str(int(obj["data"].get(f"pid-{os.getpid()}", "0")) + 1)
        store.update(obj)

    for _ in range(times):
        retry_on_conflict(bump, attempts=1000, backoff=0.0005)
    store.close()


def hang_inside_write(path: str, ready: str) -> None:
    """Create one object, then start a second write that stops before its commit forever."""
    store = SqliteStore(path)
    owner = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "done", "namespace": "a"}})

    def stall() -> None:
        with open(ready, "w") as f:
            f.write("in the middle of a write")
        while True:
            time.sleep(1)

    store._before_commit = stall
    store.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "half",
                "namespace": "a",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "done", "uid": owner["metadata"]["uid"]}
                ],
            },
        }
    )


def write_forever(path: str, ready: str) -> None:
    """Create owners with dependents, update and delete them, until killed."""
    store = SqliteStore(path)
    n = 0
    while True:
        owner = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"o{n}", "namespace": "a"}})
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"o{n}", "uid": owner["metadata"]["uid"]}
        for i in range(3):
            store.create(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": f"o{n}-{i}", "namespace": "a", "ownerReferences": [ref]},
                }
            )
        store.patch("v1", "ConfigMap", f"o{n}", {"data": {"k": "v"}}, "a")
        if n % 2:
            store.delete("v1", "ConfigMap", f"o{n}", "a")
        n += 1
        if n == 5:
            with open(ready, "w") as f:
                f.write("writing")


def create_later(path: str, count: int, delay: float) -> None:
    """Wait ``delay`` seconds, then create ``count`` ConfigMaps."""
    time.sleep(delay)
    store = SqliteStore(path)
    for i in range(count):
        store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"x{i}", "namespace": "w"}})
    store.close()


def kill(pid: int) -> None:
    """SIGKILL a process."""
    os.kill(pid, signal.SIGKILL)
