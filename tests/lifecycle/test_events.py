"""Kubernetes Events: what the controllers record, aggregation of repeats, pruning, `get events` and `describe`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from olmkit.cli import main
from olmkit.lifecycle.events import EVENT_TTL, MAX_EVENTS_PER_OBJECT, EventRecorder, events_of
from olmkit.lifecycle.runtime import FakeClock, rfc3339
from olmkit.lifecycle.subscriptions import ERROR_RETRY
from olmkit.store import MemoryStore, SqliteStore
from tests.lifecycle.harness import EXAMPLES, V1A1, Cluster, store_args


def _events(store: Any, namespace: str) -> list[tuple[str, str, str, str, int]]:
    """``(kind, name, type, reason, count)`` of every Event in a namespace, sorted."""
    return sorted(
        (
            e["involvedObject"]["kind"],
            e["involvedObject"]["name"],
            e["type"],
            e["reason"],
            e["count"],
        )
        for e in store.list("v1", "Event", namespace)
    )


def _recorder(store: Any, clock: FakeClock, **kwargs: Any) -> EventRecorder:
    return EventRecorder(store, lambda: rfc3339(clock.now()), clock=clock.now, **kwargs)


def _csv(name: str = "op.v1.0.0", uid: str = "u-1") -> dict[str, Any]:
    return {
        "apiVersion": V1A1,
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "namespace": "ns", "uid": uid},
    }


# --------------------------------------------------------------------------- the recorder


def test_repeated_event_is_counted_on_one_object() -> None:
    """The same reason and message for the same object raise ``count`` and move ``lastTimestamp``."""
    store, clock = MemoryStore(), FakeClock()
    recorder = _recorder(store, clock)
    first = recorder.record(_csv(), "Warning", "InstallCheckFailed", "deployment not ready")
    clock.advance(30)
    recorder.record(_csv(), "Warning", "InstallCheckFailed", "deployment not ready")
    clock.advance(30)
    last = recorder.record(_csv(), "Warning", "InstallCheckFailed", "deployment not ready")

    assert first is not None
    assert last is not None
    (event,) = store.list("v1", "Event", "ns")
    assert 3 == event["count"]
    assert first["firstTimestamp"] == event["firstTimestamp"]
    assert rfc3339(clock.now()) == event["lastTimestamp"]
    assert {"kind": "ClusterServiceVersion", "name": "op.v1.0.0", "namespace": "ns", "uid": "u-1"}.items() <= event[
        "involvedObject"
    ].items()
    assert ("Warning", "operator-lifecycle-manager") == (event["type"], event["source"]["component"])


def test_a_different_message_is_a_new_event() -> None:
    """Events aggregate only when type, reason and message all match."""
    store, clock = MemoryStore(), FakeClock()
    recorder = _recorder(store, clock)
    recorder.record(_csv(), "Normal", "InstallWaiting", "waiting for deployment a")
    recorder.record(_csv(), "Normal", "InstallWaiting", "waiting for deployment b")
    recorder.record(_csv(), "Warning", "InstallWaiting", "waiting for deployment b")

    assert [1, 1, 1] == [e["count"] for e in store.list("v1", "Event", "ns")]


def test_two_processes_aggregate_onto_the_same_event(tmp_path: Path) -> None:
    """Two recorders on one SQLite store (two `olmkit run` processes) count on one Event."""
    path = str(tmp_path / "c.db")
    clock = FakeClock()
    with SqliteStore(path) as one, SqliteStore(path) as two:
        _recorder(one, clock).record(_csv(), "Normal", "BeingReplaced", "being replaced by csv: op.v2.0.0")
        _recorder(two, clock).record(_csv(), "Normal", "BeingReplaced", "being replaced by csv: op.v2.0.0")

        assert [2] == [e["count"] for e in one.list("v1", "Event", "ns")]


def test_events_are_pruned_per_object() -> None:
    """An object keeps its newest ``limit`` events; other objects' events are untouched."""
    store, clock = MemoryStore(), FakeClock()
    recorder = _recorder(store, clock, limit=4)
    recorder.record(_csv("other.v1", uid="u-2"), "Normal", "RequirementsUnknown", "kept")
    for i in range(10):
        clock.advance(1)
        recorder.record(_csv(), "Normal", "InstallWaiting", f"step {i}")

    mine = [e["message"] for e in events_of(store, _csv())]
    assert ["step 6", "step 7", "step 8", "step 9"] == mine
    assert ["kept"] == [e["message"] for e in events_of(store, _csv("other.v1", uid="u-2"))]
    assert 16 == MAX_EVENTS_PER_OBJECT


