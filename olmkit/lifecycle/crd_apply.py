"""Creating and upgrading CustomResourceDefinitions from InstallPlan steps.

A new CRD is created. An existing one is updated only as the CRD upgrade rules allow
(:func:`olmkit.lifecycle.crds.plan_crd_upgrade`): who else owns it, whether its served
versions survive, whether existing custom resources still validate. A refusal fails the
step with every problem named.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from olmkit.lifecycle.kinds import CRD, CSV
from olmkit.store import AlreadyExists, NotFound

if TYPE_CHECKING:
    from olmkit.lifecycle.context import LifecycleContext

__all__ = ["apply_crd", "crd_owners"]


def crd_owners(ctx: LifecycleContext, crd_name: str) -> list[str]:
    """``namespace/name`` of every CSV (in any namespace) that owns the CRD ``crd_name``."""
    owners = []
    for csv in ctx.store.list(CSV.api_version, CSV.kind):
        owned = (((csv.get("spec") or {}).get("customresourcedefinitions") or {}).get("owned")) or ()
        if any(isinstance(d, Mapping) and d.get("name") == crd_name for d in owned):
            owners.append(f"{csv['metadata']['namespace']}/{csv['metadata']['name']}")
    return owners


def apply_crd(ctx: LifecycleContext, installing_csv: str, crd: dict[str, Any]) -> str:
    """Create or upgrade a CRD for the CSV ``installing_csv``; returns ``Created`` or ``Present``.

    Raises:
        CRDUpgradeError: the upgrade is not allowed (the message lists why).
    """
    store = ctx.store
    name = crd["metadata"]["name"]
    try:
        existing = store.get(CRD.api_version, CRD.kind, name)
    except NotFound:
        try:
            store.create(crd)
        except AlreadyExists:
            existing = store.get(CRD.api_version, CRD.kind, name)
        else:
            return "Created"
    from olmkit.lifecycle.crds import plan_crd_upgrade

    replacing = None
    for csv in store.list(CSV.api_version, CSV.kind):
        if csv["metadata"]["name"] == installing_csv:
            replacing = (csv.get("spec") or {}).get("replaces")
            break
    ignore = {installing_csv, replacing}
    owners = [o for o in crd_owners(ctx, name) if o.rpartition("/")[2] not in ignore]
    group = (existing.get("spec") or {}).get("group", "")
    kind = ((existing.get("spec") or {}).get("names") or {}).get("kind", "")

    def list_resources(version: str) -> Iterable[dict[str, Any]]:
        return list(store.list(f"{group}/{version}", kind))

    upgrade = plan_crd_upgrade(
        existing,
        crd,
        owners=owners,
        installing_csv=installing_csv,
        replacing_csv=replacing,
        list_resources=list_resources,
    )
    upgrade.raise_for_problems()
    merged = dict(upgrade.merged)
    status = merged.pop("status", None)
    stored = store.update(merged)
    if status is not None and status != stored.get("status"):
        store.update_status({**stored, "status": status})
    return "Present"
