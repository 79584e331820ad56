"""The install-strategy contract: how a CSV's workload is installed, checked and planned.

A plugin registers an :class:`~olmkit.types.InstallStrategy` whose ``installer`` is called
with an :class:`InstallContext` and returns an object with the :class:`Installer` methods.
The CSV controller calls ``requirements``, ``install`` and ``check``; the subscription
controller calls ``plan_objects`` to add the strategy's RBAC to an InstallPlan.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from olmkit.errors import OlmkitError

__all__ = [
    "OWNER_KIND_LABEL",
    "OWNER_LABEL",
    "OWNER_NAMESPACE_LABEL",
    "InstallContext",
    "Installer",
    "StrategyError",
    "StrategyStatus",
    "installer_for",
    "owner_labels",
    "strategy_name",
]

#: Labels that mark an object as belonging to a CSV (cluster-scoped objects cannot carry
#: an ownerReference to a namespaced owner; upstream OLM labels them the same way).
OWNER_LABEL = "olm.owner"
OWNER_NAMESPACE_LABEL = "olm.owner.namespace"
OWNER_KIND_LABEL = "olm.owner.kind"


def owner_labels(csv: Mapping[str, Any]) -> dict[str, str]:
    """The ownership labels of objects a CSV owns."""
    meta = csv["metadata"]
    return {OWNER_LABEL: meta["name"], OWNER_NAMESPACE_LABEL: meta.get("namespace", ""), OWNER_KIND_LABEL: csv["kind"]}


@attrs.frozen
class InstallContext:
    """What an installer may use.

    Args:
        store: the cluster store.
        now: the current time as a Kubernetes timestamp.
    """

    store: Any
    now: Callable[[], str]


@attrs.frozen
class StrategyStatus:
    """The health of a CSV's workload.

    Args:
        healthy: every component is up.
        message: what is missing when not healthy (``waiting for deployment X ...``).
        failed: the workload cannot become healthy without a change (fail now, do not wait).
    """

    healthy: bool
    message: str = ""
    failed: bool = False


@runtime_checkable
class Installer(Protocol):
    """Installs one strategy's workloads."""

    def plan_objects(self, csv: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Objects an InstallPlan creates before the CSV can install (service accounts, RBAC)."""
        ...

    def requirements(self, csv: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``status.requirementStatus`` entries for what the workload needs (``status`` ``Present`` when met)."""
        ...

    def install(self, csv: Mapping[str, Any]) -> None:
        """Create or update the workload (idempotent)."""
        ...

    def check(self, csv: Mapping[str, Any]) -> StrategyStatus:
        """How healthy the installed workload is."""
        ...


class StrategyError(OlmkitError):
    """A CSV names no install strategy, or one no plugin registers, or a malformed one."""


def strategy_name(csv: Mapping[str, Any]) -> str:
    """``spec.install.strategy`` of a CSV.

    Raises:
        StrategyError: it is missing.
    """
    install = (csv.get("spec") or {}).get("install") or {}
    name = install.get("strategy") if isinstance(install, Mapping) else None
    if not isinstance(name, str) or not name:
        raise StrategyError("spec.install.strategy is missing")
    return name


def installer_for(registry: Any, csv: Mapping[str, Any], context: InstallContext) -> Installer:
    """The installer of a CSV's strategy.

    Raises:
        StrategyError: the strategy is missing or no plugin registers it.
    """
    name = strategy_name(csv)
    strategy = registry.install_strategies.get(name)
    if strategy is None:
        known = ", ".join(sorted(registry.install_strategies)) or "none"
        raise StrategyError(f"install strategy {name!r} is not supported (known: {known})")
    installer: Installer = strategy.installer(context)
    return installer
