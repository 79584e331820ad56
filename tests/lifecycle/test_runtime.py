"""The controller runtime: the work queue, the manager's loop, the lease, and the lifecycle hooks."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from olmkit import hookimpl
from olmkit.errors import OlmkitError
from olmkit.lifecycle import FakeClock, build_manager
from olmkit.lifecycle.bundles import BundleUnpackError, bundle_content
from olmkit.lifecycle.lease import Lease
from olmkit.lifecycle.runtime import Controller, ControllerManager, Key, Result, WatchSpec, WorkQueue
from olmkit.lifecycle.status import parse_duration, set_condition
from olmkit.model import Bundle, Property
from olmkit.store import Conflict, MemoryStore, StoreError, WatchEvent
from tests.lifecycle.harness import B, Cluster, write_catalog

K = Key("c", "ns", "a")


def test_queue_coalesces_a_key_and_keeps_fifo_order() -> None:
    """A key queued twice is reconciled once; keys come out in the order they were first queued."""
    queue = WorkQueue(FakeClock())
    for name in ("a", "b", "a", "c", "b"):
        queue.add(Key("c", "ns", name))

    assert ["a", "b", "c"] == [queue.pop().name for _ in range(3)]  # type: ignore[union-attr]
    assert queue.pop() is None


def test_queue_delays_and_backs_off() -> None:
    """Delayed keys wait for their time; failures double the delay up to the cap."""
    clock = FakeClock()
    queue = WorkQueue(clock, base_backoff=1.0, max_backoff=4.0)

    delays = [queue.add_rate_limited(K) for _ in range(4)]
    assert [1.0, 2.0, 4.0, 4.0] == delays
    assert queue.pop() is None
    clock.advance(1.0)
    assert K == queue.pop()
    queue.forget(K)
    assert 1.0 == queue.add_rate_limited(K)


def test_queue_earlier_due_time_wins_and_resyncs_are_not_pending() -> None:
    """A second, later delay does not postpone a key; periodic resyncs do not count as pending work."""
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after(K, 10.0)
    queue.add_after(K, 50.0)
    resync = Key("c", "ns", "poll")
    queue.add_after(resync, 5.0, resync=True)

    assert clock.now() + 10.0 == queue.next_due(pending_only=True)
    assert clock.now() + 5.0 == queue.next_due()
    assert [K] == queue.pending_keys()


class _Counter(Controller):
    """Counts its reconciles of ConfigMaps; fails and waits as told."""

    name = "counter"
    watches = (WatchSpec("v1", "ConfigMap"),)

    def __init__(self, behaviour: Callable[[str], Result | None]) -> None:
        self.seen: list[str] = []
        self.behaviour = behaviour

    def reconcile(self, namespace: str, name: str) -> Result | None:
        self.seen.append(name)
        return self.behaviour(name)


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


def test_manager_runs_until_nothing_is_pending() -> None:
    """Store changes reach the controller through watches; waits on the fake clock take no real time."""
    store = MemoryStore()
    clock = FakeClock()
    waits = {"slow": 2}

    def behaviour(name: str) -> Result | None:
        if waits.get(name):
            waits[name] -= 1
            return Result(requeue_after=30.0, waiting="still slow")
        return None

    controller = _Counter(behaviour)
    manager = ControllerManager(store, [controller], clock=clock)
    store.create(_cm("fast"))
    store.create(_cm("slow"))
    start = clock.now()

    outcome = manager.run_until_stable(timeout=3600)

    assert outcome.stable
    assert ["fast", "slow", "slow", "slow"] == controller.seen
    assert 60.0 == clock.now() - start


class _Recorder(Controller):
    """Records every event dispatched to it: (route's apiVersion as seen, type, kind, name)."""

    def __init__(self, name: str, specs: list[tuple[str, str]], seen: list[tuple[str, str, str, str, str]]) -> None:
        self.name = name

        def mapper(event: WatchEvent) -> list[tuple[str, str]]:
            obj = event.object
            seen.append((self.name, obj["apiVersion"], event.type, obj["kind"], obj["metadata"]["name"]))
            obj["metadata"]["name"] += "-changed by a mapper"  # each route must get an object of its own
            return []

        self.watches = tuple(WatchSpec(api_version, kind, mapper) for api_version, kind in specs)

    def reconcile(self, namespace: str, name: str) -> Result | None:
        return None


class _PerKindMemoryStore(MemoryStore):
    """A memory store that cannot read changes across kinds: the manager watches each kind alone."""

    def changes_after(self, resource_version: int, kinds: Any) -> None:  # type: ignore[override]
        return None


class _CountingMemoryStore(MemoryStore):
    """A memory store that counts its reads across kinds."""

    across = 0

    def changes_after(self, resource_version: int, kinds: Any) -> Any:
        self.across += 1
        return super().changes_after(resource_version, kinds)


def _poll_record(store: MemoryStore) -> list[list[tuple[str, str, str, str, str]]]:
    """What two controllers (three routes, two of them one kind in two versions) are dispatched,
    poll by poll, over a sequence of interleaved writes across kinds."""
    seen: list[tuple[str, str, str, str, str]] = []
    deploys = _Recorder("deploys", [("apps/v1", "Deployment"), ("v1", "ConfigMap")], seen)
    secrets = _Recorder("secrets", [("v1", "Secret"), ("apps/v1beta1", "Deployment")], seen)
    manager = ControllerManager(store, [deploys, secrets], clock=FakeClock())

    def obj(api_version: str, kind: str, name: str) -> dict[str, Any]:
        return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "ns"}}

    polls = []
    store.create(obj("v1", "ConfigMap", "listed"))
    manager.poll()  # the first poll lists every kind
    polls.append(list(seen))
    for round_ in range(2):
        seen.clear()
        store.create(obj("v1", "Secret", f"s{round_}"))
        store.create(obj("apps/v1", "Deployment", f"d{round_}"))
        store.create(obj("v1", "ConfigMap", f"c{round_}"))
        store.update({**store.get("v1", "Secret", f"s{round_}", "ns"), "data": {"k": "dmFsdWU="}})
        store.delete("v1", "ConfigMap", "listed" if round_ == 0 else "c0", "ns")
        store.create(obj("v1", "ServiceAccount", f"unwatched{round_}"))
        manager.poll()
        polls.append(list(seen))
    seen.clear()
    manager.poll()  # nothing new
    polls.append(list(seen))
    return polls


