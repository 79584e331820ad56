"""Request metrics of the API server, as the Kubernetes API server exports them on ``/metrics``.

* ``apiserver_request_total{verb, dry_run, group, version, resource, subresource, scope,
  component, code}``: a counter of answered requests (authenticated ones; a request whose
  client went away before an answer is not counted);
* ``apiserver_longrunning_requests{verb, group, version, resource, subresource, scope,
  component}``: a gauge of the watches open now.

Labels follow the API server's rules: ``verb`` is the HTTP method, with ``GET`` on a
collection reported as ``LIST``, ``watch=true`` as ``WATCH`` and a server-side apply patch as
``APPLY``; ``scope`` is ``resource`` (one named object, or a create), ``namespace`` or
``cluster``, and empty for non-resource paths (discovery, ``/openapi``, ``/version``), which
report their path as ``subresource``. A watch is counted when it ends. A client's load on
the server is the counter's increase over its run, per verb.

Example:
    metrics = RequestMetrics()
    info = request_info("GET", "/api/v1/namespaces/default/configmaps", {"watch": "true"}, "")
    metrics.record(info, 200)
    metrics.render()  # b'... apiserver_request_total{...,verb="WATCH",...} 1.0 ...'

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

__all__ = ["COMPONENT", "RequestInfo", "RequestMetrics", "request_info"]

COMPONENT: Final = "apiserver"
#: subresources of a Namespace (``/api/v1/namespaces/NAME/status``), not resources inside it
_NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})
_APPLY_PATCH: Final = "application/apply-patch+yaml"
_REQUEST_LABELS: Final = (
    "verb",
    "dry_run",
    "group",
    "version",
    "resource",
    "subresource",
    "scope",
    "component",
    "code",
)
_LONGRUNNING_LABELS: Final = ("verb", "group", "version", "resource", "subresource", "scope", "component")


@attrs.frozen
class RequestInfo:
    """What a request asks for, as the metrics label it."""

    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    scope: str = ""
    dry_run: str = ""

    @property
    def long_running(self) -> bool:
        """Whether the request streams until the client or the server ends it (a watch)."""
        return self.verb == "WATCH"


def _is_true(value: str | None) -> bool:
    return value is not None and value.lower() not in ("", "0", "false")


def request_info(method: str, path: str, query: Mapping[str, str], content_type: str) -> RequestInfo:
    """The metric labels of a request, from its method, path, query and Content-Type alone.

    The path is read the way the API server's request-info parser reads it, without knowing
    which resources exist: ``/api/VERSION/...`` or ``/apis/GROUP/VERSION/...``, then
    ``namespaces/NS/`` (unless what follows is a Namespace's own subresource), then
    ``RESOURCE[/NAME[/SUBRESOURCE]]``; the legacy ``watch/`` prefix makes a watch.
    """
    method = method.upper()
    parts = [p for p in path.split("/") if p]
    getall = getattr(query, "getall", None)  # a multi-valued query (aiohttp's) may repeat dryRun
    dry_runs = getall("dryRun", []) if getall is not None else [query[k] for k in query if k == "dryRun"]
    dry_run = ",".join(sorted(set(dry_runs)))
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        verb = "GET" if method == "HEAD" else method
        return RequestInfo(verb=verb, subresource="/" + "/".join(parts), dry_run=dry_run)
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:] or [""]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = "/".join(rest[2:])
    if name or method == "POST":
        scope = "resource"
    elif namespace:
        scope = "namespace"
    else:
        scope = "cluster"
    verb = method
    if method in ("GET", "HEAD"):
        verb = "GET" if scope == "resource" else "LIST"
        if legacy_watch or _is_true(query.get("watch")):
            verb = "WATCH"
    elif method == "PATCH" and content_type.split(";", 1)[0].strip() == _APPLY_PATCH:
        verb = "APPLY"
    return RequestInfo(verb, group, version, resource, subresource, scope, dry_run)


class RequestMetrics:
    """The request counter and the long-running gauge of one API server (their own registry)."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, "
            "scope, component, and HTTP response code.",
            _REQUEST_LABELS,
            registry=self.registry,
        )
        self.longrunning = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, "
            "scope and component.",
            _LONGRUNNING_LABELS,
            registry=self.registry,
        )
        #: the counter's child of each (request, code) seen: a request counts with one dict lookup
        self._counted: dict[tuple[RequestInfo, int], Any] = {}

    def _longrunning(self, info: RequestInfo) -> Any:
        return self.longrunning.labels(
            info.verb, info.group, info.version, info.resource, info.subresource, info.scope, COMPONENT
        )

    def started(self, info: RequestInfo) -> None:
        """A request began (long-running ones are counted in the gauge until they end)."""
        if info.long_running:
            self._longrunning(info).inc()

    def ended(self, info: RequestInfo, code: int | None) -> None:
        """A request ended with HTTP status ``code`` (``None``: the client went away unanswered)."""
        if info.long_running:
            self._longrunning(info).dec()
        if code is not None:
            self.record(info, code)

    def record(self, info: RequestInfo, code: int) -> None:
        """Count one answered request."""
        child = self._counted.get((info, code))
        if child is None:
            child = self._counted[(info, code)] = self.requests.labels(
                info.verb,
                info.dry_run,
                info.group,
                info.version,
                info.resource,
                info.subresource,
                info.scope,
                COMPONENT,
                str(code),
            )
        child.inc()

    def render(self) -> bytes:
        """The Prometheus text format of the metrics now."""
        from olmkit.lifecycle.observe import render_metrics

        return render_metrics([self.registry])
