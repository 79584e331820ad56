"""One InstallPlan per resolution, whatever happens to the Subscription write that records it.

The subscription controller creates an InstallPlan and then points each Subscription at it.
When that status write fails (another client wrote the Subscription in between: a conflict;
or the process dies), the next pass must find the plan it made and adopt it, not resolve
again and make a second plan for the same step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from olmkit.store import SqliteStore, Store
from tests.lifecycle.harness import V1A1, Cluster, ServedCluster, kube_store


class RacingWriter:
    """A second client that writes a Subscription just before the controllers' write that points it at
    its InstallPlan, ``times`` times: each of those writes then conflicts (the backend's own 409 or
    ``Conflict``, nothing faked)."""

    def __init__(self, cluster: Cluster, times: int, before: Callable[[Store], None] | None = None) -> None:
        self.times = times
        self.before = before
        self.raced: list[str] = []
        if isinstance(cluster, ServedCluster):
            self.other: Store = kube_store(cluster.served.kubeconfig)
        elif getattr(cluster.store, "path", None):
            self.other = SqliteStore(str(cluster.store.path))  # type: ignore[attr-defined]
        else:
            self.other = cluster.store  # an in-process memory store: the same store, another writer
        self._owned = self.other is not cluster.store
        self._update_status = cluster.store.update_status

    def update_status(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        status = obj.get("status") or {}
        if obj.get("kind") == "Subscription" and status.get("installPlanRef") and len(self.raced) < self.times:
            meta = obj["metadata"]
            label = {"metadata": {"labels": {"raced": str(len(self.raced))}}}
            self.other.patch(V1A1, "Subscription", meta["name"], label, meta["namespace"])
            self.raced.append(meta["name"])
            if self.before is not None:
                self.before(self.other)
        return self._update_status(obj)

    def close(self) -> None:
        if self._owned:
            self.other.close()


@pytest.fixture
def racing(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., RacingWriter]]:
    made: list[RacingWriter] = []

    def start(cluster: Cluster, times: int, before: Callable[[Store], None] | None = None) -> RacingWriter:
        writer = RacingWriter(cluster, times, before)
        monkeypatch.setattr(cluster.store, "update_status", writer.update_status)
        made.append(writer)
        return writer

    yield start
    for writer in made:
        writer.close()


def _assert_one_plan_referenced(cluster: Cluster, package: str, csv: str) -> None:
    (plan,) = cluster.plans()
    sub = cluster.get("sub", package)["status"]
    assert plan["metadata"]["name"] == sub["installPlanRef"]["name"]
    assert plan["metadata"]["uid"] == sub["installPlanRef"]["uid"]
    assert plan["spec"]["generation"] == sub["installPlanGeneration"]
    assert ("AtLatestKnown", csv, csv) == (sub["state"], sub["currentCSV"], sub["installedCSV"])
    assert "Complete" == plan["status"]["phase"]
    assert "Succeeded" == cluster.phase(csv)


@pytest.mark.kube
def test_a_conflict_on_the_subscription_write_after_the_plan_adopts_the_plan(
    cluster: Cluster, racing: Callable[..., RacingWriter]
) -> None:
    """Another client writes the Subscription between the InstallPlan's creation and the write that points
    the Subscription at it: that write conflicts, and the retry adopts the plan it made (exactly one
    InstallPlan, referenced by the Subscription, which ends AtLatestKnown)."""
    writer = racing(cluster, 1)
    cluster.subscribe("storage-operator", channel="stable")

    assert cluster.reconcile().stable

    assert ["storage-operator"] == writer.raced
    assert [e for e in cluster.reporter.errors if e.startswith("subscription:operators: ")], "no conflict was retried"
    assert any("storage-operator: adopted installplan install-" in e for e in cluster.reporter.events)
    _assert_one_plan_referenced(cluster, "storage-operator", "storage-operator.v0.5.0")


def test_repeated_conflicts_still_make_one_plan_for_every_subscription(
    cluster: Cluster, racing: Callable[..., RacingWriter]
) -> None:
    """Two Subscriptions resolved together (one plan for both) and three conflicting writes in a row: still
    one InstallPlan, and each Subscription references it and ends with its own CSV installed."""
    writer = racing(cluster, 3)
    cluster.subscribe("storage-operator", channel="stable")
    cluster.subscribe("cert-manager-lite", channel="stable")

    assert cluster.reconcile().stable

    assert 3 == len(writer.raced)
    (plan,) = cluster.plans()
    assert ["cert-manager-lite.v1.2.0", "storage-operator.v0.5.0"] == sorted(plan["spec"]["clusterServiceVersionNames"])
    for package, csv in (
        ("storage-operator", "storage-operator.v0.5.0"),
        ("cert-manager-lite", "cert-manager-lite.v1.2.0"),
    ):
        sub = cluster.get("sub", package)["status"]
        assert plan["metadata"]["name"] == sub["installPlanRef"]["name"]
        assert ("AtLatestKnown", csv) == (sub["state"], sub["installedCSV"])


@pytest.mark.backends("memory")
def test_an_unfinished_plan_from_the_same_inputs_is_reused_when_it_does_not_say_whom_it_is_for(
    cluster: Cluster, racing: Callable[..., RacingWriter]
) -> None:
    """A plan that does not name its Subscriptions (made by an older olmkit) is not adopted, but the next
    resolution, from the same inputs, reuses it while it is unfinished instead of making another."""
    from olmkit.lifecycle.subscriptions import PLANNED_FOR_ANNOTATION

    def unnamed(store: Store) -> None:
        for plan in store.list(V1A1, "InstallPlan", "operators"):
            del plan["metadata"]["annotations"][PLANNED_FOR_ANNOTATION]
            store.update(plan)

    writer = racing(cluster, 1, unnamed)
    cluster.subscribe("storage-operator", channel="stable")

    assert cluster.reconcile().stable

    assert ["storage-operator"] == writer.raced
    assert not any("adopted installplan" in e for e in cluster.reporter.events)
    _assert_one_plan_referenced(cluster, "storage-operator", "storage-operator.v0.5.0")
    assert PLANNED_FOR_ANNOTATION not in cluster.plans()[0]["metadata"]["annotations"]


class Killed(BaseException):
    """The process dies (not an error any code handles)."""


@pytest.mark.backends("sqlite")
def test_a_process_killed_between_the_plan_and_the_subscription_write_leaves_a_plan_the_next_adopts(
    make_cluster: Callable[..., Cluster], olmkit_pm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies right after creating the InstallPlan, before any Subscription points at it; another
    process on the same store (another holder identity: it waits out the dead one's resolution Lease)
    adopts that plan and finishes the install: one InstallPlan."""
    from olmkit.lifecycle import lease
    from tests.lifecycle.harness import EXAMPLES

    first = make_cluster()
    first.catalog_source("examples", EXAMPLES / "catalog")
    first.operator_group()
    first.subscribe("storage-operator", channel="stable")
    write = first.store.update_status

    def dies(obj: Mapping[str, Any]) -> dict[str, Any]:
        if obj.get("kind") == "Subscription" and (obj.get("status") or {}).get("installPlanRef"):
            raise Killed
        return write(obj)

    monkeypatch.setattr(first.store, "update_status", dies)
    with pytest.raises(Killed):
        first.reconcile()
    left = [(p["metadata"]["name"], p["status"]["phase"]) for p in first.plans()]
    unreferenced = "installPlanRef" not in (first.get("sub", "storage-operator").get("status") or {})
    monkeypatch.setattr(lease, "_IDENTITY", "another-host/2/restarted")
    second = Cluster(first.store.path, olmkit_pm)  # type: ignore[attr-defined]
    try:
        assert second.reconcile().stable
        assert [name for name, _ in left] == [p["metadata"]["name"] for p in second.plans()]
        assert "Installing" == left[0][1]
        assert unreferenced
        _assert_one_plan_referenced(second, "storage-operator", "storage-operator.v0.5.0")
    finally:
        second.close()
