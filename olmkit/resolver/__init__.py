"""Dependency resolution: one namespace's subscriptions and installed CSVs to install steps.

:func:`resolve` gives upstream OLM v0's answers (see the behaviour document): catalog
entries and installed CSVs become solver variables with upstream's constraints and
message texts, solved by :func:`olmkit._solver.solve` (greedy preference search, then
extras minimised). This module is also the kernel's ``olmkit_resolve`` implementation,
so plugins can wrap resolution. :func:`clear_graphs` and :func:`graph_path` reach the
resolution graphs kept per catalog (in memory and on disk), for cold-start measurements.

Registering the hook imports nothing else: the names below are imported on first use
(:mod:`olmkit.resolver._resolve` does the work), so a command that loads the plugins but
resolves nothing (``olmkit catalog validate``) pays for neither the resolver nor the solver.

Example:
    request = ResolutionRequest(namespace="operators", registry=pm.registry, ...)
    resolution = pm.hook.olmkit_resolve(request=request)

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from olmkit import hookimpl
from olmkit._lazy import lazy_names

if TYPE_CHECKING:
    from olmkit.resolver._graph_cache import clear_graphs, graph_path
    from olmkit.resolver._resolve import resolve, use_solver_backends
    from olmkit.resolver.request import (
        CONSTRAINTS_NOT_SATISFIABLE,
        ERROR_PREVENTED_RESOLUTION,
        ExplanationNode,
        InstalledCSV,
        Resolution,
        ResolutionRequest,
        SourceRef,
        Step,
        SubscriptionRef,
    )

__all__ = [
    "CONSTRAINTS_NOT_SATISFIABLE",
    "ERROR_PREVENTED_RESOLUTION",
    "ExplanationNode",
    "InstalledCSV",
    "Resolution",
    "ResolutionRequest",
    "SourceRef",
    "Step",
    "SubscriptionRef",
    "clear_graphs",
    "graph_path",
    "olmkit_resolve",
    "resolve",
    "use_solver_backends",
]

#: the names this package gives, by the module that defines them (imported on first use)
_HOMES = {
    **dict.fromkeys(
        (
            "CONSTRAINTS_NOT_SATISFIABLE",
            "ERROR_PREVENTED_RESOLUTION",
            "ExplanationNode",
            "InstalledCSV",
            "Resolution",
            "ResolutionRequest",
            "SourceRef",
            "Step",
            "SubscriptionRef",
        ),
        "olmkit.resolver.request",
    ),
    "clear_graphs": "olmkit.resolver._graph_cache",
    "graph_path": "olmkit.resolver._graph_cache",
    "resolve": "olmkit.resolver._resolve",
    "use_solver_backends": "olmkit.resolver._resolve",
    "Entry": "olmkit.resolver._build",
    "Problem": "olmkit.resolver._build",
    "explain": "olmkit.resolver.explain",
}


__getattr__ = lazy_names(__name__, _HOMES)


@hookimpl(trylast=True)
def olmkit_resolve(request: Any) -> Resolution | None:
    """The kernel's resolver (plugins wrap it to time or post-process resolutions)."""
    from olmkit.resolver.request import ResolutionRequest

    if not isinstance(request, ResolutionRequest):
        return None
    # this package's `resolve`, as before its names came on first use (a test may replace it)
    work = globals().get("resolve") or __getattr__("resolve")
    return work(request)  # type: ignore[no-any-return]
