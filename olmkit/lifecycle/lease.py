"""Leases: one writer at a time for work that must not run twice.

Several olmkit processes may run controllers on one store. Optimistic concurrency keeps
each object consistent, but resolving a namespace and creating its InstallPlan must not
be done by two processes at once (that would create two plans), and with leader election
(:mod:`olmkit.lifecycle.leader`) only one process runs the controllers at all. A
``coordination.k8s.io/v1`` Lease object, taken and renewed through resourceVersion
preconditions, decides who does it; a holder that died loses it after the lease duration.

The Lease's fields mean what client-go's leader election makes them mean:
``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime`` (when the holder took it),
``renewTime`` (its last renewal) and ``leaseTransitions`` (how often it changed hands);
times are ``MicroTime`` (RFC 3339 with six fractional digits, as the API server requires).

.. versionadded:: 0.1
"""

from __future__ import annotations

import math
import os
import socket
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from olmkit.lifecycle.kinds import LEASE
from olmkit.lifecycle.runtime import Clock
from olmkit.store import AlreadyExists, Conflict, NotFound, Store
from olmkit.timestamps import parse_time

__all__ = ["Lease", "micro_time", "parse_micro_time", "process_identity", "renew_time"]

_IDENTITY = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"
_MICRO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def process_identity() -> str:
    """This process's holder identity."""
    return _IDENTITY


def micro_time(seconds: float) -> str:
    """A Kubernetes ``MicroTime`` (``2026-01-01T00:00:00.000000Z``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime(_MICRO_FORMAT)


def parse_micro_time(text: str) -> float:
    """Seconds since the epoch of a ``MicroTime`` (or a plain RFC 3339 time); ValueError when malformed."""
    when = parse_time(text)
    if when is None:
        raise ValueError(f"not a Kubernetes time: {text!r}")
    return when.timestamp()


def renew_time(spec: Mapping[str, Any]) -> float | None:
    """A Lease spec's ``renewTime`` in seconds since the epoch; ``None`` when missing or malformed.

    .. versionadded:: 0.4
    """
    renewed = spec.get("renewTime")
    try:
        return parse_micro_time(renewed) if isinstance(renewed, str) else None
    except ValueError:
        return None


class Lease:
    """A named lease in a namespace.

    Args:
        store: the cluster store.
        namespace: where the Lease object lives.
        name: its name.
        clock: the time source.
        duration: seconds after the last renewal at which another holder may take it
            (``leaseDurationSeconds``, a whole number of seconds: a fraction rounds up).
        holder: this holder's identity (default: the process's).
        observe: measure another holder's lease from when this object first saw its latest
            renewal, on this process's clock, as client-go's leader election does (immune to
            clocks that disagree between machines, at the price of waiting a full duration
            after the first look); otherwise from the ``renewTime`` written in the Lease.
        hold: seconds after its own last renewal during which :meth:`acquire` finds the lease
            still held by this holder and sends nothing (``None``: every acquire reads and
            renews). Keep it well under ``duration``: the work done under the lease must end
            before another holder may take it (``duration`` after that renewal). With it, the
            holder also renews and releases the Lease as it last wrote it, without reading it
            first (a write in between makes that a conflict, and the Lease is read).

    :attr:`seen` is the Lease's spec as last read (who holds it).
    """

    def __init__(
        self,
        store: Store,
        namespace: str,
        name: str,
        clock: Clock,
        duration: float = 15,
        holder: str | None = None,
        *,
        observe: bool = False,
        hold: float | None = None,
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.name = name
        self.clock = clock
        self.duration = max(1, math.ceil(duration))
        self.holder = holder or process_identity()
        self.observe = observe
        self.hold = hold
        self.seen: dict[str, Any] = {}
        self._written: dict[str, Any] | None = None  # the Lease as this holder last wrote it (with hold)
        self._observed: tuple[tuple[Any, ...], float] | None = None

    @property
    def current_holder(self) -> str:
        """Who held the lease when it was last read (``""``: nobody)."""
        return str(self.seen.get("holderIdentity") or "")

    @staticmethod
    def _renewed(spec: dict[str, Any]) -> float:
        return renew_time(spec) or 0.0

    def _expired(self, spec: dict[str, Any], now: float) -> bool:
        duration = float(spec.get("leaseDurationSeconds") or self.duration)
        if self.observe:
            record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseTransitions"))
            if self._observed is None or self._observed[0] != record:
                self._observed = (record, now)
            return now >= self._observed[1] + duration
        return now >= self._renewed(spec) + duration

    def acquire(self) -> bool:
        """Take (or renew) the lease; ``False`` when another live holder has it or another writer was first.

        With ``hold``, a lease this holder renewed less than ``hold`` seconds ago is not read or
        written again, and an older one is renewed as this holder last wrote it.
        """
        now = self.clock.now()
        if self.hold is not None and self._written is not None:
            mine = self._written
            if 0 <= now - self._renewed(mine["spec"]) < self.hold:
                return True  # renewed recently enough: nobody may have taken it since
            spec = self._spec(now, acquired=mine["spec"]["acquireTime"], transitions=mine["spec"]["leaseTransitions"])
            try:
                self._wrote(self.store.update({**mine, "spec": spec}))
                return True
            except (Conflict, NotFound):
                self._written = None  # written by someone else since: read it
        try:
            current = self.store.get(LEASE.api_version, LEASE.kind, self.name, self.namespace)
        except NotFound:
            spec = self._spec(now, acquired=now, transitions=0)
            try:
                created = self.store.create(
                    {
                        "apiVersion": LEASE.api_version,
                        "kind": LEASE.kind,
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": spec,
                    }
                )
            except AlreadyExists:
                return False
            self._wrote(created)
            return True
        spec = dict(current.get("spec") or {})
        self.seen = spec
        holder = str(spec.get("holderIdentity") or "")
        if holder and holder != self.holder and not self._expired(spec, now):
            return False
        if holder == self.holder and self.hold is not None and 0 <= now - self._renewed(spec) < self.hold:
            self._written = current
            return True  # renewed recently enough: still ours, no write
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.holder:
            acquired = spec.get("acquireTime") or micro_time(now)
        else:
            acquired, transitions = micro_time(now), transitions + 1
        current["spec"] = self._spec(now, acquired=acquired, transitions=transitions)
        try:
            self._wrote(self.store.update(current))
        except (Conflict, NotFound):
            return False
        return True

    def _wrote(self, stored: dict[str, Any]) -> None:
        self.seen = dict(stored.get("spec") or {})
        if self.hold is not None:
            self._written = stored

    def _spec(self, now: float, *, acquired: float | str, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration,
            "acquireTime": acquired if isinstance(acquired, str) else micro_time(acquired),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        }

    def release(self) -> None:
        """Give the lease up (best effort): no holder, so the next candidate takes it at once."""
        mine, self._written = self._written, None
        if mine is not None and self._give_up(mine):
            return
        try:
            current = self.store.get(LEASE.api_version, LEASE.kind, self.name, self.namespace)
        except NotFound:
            return
        if (current.get("spec") or {}).get("holderIdentity") == self.holder:
            self._give_up(current)

    def _give_up(self, current: dict[str, Any]) -> bool:
        """Write ``current`` without a holder; whether it was written (not a conflict)."""
        now = micro_time(self.clock.now())
        spec = {
            **current["spec"],
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "renewTime": now,
            "acquireTime": now,
        }
        try:
            self.store.update({**current, "spec": spec})
        except Conflict:
            return False
        except NotFound:
            return True  # gone: nothing to give up
        return True
