"""Leader election: of several ``olmkit run`` processes on one store, one runs the controllers.

The others stand by and take over when the leader stops renewing its lease. The lock is a
``coordination.k8s.io/v1`` Lease (:class:`~olmkit.lifecycle.lease.Lease`) written through
the store interface, with client-go's semantics:

* a candidate tries to take the Lease every ``retry_period`` (jittered by up to 20 %); it
  may take it when nobody holds it, or when the holder has not renewed it for
  ``lease_duration`` as measured on the candidate's own clock from when it saw the last
  renewal (clocks of different machines never compare);
* the leader renews every ``retry_period`` on a thread of its own, so a long reconcile
  does not delay it; when it has not managed to renew for ``renew_deadline`` (or sees
  another holder) it stops leading: the controllers stop after the reconcile in progress
  and the process stands by again;
* a leader that stops on request gives the Lease up (no holder), so a standby takes over
  at its next try instead of waiting for the lease to expire.

``lease_duration > renew_deadline > 1.2 * retry_period``, as client-go requires: a leader
gives up before anyone else may take over.

.. versionadded:: 0.3
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from olmkit.errors import OlmkitError, UsageError
from olmkit.lifecycle.kinds import LEASE
from olmkit.lifecycle.lease import Lease, process_identity, renew_time
from olmkit.lifecycle.runtime import Clock, RealClock
from olmkit.store import NotFound, Store, StoreError

__all__ = ["DEFAULT_LEASE_NAME", "LeaderActive", "LeaderElection", "LeaderElector", "Role", "live_leader"]

#: The Lease ``olmkit run`` processes elect their leader with (in the global catalog namespace).
DEFAULT_LEASE_NAME: Final = "olmkit-run"

Role = Literal["candidate", "leader", "standby"]
_JITTER: Final = 1.2


@attrs.frozen
class LeaderElection:
    """How to elect: the Lease and the timings (seconds; client-go's defaults).

    Raises:
        UsageError: the timings do not satisfy ``lease_duration > renew_deadline > 1.2 * retry_period``.
    """

    namespace: str
    name: str = DEFAULT_LEASE_NAME
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __attrs_post_init__(self) -> None:
        if self.retry_period <= 0:
            raise UsageError("--leader-elect-retry-period must be positive")
        if not self.lease_duration > self.renew_deadline:
            raise UsageError("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
        if not self.renew_deadline > _JITTER * self.retry_period:
            raise UsageError("--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period")

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@attrs.define(auto_exc=True, eq=False)
class LeaderActive(OlmkitError):
    """Another process leads: it holds the election's Lease and renewed it within its duration.

    ``olmkit reconcile`` refuses to run beside a leading ``olmkit run`` (exit code 3) unless
    told to (``--force``).

    Args:
        lease: ``namespace/name`` of the Lease.
        holder: the leader's identity (``HOST/PID/ID``).
        renewed_ago: seconds since its last renewal, on this process's clock (``None``: unknown).
        duration: the Lease's ``leaseDurationSeconds``.

    .. versionadded:: 0.4
    """

    lease: str = attrs.field(default="", kw_only=True)
    holder: str = attrs.field(default="", kw_only=True)
    renewed_ago: float | None = attrs.field(default=None, kw_only=True)
    duration: float = attrs.field(default=0.0, kw_only=True)
    exit_code: int = attrs.field(default=3, kw_only=True)

    def __str__(self) -> str:
        ago = "renewal time unknown" if self.renewed_ago is None else f"renewed {max(self.renewed_ago, 0.0):.1f}s ago"
        return (
            f"lease {self.lease} is held by {self.holder} ({ago}, lease duration {self.duration:g}s): "
            "an `olmkit run --leader-elect` runs the controllers on this store. " + (self.message or "")
        ).rstrip()


def live_leader(store: Store, namespace: str, name: str, now: float) -> LeaderActive | None:
    """Who leads by the election Lease ``namespace/name``, as :class:`LeaderActive`; ``None`` when nobody does.

    Nobody leads when the Lease does not exist, names no holder (released) or was last renewed
    ``leaseDurationSeconds`` or more before ``now``. A one-shot look cannot observe renewals as a
    candidate does (:class:`~olmkit.lifecycle.lease.Lease` with ``observe``): it compares the
    Lease's ``renewTime`` with this process's clock, so clocks far apart can err either way; a
    Lease without a readable ``renewTime`` counts as held.

    Raises:
        StoreError: the Lease cannot be read.
    """
    try:
        lease = store.get(LEASE.api_version, LEASE.kind, name, namespace)
    except NotFound:
        return None
    spec = lease.get("spec") or {}
    holder = str(spec.get("holderIdentity") or "")
    if not holder:
        return None
    try:
        duration = float(spec.get("leaseDurationSeconds") or 0)
    except (TypeError, ValueError):
        duration = 0.0
    renewed = renew_time(spec)
    ago = None if renewed is None else now - renewed
    if ago is not None and duration > 0 and ago >= duration:
        return None
    return LeaderActive(lease=f"{namespace}/{name}", holder=holder, renewed_ago=ago, duration=duration)


class LeaderElector:
    """One process's part in an election.

    Args:
        store: the cluster store (the Lease lives there).
        config: the Lease and timings.
        log: ``log(message, **fields)`` for what happens (became leader, standing by, lost the lease).
        identity: this process's holder identity (default :func:`~olmkit.lifecycle.lease.process_identity`).
        clock: the time source of the Lease's timestamps.
    """

    def __init__(
        self,
        store: Store,
        config: LeaderElection,
        log: Callable[..., None],
        *,
        identity: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config
        self.identity = identity or process_identity()
        self.lease = Lease(
            store,
            config.namespace,
            config.name,
            clock or RealClock(),
            config.lease_duration,
            self.identity,
            observe=True,
        )
        self.log = log
        self.role: Role = "candidate"
        self.terms = 0
        self._lost = threading.Event()
        self._stop_renewing = threading.Event()
        self._renewer: threading.Thread | None = None
        self._last_renewal = 0.0
        self._lock = threading.Lock()

    # -- state, for /healthz, /readyz and the logs ---------------------------------

    @property
    def leading(self) -> bool:
        return self.role == "leader" and not self._lost.is_set()

    @property
    def holder(self) -> str:
        """The holder as last seen (this process's identity while it leads)."""
        return self.lease.current_holder

    def describe(self) -> str:
        """``leader (lease olm/olmkit-run)`` or ``standby (lease olm/olmkit-run held by HOST/PID/ID)``."""
        if self.leading:
            return f"leader (lease {self.config.ref})"
        held = f" held by {self.holder}" if self.holder and self.holder != self.identity else ""
        return f"standby (lease {self.config.ref}{held})"

    def health_problem(self) -> str | None:
        """A leader whose renewals have stopped for longer than the lease duration is unhealthy."""
        with self._lock:
            stale = self.leading and time.monotonic() - self._last_renewal > self.config.lease_duration
        return (
            f"leader of {self.config.ref} has not renewed it for over {self.config.lease_duration:g}s"
            if stale
            else None
        )

    # -- the election -------------------------------------------------------------

    def _try(self) -> bool:
        try:
            return self.lease.acquire()
        except StoreError as exc:
            self.log(f"leader election: cannot read or write lease {self.config.ref}: {exc}", level="warning")
            return False

    def wait_to_lead(self, should_stop: Callable[[], bool]) -> bool:
        """Try to take the Lease until this process leads (``True``) or ``should_stop()`` (``False``)."""
        said: str | None = None
        while not should_stop():
            if self._try():
                self._become_leader()
                return True
            if self.holder != said:
                said = self.holder
                self.role = "standby"
                self.log(
                    f"leader election: standing by; lease {self.config.ref} is held by {said or 'nobody'}",
                    role="standby",
                    holder=said,
                    lease=self.config.ref,
                )
            _sleep(self.config.retry_period * random.uniform(1.0, _JITTER), should_stop)
        return False

    def _become_leader(self) -> None:
        self.role = "leader"
        self.terms += 1
        self._lost.clear()
        self._stop_renewing.clear()
        with self._lock:
            self._last_renewal = time.monotonic()
        spec = self.lease.seen
        self.log(
            f"leader election: leading (lease {self.config.ref}, transitions {spec.get('leaseTransitions', 0)})",
            role="leader",
            holder=self.identity,
            lease=self.config.ref,
            transitions=spec.get("leaseTransitions", 0),
        )
        self._renewer = threading.Thread(target=self._renew_loop, name="olmkit-lease-renewal", daemon=True)
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop_renewing.wait(self.config.retry_period):
            if self._try():
                with self._lock:
                    self._last_renewal = time.monotonic()
                continue
            with self._lock:
                silent = time.monotonic() - self._last_renewal
            taken = self.holder not in ("", self.identity)
            if taken or silent > self.config.renew_deadline:
                why = f"{self.holder} holds it" if taken else f"not renewed for {silent:.1f}s"
                self.log(
                    f"leader election: lost lease {self.config.ref} ({why}): stopping the controllers",
                    level="warning",
                    role="standby",
                    holder=self.holder,
                    lease=self.config.ref,
                )
                self._lost.set()
                return

    @property
    def lost(self) -> bool:
        """The leader failed to renew (the controllers must stop)."""
        return self._lost.is_set()

    def stop_leading(self) -> None:
        """Stop renewing; give the Lease up unless it was lost (then it is not ours to give)."""
        self._stop_renewing.set()
        if self._renewer is not None:
            self._renewer.join(timeout=self.config.renew_deadline)
            self._renewer = None
        if self.role == "leader" and not self.lost:
            try:
                self.lease.release()
            except StoreError:
                pass  # it expires on its own
            else:
                self.log(f"leader election: released lease {self.config.ref}", role="standby", lease=self.config.ref)
        self.role = "standby"

    def run(self, lead: Callable[[Callable[[], bool]], Any], should_stop: Callable[[], bool]) -> None:
        """Stand by, lead (``lead(stop_leading)`` runs the controllers until its argument says stop), repeat.

        Returns when ``should_stop()``; a lost lease ends the term and the process stands by again.
        """
        while self.wait_to_lead(should_stop):
            try:
                lead(lambda: should_stop() or self.lost)
            finally:
                self.stop_leading()
            if should_stop():
                return


def _sleep(seconds: float, should_stop: Callable[[], bool]) -> None:
    deadline = time.monotonic() + seconds
    while not should_stop():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))
