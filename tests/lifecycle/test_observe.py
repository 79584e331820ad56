"""Metrics, health and readiness over real HTTP; the metrics plugin's hooks; the reconcile hook."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from olmkit import hookimpl
from olmkit.errors import UsageError
from olmkit.lifecycle.observe import ObservabilityServer, parse_address, start_observability_server
from olmkit.lifecycle.runtime import Controller, Result
from tests.lifecycle.harness import EXAMPLES, Cluster

ROOT = Path(__file__).resolve().parents[2]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def scrape(url: str) -> dict[str, Any]:
    """``/metrics`` parsed: ``{family name: (type, {(sample name, labels): value})}``."""
    status, text = _get(f"{url}/metrics")
    assert 200 == status, text
    families: dict[str, Any] = {}
    for family in text_string_to_metric_families(text):
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples}
        families[family.name] = (family.type, samples)
        if family.type == "counter":  # the parser drops "_total" from counter family names
            families[f"{family.name}_total"] = (family.type, samples)
    return families


def value(families: dict[str, Any], family: str, sample: str | None = None, **labels: str) -> float | None:
    """One sample's value (``None`` when absent)."""
    _, samples = families[family]
    key = tuple(sorted(labels.items()))
    name = sample or family
    # the parser names a counter's samples NAME_total even when the wire says NAME (upstream's csv_upgrade_count)
    found = samples.get((name, key), samples.get((f"{name}_total", key)))
    return None if found is None else float(found)


@pytest.fixture
def serve(cluster: Cluster) -> Iterator[Callable[[], ObservabilityServer]]:
    servers: list[ObservabilityServer] = []

    def start() -> ObservabilityServer:
        server = start_observability_server("127.0.0.1:0", store=cluster.store, pm=cluster.pm)
        assert server is not None
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.mark.kube
def test_metrics_are_true_at_scrape_time(cluster: Cluster, serve: Callable[[], ObservabilityServer]) -> None:
    """Gauges follow the store; csv_upgrade_count counts the upgrades; the replaced CSV's series is gone."""
    cluster.catalog_source("examples", EXAMPLES / "catalog-v1")
    cluster.subscribe("postgres-operator", channel="stable")
    server = serve()
    before = scrape(server.url)
    assert cluster.reconcile().stable

    installed = scrape(server.url)
    _, wire = _get(f"{server.url}/metrics")
    assert "# TYPE csv_upgrade_count counter\ncsv_upgrade_count " in wire  # upstream's name, no _total added
    assert "# TYPE catalog_source_snapshots_total counter\n" in wire
    assert ("gauge", "counter", "histogram") == (
        installed["csv_succeeded"][0],
        installed["csv_upgrade_count"][0],
        installed["olm_resolution_duration_seconds"][0],
    )
    assert 1 == value(
        installed, "csv_succeeded", namespace="operators", name="postgres-operator.v2.1.0", version="2.1.0"
    )
    assert 2 == value(installed, "csv_count")
    assert 2 == value(installed, "subscription_count")
    assert 1 == value(installed, "install_plan_count")
    assert 1 == value(installed, "catalog_source_count")
    assert 1 == value(installed, "catalogsource_ready", namespace="olm", name="examples")
    assert {} == installed["csv_abnormal"][1]
    resolved = value(
        installed, "olm_resolution_duration_seconds", "olm_resolution_duration_seconds_count", outcome="succeeded"
    )
    resolved_before = value(
        before, "olm_resolution_duration_seconds", "olm_resolution_duration_seconds_count", outcome="succeeded"
    )
    assert resolved is not None
    assert resolved_before is not None
    assert resolved > resolved_before
    sync = value(
        installed,
        "subscription_sync_total",
        name="postgres-operator",
        installed="postgres-operator.v2.1.0",
        channel="stable",
        package="postgres-operator",
        approval="Automatic",
    )
    assert sync is not None
    assert sync >= 1

    cluster.catalog_source("examples", EXAMPLES / "catalog")
    assert cluster.reconcile().stable
    upgraded = scrape(server.url)

    assert 1 == value(
        upgraded, "csv_succeeded", namespace="operators", name="postgres-operator.v2.3.0", version="2.3.0"
    )
    assert 1 == value(
        upgraded, "csv_succeeded", namespace="operators", name="cert-manager-lite.v1.2.0", version="1.2.0"
    )
    assert None is value(
        upgraded, "csv_succeeded", namespace="operators", name="postgres-operator.v2.1.0", version="2.1.0"
    )
    assert 3 == (value(upgraded, "csv_upgrade_count") or 0) - (value(installed, "csv_upgrade_count") or 0)
    assert 2 == value(upgraded, "csv_count")
    assert 3 == value(upgraded, "install_plan_count")
    snapshots = [
        value(f, "catalog_source_snapshots_total", namespace="olm", name="examples") or 0.0
        for f in (before, installed, upgraded)
    ]
    assert snapshots[0] < snapshots[1] < snapshots[2]  # read at start, read again when the path changed