class _Listing(MemoryStore):
    """A memory store that counts the lists of Events it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.event_lists = 0

    def list(self, api_version: str, kind: str, *args: Any, **kwargs: Any) -> Any:
        self.event_lists += kind == "Event"
        return super().list(api_version, kind, *args, **kwargs)


def test_recording_lists_no_events() -> None:
    """New events are one create each and a repeat is counted on its Event, with no list of the namespace's
    Events (client-go's recorder never lists); the object's events are listed once it reaches the limit."""
    store, clock = _Listing(), FakeClock()
    recorder = _recorder(store, clock, limit=3)
    for csv in (_csv(), _csv("other.v1", uid="u-2")):
        recorder.record(csv, "Normal", "RequirementsUnknown", "requirements not yet checked")
        recorder.record(csv, "Normal", "InstallWaiting", "waiting for deployment")
    clock.advance(EVENT_TTL / 12)
    recorder.record(_csv(), "Normal", "InstallWaiting", "waiting for deployment")

    listed = store.event_lists
    assert 0 == listed
    assert [
        ("ClusterServiceVersion", "op.v1.0.0", "Normal", "InstallWaiting", 2),
        ("ClusterServiceVersion", "op.v1.0.0", "Normal", "RequirementsUnknown", 1),
        ("ClusterServiceVersion", "other.v1", "Normal", "InstallWaiting", 1),
        ("ClusterServiceVersion", "other.v1", "Normal", "RequirementsUnknown", 1),
    ] == _events(store, "ns")

    before = store.event_lists  # the test's own list above
    recorder.record(_csv(), "Normal", "InstallSucceeded", "install strategy completed")
    recorder.record(_csv(), "Normal", "NeedsReinstall", "installing again")

    assert 1 == store.event_lists - before  # the fourth event of op.v1.0.0: over the limit of 3
    assert ["InstallSucceeded", "InstallWaiting", "NeedsReinstall"] == sorted(
        e["reason"] for e in events_of(store, _csv())
    )


def test_events_expire_an_hour_after_they_last_happened() -> None:
    """Writing a new Event sweeps its namespace (at most every ttl/6) for Events older than the ttl."""
    store, clock = MemoryStore(), FakeClock()
    recorder = _recorder(store, clock)
    recorder.record(_csv("old.v1", uid="u-old"), "Normal", "InstallSucceeded", "long ago")
    recorder.record(_csv("busy.v1", uid="u-busy"), "Warning", "InstallCheckFailed", "again and again")
    for _ in range(4):
        clock.advance(EVENT_TTL / 3)
        recorder.record(_csv("busy.v1", uid="u-busy"), "Warning", "InstallCheckFailed", "again and again")
    recorder.record(_csv("new.v1", uid="u-new"), "Normal", "RequirementsUnknown", "just now")

    kept = {e["involvedObject"]["name"]: e["count"] for e in store.list("v1", "Event", "ns")}
    assert {"busy.v1": 5, "new.v1": 1} == kept  # the repeated one stays; the one from over an hour ago went


def test_events_of_cluster_scoped_objects_go_to_default() -> None:
    """A Namespace's events live in ``default``, as in Kubernetes."""
    store, clock = MemoryStore(), FakeClock()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    _recorder(store, clock).record(namespace, "Warning", "ResolutionFailed", "no operators found")

    assert [("Namespace", "team-a", "Warning", "ResolutionFailed", 1)] == _events(store, "default")


# --------------------------------------------------------------------------- the controllers


@pytest.mark.kube
def test_install_and_upgrade_record_upstream_events(make_cluster: Callable[..., Cluster]) -> None:
    """CSV phase changes (reason = the CSV's reason), InstallPlan completion and Subscription upgrades."""
    cluster = make_cluster()
    cluster.catalog_source("examples", EXAMPLES / "catalog-v1")
    cluster.operator_group()
    cluster.subscribe("postgres-operator", channel="stable")
    assert cluster.reconcile().stable

    events = _events(cluster.store, "operators")
    csv_reasons = [(n, r) for k, n, _, r, _ in events if k == "ClusterServiceVersion"]
    for csv in ("postgres-operator.v2.1.0", "cert-manager-lite.v1.0.0"):
        for reason in ("RequirementsUnknown", "AllRequirementsMet", "InstallSucceeded"):
            assert (csv, reason) in csv_reasons
    plan = cluster.plans()[0]["metadata"]["name"]
    assert ("InstallPlan", plan, "Normal", "InstallSucceeded", 1) in events
    assert all(t == "Normal" for _, _, t, _, _ in events)

    cluster.catalog_source("examples", EXAMPLES / "catalog")
    assert cluster.reconcile().stable

    events = _events(cluster.store, "operators")
    replaced = {n for k, n, _, r, _ in events if k == "ClusterServiceVersion" and r == "BeingReplaced"}
    assert {"postgres-operator.v2.1.0", "cert-manager-lite.v1.0.0", "cert-manager-lite.v1.1.0"} == replaced
    upgrades = sorted(n for k, n, _, r, c in events if k == "Subscription" and r == "UpgradePending" and c == 1)
    # one per hop: cert-manager-lite 1.0.0 → 1.1.0 → 1.2.0, postgres-operator 2.1.0 → 2.3.0
    assert ["cert-manager-lite-stable-examples-olm"] * 2 + ["postgres-operator"] == upgrades


def test_resolution_failure_is_recorded_on_the_namespace_and_counted(make_cluster: Callable[..., Cluster]) -> None:
    """A failing resolution records ``ResolutionFailed`` (Warning) on the Namespace and Subscription; retries count."""
    cluster = make_cluster()
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.operator_group()
    cluster.operator_group(name="second")  # two OperatorGroups: resolution is refused, and retried
    cluster.subscribe("postgres-operator", channel="stable")
    counts = []
    for _ in range(3):
        cluster.reconcile()
        (event,) = _events(cluster.store, "default")
        counts.append(event[-1])
        cluster.clock.advance(ERROR_RETRY + 1)  # the retry of the failed resolution is due

    assert ("Namespace", "operators", "Warning", "ResolutionFailed") == event[:4]
    assert [counts[0], counts[0] + 1, counts[0] + 2] == counts  # one Event, counted once per failed attempt
    sub_events = [e for e in _events(cluster.store, "operators") if e[0] == "Subscription"]
    assert [("Subscription", "postgres-operator", "Warning", "ResolutionFailed", counts[-1])] == sub_events


@pytest.mark.kube
def test_manual_approval_is_recorded_on_the_install_plan(cluster: Cluster) -> None:
    """A Manual plan records RequiresApproval (saying how to approve), then Approved and InstallSucceeded."""
    cluster.subscribe("postgres-operator", channel="stable", approval="Manual")
    cluster.reconcile()
    plan = cluster.plans()[0]["metadata"]["name"]

    (waiting,) = [e for e in cluster.store.list("v1", "Event", "operators") if e["involvedObject"]["name"] == plan]
    assert ("Normal", "RequiresApproval") == (waiting["type"], waiting["reason"])
    assert f"olmkit approve {plan} -n operators" in waiting["message"]

    cluster.approve(plan)
    cluster.reconcile()

    reasons = [e.get("reason") for e in events_of(cluster.store, cluster.get("ip", plan))]
    assert ["RequiresApproval", "Approved", "InstallSucceeded"] == reasons


def test_hand_written_plan_planned_from_a_catalog_waits_with_an_event(cluster: Cluster) -> None:
    """A hand-written Manual InstallPlan is planned from its catalog, then records RequiresApproval."""
    cluster.apply(
        {
            "apiVersion": V1A1,
            "kind": "InstallPlan",
            "metadata": {"name": "by-hand", "namespace": "operators"},
            "spec": {
                "clusterServiceVersionNames": ["cert-manager-lite.v1.2.0"],
                "source": "examples",
                "sourceNamespace": "olm",
                "approval": "Manual",
                "approved": False,
            },
        }
    )
    cluster.reconcile()

    plan = cluster.get("ip", "by-hand")
    assert "RequiresApproval" == plan["status"]["phase"]
    assert [("InstallPlan", "by-hand", "Normal", "RequiresApproval", 1)] == _events(cluster.store, "operators")


def test_failed_install_plan_records_a_warning(make_cluster: Callable[..., Cluster], tmp_path: Path) -> None:
    """An InstallPlan that cannot be planned fails with a Warning Event carrying its condition's reason."""
    cluster = make_cluster()
    cluster.apply(
        {
            "apiVersion": V1A1,
            "kind": "InstallPlan",
            "metadata": {"name": "by-hand", "namespace": "operators"},
            "spec": {"clusterServiceVersionNames": ["nope.v1.0.0"], "approval": "Automatic", "approved": True},
        }
    )
    cluster.reconcile()

    assert "Failed" == cluster.get("ip", "by-hand")["status"]["phase"]
    assert [("InstallPlan", "by-hand", "Warning", "InstallCheckFailed", 1)] == _events(cluster.store, "operators")


# --------------------------------------------------------------------------- the command line


@pytest.mark.backends("sqlite", "kube")  # the command line reaches a store by path or kubeconfig, not in-process
@pytest.mark.kube
def test_get_events_for_an_object_sorted_by_time(
    make_cluster: Callable[..., Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    """`get events --for csv/NAME` lists that CSV's events oldest first; describe ends with them."""
    cluster = make_cluster()
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.operator_group()
    cluster.subscribe("postgres-operator", channel="stable")
    assert cluster.reconcile().stable
    store = store_args(cluster)

    code = main(["get", "events", "-n", "operators", "--for", "csv/postgres-operator.v2.3.0", "-o", "json", *store])
    listed = orjson.loads(capsys.readouterr().out)["items"]
    assert 0 == code
    assert {"postgres-operator.v2.3.0"} == {e["involvedObject"]["name"] for e in listed}
    stamps = [(e["lastTimestamp"], int(e["metadata"]["resourceVersion"])) for e in listed]
    assert sorted(stamps) == stamps
    assert "RequirementsUnknown" == listed[0]["reason"]
    assert ("InstallSucceeded", "install strategy completed with no errors") == (
        listed[-1]["reason"],
        listed[-1]["message"],
    )

    assert 0 == main(["describe", "csv", "postgres-operator.v2.3.0", "-n", "operators", *store])
    text = capsys.readouterr().out
    events = text[text.index("Events:") :]
    assert "RequirementsUnknown" in events
    assert "install strategy completed with no errors" in events

    assert 2 == main(["get", "csv", "-n", "operators", "--for", "csv/x", *store])
    assert "--for KIND/NAME selects events" in capsys.readouterr().err
    assert 2 == main(["get", "events", "-n", "operators", "--for", "postgres", *store])
    assert "expected KIND/NAME" in capsys.readouterr().err


def test_describe_shows_repeats_as_kubectl_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An event seen 3 times over a minute shows ``(x3 over 1m)`` in describe's Events table."""
    path = str(tmp_path / "c.db")
    with SqliteStore(path) as store:
        csv = store.create({**_csv(), "metadata": {"name": "op.v1.0.0", "namespace": "ns"}})
        clock = FakeClock(start=FakeClock().now())
        recorder = _recorder(store, clock)
        for _ in range(3):
            recorder.record(csv, "Warning", "InstallCheckFailed", "deployment not ready")
            clock.advance(30)

    assert 0 == main(["describe", "csv", "op.v1.0.0", "-n", "ns", "--store", path])
    assert "(x3 over " in capsys.readouterr().out
