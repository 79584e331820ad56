"""The CatalogSource controller (Catalog Operator): open each source, load it, report its health.

For each CatalogSource the controller opens the source through its source-type plugin,
loads the catalog (keeping the snapshot in the process's :class:`CatalogCache`) and
writes ``status.connectionState`` (``READY``, ``CONNECTING``, ``TRANSIENT_FAILURE``) and
``status.catalogDigest``. ``spec.updateStrategy.registryPoll.interval`` makes it re-read
the catalog on that interval; a changed digest is what tells the subscription controller
to resolve again.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from olmkit.catalog.sources import CONNECTING, READY, TRANSIENT_FAILURE, source_revision
from olmkit.errors import InputError
from olmkit.lifecycle.catalogs import content_digest, source_label
from olmkit.lifecycle.context import LifecycleContext
from olmkit.lifecycle.kinds import CATALOG_SOURCE, CONFIG_MAP
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec
from olmkit.lifecycle.status import parse_duration
from olmkit.store import NotFound, WatchEvent

__all__ = ["CatalogSourceController", "poll_interval"]

#: How long a failing source waits before it is tried again (a resync, not pending work).
RETRY_FAILED: Final = 30.0
#: How often a source read from a network address is checked between polls (its ``revision()``).
CONNECTION_CHECK: Final = 30.0
REASON_SPEC_INVALID: Final = "SpecInvalidError"
REASON_REGISTRY_ERROR: Final = "RegistryServerError"


def poll_interval(obj: Mapping[str, Any]) -> float | None:
    """``spec.updateStrategy.registryPoll.interval`` in seconds, or ``None``.

    Raises:
        InputError: the interval is not a duration.
    """
    spec = obj.get("spec") or {}
    raw = ((spec.get("updateStrategy") or {}).get("registryPoll") or {}).get("interval")
    if raw in (None, ""):
        return None
    seconds = parse_duration(str(raw), field="spec.updateStrategy.registryPoll.interval")
    return seconds if seconds > 0 else None


def _configmap_users(ctx: LifecycleContext) -> Any:
    """Map a ConfigMap change to the CatalogSources of type configmap that read it."""

    def mapper(event: WatchEvent) -> list[tuple[str, str]]:
        meta = event.object.get("metadata") or {}
        ns, name = meta.get("namespace"), meta.get("name")
        out = []
        for src in ctx.store.list(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind, ns):
            if (src.get("spec") or {}).get("configMap") == name:
                out.append((str(ns), str(src["metadata"]["name"])))
        return out

    return mapper


def _network(source: Any) -> bool:
    """Whether a source reads from a network address (its first read may take a while)."""
    return isinstance(getattr(source, "address", None), str)


class CatalogSourceController(Controller):
    """Keeps every CatalogSource loaded and its status current."""

    name = "catalogsource"

    def __init__(self, ctx: LifecycleContext) -> None:
        self.ctx = ctx
        self.watches = (
            WatchSpec(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind),
            WatchSpec(CONFIG_MAP.api_version, CONFIG_MAP.kind, _configmap_users(ctx)),
        )
        self._polled: dict[tuple[str, str], tuple[int, float, str | None]] = {}

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store, ctx = self.ctx.store, self.ctx
        try:
            obj = store.get(CATALOG_SOURCE.api_version, CATALOG_SOURCE.kind, name, namespace)
        except NotFound:
            ctx.catalogs.forget(namespace, name)
            self._polled.pop((namespace, name), None)
            return DONE
        meta = obj["metadata"]
        generation = int(meta.get("generation", 0) or 0)
        status: dict[str, Any] = dict(obj.get("status") or {})
        try:
            interval = poll_interval(obj)
            opened = ctx.catalogs.opened(obj)
        except InputError as exc:
            self._write(obj, self._failed(status, REASON_SPEC_INVALID, str(exc), generation))
            return DONE  # only a change of the spec can help
        now = ctx.clock.now()
        last = self._polled.get((namespace, name))
        revision = source_revision(opened.source)
        due = (
            opened.catalog is None
            or last is None
            or last[0] != generation
            or last[2] != revision
            or (interval is not None and now - last[1] >= interval)
        )
        if due and opened.catalog is None and _network(opened.source):
            # a registry server: say CONNECTING while the first read is under way
            connecting = dict(status.get("connectionState") or {})
            if connecting.get("lastObservedState") is None:
                where = str(getattr(opened.source, "address", ""))
                connecting.update({"lastObservedState": CONNECTING, "address": where})
                obj = self._write(obj, {**status, "connectionState": connecting})
                status = dict(obj.get("status") or {})
        if due:
            opened, changed = ctx.catalogs.refresh(obj)
            self._polled[(namespace, name)] = (generation, now, revision)
            if opened.error is None and changed and opened.catalog is not None:
                bundles = sum(map(len, opened.catalog.bundles.values()))
                packages = len(opened.catalog.packages)
                ctx.event(f"catalogsource {source_label(obj)}: catalog loaded ({packages} packages, {bundles} bundles)")
        if opened.error is not None:
            self._write(obj, self._failed(status, REASON_REGISTRY_ERROR, opened.error, generation))
            return Result(requeue_after=min(interval or RETRY_FAILED, RETRY_FAILED), resync=True)
        assert opened.catalog is not None
        connection = dict(status.get("connectionState") or {})
        if due or connection.get("lastObservedState") != READY:
            connection.update({"lastObservedState": READY, "lastConnect": ctx.now()})
        address = (
            getattr(opened.source, "path", None)
            or getattr(opened.source, "config_map", None)
            or getattr(opened.source, "address", None)
        )
        if address is not None:
            connection["address"] = str(address)
        status["connectionState"] = connection
        status["catalogDigest"] = content_digest(opened.catalog)
        status["observedGeneration"] = generation
        status.pop("message", None)
        status.pop("reason", None)
        if interval is not None and due:
            status["latestImageRegistryPoll"] = ctx.now()
        self._write(obj, status)
        if _network(opened.source):  # a server can go away between polls: look at it on a short period
            interval = min(interval or CONNECTION_CHECK, CONNECTION_CHECK)
        return Result(requeue_after=interval, resync=True) if interval is not None else DONE

    def _failed(self, status: dict[str, Any], reason: str, message: str, generation: int) -> dict[str, Any]:
        connection = dict(status.get("connectionState") or {})
        connection["lastObservedState"] = TRANSIENT_FAILURE
        return {
            **status,
            "connectionState": connection,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
        }

    def _write(self, obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Write ``status`` unless the object has it already; the object as stored."""
        if obj.get("status") == status:
            return obj
        was = ((obj.get("status") or {}).get("connectionState") or {}).get("lastObservedState")
        now_state = (status.get("connectionState") or {}).get("lastObservedState")
        stored = self.ctx.store.update_status({**obj, "status": status})
        if was != now_state:
            detail = f": {status['message']}" if status.get("message") else ""
            self.ctx.event(f"catalogsource {source_label(obj)}: {now_state}{detail}")
        return stored
