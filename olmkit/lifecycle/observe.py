"""The HTTP side of a long-running olmkit process: ``/metrics``, ``/healthz`` and ``/readyz``.

:func:`start_observability_server` serves, on a thread of its own (stdlib
``http.server``):

* ``/metrics``: the Prometheus text format (0.0.4) of every collector the plugins
  contribute through ``olmkit_metric_collectors``, collected at scrape time, and the
  process's own metrics (``process_*``, ``python_*``);
* ``/healthz``: ``200 ok`` while the process works and its store answers, else ``503``;
* ``/readyz``: ``200 ok`` once the caller said the process is ready (``olmkit run``:
  every controller has synced once) and, on a store with an API server behind it, while
  that server answers and every watch of the store is open (:class:`ApiCheck`); ``503``
  otherwise and while shutting down. Liveness (``/healthz``) does not depend on the API
  server: a restart would not bring it back.

With leader election (:meth:`ObservabilityServer.set_election`) both say the process's role:
a standby is ready (``200 ok: standby (lease olm/olmkit-run held by ...)``: it is doing what
it should, and a rolling update must not wait for it to lead); the leader is ready once its
controllers synced (``ok: leader (lease olm/olmkit-run)``), and unhealthy when its renewals
stopped for longer than the lease duration.

Names are written as the collectors give them: a counter keeps its name (upstream OLM's
``csv_upgrade_count`` has no ``_total``), unlike ``prometheus_client.generate_latest``,
which appends ``_total`` to every counter. ``prometheus_client`` is imported only when a
server starts.

Example:
    server = start_observability_server("127.0.0.1:0", store=store, pm=pm)
    print(server.url)  # http://127.0.0.1:41623
    server.set_ready(True)
    ...
    server.stop()

.. versionadded:: 0.2
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Final

from olmkit.errors import UsageError

if TYPE_CHECKING:
    from olmkit.lifecycle.leader import LeaderElector

__all__ = [
    "DEFAULT_ADDRESS",
    "ApiCheck",
    "ObservabilityServer",
    "parse_address",
    "render_metrics",
    "start_observability_server",
]

DEFAULT_ADDRESS: Final = "127.0.0.1:8080"
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"


def parse_address(text: str) -> tuple[str, int] | None:
    """``HOST:PORT`` (``:PORT`` means all interfaces) to a pair; ``"0"`` means disabled (``None``).

    Raises:
        UsageError: not an address.
    """
    text = text.strip()
    if text == "0":
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--metrics-address {text!r}: expected HOST:PORT (port 0 picks a free one) or 0 to disable")
    host = host.strip("[]")
    return (host or "0.0.0.0", int(port))


def _label_value(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def render_metrics(collectors: Iterable[Any]) -> bytes:
    """The Prometheus text format of what ``collectors`` yield now."""
    from prometheus_client import utils

    go_float: Callable[[float], str] = utils.floatToGoString
    out: list[str] = []
    for collector in collectors:
        for metric in collector.collect():
            samples = [s for s in metric.samples if not s.name.endswith("_created")]
            mtype = {"unknown": "untyped", "info": "gauge", "stateset": "gauge"}.get(metric.type, metric.type)
            name = metric.name
            if metric.type == "counter" and any(s.name == f"{name}_total" for s in samples):
                name = f"{name}_total"
            doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
            out.append(f"# HELP {name} {doc}\n# TYPE {name} {mtype}\n")
            for sample in samples:
                labels = ",".join(f'{k}="{_label_value(str(v))}"' for k, v in sorted(sample.labels.items()))
                out.append(f"{sample.name}{{{labels}}} " if labels else f"{sample.name} ")
                out.append(f"{go_float(sample.value)}\n")
    return "".join(out).encode()


class _ElectionCollector:
    """``leader_election_master_status{name}``, as client-go's leader election exports it."""

    def __init__(self, elector: LeaderElector) -> None:
        self.elector = elector

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import GaugeMetricFamily

        gauge = GaugeMetricFamily(
            "leader_election_master_status",
            "Whether this process leads the lease: 1 leading, 0 standing by; name is the lease's name.",
            labels=["name"],
        )
        gauge.add_metric([self.elector.config.name], 1.0 if self.elector.leading else 0.0)
        yield gauge


