"""Where a Subscription stands: installed, failed (and why), waiting for approval, or pending.

``reconcile --until-stable``, ``install --wait`` and ``run-bundle`` ask this instead of "is
there work left?": a cluster can be stable with every Subscription failed.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from olmkit.lifecycle.kinds import CSV, INSTALL_PLAN, SUBSCRIPTION
from olmkit.lifecycle.status import status_of
from olmkit.store import NotFound, Object, Store

__all__ = ["FAILURE_CONDITIONS", "SubscriptionOutcome", "subscription_outcome", "subscription_outcomes"]

#: Subscription conditions that mean it cannot make progress until something changes.
FAILURE_CONDITIONS: Final = ("ResolutionFailed", "BundleUnpackFailed", "InstallPlanFailed")

State = Literal["installed", "failed", "approval", "pending"]


@attrs.frozen
class SubscriptionOutcome:
    """One Subscription's standing.

    Args:
        namespace: its namespace.
        name: its name.
        state: ``installed`` (its CSV Succeeded, no upgrade under way), ``failed``,
            ``approval`` (its InstallPlan waits for manual approval) or ``pending``.
        message: why (the failing condition's reason and message, the CSV's phase ...).
        csv: the CSV it installed or is installing, if any.
    """

    namespace: str
    name: str
    state: State
    message: str
    csv: str | None = None

    @property
    def ref(self) -> str:
        """``NAMESPACE/NAME``."""
        return f"{self.namespace}/{self.name}"


def _get(store: Store, kind: Any, name: str, namespace: str) -> Object | None:
    try:
        return store.get(kind.api_version, kind.kind, name, namespace)
    except NotFound:
        return None


def subscription_outcome(store: Store, sub: Mapping[str, Any]) -> SubscriptionOutcome:
    """Where ``sub`` stands, from its status, its InstallPlan and its CSV."""
    meta = sub["metadata"]
    namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
    status = status_of(sub)

    def outcome(state: State, message: str, csv: str | None = None) -> SubscriptionOutcome:
        return SubscriptionOutcome(namespace, name, state, message, csv)

    for condition in status.get("conditions") or ():
        if condition.get("type") in FAILURE_CONDITIONS and condition.get("status") == "True":
            reason = condition.get("reason") or condition["type"]
            return outcome("failed", f"{reason}: {condition.get('message') or ''}".rstrip(": "))
    installed, current = status.get("installedCSV"), status.get("currentCSV")
    target = current or installed
    csv = _get(store, CSV, str(target), namespace) if target else None
    csv_status = status_of(csv) if csv is not None else {}
    if csv is not None:
        phase, reason = csv_status.get("phase"), csv_status.get("reason")
        if phase == "Failed":
            detail = csv_status.get("message") or ""
            return outcome("failed", f"csv {target}: Failed ({reason}): {detail}".rstrip(": "), str(target))
        if phase == "Succeeded" and installed and installed == target:
            return outcome("installed", f"csv {installed}: Succeeded", str(installed))
    ref = status.get("installPlanRef")
    if isinstance(ref, Mapping) and ref.get("name"):
        plan = _get(store, INSTALL_PLAN, str(ref["name"]), namespace)
        if plan is not None:
            phase = status_of(plan).get("phase")
            if phase == "RequiresApproval":
                return outcome(
                    "approval",
                    f"installplan {ref['name']} waits for approval (olmkit approve installplan/{ref['name']} "
                    f"-n {namespace})",
                    str(target) if target else None,
                )
            if phase == "Failed":
                return outcome("failed", f"installplan {ref['name']} Failed", str(target) if target else None)
    if csv is not None:
        phase = csv_status.get("phase") or "no phase yet"
        return outcome("pending", f"csv {target}: {phase}", str(target))
    return outcome("pending", f"state {status.get('state') or 'unknown'}; no CSV yet")


def subscription_outcomes(store: Store, namespace: str | None = None) -> list[SubscriptionOutcome]:
    """The outcome of every Subscription in ``namespace`` (``None``: all namespaces)."""
    return [
        subscription_outcome(store, sub) for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace)
    ]
