"""Leases: one writer at a time for work that must not run twice (resolving a namespace).

Several olmkit processes may run controllers on one store. Optimistic concurrency keeps
each object consistent, but resolving a namespace and creating its InstallPlan must not
be done by two processes at once (that would create two plans). A
``coordination.k8s.io/v1`` Lease object, taken and renewed through resourceVersion
preconditions, decides who does it; a holder that died loses it after the lease duration.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from olmkit.lifecycle.kinds import LEASE
from olmkit.lifecycle.runtime import Clock, parse_rfc3339, rfc3339
from olmkit.store import AlreadyExists, Conflict, NotFound, Store

__all__ = ["Lease", "process_identity"]

_IDENTITY = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def process_identity() -> str:
    """This process's holder identity."""
    return _IDENTITY


class Lease:
    """A named lease in a namespace.

    Args:
        store: the cluster store.
        namespace: where the Lease object lives.
        name: its name.
        clock: the time source.
        duration: seconds after the last renewal at which another holder may take it.
        holder: this holder's identity (default: the process's).
    """

    def __init__(
        self, store: Store, namespace: str, name: str, clock: Clock, duration: int = 15, holder: str | None = None
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.name = name
        self.clock = clock
        self.duration = duration
        self.holder = holder or process_identity()

    def _spec(self) -> dict[str, Any]:
        now = rfc3339(self.clock.now())
        return {"holderIdentity": self.holder, "leaseDurationSeconds": self.duration, "renewTime": now}

    def acquire(self) -> bool:
        """Take (or renew) the lease; ``False`` when another live holder has it."""
        try:
            current = self.store.get(LEASE.api_version, LEASE.kind, self.name, self.namespace)
        except NotFound:
            try:
                self.store.create(
                    {
                        "apiVersion": LEASE.api_version,
                        "kind": LEASE.kind,
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": self._spec(),
                    }
                )
            except AlreadyExists:
                return False
            return True
        spec = current.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.holder:
            renewed = spec.get("renewTime")
            expires = (parse_rfc3339(renewed) if renewed else 0.0) + float(
                spec.get("leaseDurationSeconds") or self.duration
            )
            if self.clock.now() < expires:
                return False
        current["spec"] = self._spec()
        try:
            self.store.update(current)
        except (Conflict, NotFound):
            return False
        return True

    def release(self) -> None:
        """Give the lease up (best effort)."""
        try:
            current = self.store.get(LEASE.api_version, LEASE.kind, self.name, self.namespace)
            if (current.get("spec") or {}).get("holderIdentity") != self.holder:
                return
            current["spec"] = {**current["spec"], "holderIdentity": ""}
            self.store.update(current)
        except (Conflict, NotFound):
            pass
