"""Deletion, finalizers, owner garbage collection, watches and retry_on_conflict, on both backends."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import RBAC_ROLE, cm, owner_ref, rv, settled

from olmkit.store import AlreadyExists, Conflict, Expired, Invalid, NotFound, retry_on_conflict


def exists(store, name, namespace="default", kind="ConfigMap", api_version="v1"):
    try:
        store.get(api_version, kind, name, namespace)
    except NotFound:
        return False
    return True


# -- delete and finalizers ---------------------------------------------------------------


def test_delete_removes_and_returns_last_state(store):
    """delete without finalizers removes the object and returns it with the deletion's resourceVersion."""
    store.create(cm("a"))

    gone = store.delete("v1", "ConfigMap", "a", "default")

    assert rv(store, 2) == gone["metadata"]["resourceVersion"]
    assert not exists(store, "a")
    with pytest.raises(NotFound):
        store.delete("v1", "ConfigMap", "a", "default")


def test_delete_preconditions(store):
    """delete with a stale resourceVersion or another uid conflicts and keeps the object."""
    store.create(cm("a"))
    store.patch("v1", "ConfigMap", "a", {"data": {"k": "v"}}, "default")

    with pytest.raises(Conflict):
        store.delete("v1", "ConfigMap", "a", "default", resource_version=rv(store, 1))
    with pytest.raises(Conflict):
        store.delete("v1", "ConfigMap", "a", "default", uid="other")

    assert exists(store, "a")


def test_finalizers_hold_deletion_until_removed(store):
    """With finalizers, delete only sets deletionTimestamp; removing the last finalizer removes the object."""
    store.create(cm("a", finalizers=["one", "two"]))

    marked = store.delete("v1", "ConfigMap", "a", "default")
    again = store.delete("v1", "ConfigMap", "a", "default")
    marked_meta = marked["metadata"]
    one_left = store.patch("v1", "ConfigMap", "a", {"metadata": {"finalizers": ["two"]}}, "default")

    assert "2024-01-01T00:00:01Z" == marked_meta["deletionTimestamp"]
    assert marked == again
    assert marked_meta["deletionTimestamp"] == one_left["metadata"]["deletionTimestamp"]
    assert exists(store, "a")
    last = store.get("v1", "ConfigMap", "a", "default")
    last["metadata"]["finalizers"] = []
    store.update(last)
    assert not exists(store, "a")


def test_no_new_finalizers_while_deleting(store):
    """A finalizer cannot be added to an object being deleted."""
    store.create(cm("a", finalizers=["one"]))
    store.delete("v1", "ConfigMap", "a", "default")

    with pytest.raises(Invalid) as info:
        store.patch("v1", "ConfigMap", "a", {"metadata": {"finalizers": ["one", "two"]}}, "default")

    assert "metadata.finalizers" == info.value.field


# -- owner garbage collection --------------------------------------------------------------


def test_deleting_an_owner_deletes_what_it_owns_transitively(store):
    """Deleting an owner removes its dependents, and theirs, in the same namespace."""
    top = store.create(cm("top"))
    mid = store.create(cm("mid", ownerReferences=[owner_ref(top)]))
    store.create(cm("leaf", ownerReferences=[owner_ref(mid)]))
    store.create(cm("unrelated"))

    store.delete("v1", "ConfigMap", "top", "default")
    settled(store)

    assert ["unrelated"] == [o["metadata"]["name"] for o in store.list("v1", "ConfigMap")]


def test_namespaced_owner_does_not_reach_other_namespaces(store):
    """A dependent in another namespace than its namespaced owner is not collected."""
    owner = store.create(cm("owner", "ns1"))
    store.create(cm("elsewhere", "ns2", ownerReferences=[owner_ref(owner)]))

    store.delete("v1", "ConfigMap", "owner", "ns1")
    settled(store)

    assert exists(store, "elsewhere", "ns2")


def test_cluster_scoped_owner_collects_namespaced_dependents(store):
    """A cluster-scoped owner's namespaced dependents go with it, in any namespace."""
    role = store.create(RBAC_ROLE)
    store.create(cm("a", "ns1", ownerReferences=[owner_ref(role)]))
    store.create(cm("b", "ns2", ownerReferences=[owner_ref(role)]))

    store.delete("rbac.authorization.k8s.io/v1", "ClusterRole", "r")
    settled(store)

    assert [] == store.list("v1", "ConfigMap").items


