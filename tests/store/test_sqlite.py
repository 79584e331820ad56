"""The SQLite backend: persistence, opening, several processes, crashes."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import time

import _workers
import pytest
from conftest import cm

from olmkit.store import (
    DEFAULT_STORE_PATH,
    MemoryStore,
    SqliteStore,
    StoreError,
    open_store,
)

spawn = multiprocessing.get_context("spawn")


def wait_for(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"worker never wrote {path}"
        time.sleep(0.01)


def test_store_persists_across_opens(tmp_path):
    """Objects, the resourceVersion counter and registered kinds survive closing and reopening."""
    path = tmp_path / "db" / "cluster.db"
    with SqliteStore(path) as first:
        first.create(cm("a", data={"k": "v"}))
        first.register_kind("example.io/v1", "Widget", namespaced=False)

    with SqliteStore(path) as second:
        got = second.get("v1", "ConfigMap", "a", "default")
        created = second.create(cm("b"))
        scoped = second.is_namespaced("example.io/v1", "Widget")

    assert {"k": "v"} == got["data"]
    assert "2" == created["metadata"]["resourceVersion"]  # registering a kind is not an object write
    assert not scoped


def test_open_store_picks_path_env_or_default(tmp_path, monkeypatch):
    """open_store uses the given path, else OLMKIT_STORE, else .olmkit/cluster.db; ':memory:' is in memory."""
    monkeypatch.chdir(tmp_path)

    explicit = open_store(tmp_path / "x.db", env={"OLMKIT_STORE": str(tmp_path / "ignored.db")})
    from_env = open_store(env={"OLMKIT_STORE": str(tmp_path / "env.db")})
    default = open_store(env={})
    memory = open_store(":memory:")

    assert tmp_path / "x.db" == explicit.path
    assert tmp_path / "env.db" == from_env.path
    assert DEFAULT_STORE_PATH == default.path
    assert (tmp_path / ".olmkit" / "cluster.db").exists()
    assert isinstance(memory, MemoryStore)
    assert not (tmp_path / "ignored.db").exists()
    for s in (explicit, from_env, default):
        s.close()


def test_a_file_that_is_not_a_store_is_a_clear_error(tmp_path):
    """Opening a file that is not an SQLite database names the file."""
    bogus = tmp_path / "cluster.db"
    bogus.write_text("this is not a database, just some text " * 100)

    with pytest.raises(StoreError) as info:
        SqliteStore(bogus)

    assert str(bogus) in str(info.value)
    assert "cannot open the store" in str(info.value)


def test_two_processes_never_lose_an_update(tmp_path):
    """Two OS processes doing read-modify-write with retry_on_conflict lose no increment."""
    path = str(tmp_path / "cluster.db")
    with SqliteStore(path) as store:
        store.create(cm("counter", data={"count": "0"}))
    times = 150
    workers = [spawn.Process(target=_workers.increment, args=(path, "counter", times)) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)

    with SqliteStore(path) as store:
        data = store.get("v1", "ConfigMap", "counter", "default")["data"]

    assert [0, 0] == [w.exitcode for w in workers]
    assert str(2 * times) == data["count"]
    assert [str(times)] * 2 == [v for k, v in sorted(data.items()) if k.startswith("pid-")]


def test_kill_in_the_middle_of_a_write_leaves_nothing_half_written(tmp_path):
    """A process SIGKILLed inside a write transaction leaves the store as before that write, and unlocked."""
    path, ready = str(tmp_path / "cluster.db"), str(tmp_path / "ready")
    worker = spawn.Process(target=_workers.hang_inside_write, args=(path, ready))
    worker.start()
    wait_for(ready)
    _workers.kill(worker.pid)
    worker.join(10)

    with SqliteStore(path, busy_timeout=5) as store:
        names = [o["metadata"]["name"] for o in store.list("v1", "ConfigMap", "a")]
        after = store.create(cm("after", "a"))
        done_uid = store.get("v1", "ConfigMap", "done", "a")["metadata"]["uid"]
    db = sqlite3.connect(path)
    refs = db.execute("SELECT count(*) FROM owner_refs WHERE owner_uid=?", (done_uid,)).fetchone()[0]
    db.close()

    assert -9 == worker.exitcode
    assert ["done"] == names
    assert "2" == after["metadata"]["resourceVersion"]
    assert 0 == refs


def check_consistency(path):
    """Invariants of an SQLite store: every table agrees with every other."""
    db = sqlite3.connect(path)
    problems = []
    if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
        problems.append("integrity_check failed")
    rv = db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0]
    if rv != (db.execute("SELECT max(rv) FROM events").fetchone()[0] or 0):
        problems.append("the counter is not the last event")
    from olmkit.store._local import loads

    expected_refs = set()
    for grp, kind, ns, name, uid, orv, data in db.execute("SELECT * FROM objects"):
        obj = loads(data)
        if (obj["metadata"]["uid"], obj["metadata"]["resourceVersion"]) != (uid, str(orv)):
            problems.append(f"{name}: columns disagree with the object")
        event = db.execute("SELECT data FROM events WHERE rv=?", (orv,)).fetchone()
        if event is None or loads(event[0]) != obj:
            problems.append(f"{name}: no event for its last write")
        expected_refs |= {(r["uid"], grp, kind, ns, name) for r in obj["metadata"].get("ownerReferences", [])}
    if expected_refs != set(db.execute("SELECT * FROM owner_refs")):
        problems.append("owner index disagrees with ownerReferences")
    db.close()
    return problems


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.5])
def test_random_kills_leave_a_consistent_store(tmp_path, delay):
    """A writer SIGKILLed at an arbitrary moment leaves tables that agree, and the store keeps working."""
    path, ready = str(tmp_path / "cluster.db"), str(tmp_path / "ready")
    worker = spawn.Process(target=_workers.write_forever, args=(path, ready))
    worker.start()
    wait_for(ready)
    time.sleep(delay)
    _workers.kill(worker.pid)
    worker.join(10)

    problems = check_consistency(path)
    with SqliteStore(path, busy_timeout=5) as store:
        store.create(cm("still-works", "a"))

    assert [] == problems
    assert [] == check_consistency(path)


def test_watch_sees_writes_of_another_process(tmp_path):
    """A watch polls the events table, so it delivers changes another process makes."""
    path = str(tmp_path / "cluster.db")
    store = SqliteStore(path, poll_interval=0.01)
    rv = store.list("v1", "ConfigMap").resource_version
    worker = spawn.Process(target=_workers.create_later, args=(path, 3, 0.2))
    worker.start()

    seen = []
    with store.watch("v1", "ConfigMap", "w", resource_version=rv, timeout=60) as watch:
        for event in watch:
            seen.append((event.type, event.object["metadata"]["name"]))
            if len(seen) == 3:
                break
    worker.join(30)
    store.close()

    assert [("ADDED", "x0"), ("ADDED", "x1"), ("ADDED", "x2")] == seen