def test_poll_reads_every_kind_at_once_and_dispatches_as_watches_of_each_kind_would() -> None:
    """A store that reads changes across kinds gets one read per poll, and the controllers see exactly
    what one watch per kind gives them: route by route, each route's events in order, each event with
    its route's apiVersion and an object of its own."""
    across = _CountingMemoryStore()
    read_across = _poll_record(across)
    read_each = _poll_record(_PerKindMemoryStore())

    assert read_each == read_across
    assert 3 == across.across  # one read per poll after the first (a listing), also to find nothing new
    second = read_across[1]
    assert [
        ("deploys", "apps/v1", "ADDED", "Deployment", "d0"),
        ("deploys", "v1", "ADDED", "ConfigMap", "c0"),
        ("deploys", "v1", "DELETED", "ConfigMap", "listed"),
        ("secrets", "v1", "ADDED", "Secret", "s0"),
        ("secrets", "v1", "MODIFIED", "Secret", "s0"),
        ("secrets", "apps/v1beta1", "ADDED", "Deployment", "d0"),
    ] == second
    assert [] == read_across[-1]


def test_poll_across_kinds_falls_back_to_each_kind_after_the_history_was_compacted() -> None:
    """A watched kind whose position the store's history no longer reaches is listed again."""
    store = MemoryStore(history=3)
    seen: list[tuple[str, str, str, str, str]] = []
    manager = ControllerManager(
        store, [_Recorder("r", [("v1", "ConfigMap"), ("v1", "Secret")], seen)], clock=FakeClock()
    )
    manager.poll()
    for i in range(6):
        store.create(_cm(f"c{i}"))
    manager.poll()

    assert [f"c{i}" for i in range(6)] == [name for *_, name in seen]  # relisted: every ConfigMap ADDED once
    seen.clear()
    store.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}})
    manager.poll()
    assert [("r", "v1", "ADDED", "Secret", "s")] == seen


def test_manager_retries_failures_and_reports_what_is_pending() -> None:
    """A reconcile that raises is retried with backoff; a run that times out says what still waits."""
    store = MemoryStore()
    clock = FakeClock()

    def behaviour(name: str) -> Result | None:
        if name == "conflicted" and controller.seen.count("conflicted") < 3:
            raise Conflict("someone else wrote")
        if name == "broken":
            raise OlmkitError("cannot do it")
        return None

    controller = _Counter(behaviour)
    manager = ControllerManager(store, [controller], clock=clock)
    store.create(_cm("conflicted"))
    store.create(_cm("broken"))

    outcome = manager.run_until_stable(timeout=10)

    assert not outcome.stable
    assert ["counter:ns/broken: retrying after error: cannot do it"] == list(outcome.pending)
    assert 3 == controller.seen.count("conflicted")  # two conflicts, then success