def test_dependent_with_another_owner_survives(store):
    """A dependent that still has a present owner only loses the reference to the deleted one."""
    one = store.create(cm("one"))
    two = store.create(cm("two"))
    store.create(cm("shared", ownerReferences=[owner_ref(one), owner_ref(two)]))

    store.delete("v1", "ConfigMap", "one", "default")
    settled(store)

    assert [owner_ref(two)] == store.get("v1", "ConfigMap", "shared", "default")["metadata"]["ownerReferences"]
    store.delete("v1", "ConfigMap", "two", "default")
    settled(store)
    assert not exists(store, "shared")


def test_dependent_with_finalizer_is_marked_not_removed(store):
    """A dependent with finalizers gets a deletionTimestamp; its own dependents wait for it."""
    owner = store.create(cm("owner"))
    dep = store.create(cm("dep", finalizers=["keep"], ownerReferences=[owner_ref(owner)]))
    store.create(cm("grandchild", ownerReferences=[owner_ref(dep)]))

    store.delete("v1", "ConfigMap", "owner", "default")
    settled(store)

    assert "deletionTimestamp" in store.get("v1", "ConfigMap", "dep", "default")["metadata"]
    assert exists(store, "grandchild")
    store.patch("v1", "ConfigMap", "dep", {"metadata": {"finalizers": None}}, "default")
    settled(store)
    assert not exists(store, "dep")
    assert not exists(store, "grandchild")


def test_owner_with_finalizer_keeps_dependents_until_it_goes(store):
    """Dependents stay while their owner waits on a finalizer, and go when it does."""
    owner = store.create(cm("owner", finalizers=["f"]))
    store.create(cm("dep", ownerReferences=[owner_ref(owner)]))

    store.delete("v1", "ConfigMap", "owner", "default")
    settled(store)
    kept = exists(store, "dep")
    store.patch("v1", "ConfigMap", "owner", {"metadata": {"finalizers": []}}, "default")
    settled(store)

    assert kept
    assert not exists(store, "dep")


def test_orphan_propagation_keeps_dependents(store):
    """propagation=Orphan removes the owner and only the dependents' reference to it."""
    owner = store.create(cm("owner"))
    store.create(cm("dep", ownerReferences=[owner_ref(owner)]))

    store.delete("v1", "ConfigMap", "owner", "default", propagation="Orphan")
    settled(store)

    assert "ownerReferences" not in store.get("v1", "ConfigMap", "dep", "default")["metadata"]


def test_owner_reference_cycle_terminates(store):
    """Objects owning each other are all collected once one is deleted."""
    a = store.create(cm("a"))
    b = store.create(cm("b", ownerReferences=[owner_ref(a)]))
    a = store.get("v1", "ConfigMap", "a", "default")
    a["metadata"]["ownerReferences"] = [owner_ref(b)]
    store.update(a)

    store.delete("v1", "ConfigMap", "b", "default")
    settled(store)

    assert [] == store.list("v1", "ConfigMap").items


# -- watch ---------------------------------------------------------------------------------


def events(watch):
    return [(e.type, e.object["metadata"]["name"], e.resource_version) for e in watch]


def test_watch_from_resource_version(store):
    """A watch from a resourceVersion delivers ADDED, MODIFIED and DELETED after it, in order."""
    store.create(cm("before"))
    after = store.list("v1", "ConfigMap").resource_version
    store.create(cm("a"))
    store.patch("v1", "ConfigMap", "a", {"data": {"k": "v"}}, "default")
    store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}})
    store.delete("v1", "ConfigMap", "a", "default")

    seen = events(store.watch("v1", "ConfigMap", resource_version=after, timeout=0))

    assert [("ADDED", "a", rv(store, 2)), ("MODIFIED", "a", rv(store, 3)), ("DELETED", "a", rv(store, 5))] == seen


def test_watch_without_resource_version_starts_with_current_objects(store):
    """A watch without resourceVersion first lists current objects as ADDED, then follows changes."""
    store.create(cm("a"))
    store.create(cm("b"))
    store.delete("v1", "ConfigMap", "b", "default")
    watch = store.watch("v1", "ConfigMap", timeout=0)
    first = events(watch)
    store.create(cm("c"))

    resumed = events(store.watch("v1", "ConfigMap", resource_version=watch.resource_version, timeout=0))

    assert [("ADDED", "a", rv(store, 1))] == first
    assert [("ADDED", "c", rv(store, 4))] == resumed


