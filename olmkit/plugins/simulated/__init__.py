"""Built-in plugin: a simulated API server and kubelet for the embedded store.

olmkit's embedded store is only a store: no API server establishes CustomResourceDefinitions
and no kubelet runs pods. So that the install flow completes on it, this plugin adds two
plainly named controllers, only when the store is embedded:

* ``simulated-apiserver``: marks every CustomResourceDefinition ``Established`` and
  ``NamesAccepted`` and records its storage version in ``status.storedVersions``;
* ``simulated-kubelet``: marks every Deployment rolled out and available, as if its pods
  started at once. ``olmkit reconcile --no-simulated-kubelet`` switches it off (Deployments
  then never become available and installs time out, as on a cluster without nodes); a
  pod template annotated ``olmkit.io/simulate: never-ready`` is left unavailable.

On a real cluster neither runs: the cluster does this itself.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from olmkit import hookimpl
from olmkit._lazy import lazy_names

if TYPE_CHECKING:
    from olmkit.lifecycle.runtime import Controller
    from olmkit.plugins.simulated._controllers import SimulatedApiServer, SimulatedKubelet

__all__ = ["SimulatedApiServer", "SimulatedKubelet"]

#: the names the controllers' module defines (imported on first use, with the lifecycle
#: runtime: a command that runs no controller does not pay for it)
__getattr__ = lazy_names(
    __name__,
    dict.fromkeys(
        ("NEVER_READY", "SIMULATE_ANNOTATION", "SimulatedApiServer", "SimulatedKubelet"),
        "olmkit.plugins.simulated._controllers",
    ),
)


@hookimpl
def olmkit_controllers(context: Any) -> Iterator[Controller]:
    """The simulation controllers, on the embedded store only."""
    if not context.options.embedded:
        return
    from olmkit.plugins.simulated._controllers import SimulatedApiServer, SimulatedKubelet

    yield SimulatedApiServer(context)
    if context.options.simulate_kubelet:
        yield SimulatedKubelet(context)