@pytest.mark.kube
def test_abnormal_csv_is_reported_with_phase_and_reason(
    make_cluster: Callable[..., Cluster], serve: Callable[[], ObservabilityServer]
) -> None:
    """A CSV that cannot finish installing appears in csv_abnormal with its phase and reason, and succeeded 0."""
    cluster = make_cluster(kubelet=False)
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.operator_group()
    cluster.subscribe("storage-operator")
    cluster.manager.run_until_stable(timeout=10)
    server = start_observability_server("127.0.0.1:0", store=cluster.store, pm=cluster.pm)
    assert server is not None
    try:
        families = scrape(server.url)
    finally:
        server.stop()

    csv = cluster.get("csv", "storage-operator.v0.5.0")
    phase, reason = csv["status"]["phase"], csv["status"]["reason"]
    assert "Succeeded" != phase
    labels = {"namespace": "operators", "name": "storage-operator.v0.5.0", "version": "0.5.0"}
    assert 0 == value(families, "csv_succeeded", **labels)
    assert 1 == value(families, "csv_abnormal", **labels, phase=phase, reason=reason)


def test_resolver_and_controller_metrics(cluster: Cluster, serve: Callable[[], ObservabilityServer]) -> None:
    """Problem size, phase seconds, unsatisfiable by constraint type, reconciles per controller, queue depth."""
    cluster.subscribe("legacy-monitor", channel="stable", starting_csv="legacy-monitor.v0.1.0")  # deprecated
    server = serve()
    before = scrape(server.url)
    cluster.reconcile()
    after = scrape(server.url)

    def delta(family: str, sample: str | None = None, **labels: str) -> float:
        return (value(after, family, sample, **labels) or 0.0) - (value(before, family, sample, **labels) or 0.0)

    assert 1 <= delta("olm_resolution_duration_seconds", "olm_resolution_duration_seconds_count", outcome="failed")
    assert 1 <= delta("olmkit_resolution_variables", "olmkit_resolution_variables_count")
    assert 0 < delta("olmkit_resolution_variables", "olmkit_resolution_variables_sum")
    assert 0 < delta("olmkit_resolution_phase_seconds_total", phase="variables")
    assert 1 <= delta("olmkit_resolution_search_total", counter="propagations")
    unsat = {dict(labels)["constraint"] for (_, labels) in after["olmkit_resolution_unsatisfiable_total"][1]}
    assert {"mandatory", "prohibited"} <= unsat
    assert 1 <= delta("olmkit_reconcile_total", controller="subscription", result="success")
    assert 1 <= delta(
        "olmkit_reconcile_duration_seconds", "olmkit_reconcile_duration_seconds_count", controller="catalogsource"
    )
    assert "gauge" == after["olmkit_workqueue_depth"][0]
    assert 1 <= delta("olmkit_catalog_load_seconds", "olmkit_catalog_load_seconds_count", cached="false") + delta(
        "olmkit_catalog_load_seconds", "olmkit_catalog_load_seconds_count", cached="true"
    )


def test_health_readiness_and_unknown_paths(cluster: Cluster, serve: Callable[[], ObservabilityServer]) -> None:
    """/readyz is 503 until the process says it is ready; /healthz checks the store; other paths 404."""
    server = serve()

    assert (200, "ok\n") == _get(f"{server.url}/healthz")
    assert 503 == _get(f"{server.url}/readyz")[0]
    server.set_ready(True)
    assert (200, "ok\n") == _get(f"{server.url}/readyz")
    assert 404 == _get(f"{server.url}/nope")[0]
    server.begin_shutdown()
    assert (503, "not ready: shutting down\n") == _get(f"{server.url}/readyz")
    assert 200 == _get(f"{server.url}/metrics")[0]  # still scraped while the last reconcile finishes

    if socket.has_ipv6:
        try:
            six = ObservabilityServer("::1", 0, [])
        except OSError:  # no IPv6 loopback in this container
            six = None
        if six is not None:
            try:
                assert six.address.startswith("[::1]:")
                assert (200, "ok\n") == _get(f"{six.url}/healthz")
            finally:
                six.stop()

    sick = ObservabilityServer("127.0.0.1", 0, [], health=lambda: "the store is gone")
    try:
        status, text = _get(f"{sick.url}/healthz")
    finally:
        sick.stop()
    assert (503, "unhealthy: the store is gone\n") == (status, text)