def test_watch_filters_namespace_and_labels(store):
    """A watch delivers only its namespace's and selector's objects."""
    store.create(cm("a", "ns1", {"app": "x"}))
    store.create(cm("b", "ns2", {"app": "x"}))
    store.create(cm("c", "ns1", {"app": "y"}))

    seen = events(store.watch("v1", "ConfigMap", "ns1", "app=x", resource_version="0", timeout=0))

    assert [("ADDED", "a", rv(store, 1))] == seen


def test_watch_reads_as_the_version_asked(store):
    """Watch events carry the apiVersion the watch asked for."""
    store.create({"apiVersion": "example.io/v1alpha1", "kind": "Thing", "metadata": {"name": "t", "namespace": "n"}})

    seen = list(store.watch("example.io/v1", "Thing", resource_version="0", timeout=0))

    assert ["example.io/v1"] == [e.object["apiVersion"] for e in seen]


def test_watch_from_compacted_history_expires(small_store):
    """Resuming from a resourceVersion older than the kept history raises Expired (the API's 410)."""
    for i in range(60):
        small_store.create(cm(f"o{i}"))

    with pytest.raises(Expired) as info:
        small_store.watch("v1", "ConfigMap", resource_version="1", timeout=0)

    assert 410 == info.value.code
    assert "1" == info.value.resource_version
    assert "too old" in str(info.value)
    recent = events(small_store.watch("v1", "ConfigMap", resource_version=rv(small_store, 55), timeout=0))
    assert ["o55", "o56", "o57", "o58", "o59"] == [name for _, name, _ in recent]


def test_slow_watcher_expires_while_iterating(small_store):
    """A watch that falls behind the compaction raises Expired instead of skipping changes."""
    small_store.create(cm("first"))
    watch = small_store.watch("v1", "ConfigMap", resource_version=rv(small_store, 1), timeout=0)
    for i in range(60):
        small_store.create(cm(f"o{i}"))

    with pytest.raises(Expired):
        next(watch)


def test_blocking_watch_wakes_on_a_write(store):
    """A waiting watch delivers a change made by another thread."""
    rv = store.list("v1", "ConfigMap").resource_version
    watch = store.watch("v1", "ConfigMap", resource_version=rv, timeout=10)
    writer = threading.Timer(0.1, lambda: store.create(cm("late")))
    writer.start()

    event = next(watch)
    watch.close()
    writer.join()

    assert ("ADDED", "late") == (event.type, event.object["metadata"]["name"])
    assert [] == list(watch)


def test_watch_timeout_ends_iteration(store):
    """A watch with a timeout and no changes ends after the timeout."""
    with store.watch("v1", "ConfigMap", resource_version="0", timeout=0.05) as watch:
        assert [] == list(watch)


def test_bad_watch_resource_version_is_invalid(store):
    """A non-numeric resourceVersion is Invalid."""
    with pytest.raises(Invalid):
        store.watch("v1", "ConfigMap", resource_version="abc")


# -- retry_on_conflict -----------------------------------------------------------------------


def test_retry_on_conflict_retries_a_read_modify_write(store):
    """retry_on_conflict re-runs fn after a Conflict until it succeeds."""
    store.create(cm("counter", data={"n": "0"}))
    calls = []

    def bump():
        obj = store.get("v1", "ConfigMap", "counter", "default")
        if not calls:  # someone else writes between our read and our write, once
            store.patch("v1", "ConfigMap", "counter", {"data": {"n": "10"}}, "default")
        calls.append(obj["metadata"]["resourceVersion"])
        obj["data"]["n"] = str(int(obj["data"]["n"]) + 1)
        return store.update(obj)

    result = retry_on_conflict(bump, attempts=3, backoff=0)

    assert "11" == result["data"]["n"]
    assert [rv(store, 1), rv(store, 2)] == calls


def test_retry_on_conflict_gives_up(store):
    """After the last attempt the Conflict propagates."""
    calls = []

    def always():
        calls.append(1)
        raise Conflict(kind="ConfigMap", name="x", expected="1", actual="2")

    with pytest.raises(Conflict):
        retry_on_conflict(always, attempts=4, backoff=0)

    assert 4 == len(calls)
    with pytest.raises(Invalid):
        retry_on_conflict(always, attempts=0)


