"""The kernel's own controllers: OLM's Catalog Operator and OLM Operator.

Registered through ``olmkit_controllers`` like any plugin's; the modules are imported
only when a run of the lifecycle starts.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from olmkit import hookimpl

__all__ = ["olmkit_controllers"]


@hookimpl(tryfirst=True)
def olmkit_controllers(context: Any) -> Iterator[Any]:
    """CatalogSources, Subscriptions (namespace resolution), InstallPlans, CSVs, OperatorGroups and their members."""
    from olmkit.lifecycle.catalogsource import CatalogSourceController
    from olmkit.lifecycle.csv import ClusterServiceVersionController
    from olmkit.lifecycle.installplan import InstallPlanController
    from olmkit.lifecycle.members import MemberController, OLMConfigController
    from olmkit.lifecycle.operatorgroups import OperatorGroupController
    from olmkit.lifecycle.subscriptions import SubscriptionController

    yield CatalogSourceController(context)
    yield SubscriptionController(context)
    yield InstallPlanController(context)
    yield ClusterServiceVersionController(context)
    yield OperatorGroupController(context)
    members = MemberController(context)
    yield members
    yield OLMConfigController(context, members)