class ApiCheck:
    """Whether the API server behind a store answers and the store's watches are open, for ``/readyz``.

    The server is asked (one request: :meth:`~olmkit.store.Store.server_resource_version`) at
    most once per ``ttl`` seconds, on a thread of its own, and a probe waits at most ``wait``
    seconds for the answer (an unreachable host must not hold the probe for a connect timeout).
    A watch found closed is looked at again for up to half a second: each watch request ends
    after a few minutes and is reopened at once.

    Args:
        store: the cluster store (an embedded one has no API server: only its watches are asked).
        ttl: seconds an answer of the API server is reused.
        wait: seconds a probe waits for the API server.

    .. versionadded:: 0.4
    """

    #: how long a closed watch may take to be reopened before it counts
    REOPEN = 0.5

    def __init__(self, store: Any, ttl: float = 1.0, wait: float = 2.0) -> None:
        self.store = store
        self.ttl = ttl
        self.wait = wait
        self._lock = threading.Lock()
        self._answered = threading.Event()
        self._asking = False
        self._checked_at = -float("inf")
        self._problem: str | None = None

    def _ask(self, answered: threading.Event) -> None:
        from olmkit.store import StoreError

        started = time.monotonic()
        try:
            self.store.server_resource_version()
            problem = None
        except StoreError as exc:
            if exc.code == 503:  # unreachable: refused, timed out, TLS failed
                problem = f"the API server does not answer: {exc}"
            else:
                problem = f"the API server answers with an error: {exc}"
        except Exception as exc:  # a check that raises is a failed check
            problem = f"asking the API server failed: {type(exc).__name__}: {exc}"
        with self._lock:
            self._problem, self._checked_at, self._asking = problem, started, False
        answered.set()

    def api_problem(self) -> str | None:
        """Why the API server is taken as not answering now; ``None`` when it answered."""
        if getattr(self.store, "embedded", False):
            return None
        with self._lock:
            if time.monotonic() - self._checked_at < self.ttl:
                return self._problem
            if not self._asking:
                self._asking = True
                self._answered = threading.Event()
                threading.Thread(target=self._ask, args=(self._answered,), name="olmkit-api-check", daemon=True).start()
            answered = self._answered
        if not answered.wait(self.wait):
            return f"the API server has not answered for {self.wait:g}s"
        with self._lock:
            return self._problem

    def problem(self) -> str | None:
        """Why the process is not ready on this store's account; ``None`` when it is."""
        problem = self.api_problem()
        if problem:
            return problem
        deadline = time.monotonic() + self.REOPEN
        while (problem := self.store.sync_problem()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return problem


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class ObservabilityServer:
    """A running metrics and health server (see :func:`start_observability_server`)."""

    def __init__(
        self,
        host: str,
        port: int,
        collectors: list[Any],
        health: Callable[[], str | None] | None = None,
        readiness: Callable[[], str | None] | None = None,
    ) -> None:
        self.collectors = collectors
        self.health = health
        self.readiness = readiness
        self.ready = False
        self.stopping = False
        self.election: LeaderElector | None = None
        server_class = _IPv6Server if ":" in host else ThreadingHTTPServer
        self._httpd = server_class((host, port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="olmkit-metrics", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """``HOST:PORT`` the server listens on (the real port when 0 was asked for)."""
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def set_ready(self, ready: bool = True) -> None:
        """Say whether the process is ready (``/readyz``)."""
        self.ready = ready

    def set_election(self, elector: LeaderElector) -> None:
        """Answer ``/healthz`` and ``/readyz`` with this process's role in a leader election, and
        export client-go's ``leader_election_master_status{name}`` gauge (1 leading, 0 standing by)."""
        self.election = elector
        self.collectors.append(_ElectionCollector(elector))

    def begin_shutdown(self) -> None:
        """The process is stopping: ``/readyz`` answers 503 from now on (``/metrics`` still serves)."""
        self.stopping = True

    def stop(self) -> None:
        """Stop serving (``/readyz`` answers 503 until the socket closes)."""
        self.stopping = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- answers ----------------------------------------------------------------------

    def healthz(self) -> tuple[int, str]:
        try:
            problem = self.health() if self.health is not None else None
        except Exception as exc:  # a health check that raises is a failed check
            problem = f"{type(exc).__name__}: {exc}"
        election = self.election
        if not problem and election is not None:
            problem = election.health_problem()
        if problem:
            return 503, f"unhealthy: {problem}\n"
        return 200, "ok\n" if election is None else f"ok: {election.describe()}\n"

    def readyz(self) -> tuple[int, str]:
        election = self.election
        if self.stopping:
            return 503, "not ready: shutting down\n"
        try:
            problem = self.readiness() if self.readiness is not None else None
        except Exception as exc:  # a readiness check that raises is a failed check
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            return 503, f"not ready: {problem}\n"
        if election is not None and not election.leading:
            return 200, f"ok: {election.describe()}\n"
        if not self.ready:
            return 503, "not ready: the controllers have not synced yet\n"
        return 200, "ok\n" if election is None else f"ok: {election.describe()}\n"


def _handler(server: ObservabilityServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "olmkit"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            content_type = "text/plain; charset=utf-8"
            if path == "/metrics":
                try:
                    status, body = 200, render_metrics(server.collectors)
                    content_type = CONTENT_TYPE
                except Exception as exc:  # a broken collector must not kill the server
                    status, body = 500, f"collecting metrics failed: {type(exc).__name__}: {exc}\n".encode()
            elif path in ("/healthz", "/livez"):
                status, text = server.healthz()
                body = text.encode()
            elif path == "/readyz":
                status, text = server.readyz()
                body = text.encode()
            else:
                status, body = 404, b"not found: try /metrics, /healthz or /readyz\n"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # scrapes every few seconds would drown the controllers' lines

    return Handler


def start_observability_server(
    address: str,
    *,
    store: Any,
    pm: Any,
    health: Callable[[], str | None] | None = None,
) -> ObservabilityServer | None:
    """Serve ``/metrics``, ``/healthz`` and ``/readyz`` on ``address`` (``"0"``: do not serve).

    Args:
        address: ``HOST:PORT``; port 0 picks a free port (see :attr:`ObservabilityServer.address`).
        store: the cluster store (passed to the plugins' collectors; ``/healthz`` checks it answers,
            ``/readyz`` its API server and watches through :class:`ApiCheck`).
        pm: the plugin manager (``olmkit_metric_collectors``).
        health: an extra check returning a problem, or ``None`` when healthy.

    Raises:
        UsageError: a malformed address, or the port cannot be bound.
    """
    parsed = parse_address(address)
    if parsed is None:
        return None
    from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

    # the process's own (CPU, memory, open files, Python's GC), as every Prometheus client exports
    # them; registered in a scratch registry only because their constructors insist on one
    scratch = CollectorRegistry()
    collectors: list[Any] = [
        ProcessCollector(registry=scratch),
        PlatformCollector(registry=scratch),
        GCCollector(registry=scratch),
    ]
    collectors += [c for contributed in pm.hook.olmkit_metric_collectors(store=store) for c in contributed]

    def check() -> str | None:
        store.latest_resource_version()  # raises when the store cannot be read
        return health() if health is not None else None

    try:
        return ObservabilityServer(parsed[0], parsed[1], collectors, check, ApiCheck(store).problem)
    except OSError as exc:
        raise UsageError(f"--metrics-address {address}: cannot listen: {exc.strerror or exc}") from None
