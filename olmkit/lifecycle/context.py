"""What every controller shares: the store, the plugins, the clock, options and the catalogs.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from olmkit.lifecycle.catalogs import CatalogCache
from olmkit.lifecycle.events import EventRecorder, EventType
from olmkit.lifecycle.runtime import Clock, RealClock, Reporter, rfc3339

if TYPE_CHECKING:
    from olmkit.registry import Registry
    from olmkit.store import Store

__all__ = ["LifecycleContext", "LifecycleOptions"]


@attrs.frozen
class LifecycleOptions:
    """Settings of one run of the controllers.

    Args:
        global_namespace: the global catalog namespace (CatalogSources there serve every namespace).
        install_timeout: seconds a CSV may stay ``Installing`` before its install check fails.
        embedded: the store is olmkit's own (no API server, no kubelet behind it): the
            simulation plugins stand in for them.
        simulate_kubelet: with ``embedded``, let the simulated kubelet mark Deployments available.
        disk_cache: whether catalogs may be read from the on-disk cache.
        backend: the SAT backend for resolution (``None``: the default).
        protected_copied_csv_namespaces: namespaces that keep the copies of operators watching
            all namespaces when an OLMConfig disables copied CSVs (upstream's
            ``--protectedCopiedCSVNamespaces``; OpenShift names ``openshift``).
    """

    global_namespace: str = "olm"
    install_timeout: float = 300.0
    embedded: bool = True
    simulate_kubelet: bool = True
    disk_cache: bool = True
    backend: str | None = None
    protected_copied_csv_namespaces: tuple[str, ...] = ()


@attrs.define
class LifecycleContext:
    """Shared by the controllers of one process.

    Args:
        store: the cluster store.
        pm: the plugin manager (hooks and the registry).
        options: the run's settings.
        clock: the time source.
        reporter: receives progress (``event``) messages.
    """

    store: Store
    pm: Any
    options: LifecycleOptions = attrs.field(factory=LifecycleOptions)
    clock: Clock = attrs.field(factory=RealClock)
    reporter: Reporter = attrs.field(factory=Reporter)
    catalogs: CatalogCache = attrs.field(init=False)
    events: EventRecorder = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.catalogs = CatalogCache(
            self.store,
            lambda: self.registry,
            disk_cache=self.options.disk_cache,
            on_loaded=self.pm.hook.olmkit_catalog_loaded,
        )
        self.events = EventRecorder(self.store, self.now, clock=self.clock.now)

    @property
    def registry(self) -> Registry:
        registry: Registry = self.pm.registry
        return registry

    def now(self) -> str:
        """The current time as a Kubernetes timestamp."""
        return rfc3339(self.clock.now())

    def event(self, message: str) -> None:
        """Report something a person watching would want to see."""
        self.reporter.on_event(message)

    def record_event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        """Record a Kubernetes Event about ``obj`` (repeats are counted on one Event)."""
        self.events.record(obj, type_, reason, message)