def test_readiness_waits_a_bounded_time_for_the_api_server_and_reuses_its_answer() -> None:
    """A store whose API server hangs: /readyz answers 503 after the check's wait, not after a connect
    timeout; an answer is reused for ``ttl`` seconds (one request, however often probed);
    a closed watch makes it not ready too. An embedded store's server is never asked."""
    import threading
    import time

    from olmkit.lifecycle.observe import ApiCheck
    from olmkit.store import MemoryStore, StoreError

    class Unreachable(StoreError):
        code = 503  # as the kube backend's ApiUnreachable

    class Remote(MemoryStore):
        embedded = False  # type: ignore[misc]

        def __init__(self) -> None:
            super().__init__()
            self.hang = threading.Event()
            self.down = False
            self.asked = 0
            self.watch = None

        def server_resource_version(self) -> str | None:
            self.asked += 1
            self.hang.wait(5)
            if self.down:
                raise Unreachable("cannot reach the API server at https://192.0.2.1:6443")
            return "7"

        def sync_problem(self) -> str | None:
            return self.watch

    store = Remote()
    server = ObservabilityServer("127.0.0.1", 0, [], readiness=ApiCheck(store, ttl=2.0, wait=0.3).problem)
    server.set_ready(True)
    try:
        start = time.monotonic()
        hanging = _get(f"{server.url}/readyz")
        waited = time.monotonic() - start
        store.hang.set()
        time.sleep(0.1)
        answered = [_get(f"{server.url}/readyz") for _ in range(5)]
        asked = store.asked
        store.watch = "no watch open for 1 of 3 kinds (Subscription)"
        closed = _get(f"{server.url}/readyz")
        store.watch, store.down = None, True
        time.sleep(2.0)
        down = _get(f"{server.url}/readyz")
    finally:
        server.stop()
        store.hang.set()

    assert (503, "not ready: the API server has not answered for 0.3s\n") == hanging
    assert waited < 2.0
    assert [(200, "ok\n")] * 5 == answered
    assert 1 == asked
    assert (503, "not ready: no watch open for 1 of 3 kinds (Subscription)\n") == closed
    assert (
        503,
        "not ready: the API server does not answer: cannot reach the API server at https://192.0.2.1:6443\n",
    ) == down
    embedded = MemoryStore()
    assert ApiCheck(embedded).problem() is None


def test_metrics_address_parsing_and_busy_port(cluster: Cluster) -> None:
    """`0` disables the server; malformed addresses and ports in use are usage errors."""
    assert parse_address("0") is None
    assert ("0.0.0.0", 9090) == parse_address(":9090")
    assert ("::1", 0) == parse_address("[::1]:0")
    with pytest.raises(UsageError, match="expected HOST:PORT"):
        parse_address("localhost")
    assert start_observability_server("0", store=cluster.store, pm=cluster.pm) is None

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match="cannot listen"):
            start_observability_server(f"127.0.0.1:{port}", store=cluster.store, pm=cluster.pm)


