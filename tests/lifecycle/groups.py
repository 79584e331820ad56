"""Helpers of the OperatorGroup tests: namespaces, groups, installs (the ``make`` fixture is in conftest)."""

from __future__ import annotations

from typing import Any

from tests.lifecycle.harness import Cluster

OG = "operators.coreos.com/v1"


def namespace(cluster: Cluster, name: str, **labels: str) -> None:
    """Create or relabel a Namespace."""
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
    current = cluster.get("ns", name, None)
    if (current["metadata"].get("labels") or {}) != labels:
        cluster.store.update({**current, "metadata": {**current["metadata"], "labels": labels}})


def group(cluster: Cluster, ns: str = "operators", name: str = "og", **spec: Any) -> None:
    """Create an OperatorGroup, or replace the spec of an existing one."""
    cluster.apply(
        {"apiVersion": OG, "kind": "OperatorGroup", "metadata": {"name": name, "namespace": ns}, "spec": spec}
    )


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def reason(cluster: Cluster, csv: str, ns: str = "operators") -> tuple[str, str, str]:
    status = cluster.get("csv", csv, ns).get("status") or {}
    return status.get("phase"), status.get("reason"), status.get("message")


def install(cluster: Cluster, package: str, ns: str = "operators") -> None:
    cluster.subscribe(package, source="test", namespace=ns)
    cluster.reconcile()