def test_an_idle_manager_on_the_wall_clock_wakes_on_a_store_change() -> None:
    """Idle on the wall clock, the manager waits on the store's change signal: a write is reconciled at once.

    (Sleeping in growing steps instead, a write after a long idle waited up to half a second:
    the lag ``olmkit serve``'s simulated kubelet added to every install through its API.)
    """

    class Recording(MemoryStore):
        waits = 0

        def wait_for_change(self, resource_version: str | None, timeout: float) -> None:
            Recording.waits += 1
            super().wait_for_change(resource_version, timeout)

    store = Recording()
    reconciled = threading.Event()
    controller = _Counter(lambda name: reconciled.set())
    manager = ControllerManager(store, [controller])
    stop = threading.Event()
    runner = threading.Thread(target=manager.run_forever, args=(stop.is_set,), daemon=True)
    runner.start()
    lags = []
    try:
        for i in range(2):
            time.sleep(0.8)  # long enough for the old sleep steps to reach their 0.5 s cap
            reconciled.clear()
            start = time.monotonic()
            store.create(_cm(f"cm-{i}"))
            assert reconciled.wait(5)
            lags.append(time.monotonic() - start)
    finally:
        stop.set()
        runner.join(5)

    assert ["cm-0", "cm-1"] == controller.seen
    assert Recording.waits > 0
    assert max(lags) < 0.3, lags  # the sleeping loop lagged up to 0.5 s


class _Served(MemoryStore):
    """A memory store that says an API server is behind it (whose reactions arrive in real time)."""

    embedded = False


def test_settle_hook_is_asked_before_each_fake_jump_and_before_the_end() -> None:
    """On a fake clock over a store with an API server, ``settle`` is asked before every jump of the clock
    and before the run calls itself stable; what it lets in (here: a server's write) is reconciled first."""
    store = _Served()
    clock = FakeClock()
    start = clock.now()
    counter = _Counter(lambda name: Result(requeue_after=5.0) if name == "waits" and clock.now() < start + 12 else None)
    manager = ControllerManager(store, [counter], clock=clock)
    store.create(_cm("waits"))
    asked: list[tuple[float, list[str]]] = []

    def settle() -> bool:
        asked.append((clock.now(), list(counter.seen)))
        if len(asked) == 1:
            store.create(_cm("from-the-server"))  # the server reacted meanwhile
            return not manager.poll()
        return True

    outcome = manager.run_until_stable(timeout=60, settle=settle)

    assert outcome.stable
    assert ["waits", "from-the-server", "waits", "waits", "waits"] == counter.seen
    assert [start, start, start + 5, start + 10, start + 15] == [when for when, _ in asked]
    assert ["waits"] == asked[0][1]  # asked before the first jump, after the first reconcile


def test_settled_waits_until_the_servers_resource_version_holds_through_a_pause() -> None:
    """On a store with an API server, a run is settled once a quiet pause leaves the server's resourceVersion
    where it was; a server still where it was last seen settled needs no pause; an event ends the wait."""

    class Versioned(_Served):
        def __init__(self, versions: list[str]) -> None:
            super().__init__()
            self.versions = versions
            self.asked = 0

        def server_resource_version(self) -> str | None:
            self.asked += 1
            return self.versions.pop(0) if len(self.versions) > 1 else self.versions[0]

    store = Versioned(["5", "6", "6"])
    manager = ControllerManager(store, [_Counter(lambda name: None)], clock=FakeClock())
    manager.poll()

    started = time.monotonic()
    assert manager.settled(0.05)
    assert 3 == store.asked  # 5, a pause, 6 (it moved), a pause, 6 (it held)
    assert time.monotonic() - started >= 0.1

    started = time.monotonic()
    assert manager.settled(5.0)
    assert time.monotonic() - started < 1.0  # still at 6: no pause
    assert 4 == store.asked

    store.versions = ["7"]
    store.create(_cm("late"))
    assert not manager.settled(5.0)  # the event is queued for the run
    assert manager.queue.has_ready()

    def unreachable() -> str | None:
        raise StoreError("cannot reach the API server")

    assert manager.settled(0.05, version=unreachable)  # on the quiet alone