# -- changes across kinds (the API server's watch hub) --------------------------------------------


def test_changes_after_reads_the_kinds_asked_for_in_order(local_store):
    """changes_after: every change of the kinds asked for, across kinds, oldest first, with its group."""
    start = int(local_store.latest_resource_version())
    local_store.create(cm("a"))
    local_store.create(RBAC_ROLE)
    local_store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}})
    local_store.patch("v1", "ConfigMap", "a", {"data": {"k": "v"}}, "default")
    local_store.delete("rbac.authorization.k8s.io/v1", "ClusterRole", "r")

    found, last = local_store.changes_after(start, {("", "ConfigMap"), ("rbac.authorization.k8s.io", "ClusterRole")})
    later, _ = local_store.changes_after(start + 3, {("", "ConfigMap"), ("", "Secret")})

    assert [
        ("", "ADDED", "a"),
        ("rbac.authorization.k8s.io", "ADDED", "r"),
        ("", "MODIFIED", "a"),
        ("rbac.authorization.k8s.io", "DELETED", "r"),
    ] == [(group, e.type, e.object["metadata"]["name"]) for group, e in found]
    assert {"k": "v"} == found[2][1].object["data"]
    assert [str(start + n) for n in (1, 2, 4, 5)] == [e.resource_version for _, e in found]
    assert start + 5 == last == int(local_store.latest_resource_version())
    assert [("", "MODIFIED", "a")] == [(g, e.type, e.object["metadata"]["name"]) for g, e in later]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_changes_after_compacted_history_expires(backend, tmp_path):
    """changes_after from before the kept history raises Expired (the reader must list again)."""
    from olmkit.store import MemoryStore, SqliteStore

    store = MemoryStore(history=20) if backend == "memory" else SqliteStore(tmp_path / "c.db", history=20)
    with store:
        for i in range(60):
            store.create(cm(f"o{i}"))

        with pytest.raises(Expired):
            store.changes_after(1, {("", "ConfigMap")})
        recent, _ = store.changes_after(55, {("", "ConfigMap")})

    assert ["o55", "o56", "o57", "o58", "o59"] == [e.object["metadata"]["name"] for _, e in recent]


def test_changes_after_is_optional(store):
    """A backend that cannot read across kinds answers None (the kube backend: its informers are per kind)."""
    found = store.changes_after(0, {("", "ConfigMap")})

    assert (found is None) == (not store.embedded)


def test_sqlite_changes_after_reads_its_own_writes_from_memory_and_others_from_the_file(tmp_path):
    """changes_after answers from memory only while every change since is this store object's own
    write; a write by another store on the file (another process) makes it read the file, with the
    same answer a store with no memory of the writes gives."""
    from olmkit.store import SqliteStore

    kinds = {("", "ConfigMap"), ("rbac.authorization.k8s.io", "ClusterRole")}
    with SqliteStore(tmp_path / "c.db") as mine, SqliteStore(tmp_path / "c.db") as other:
        start = int(mine.latest_resource_version())
        mine.create(cm("a"))
        mine.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}})
        mine.create(RBAC_ROLE)
        own, own_last = mine.changes_after(start, kinds)
        assert 1 == mine.recent_reads
        other.create(cm("b"))  # another process's write between two of this one's
        mine.patch("v1", "ConfigMap", "a", {"data": {"k": "v"}}, "default")
        mine.delete("rbac.authorization.k8s.io/v1", "ClusterRole", "r")
        mixed, mixed_last = mine.changes_after(start, kinds)
        assert 1 == mine.recent_reads  # read from the file
        since_other, _ = mine.changes_after(start + 4, kinds)
        assert 2 == mine.recent_reads  # only its own writes since
        from_file = other.changes_after(start, kinds)
        assert 0 == other.recent_reads  # its one write is not all of what changed

    def seen(changes):
        return [
            (group, e.type, e.object["metadata"]["name"], e.resource_version, e.object.get("data"))
            for group, e in changes
        ]

    assert [("", "ADDED", "a"), ("rbac.authorization.k8s.io", "ADDED", "r")] == [c[:3] for c in seen(own)]
    assert start + 3 == own_last
    assert [
        ("", "ADDED", "a", str(start + 1), {}),
        ("rbac.authorization.k8s.io", "ADDED", "r", str(start + 3), None),
        ("", "ADDED", "b", str(start + 4), {}),
        ("", "MODIFIED", "a", str(start + 5), {"k": "v"}),
        ("rbac.authorization.k8s.io", "DELETED", "r", str(start + 6), None),
    ] == seen(mixed)
    assert seen(mixed) == seen(from_file[0])
    assert start + 6 == mixed_last == from_file[1]
    assert seen(mixed)[3:] == seen(since_other)