def test_reconcile_does_not_import_prometheus_client(tmp_path: Path) -> None:
    """Only a metrics endpoint pays for prometheus_client: `olmkit reconcile` never imports it."""
    code = (
        "import sys\n"
        "from olmkit.cli import main\n"
        f"assert main(['reconcile', '--store', {str(tmp_path / 'c.db')!r}, '-q']) == 0\n"
        "assert 'prometheus_client' not in sys.modules, 'prometheus_client was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)

    assert 0 == done.returncode, done.stderr


# --------------------------------------------------------------------------- the hooks


def test_hook_olmkit_reconciled(make_cluster: Callable[..., Cluster], olmkit_register: Any) -> None:
    """Called after every reconcile with the controller, key, time, error (or None) and the queue depth."""
    calls: list[tuple[str, str, str, float, BaseException | None, int, Any]] = []

    class Flaky(Controller):
        name = "flaky"

        def __init__(self) -> None:
            self.runs = 0

        def reconcile(self, namespace: str, name: str) -> Result | None:
            self.runs += 1
            if self.runs == 1:
                raise RuntimeError("first time unlucky")
            return None

    flaky = Flaky()

    class Recorder:
        @hookimpl
        def olmkit_controllers(self, context: Any) -> Any:
            yield flaky

        @hookimpl
        def olmkit_reconciled(
            self,
            context: Any,
            controller: str,
            namespace: str,
            name: str,
            seconds: float,
            error: BaseException | None,
            queue_depth: int,
        ) -> None:
            calls.append((controller, namespace, name, seconds, error, queue_depth, context))

    olmkit_register(Recorder())
    cluster = make_cluster()
    cluster.catalog_source("examples", EXAMPLES / "catalog")
    cluster.manager.enqueue("flaky", "ns", "key")
    assert cluster.reconcile().stable

    assert {"catalogsource", "flaky"} <= {c[0] for c in calls}
    assert all(c[6] is cluster.manager.context for c in calls)
    assert all(c[3] >= 0 and c[5] >= 0 for c in calls)
    mine = [(c[1], c[2], c[4]) for c in calls if c[0] == "flaky"]
    assert [("ns", "key"), ("ns", "key")] == [m[:2] for m in mine]
    first, second = mine[0][2], mine[1][2]
    assert "first time unlucky" in repr(first) + repr(first.__cause__)  # raised, maybe blamed on the plugin
    assert second is None
    assert all(c[4] is None for c in calls if c[0] != "flaky")


def test_hook_olmkit_metric_collectors(cluster: Cluster, olmkit_register: Any) -> None:
    """A plugin's collector is served at /metrics and reads the store at scrape time."""
    from prometheus_client.core import GaugeMetricFamily

    class Widgets:
        @hookimpl
        def olmkit_metric_collectors(self, store: Any) -> Any:
            class Collector:
                def collect(self) -> Any:
                    yield GaugeMetricFamily("widget_count", "ConfigMaps", value=len(store.list("v1", "ConfigMap", "w")))

            yield Collector()

    olmkit_register(Widgets())
    server = start_observability_server("127.0.0.1:0", store=cluster.store, pm=cluster.pm)
    assert server is not None
    try:
        assert 0 == value(scrape(server.url), "widget_count")
        cluster.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "w"}})
        families = scrape(server.url)
    finally:
        server.stop()

    assert 1 == value(families, "widget_count")
    assert "csv_count" in families  # the built-in plugin's collector is there too


def test_log_format_json_and_verbosity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--log-format json` writes one JSON object per line; -v adds reconciles, -vv what each waits for."""
    from olmkit.cli import main
    from tests.lifecycle.harness import seed_store

    path = tmp_path / "c.db"
    seed_store(path, "postgres-operator")

    assert 0 == main(["reconcile", "--until-stable", "--store", str(path), "--log-format", "json", "-vv"])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    assert {"time", "level", "msg", "elapsed"} <= set(records[0])
    assert any(r["level"] == "info" and "installplan" in r["msg"] and "Complete" in r["msg"] for r in records)
    reconciled = [r for r in records if r["level"] == "debug"]
    assert {"catalogsource", "subscription", "installplan", "clusterserviceversion"} <= {
        r["key"].split(":")[0] for r in reconciled
    }
    assert any("requeue_after" in r for r in reconciled)  # -vv: what a reconcile asked for next
    assert ("stable", 0) == (records[-1]["msg"], len(records[-1]["pending"]))

    assert 0 == main(["reconcile", "--until-stable", "--store", str(path)])
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[-1].startswith("stable after")
    assert all(line.startswith("[") for line in lines[:-1])  # the text format: "[elapsed] event"
    assert "reconciled" not in text  # without -v, no line per reconcile


def test_run_refuses_a_bad_metrics_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --metrics-address or a port in use: one line naming the option, exit 2, nothing run."""
    from olmkit.cli import main

    store = str(tmp_path / "c.db")
    assert 2 == main(["run", "--store", store, "--metrics-address", "localhost"])
    assert "--metrics-address 'localhost': expected HOST:PORT" in capsys.readouterr().err

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert 2 == main(["run", "--store", store, "--metrics-address", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert f"--metrics-address 127.0.0.1:{port}: cannot listen" in err
    assert "Traceback" not in err


def test_the_metrics_plugin_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """OLMKIT_DISABLE_PLUGINS=metrics: /metrics serves only the process's own metrics; health still answers."""
    from olmkit.manager import get_plugin_manager
    from olmkit.store import MemoryStore

    monkeypatch.setenv("OLMKIT_DISABLE_PLUGINS", "metrics")
    pm = get_plugin_manager(entrypoints=False)
    server = start_observability_server("127.0.0.1:0", store=MemoryStore(), pm=pm)
    assert server is not None
    try:
        status, text = _get(f"{server.url}/metrics")
        health = _get(f"{server.url}/healthz")
    finally:
        server.stop()

    assert 200 == status
    assert "csv_count" not in text
    assert "# TYPE python_info gauge" in text  # the process's own metrics are always there
    if Path("/proc/self/stat").exists():
        assert "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " in text
    assert (200, "ok\n") == health
    assert not pm.has_plugin("olmkit.plugins.metrics")