def test_settle_hook_decides_when_a_run_is_stable() -> None:
    """A run over an embedded store asks ``settle`` before it calls itself stable: ``False`` (new events
    queued) keeps it going."""
    store = MemoryStore()
    counter = _Counter(lambda name: None)
    manager = ControllerManager(store, [counter], clock=FakeClock())
    answers = [False, True]

    def settle() -> bool:
        if not answers[0]:
            store.create(_cm("late"))
            manager.poll()
        return answers.pop(0)

    assert manager.run_until_stable(settle=settle).stable
    assert ["late"] == counter.seen
    assert [] == answers


def test_manager_rejects_two_controllers_with_one_name() -> None:
    """Controller names are keys: a duplicate is an error."""
    with pytest.raises(OlmkitError):
        ControllerManager(MemoryStore(), [_Counter(lambda n: None), _Counter(lambda n: None)])


def test_lease_has_one_holder_until_it_expires() -> None:
    """A second holder cannot take a live lease, can take an expired one, and a released one at once."""
    store = MemoryStore()
    clock = FakeClock()
    first = Lease(store, "ns", "l", clock, duration=15, holder="one")
    second = Lease(store, "ns", "l", clock, duration=15, holder="two")

    assert first.acquire()
    assert not second.acquire()
    clock.advance(16)
    assert second.acquire()
    assert not first.acquire()
    second.release()
    assert first.acquire()


def test_a_held_lease_is_renewed_only_half_way_to_expiry() -> None:
    """With ``hold``, the holder's acquire sends nothing while its last renewal is recent, and renews (and
    releases) the Lease as it last wrote it, without reading it; another holder still cannot take the lease
    until it expires or is released, and a write by another holder in between makes the holder read it."""

    class Reads(MemoryStore):
        reads = 0

        def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
            Reads.reads += 1
            return super().get(api_version, kind, name, namespace)

    store = Reads()
    clock = FakeClock()
    first = Lease(store, "ns", "l", clock, duration=15, holder="one", hold=7.5)
    second = Lease(store, "ns", "l", clock, duration=15, holder="two", hold=7.5)

    def version() -> str:
        return str(MemoryStore.get(store, "coordination.k8s.io/v1", "Lease", "l", "ns")["metadata"]["resourceVersion"])

    assert first.acquire()
    created, reads = version(), Reads.reads
    clock.advance(7)
    assert first.acquire()
    assert (created, reads) == (version(), Reads.reads)  # nothing sent
    assert not second.acquire()
    clock.advance(1)
    reads = Reads.reads
    assert first.acquire()
    renewed = version()
    assert created != renewed
    assert reads == Reads.reads  # renewed without a read
    clock.advance(14)
    assert not second.acquire()  # 14 s after the renewal: still live
    first.release()
    assert second.acquire()
    assert not first.acquire()

    clock.advance(16)  # the second holder's lease expired: the first takes it
    assert first.acquire()
    clock.advance(16)
    assert second.acquire()  # and expired again: the second takes it back
    clock.advance(8)
    assert not first.acquire()  # its renewal as it last wrote the Lease conflicts; read: the second holds it
    assert "two" == first.current_holder


def test_set_condition_keeps_the_transition_time_while_the_status_holds() -> None:
    """lastTransitionTime moves only when the status changes; an identical condition changes nothing."""
    first = set_condition([], "Ready", "False", reason="Waiting", now="t1")
    same = set_condition(first, "Ready", "False", reason="Waiting", now="t2")
    reworded = set_condition(first, "Ready", "False", reason="StillWaiting", now="t3")
    flipped = set_condition(reworded, "Ready", "True", now="t4")

    assert first == same
    assert ("t1", "t3") == (reworded[0]["lastTransitionTime"], reworded[0]["lastUpdateTime"])
    assert "t4" == flipped[0]["lastTransitionTime"]


@pytest.mark.parametrize(("text", "seconds"), [("30m0s", 1800.0), ("10s", 10.0), ("1h", 3600.0), ("1.5s", 1.5)])
def test_parse_duration(text: str, seconds: float) -> None:
    """Go durations, as registryPoll intervals are written."""
    assert seconds == parse_duration(text)


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "5d"])
def test_parse_duration_rejects_non_durations(text: str) -> None:
    """Anything else is an input error naming the value."""
    with pytest.raises(OlmkitError, match="not a duration"):
        parse_duration(text)


# --------------------------------------------------------------------------- hooks