def test_sqlite_changes_after_keeps_nothing_of_a_rolled_back_write(tmp_path):
    """A write that fails inside its transaction leaves no event in memory: when another process's
    write takes its resourceVersion, that write is what is read."""
    from olmkit.store import SqliteStore

    with SqliteStore(tmp_path / "c.db") as store, SqliteStore(tmp_path / "c.db") as other:
        start = int(store.latest_resource_version())
        store.create(cm("a"))

        def fail() -> None:
            raise RuntimeError("the disk is full")

        store._before_commit = fail
        with pytest.raises(RuntimeError):
            store.create(cm("b"))
        store._before_commit = None
        other.create(cm("x"))
        found, last = store.changes_after(start, {("", "ConfigMap")})

    assert ["a", "x"] == [e.object["metadata"]["name"] for _, e in found]
    assert start + 2 == last


def test_sqlite_commit_listeners_hear_each_committed_write_only(tmp_path, caplog):
    """A commit listener is called in the writing thread after each write that committed, not after
    a failed one nor for another store object's writes; a listener that fails does not fail the write."""
    from olmkit.store import MemoryStore, SqliteStore

    with SqliteStore(tmp_path / "c.db") as store, SqliteStore(tmp_path / "c.db") as other:
        heard: list[tuple[str | None, bool]] = []

        def listener() -> None:
            heard.append((store.latest_resource_version(), store._lock.locked()))
            if len(heard) == 2:
                raise RuntimeError("a listener bug")

        assert store.add_commit_listener(listener)
        store.create(cm("a"))
        made = store.create(cm("b"))  # its listener call fails: the write stands
        with pytest.raises(AlreadyExists):
            store.create(cm("b"))
        other.create(cm("c"))
        store.update({**made, "data": {"k": "v"}})

        assert [(made["metadata"]["resourceVersion"], False)] == heard[1:2]
        assert [int(rv) for rv, _ in heard] == [int(made["metadata"]["resourceVersion"]) + n for n in (-1, 0, 2)]
        assert "a commit listener" in caplog.text
        assert {"k": "v"} == store.get("v1", "ConfigMap", "b", "default")["data"]
    assert not MemoryStore().add_commit_listener(listener)  # a backend that does not report its writes


def test_sqlite_wait_for_change_of_sleeps_through_this_stores_writes_of_other_kinds(tmp_path):
    """A reader of some kinds waiting on the SQLite store is woken by this store's write of one of
    them, not by its writes of other kinds; at once when such a write came after the position it
    gives; and within the poll interval otherwise (another process's writes are not reported)."""
    from olmkit.store import SqliteStore

    with SqliteStore(tmp_path / "c.db", poll_interval=3.0) as store:
        kinds = {("", "ConfigMap")}
        position = store.latest_resource_version()
        woke: list[float] = []
        written: list[float] = []

        def reader() -> None:
            store.wait_for_change_of(kinds, position, 3.0)
            woke.append(time.monotonic())

        waiting = threading.Thread(target=reader)
        waiting.start()
        time.sleep(0.2)
        store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}})
        time.sleep(0.3)
        assert not woke  # a Secret does not wake a reader of ConfigMaps
        written.append(time.monotonic())
        store.create(cm("a"))
        waiting.join(5)

        assert woke
        assert woke[0] - written[0] < 1.0
        start = time.monotonic()
        store.wait_for_change_of(kinds, position, 3.0)  # a ConfigMap was written after that position
        assert time.monotonic() - start < 0.5
        start = time.monotonic()
        store.wait_for_change_of(kinds, store.latest_resource_version(), 0.3)
        assert 0.25 < time.monotonic() - start < 2.0  # nothing: the timeout
