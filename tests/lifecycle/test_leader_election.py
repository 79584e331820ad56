"""Leader election of `olmkit run`: the Lease's client-go semantics, the elector, and real processes
(two `olmkit run --leader-elect` on one store: one leads; kill -9 it and the other takes over and
finishes the job)."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from olmkit.errors import UsageError
from olmkit.lifecycle.leader import LeaderElection, LeaderElector
from olmkit.lifecycle.lease import Lease, parse_micro_time
from olmkit.lifecycle.runtime import FakeClock, RealClock
from olmkit.store import MemoryStore, Object, SqliteStore, StoreError
from tests.lifecycle import test_run_service
from tests.lifecycle.harness import EXAMPLES
from tests.lifecycle.test_observe import _get, scrape, value
from tests.lifecycle.test_run_service import Service, olmkit, wait_for_succeeded

env = test_run_service.env  # fixtures shared with the `olmkit run` service tests
services = test_run_service.services

MICRO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def _lease(store: MemoryStore, name: str = "l") -> Mapping[str, Any]:
    return store.get("coordination.k8s.io/v1", "Lease", name, "ns")["spec"]


def test_lease_fields_follow_client_go() -> None:
    """acquireTime stays while the holder renews; a new holder bumps leaseTransitions; times are MicroTime."""
    store, clock = MemoryStore(), FakeClock()
    one = Lease(store, "ns", "l", clock, duration=2, holder="one")
    two = Lease(store, "ns", "l", clock, duration=2, holder="two")

    assert one.acquire()
    created = dict(_lease(store))
    clock.advance(1.5)
    assert one.acquire()
    renewed = dict(_lease(store))
    clock.advance(1.0)
    assert not two.acquire()  # renewed 1 s ago: live
    clock.advance(1.5)
    assert two.acquire()
    taken = dict(_lease(store))

    assert ("one", 2, 0) == (created["holderIdentity"], created["leaseDurationSeconds"], created["leaseTransitions"])
    assert created["acquireTime"] == created["renewTime"]
    assert all(MICRO_TIME.fullmatch(t) for t in (created["renewTime"], renewed["renewTime"], taken["acquireTime"]))
    assert created["acquireTime"] == renewed["acquireTime"]
    assert 1.5 == pytest.approx(parse_micro_time(renewed["renewTime"]) - parse_micro_time(created["renewTime"]))
    assert ("two", 1) == (taken["holderIdentity"], taken["leaseTransitions"])
    assert taken["acquireTime"] == taken["renewTime"]


def test_an_observing_candidate_measures_from_its_own_first_look() -> None:
    """A renewTime from a clock an hour behind: a plain lease takes it at once, an observing one waits a duration."""
    store = MemoryStore()
    behind = FakeClock(start=1_767_225_600.0 - 3600)
    Lease(store, "ns", "l", behind, duration=2, holder="leader").acquire()
    clock = FakeClock()
    observing = Lease(store, "ns", "l", clock, duration=2, holder="candidate", observe=True)

    assert not observing.acquire()
    clock.advance(1.9)
    assert not observing.acquire()
    clock.advance(0.2)
    assert observing.acquire()
    assert "candidate" == _lease(store)["holderIdentity"]
    # a plain (renewTime-measured) lease would have taken the leader's stale-looking lease at once
    other = MemoryStore()
    Lease(other, "ns", "l", behind, duration=2, holder="leader").acquire()
    assert Lease(other, "ns", "l", clock, duration=2, holder="plain").acquire()


def test_release_leaves_no_holder_and_the_next_candidate_takes_it_at_once() -> None:
    """A released lease (client-go: holder "", duration 1 s) is free for an observing candidate immediately."""
    store, clock = MemoryStore(), FakeClock()
    leader = Lease(store, "ns", "l", clock, duration=15, holder="leader")
    candidate = Lease(store, "ns", "l", clock, duration=15, holder="candidate", observe=True)
    leader.acquire()
    assert not candidate.acquire()

    leader.release()

    assert ("", 1) == (_lease(store)["holderIdentity"], _lease(store)["leaseDurationSeconds"])
    assert candidate.acquire()
    assert 1 == _lease(store)["leaseTransitions"]


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [(10, 10, 2), (10, 5, 5), (10, 2.3, 2), (10, 5, 0)],
)
def test_timings_must_let_a_leader_give_up_before_anyone_takes_over(lease: float, renew: float, retry: float) -> None:
    """lease duration > renew deadline > 1.2 x retry period > 0, as client-go checks."""
    with pytest.raises(UsageError):
        LeaderElection("olm", lease_duration=lease, renew_deadline=renew, retry_period=retry)


class Flaky(MemoryStore):
    """A store whose writes can be made to fail (an API server that went away)."""

    broken = False

    def update(self, obj: Mapping[str, Any]) -> Object:
        if self.broken and obj.get("kind") == "Lease":
            raise StoreError("connection refused")
        return super().update(obj)


def _elector(store: MemoryStore, identity: str, lines: list[str]) -> LeaderElector:
    config = LeaderElection("ns", "l", lease_duration=1.0, renew_deadline=0.5, retry_period=0.1)
    return LeaderElector(store, config, lambda message, **fields: lines.append(message), identity=identity)


def test_a_leader_that_cannot_renew_stops_leading_within_the_renew_deadline() -> None:
    """Renewals fail: after the renew deadline the elector reports the lease lost and is no longer leading."""
    store, lines = Flaky(), []
    elector = _elector(store, "one", lines)
    assert elector.wait_to_lead(lambda: False)
    assert elector.leading
    store.broken = True
    start = time.monotonic()

    while not elector.lost and time.monotonic() - start < 5:
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    elector.stop_leading()

    assert elector.lost
    assert 0.5 <= elapsed < 1.0  # the renew deadline, plus at most a retry period or two
    assert not elector.leading
    assert any("lost lease ns/l (not renewed for" in line for line in lines)
    assert "one" == _lease(store)["holderIdentity"]  # a lost lease is not released: it expires


def test_a_leader_that_sees_another_holder_stops_at_once_and_the_run_loop_stands_by() -> None:
    """Someone else holds the lease: the term ends at the next renewal, and run() goes back to standing by."""
    store, lines = MemoryStore(), []
    elector = _elector(store, "one", lines)
    terms: list[float] = []
    stop = threading.Event()

    def lead(stop_leading: Any) -> None:
        terms.append(time.monotonic())
        if len(terms) == 1:  # an intruder takes the lease over
            spec = store.get("coordination.k8s.io/v1", "Lease", "l", "ns")
            spec["spec"] = {**spec["spec"], "holderIdentity": "intruder"}
            store.update(spec)
        else:  # the second term: ask the process to stop
            stop.set()
        while not stop_leading():
            time.sleep(0.01)

    runner = threading.Thread(target=elector.run, args=(lead, stop.is_set), daemon=True)
    runner.start()
    runner.join(timeout=10)

    assert not runner.is_alive()
    assert 2 == len(terms)  # lost to the intruder, stood by until its lease expired, led again
    assert 1.0 <= terms[1] - terms[0] < 3.0
    assert any("lost lease ns/l (intruder holds it)" in line for line in lines)
    assert any("standing by; lease ns/l is held by intruder" in line for line in lines)
    assert "" == _lease(store)["holderIdentity"]  # the second term ended on request: released


# --------------------------------------------------------------------------- real processes

TIMINGS = (
    "--leader-elect",
    "--leader-elect-lease-duration", "2s",
    "--leader-elect-renew-deadline", "1.5s",
    "--leader-elect-retry-period", "0.5s",
)  # fmt: skip
LEASE_SECONDS = 2.0


def _lease_spec(store: Path) -> Mapping[str, Any]:
    with SqliteStore(str(store)) as db:
        return db.get("coordination.k8s.io/v1", "Lease", "olmkit-run", "olm")["spec"]


def _leading(service: Service) -> dict[str, Any]:
    return service.wait_for_line(lambda rec: rec.get("role") == "leader")


@pytest.mark.slow
def test_two_runs_one_leads_kill_it_and_the_other_takes_over(
    tmp_path: Path, env: dict[str, str], services: list[Service]
) -> None:
    """Exactly one of two `olmkit run --leader-elect` leads; after kill -9 the other leads within the
    lease duration (plus its retry period) and installs a Subscription made after the kill; a leader
    stopped with SIGTERM hands over at once (it releases the Lease)."""
    store = tmp_path / "cluster.db"
    olmkit(store, env, "apply", "-f", str(EXAMPLES / "demo" / "catalogsource-v1.yaml"))
    first = Service(store, env, "--metrics-address", "127.0.0.1:0", *TIMINGS)
    services.append(first)
    leader = _leading(first)
    first.wait_for_line(lambda rec: rec["msg"].startswith("ready"))
    second = Service(store, env, "--metrics-address", "127.0.0.1:0", *TIMINGS)
    services.append(second)
    standby = second.wait_for_line(lambda rec: rec.get("role") == "standby")

    time.sleep(2 * LEASE_SECONDS)  # the leader keeps renewing: the standby never takes over
    held = _lease_spec(store)
    assert [] == [rec for rec in second.lines if rec.get("role") == "leader"]
    assert (leader["holder"], 0) == (held["holderIdentity"], held["leaseTransitions"])
    assert leader["holder"] == standby["holder"]
    assert time.time() - parse_micro_time(held["renewTime"]) < LEASE_SECONDS
    assert (200, "ok: leader (lease olm/olmkit-run)\n") == _get(f"{first.url}/readyz")
    assert (200, f"ok: standby (lease olm/olmkit-run held by {leader['holder']})\n") == _get(f"{second.url}/readyz")
    assert 200 == _get(f"{second.url}/healthz")[0]
    assert 1 == value(scrape(first.url), "leader_election_master_status", name="olmkit-run")
    assert 0 == value(scrape(second.url), "leader_election_master_status", name="olmkit-run")
    assert not any("controllers running" in rec["msg"] for rec in second.lines)

    first.proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    first.proc.wait(timeout=10)
    olmkit(store, env, "install", "postgres-operator", "-n", "demo", "--channel", "stable")
    takeover = _leading(second)
    took = time.monotonic() - killed

    assert took < LEASE_SECONDS + 2 * 0.5 * 1.2 + 1.0  # + up to two jittered retries, + a loaded machine
    assert second.proc.poll() is None
    wait_for_succeeded(store, ["postgres-operator.v2.1.0", "cert-manager-lite.v1.0.0"], "the install by the new leader")
    after = _lease_spec(store)
    # one transition to the new leader (more only if, on a loaded machine, it lost a renewal and took it back)
    relost = sum("lost lease" in rec["msg"] for rec in second.lines)
    assert (takeover["holder"], 1 + relost) == (after["holderIdentity"], after["leaseTransitions"]), second.raw
    assert takeover["holder"] != leader["holder"]
    second.wait_for_line(lambda rec: rec["msg"].startswith("ready"))  # its controllers' first idle, as for the first
    assert (200, "ok: leader (lease olm/olmkit-run)\n") == _get(f"{second.url}/readyz")
    assert 1 == value(scrape(second.url), "leader_election_master_status", name="olmkit-run")

    # a third stands by; SIGTERM the leader: it releases the Lease and the third leads without waiting it out
    third = Service(store, env, "--metrics-address", "0", *TIMINGS)
    services.append(third)
    third.wait_for_line(lambda rec: rec.get("role") == "standby")
    stopping = time.monotonic()
    code, _ = second.stop(signal.SIGTERM)
    _leading(third)
    handed_over = time.monotonic() - stopping

    assert 0 == code, "".join(second.raw)
    assert any("released lease olm/olmkit-run" in rec["msg"] for rec in second.lines)
    assert handed_over < LEASE_SECONDS, "".join(third.raw)
    code, _ = third.stop(signal.SIGTERM)
    assert 0 == code, "".join(third.raw)
    assert "" == _lease_spec(store)["holderIdentity"]  # released on the way out
    print(f"takeover after kill -9: {took:.2f}s, after SIGTERM: {handed_over:.2f}s (lease {LEASE_SECONDS:g}s)")


def test_live_leader_is_the_holder_of_a_lease_renewed_within_its_duration() -> None:
    """A one-shot look at the election Lease: nobody leads when it is missing, released or not renewed for its
    duration (by its renewTime on this clock); a Lease without a readable renewTime counts as held."""
    from olmkit.lifecycle.leader import live_leader

    store, clock = MemoryStore(), FakeClock()
    assert live_leader(store, "ns", "l", clock.now()) is None
    leader = Lease(store, "ns", "l", clock, duration=2, holder="host/1/abc")
    leader.acquire()
    clock.advance(1.5)

    found = live_leader(store, "ns", "l", clock.now())

    assert found is not None
    assert ("ns/l", "host/1/abc", 2.0) == (found.lease, found.holder, found.duration)
    assert 1.5 == pytest.approx(found.renewed_ago)
    assert 3 == found.exit_code
    assert str(found).startswith("lease ns/l is held by host/1/abc (renewed 1.5s ago, lease duration 2s)")
    clock.advance(0.5)
    assert live_leader(store, "ns", "l", clock.now()) is None  # expired: its holder stopped renewing
    leader.acquire()
    leader.release()
    assert live_leader(store, "ns", "l", clock.now()) is None  # released
    lease = store.get("coordination.k8s.io/v1", "Lease", "l", "ns")
    lease["spec"].update(holderIdentity="other/2/def", renewTime="yesterday")
    store.update(lease)
    unknown = live_leader(store, "ns", "l", clock.now())
    assert unknown is not None
    assert unknown.renewed_ago is None
    assert "(renewal time unknown, lease duration 1s)" in str(unknown)


@pytest.mark.slow
def test_reconcile_refuses_while_a_run_leads_unless_forced(
    tmp_path: Path, env: dict[str, str], services: list[Service]
) -> None:
    """While an `olmkit run --leader-elect` leads on the store, `olmkit reconcile` does nothing and exits 3
    naming the Lease and its holder; `--force` reconciles beside it (here before anything is subscribed: a
    namespace the leader resolves stays held by its resolution Lease); `install --wait` leaves the install
    to the leader and waits for it; once the leader stopped (it released the Lease), reconcile runs without
    being forced."""
    import subprocess
    import sys

    store = tmp_path / "cluster.db"
    olmkit(store, env, "apply", "-f", str(EXAMPLES / "demo" / "catalogsource-v1.yaml"))
    service = Service(store, env, "--metrics-address", "0", *TIMINGS)
    services.append(service)
    leader = _leading(service)

    def reconcile(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "olmkit", "reconcile", "--store", str(store), *extra],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    refused = reconcile()
    forced = reconcile("--force")
    installed = subprocess.run(
        [sys.executable, "-m", "olmkit", "install", "postgres-operator", "-n", "demo", "--channel", "stable",
         "--wait", "--timeout", "90s", "--store", str(store)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    code, _ = service.stop(signal.SIGTERM)
    after = reconcile()

    assert 3 == refused.returncode, refused.stdout + refused.stderr
    assert "" == refused.stdout
    first_line = refused.stderr.splitlines()[0]
    assert first_line.startswith(f"olmkit: error: lease olm/olmkit-run is held by {leader['holder']} (renewed ")
    assert "pass --force to reconcile anyway" in first_line
    assert 1 == len(refused.stderr.splitlines())
    assert 0 == installed.returncode, installed.stdout + installed.stderr
    waited = f"waiting for the leading `olmkit run` to install it (lease olm/olmkit-run held by {leader['holder']})"
    assert waited in installed.stdout.splitlines()
    assert "subscription.operators.coreos.com/postgres-operator installed: " in installed.stdout
    assert any("namespace demo: installplan install-" in rec["msg"] for rec in service.lines), service.raw
    assert 0 == forced.returncode, forced.stdout + forced.stderr
    assert forced.stdout.splitlines()[-1].startswith("stable after ")
    assert 0 == code
    assert 0 == after.returncode, after.stdout + after.stderr
    assert after.stdout.splitlines()[-1].startswith("stable after ")


def test_reconcile_checks_the_lease_the_runs_were_told_to_use(tmp_path: Path, env: dict[str, str]) -> None:
    """`--leader-elect-resource-name/-namespace` on reconcile name the Lease to look at: a live holder of
    another Lease does not stop it; of that one, it does."""
    from olmkit.cli import main

    store = tmp_path / "cluster.db"
    with SqliteStore(str(store)) as db:
        Lease(db, "ops", "my-olm", RealClock(), duration=60, holder="host/9/run").acquire()
    base = ["reconcile", "--store", str(store), "-q"]

    assert 0 == main(base)
    assert 3 == main([*base, "--leader-elect-resource-name", "my-olm", "--leader-elect-resource-namespace", "ops"])
    assert 3 == main([*base, "--leader-elect-resource-name", "my-olm", "--global-namespace", "ops"])
    assert 0 == main([*base, "--leader-elect-resource-name", "my-olm", "--global-namespace", "ops", "--force"])
