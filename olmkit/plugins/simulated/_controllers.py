"""The simulation controllers (see :mod:`olmkit.plugins.simulated`).

Imported when a lifecycle asks for controllers: registering the plugin imports neither this
nor the lifecycle runtime and store it builds on.
"""

from __future__ import annotations

from typing import Any, Final

from olmkit.lifecycle.kinds import CRD, DEPLOYMENT
from olmkit.lifecycle.runtime import DONE, Controller, Result, WatchSpec
from olmkit.lifecycle.status import set_condition
from olmkit.store import NotFound

__all__ = ["NEVER_READY", "SIMULATE_ANNOTATION", "SimulatedApiServer", "SimulatedKubelet"]

SIMULATE_ANNOTATION: Final = "olmkit.io/simulate"
NEVER_READY: Final = "never-ready"


class SimulatedApiServer(Controller):
    """Establishes CustomResourceDefinitions."""

    name = "simulated-apiserver"

    def __init__(self, context: Any) -> None:
        self.ctx = context
        self.watches = (WatchSpec(CRD.api_version, CRD.kind),)

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        try:
            crd = store.get(CRD.api_version, CRD.kind, name)
        except NotFound:
            return DONE
        spec = crd.get("spec") or {}
        status = dict(crd.get("status") or {})
        now = self.ctx.now()
        conditions = set_condition(
            status.get("conditions"),
            "NamesAccepted",
            "True",
            reason="NoConflicts",
            message="no conflicts found",
            now=now,
        )
        conditions = set_condition(
            conditions,
            "Established",
            "True",
            reason="InitialNamesAccepted",
            message="the initial names have been accepted",
            now=now,
        )
        versions = spec.get("versions") or ([{"name": spec["version"], "storage": True}] if spec.get("version") else [])
        storage = [v.get("name") for v in versions if isinstance(v, dict) and v.get("storage")]
        stored = list(status.get("storedVersions") or ())
        stored += [v for v in storage if v not in stored]
        new = {**status, "conditions": conditions, "acceptedNames": spec.get("names") or {}, "storedVersions": stored}
        if new != crd.get("status"):
            store.update_status({**crd, "status": new})
        return DONE


class SimulatedKubelet(Controller):
    """Marks Deployments rolled out and available."""

    name = "simulated-kubelet"

    def __init__(self, context: Any) -> None:
        self.ctx = context
        self.watches = (WatchSpec(DEPLOYMENT.api_version, DEPLOYMENT.kind),)

    def reconcile(self, namespace: str, name: str) -> Result | None:
        store = self.ctx.store
        try:
            dep = store.get(DEPLOYMENT.api_version, DEPLOYMENT.kind, name, namespace)
        except NotFound:
            return DONE
        spec = dep.get("spec") or {}
        template = spec.get("template") or {}
        annotations = (template.get("metadata") or {}).get("annotations") or {}
        replicas = spec.get("replicas", 1)
        replicas = replicas if isinstance(replicas, int) else 1
        ready = annotations.get(SIMULATE_ANNOTATION) != NEVER_READY
        now = self.ctx.now()
        status = dict(dep.get("status") or {})
        conditions = set_condition(
            status.get("conditions"),
            "Available",
            "True" if ready else "False",
            reason="MinimumReplicasAvailable" if ready else "MinimumReplicasUnavailable",
            message="Deployment has minimum availability."
            if ready
            else "Deployment does not have minimum availability.",
            now=now,
        )
        conditions = set_condition(
            conditions,
            "Progressing",
            "True",
            reason="NewReplicaSetAvailable" if ready else "ReplicaSetUpdated",
            message=f'ReplicaSet "{name}" has successfully progressed.'
            if ready
            else f'ReplicaSet "{name}" is progressing.',
            now=now,
        )
        new = {
            **status,
            "observedGeneration": dep["metadata"].get("generation", 1),
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": replicas if ready else 0,
            "availableReplicas": replicas if ready else 0,
            "unavailableReplicas": 0 if ready else replicas,
            "conditions": conditions,
        }
        if new != dep.get("status"):
            store.update_status({**dep, "status": new})
        return DONE
