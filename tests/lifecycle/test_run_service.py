"""`olmkit run` as a service: a real process, scraped over HTTP through an install and an upgrade, then stopped.

The process is started on a temporary store with ``--metrics-address 127.0.0.1:0`` and
``--log-format json``; the address it bound is read from its first log line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from olmkit.store import SqliteStore
from tests.lifecycle.harness import EXAMPLES, V1A1
from tests.lifecycle.test_observe import _get, scrape, value

ROOT = Path(__file__).resolve().parents[2]


class Service:
    """An `olmkit run` process and its JSON log lines, read on a thread."""

    def __init__(self, store: Path, env: dict[str, str], *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "olmkit", "run", "--store", str(store), "--log-format", "json", *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.append(json.loads(line))  # every line is a JSON object

    def wait_for_line(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if predicate(line):
                    return line
            assert self.proc.poll() is None, "".join(self.raw)
            time.sleep(0.05)
        raise AssertionError("no such log line:\n" + "".join(self.raw))

    @property
    def url(self) -> str:
        line = self.wait_for_line(lambda rec: "address" in rec)
        return f"http://{line['address']}"

    def stop(self, signum: int = signal.SIGTERM) -> tuple[int, float]:
        """Send ``signum``; returns the exit code and how long the process took to exit."""
        start = time.monotonic()
        self.proc.send_signal(signum)
        code = self.proc.wait(timeout=30)
        seconds = time.monotonic() - start
        self.close()
        return code, seconds

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}


@pytest.fixture
def services() -> Iterator[list[Service]]:
    started: list[Service] = []
    yield started
    for service in started:
        service.close()


def olmkit(store: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "olmkit", *args, "--store", str(store)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == done.returncode, done.stdout + done.stderr
    return done.stdout


def wait_until(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def csv_phases(store: Path, namespace: str) -> dict[str, str]:
    with SqliteStore(str(store)) as db:
        return {
            c["metadata"]["name"]: str((c.get("status") or {}).get("phase"))
            for c in db.list(V1A1, "ClusterServiceVersion", namespace)
        }


def subscribed_store(tmp_path: Path, env: dict[str, str], catalog: str) -> Path:
    """A store with a demo CatalogSource (``catalogsource-v1``/``-v2``), postgres-operator subscribed in ``demo``."""
    store = tmp_path / "cluster.db"
    olmkit(store, env, "apply", "-f", str(EXAMPLES / "demo" / f"catalogsource-{catalog}.yaml"))
    olmkit(store, env, "install", "postgres-operator", "-n", "demo", "--channel", "stable")
    return store


def wait_for_succeeded(store: Path, csvs: list[str], what: str) -> None:
    """Wait until exactly these CSVs are in ``demo``, all Succeeded."""
    wait_until(lambda: csv_phases(store, "demo") == dict.fromkeys(csvs, "Succeeded"), what)


@pytest.mark.slow
def test_run_serves_metrics_health_and_events_through_install_and_upgrade(
    tmp_path: Path, env: dict[str, str], services: list[Service]
) -> None:
    """Install, then upgrade, while `olmkit run` serves; scrape each state; SIGINT (Ctrl-C) ends it with exit 0."""
    store = subscribed_store(tmp_path, env, "v1")
    service = Service(store, env, "--metrics-address", "127.0.0.1:0")
    services.append(service)
    url = service.url

    service.wait_for_line(lambda rec: rec["msg"].startswith("ready"))
    assert (200, "ok\n") == _get(f"{url}/readyz")
    assert (200, "ok\n") == _get(f"{url}/healthz")
    wait_for_succeeded(store, ["postgres-operator.v2.1.0", "cert-manager-lite.v1.0.0"], "the install")
    installed = scrape(url)
    assert 1 == value(installed, "csv_succeeded", namespace="demo", name="postgres-operator.v2.1.0", version="2.1.0")
    assert 0 == value(installed, "csv_upgrade_count")
    assert (2, 2, 1) == tuple(value(installed, n) for n in ("csv_count", "subscription_count", "install_plan_count"))

    olmkit(store, env, "apply", "-f", str(EXAMPLES / "demo" / "catalogsource-v2.yaml"))
    wait_for_succeeded(store, ["postgres-operator.v2.3.0", "cert-manager-lite.v1.2.0"], "the upgrade")
    upgraded = scrape(url)

    assert 1 == value(upgraded, "csv_succeeded", namespace="demo", name="postgres-operator.v2.3.0", version="2.3.0")
    assert 1 == value(upgraded, "csv_succeeded", namespace="demo", name="cert-manager-lite.v1.2.0", version="1.2.0")
    assert not value(upgraded, "csv_succeeded", namespace="demo", name="postgres-operator.v2.1.0", version="2.1.0")
    assert 3 == value(upgraded, "csv_upgrade_count")  # postgres-operator 2.1.0 → 2.3.0, cert-manager-lite two hops
    assert {} == upgraded["csv_abnormal"][1]
    assert 3 == value(upgraded, "install_plan_count")

    events = json.loads(olmkit(store, env, "get", "events", "-n", "demo", "-o", "json"))["items"]
    by_reason: dict[tuple[str, str], int] = {}
    for event in events:
        key = (event["involvedObject"]["kind"], event["reason"])
        by_reason[key] = by_reason.get(key, 0) + event["count"]
    assert 3 == by_reason[("ClusterServiceVersion", "BeingReplaced")]
    assert 3 == by_reason[("Subscription", "UpgradePending")]
    assert 3 == by_reason[("InstallPlan", "InstallSucceeded")]
    assert 5 == by_reason[("ClusterServiceVersion", "AllRequirementsMet")]  # every CSV of the chains, once
    assert all(e["type"] == "Normal" for e in events)

    code, seconds = service.stop(signal.SIGINT)
    assert 0 == code, "".join(service.raw)
    assert seconds < 5
    assert service.lines[-1]["msg"].startswith("stopped after")
    assert any(rec.get("signal") == "SIGINT" for rec in service.lines)


@pytest.mark.slow
def test_sigterm_mid_install_leaves_a_store_the_next_run_finishes(
    tmp_path: Path, env: dict[str, str], services: list[Service]
) -> None:
    """SIGTERM while CSVs are installing: exit 0 within seconds, consistent store; a second run finishes."""
    store = subscribed_store(tmp_path, env, "v2")
    # without the simulated kubelet no Deployment becomes available: the install stays in progress
    first = Service(store, env, "--metrics-address", "0", "--no-simulated-kubelet")
    services.append(first)
    wait_until(lambda: "Installing" in csv_phases(store, "demo").values(), "an install in progress")

    code, seconds = first.stop(signal.SIGTERM)

    assert 0 == code, "".join(first.raw)
    assert seconds < 5
    assert not any("address" in rec for rec in first.lines)  # --metrics-address 0: nothing served
    assert any(rec.get("signal") == "SIGTERM" for rec in first.lines)
    with SqliteStore(str(store)) as db:
        (plan,) = db.list(V1A1, "InstallPlan", "demo")
        assert "Complete" == plan["status"]["phase"]
    assert "Succeeded" not in csv_phases(store, "demo").values()

    second = Service(store, env, "--metrics-address", "127.0.0.1:0")
    services.append(second)
    wait_for_succeeded(
        store, ["postgres-operator.v2.3.0", "cert-manager-lite.v1.2.0"], "the second run to finish the install"
    )
    families = scrape(second.url)
    assert 1 == value(families, "csv_succeeded", namespace="demo", name="postgres-operator.v2.3.0", version="2.3.0")
    code, _ = second.stop()
    assert 0 == code
