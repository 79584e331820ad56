"""Creating and upgrading CustomResourceDefinitions from InstallPlan steps.

A new CRD is created. An existing one is updated only as the CRD upgrade rules allow
(:func:`olmkit.lifecycle.crds.plan_crd_upgrade`): who else owns it, whether its served
versions survive, whether existing custom resources still validate. A refusal fails the
step with every problem named.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olmkit.lifecycle.kinds import CRD
from olmkit.store import AlreadyExists, NotFound

if TYPE_CHECKING:
    from olmkit.lifecycle.context import LifecycleContext

__all__ = ["apply_crd", "crd_owners"]


def crd_owners(csvs: Iterable[Mapping[str, Any]], crd_name: str) -> list[str]:
    """``namespace/name`` of the CSVs (of ``csvs``) that own the CRD ``crd_name``."""
    owners = []
    for csv in csvs:
        owned = (((csv.get("spec") or {}).get("customresourcedefinitions") or {}).get("owned")) or ()
        if any(isinstance(d, Mapping) and d.get("name") == crd_name for d in owned):
            owners.append(f"{csv['metadata']['namespace']}/{csv['metadata']['name']}")
    return owners


def apply_crd(
    ctx: LifecycleContext,
    namespace: str,
    installing_csv: str,
    replacing: str | None,
    crd: dict[str, Any],
    csvs: Callable[[], Sequence[Mapping[str, Any]]],
) -> str:
    """Create or upgrade a CRD for the CSV ``namespace/installing_csv``; returns ``Created`` or ``Present``.

    ``replacing`` is the CSV the installing one replaces (neither counts as another owner);
    ``csvs()`` returns every CSV in the cluster (called only for an upgrade; the caller may
    list them once for a whole InstallPlan).

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

    everything = csvs()
    # the installing CSV and the one it replaces (in its namespace) are not other owners
    ignore = {f"{namespace}/{installing_csv}", f"{namespace}/{replacing}"}
    owners = [o for o in crd_owners(everything, name) if o not in ignore]
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
    unchanged = merged == {k: v for k, v in existing.items() if k != "status"}
    # an update that changes nothing is no write, but it is still a request to an API server
    stored = existing if unchanged else store.update(merged)
    if status is not None and status != stored.get("status"):
        store.update_status({**stored, "status": status})
    return "Present"