def test_hook_olmkit_controllers(olmkit_pm: Any, olmkit_register: Any) -> None:
    """A plugin's controllers run beside the built-in ones."""
    controller = _Counter(lambda n: None)

    class Plugin:
        @hookimpl
        def olmkit_controllers(self, context: Any) -> list[Controller]:
            assert context.store is store
            return [controller]

    olmkit_register(Plugin())
    store = MemoryStore()
    manager = build_manager(store, olmkit_pm, clock=FakeClock())
    store.create(_cm("x"))
    manager.run_until_stable(timeout=60)

    assert {"catalogsource", "subscription", "installplan", "clusterserviceversion", "counter"} <= set(
        manager.controllers
    )
    assert ["x"] == controller.seen


def test_hook_olmkit_bundle_content(olmkit_pm: Any, olmkit_register: Any) -> None:
    """A plugin can supply the content of bundles no built-in way can read; the first answer wins."""
    csv = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "metadata": {"name": "a.v1"}}
    bundle = Bundle(name="a.v1", package="a", version="1.0.0", image="oci-archive:/tmp/a.tar")

    with pytest.raises(BundleUnpackError, match=re.escape("bundle a.v1 (image oci-archive:/tmp/a.tar): no content")):
        bundle_content(olmkit_pm, bundle)

    class Unpacker:
        @hookimpl
        def olmkit_bundle_content(self, bundle: Bundle, registry: Any) -> list[dict[str, Any]] | None:
            return [csv] if bundle.image and bundle.image.startswith("oci-archive:") else None

    olmkit_register(Unpacker())
    content = bundle_content(olmkit_pm, bundle)

    assert csv == content.csv
    assert () == content.crds


def test_built_in_bundle_content_rejects_broken_inline_manifests(olmkit_pm: Any) -> None:
    """An olm.bundle.object that is not base64 of an object is an unpack error naming the bundle."""
    bundle = Bundle(name="a.v1", package="a", properties=(Property("olm.bundle.object", {"data": "!!not base64"}),))

    expected = "bundle a.v1: olm.bundle.object property #1 is not a base64 manifest"
    with pytest.raises(BundleUnpackError, match=re.escape(expected)):
        bundle_content(olmkit_pm, bundle)


def _install_and_watch(make_cluster: Any, olmkit_register: Any, tmp_path: Any) -> tuple[list[Any], list[Any]]:
    """Install one operator with a plugin watching CSV phases and InstallPlan steps."""
    phases: list[tuple[str, str | None, str]] = []
    steps: list[tuple[str, str]] = []

    class Watcher:
        @hookimpl
        def olmkit_csv_phase_changed(self, csv: Any, old_phase: str | None, new_phase: str, reason: str) -> None:
            phases.append((csv["metadata"]["name"], old_phase, new_phase))

        @hookimpl
        def olmkit_install_plan_step(self, plan: Any, step: Any, status: str) -> None:
            steps.append((step["resource"]["kind"], status))

    olmkit_register(Watcher())
    cluster: Cluster = make_cluster()
    catalog = write_catalog(tmp_path / "c", [B("widget", "1.0.0", owns=(("example.io", "v1", "W"),))])
    cluster.catalog_source("test", catalog)
    cluster.operator_group()
    cluster.subscribe("widget", source="test")
    cluster.reconcile()
    return phases, steps


def test_hook_olmkit_csv_phase_changed(tmp_path: Any, make_cluster: Any, olmkit_register: Any) -> None:
    """Plugins are told of every CSV phase change, in order, with the phase before."""
    phases, _ = _install_and_watch(make_cluster, olmkit_register, tmp_path)

    assert [
        ("widget.v1.0.0", None, "Pending"),
        ("widget.v1.0.0", "Pending", "InstallReady"),
        ("widget.v1.0.0", "InstallReady", "Installing"),
        ("widget.v1.0.0", "Installing", "Succeeded"),
    ] == phases


def test_hook_olmkit_install_plan_step(tmp_path: Any, make_cluster: Any, olmkit_register: Any) -> None:
    """Plugins are told of every InstallPlan step as it is done (CRDs first)."""
    _, steps = _install_and_watch(make_cluster, olmkit_register, tmp_path)

    assert [
        ("CustomResourceDefinition", "Created"),
        ("ClusterServiceVersion", "Created"),
        ("ServiceAccount", "Created"),
        ("Role", "Created"),
        ("RoleBinding", "Created"),
    ] == steps
