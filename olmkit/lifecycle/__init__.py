"""The lifecycle: OLM's Catalog Operator and OLM Operator as controllers over a cluster store.

* :mod:`olmkit.lifecycle.runtime`: reconcile loops, work queue, clocks;
* :mod:`olmkit.lifecycle.catalogsource`, :mod:`~olmkit.lifecycle.subscriptions`,
  :mod:`~olmkit.lifecycle.installplan`: the Catalog Operator;
* :mod:`olmkit.lifecycle.csv`: the OLM Operator's CSV phase machine;
* :mod:`olmkit.lifecycle.kinds`, :mod:`~olmkit.lifecycle.catalogs`,
  :mod:`~olmkit.lifecycle.strategy`, :mod:`~olmkit.lifecycle.bundles`: what they share.

Plugins add controllers (``olmkit_controllers``), install strategies and ways to get
bundle content; :func:`build_manager` collects them for one run.

Example:
    manager = build_manager(open_store(), get_plugin_manager())
    outcome = manager.run_until_stable(timeout=60)

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from olmkit._lazy import lazy_names

if TYPE_CHECKING:
    from olmkit.lifecycle.context import LifecycleContext, LifecycleOptions
    from olmkit.lifecycle.runtime import Clock, ControllerManager, FakeClock, RealClock, Reporter, RunOutcome
    from olmkit.store import Store

__all__ = [
    "Clock",
    "ControllerManager",
    "FakeClock",
    "LifecycleContext",
    "LifecycleOptions",
    "RealClock",
    "Reporter",
    "RunOutcome",
    "build_manager",
]

# Plugins import small modules of this package (kinds, strategy) at start-up; the runtime,
# the store and the catalogs are imported only when a run of the lifecycle is built.
_LAZY = {
    "LifecycleContext": "olmkit.lifecycle.context",
    "LifecycleOptions": "olmkit.lifecycle.context",
    "Clock": "olmkit.lifecycle.runtime",
    "ControllerManager": "olmkit.lifecycle.runtime",
    "FakeClock": "olmkit.lifecycle.runtime",
    "RealClock": "olmkit.lifecycle.runtime",
    "Reporter": "olmkit.lifecycle.runtime",
    "RunOutcome": "olmkit.lifecycle.runtime",
}


__getattr__ = lazy_names(__name__, _LAZY, keep=False)


def build_manager(
    store: Store,
    pm: Any,
    *,
    options: LifecycleOptions | None = None,
    clock: Clock | None = None,
    reporter: Reporter | None = None,
) -> ControllerManager:
    """The controllers every plugin contributes, ready to run over ``store``.

    The manager's ``context`` attribute is the shared :class:`LifecycleContext`. On a store
    that is not embedded (an API server is behind it) ``options.embedded`` is off whatever it
    says: the simulated API server and kubelet never run against a real one.
    """
    import attrs

    from olmkit.lifecycle.context import LifecycleContext, LifecycleOptions
    from olmkit.lifecycle.runtime import ControllerManager, RealClock, Reporter

    options = options or LifecycleOptions(embedded=store.embedded)
    if options.embedded and not store.embedded:
        options = attrs.evolve(options, embedded=False)
    ctx = LifecycleContext(store, pm, options, clock or RealClock(), reporter or Reporter())
    controllers = [c for contributed in pm.hook.olmkit_controllers(context=ctx) for c in contributed]
    return ControllerManager(store, controllers, clock=ctx.clock, reporter=ctx.reporter, context=ctx)
