"""The controller runtime: level-triggered reconcile loops over the cluster store.

A :class:`Controller` names the kinds it watches and maps each change to the keys it
reconciles; :meth:`Controller.reconcile` reads the current state afresh and moves it one
step towards the desired state (it never trusts the event that woke it). The
:class:`ControllerManager` feeds store watches into one :class:`WorkQueue` and runs the
reconciles:

* a key is queued at most once at a time (changes coalesce);
* a failed reconcile is retried with per-key exponential backoff, a conflict (someone
  else wrote in between) likewise, starting quicker;
* a reconcile may ask to run again after a delay: *pending* work (waiting for a
  Deployment, an install timeout) or a *resync* (a catalog's poll interval), which does
  not keep :meth:`ControllerManager.run_until_stable` from returning.

The manager is single-threaded and processes keys in a fixed order; with a
:class:`FakeClock` it is fully deterministic (the clock jumps to the next due key when
nothing else is ready), which is what the tests use. ``olmkit run`` is the same loop
without an end, waiting on the store's watches when idle.

.. versionadded:: 0.1
"""

from __future__ import annotations

import copy
import heapq
import itertools
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

import attrs

from olmkit.errors import OlmkitError, PluginError
from olmkit.store import Conflict, Expired, Object, Store, StoreError, WatchEvent, group_of

__all__ = [
    "Clock",
    "Controller",
    "ControllerManager",
    "FakeClock",
    "Key",
    "RealClock",
    "Reporter",
    "Result",
    "RunOutcome",
    "WatchSpec",
    "WorkQueue",
    "parse_rfc3339",
    "rfc3339",
]


# --------------------------------------------------------------------------- clocks


class Clock(Protocol):
    """Where controllers get the time from (seconds since the epoch)."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The wall clock."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class FakeClock:
    """A clock that moves only when told to (tests, deterministic runs)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        if seconds > 0:
            self._now += seconds


_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def rfc3339(seconds: float) -> str:
    """A Kubernetes timestamp (``2026-01-01T00:00:00Z``)."""
    return datetime.fromtimestamp(seconds, UTC).strftime(_TIME_FORMAT)


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch of a Kubernetes timestamp; raises ValueError when malformed."""
    return datetime.strptime(text, _TIME_FORMAT).replace(tzinfo=UTC).timestamp()


# --------------------------------------------------------------------------- keys and results


@attrs.frozen(order=True)
class Key:
    """What a controller reconciles: an object (or a namespace) by namespace and name."""

    controller: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.controller}:{where}"


@attrs.frozen
class Result:
    """What a reconcile asks for after it ran.

    Args:
        requeue_after: run the key again after this many seconds.
        resync: the requeue is a periodic re-check, not unfinished work (it does not keep
            :meth:`ControllerManager.run_until_stable` from returning).
        waiting: a short description of what the key waits for (shown when a run ends
            with work still pending).
    """

    requeue_after: float | None = None
    resync: bool = False
    waiting: str = ""


DONE = Result()

#: reconciles between two polls of the watches while the queue still has ready keys
POLL_EVERY = 16
#: seconds without a change a store with an API server behind it must stay quiet before a run
#: calls it stable: its watch events (of this run's own writes, and of what the server does in
#: answer, such as establishing a CRD) arrive after the writes, not with them
SETTLE = 1.0
#: the same, when the server's latest resourceVersion must also stay where it is meanwhile
#: (:meth:`~olmkit.store.Store.server_resource_version`)
QUIET = 0.2

Mapper = Callable[[WatchEvent], Iterable[tuple[str, str]]]


@attrs.frozen
class WatchSpec:
    """A kind a controller watches and how a change maps to ``(namespace, name)`` keys.

    ``mapper=None`` means the changed object's own namespace and name.
    """

    api_version: str
    kind: str
    mapper: Mapper | None = None


class Controller:
    """Base class of controllers. Subclasses set ``name`` and ``watches`` and implement ``reconcile``."""

    name: str = ""
    watches: Sequence[WatchSpec] = ()

    def reconcile(self, namespace: str, name: str) -> Result | None:
        """Move the state of one key towards the desired state; return what to do next."""
        raise NotImplementedError

    def close(self) -> None:
        """The run is over: give up what the controller holds in the store (Leases ...); nothing by default."""


class Reporter:
    """Receives what the manager does; every callback does nothing by default."""

    def on_reconcile(self, key: Key, seconds: float, result: Result | None) -> None:
        """A reconcile finished."""

    def on_error(self, key: Key, error: BaseException, attempt: int, retry_in: float) -> None:
        """A reconcile raised; it will be retried."""

    def on_event(self, message: str) -> None:
        """A controller reported something a person watching would want to see."""


# --------------------------------------------------------------------------- the queue


class WorkQueue:
    """Keys to reconcile: ready ones in FIFO order, delayed ones by due time.

    Args:
        clock: the time source.
        base_backoff: first retry delay after a failure (doubles per failure of the key).
        max_backoff: the longest retry delay.
    """

    def __init__(self, clock: Clock, base_backoff: float = 0.05, max_backoff: float = 60.0) -> None:
        self.clock = clock
        self.base_backoff = base_backoff
        self.max_backoff = max_backoff
        self._ready: deque[Key] = deque()
        self._queued: set[Key] = set()
        self._delayed: list[tuple[float, int, Key]] = []
        self._due: dict[Key, tuple[float, bool]] = {}
        self._failures: dict[Key, int] = {}
        self._counter = itertools.count()

    def add(self, key: Key) -> None:
        """Queue a key now (no-op when it is already queued)."""
        if key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)

    def add_after(self, key: Key, delay: float, *, resync: bool = False) -> None:
        """Queue a key after ``delay`` seconds (an earlier due time wins)."""
        if delay <= 0:
            self.add(key)
            return
        due = self.clock.now() + delay
        known = self._due.get(key)
        if known is not None and known[0] <= due:
            if known[1] and not resync:  # keep the earlier time, but it now counts as pending work
                self._due[key] = (known[0], False)
            return
        self._due[key] = (due, resync)
        heapq.heappush(self._delayed, (due, next(self._counter), key))

    def add_rate_limited(self, key: Key) -> float:
        """Queue a key after its backoff delay; returns the delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(self.base_backoff * 2.0**failures, self.max_backoff)
        self.add_after(key, delay)
        return delay

    def forget(self, key: Key) -> None:
        """The key succeeded: reset its backoff."""
        self._failures.pop(key, None)

    def cancel_delayed(self, key: Key) -> None:
        """Drop the key's delayed entry (a reconcile that just ran decides what comes next)."""
        self._due.pop(key, None)

    def failures(self, key: Key) -> int:
        return self._failures.get(key, 0)

    def depth(self) -> int:
        """How many keys wait: ready ones plus delayed ones (retries, pending work, resyncs)."""
        return len(self._ready) + len(self._due)

    def _promote(self) -> None:
        now = self.clock.now()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            known = self._due.get(key)
            if known is None or known[0] != due:
                continue  # superseded by an earlier due time
            del self._due[key]
            self.add(key)

    def pop(self) -> Key | None:
        """The next ready key, or ``None``."""
        self._promote()
        if not self._ready:
            return None
        key = self._ready.popleft()
        self._queued.discard(key)
        return key

    def next_due(self, *, pending_only: bool = False) -> float | None:
        """When the earliest delayed key is due (``pending_only``: ignoring resyncs)."""
        times = [due for due, resync in self._due.values() if not (pending_only and resync)]
        return min(times, default=None)

    def has_ready(self) -> bool:
        self._promote()
        return bool(self._ready)

    def pending_keys(self) -> list[Key]:
        """Keys ready or delayed as unfinished work (not resyncs)."""
        return sorted(set(self._ready) | {k for k, (_, resync) in self._due.items() if not resync})


# --------------------------------------------------------------------------- the manager


@attrs.frozen
class RunOutcome:
    """How a run ended: ``stable`` (nothing left to do) or not, and what was still pending."""

    stable: bool
    reconciles: int
    pending: tuple[str, ...] = ()


class ControllerManager:
    """Runs controllers over one store.

    Args:
        store: the cluster store.
        controllers: the controllers, in the order their keys are processed when due together.
        clock: the time source (a :class:`FakeClock` makes runs deterministic).
        reporter: receives progress callbacks.
        context: what the controllers share; with a plugin manager (``context.pm``), every
            reconcile is passed to the ``olmkit_reconciled`` hook and a plugin's exception is
            blamed on it.
    """

    def __init__(
        self,
        store: Store,
        controllers: Sequence[Controller],
        *,
        clock: Clock | None = None,
        reporter: Reporter | None = None,
        context: Any = None,
    ) -> None:
        self.store = store
        self.context = context
        self._reconciled = getattr(getattr(getattr(context, "pm", None), "hook", None), "olmkit_reconciled", None)
        self.clock = clock or RealClock()
        self.reporter = reporter or Reporter()
        self.controllers = {c.name: c for c in controllers}
        if len(self.controllers) != len(controllers):
            raise OlmkitError("two controllers have the same name")
        self.queue = WorkQueue(self.clock)
        self._waiting: dict[Key, str] = {}
        # one watch per kind, dispatched to every controller watching it
        self._routes: dict[tuple[str, str], list[tuple[Controller, Mapper | None]]] = {}
        for controller in controllers:
            for spec in controller.watches:
                self._routes.setdefault((spec.api_version, spec.kind), []).append((controller, spec.mapper))
        self._versions: dict[tuple[str, str], str | None] = dict.fromkeys(self._routes)
        #: the routes of each (API group, kind), for reading changes across kinds
        self._route_kinds: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for route in self._routes:
            self._route_kinds.setdefault((group_of(route[0]), route[1]), []).append(route)
        self._polled_at: str | None = None
        #: the store answered a read across kinds: later polls start with one
        self._across = False
        self._quiet_at: str | None = None  # the server's resourceVersion when last seen settled
        self._polled_count = -POLL_EVERY
        self.reconciles = 0

    # -- events -------------------------------------------------------------------

    def _dispatch(self, route: tuple[str, str], event: WatchEvent) -> None:
        for controller, mapper in self._routes[route]:
            if mapper is None:
                meta = event.object.get("metadata") or {}
                keys: Iterable[tuple[str, str]] = [(str(meta.get("namespace") or ""), str(meta.get("name")))]
            else:
                keys = mapper(event)
            for namespace, name in keys:
                self.queue.add(Key(controller.name, namespace, name))

    def poll(self) -> int:
        """Deliver every change since the last poll to the queue; returns how many."""
        if self._across:
            # the store reads across kinds: one read says whether anything changed and what
            count = self._poll_across_kinds()
            if count is not None:
                return count
        latest = self.store.latest_resource_version()
        if latest is not None and latest == self._polled_at:
            return 0  # nothing changed anywhere since the last poll
        count = self._poll_across_kinds()
        if count is None:
            count = self._poll_each_kind()
        else:
            self._across = True
        self._polled_at = latest
        return count

    def _poll_across_kinds(self) -> int | None:
        """Read every watched kind's changes with one :meth:`~olmkit.store.Store.changes_after`.

        Delivered route by route, each route's in order, as :meth:`_poll_each_kind` delivers
        them. ``None`` when that cannot be done: a route not listed yet, a store that cannot
        read across kinds, or a history that no longer reaches back to a route's position
        (each kind is then watched alone, and the one behind lists again).
        """
        if not self._routes or None in self._versions.values():
            return None
        try:
            positions = {route: int(str(version)) for route, version in self._versions.items()}
            found = self.store.changes_after(min(positions.values()), self._route_kinds.keys())
        except (ValueError, Expired):
            return None
        if found is None:
            return None
        changes, last = found
        events: dict[tuple[str, str], list[WatchEvent]] = {route: [] for route in self._routes}
        for group, event in changes:
            rv = int(event.resource_version)
            shared = True  # the first route to take the event gets its object, the others copies
            for route in self._route_kinds.get((group, str(event.object.get("kind"))), ()):
                if rv > positions[route]:
                    obj = event.object if shared else copy.deepcopy(event.object)
                    obj["apiVersion"] = route[0]  # as a watch of the route's apiVersion reads it
                    events[route].append(WatchEvent(event.type, obj))
                    shared = False
        count = 0
        for route, routed in events.items():
            for event in routed:
                self._dispatch(route, event)
            count += len(routed)
            self._versions[route] = str(max(positions[route], last))
        self._polled_at = str(last)
        return count

    def _poll_each_kind(self) -> int:
        """Read each watched kind's changes with a watch of its own."""
        count = 0
        for route in self._routes:
            api_version, kind = route
            try:
                watch = self.store.watch(api_version, kind, resource_version=self._versions[route], timeout=0)
            except Expired:
                watch = self.store.watch(api_version, kind, resource_version=None, timeout=0)  # relist
            with watch:
                for event in watch:
                    self._dispatch(route, event)
                    count += 1
                self._versions[route] = watch.resource_version
        return count

    def _poll_when_due(self) -> None:
        """Poll the watches when the queue ran dry, or every :data:`POLL_EVERY` reconciles.

        Changes coalesce in the queue while it drains (reconciles are level-triggered and
        read the store afresh), so one poll per batch does the work of one per reconcile.
        """
        if not self.queue.has_ready() or self.reconciles - self._polled_count >= POLL_EVERY:
            self.poll()
            self._polled_count = self.reconciles

    def enqueue(self, controller: str, namespace: str, name: str) -> None:
        """Queue a key by hand."""
        self.queue.add(Key(controller, namespace, name))

    # -- reconciling --------------------------------------------------------------

    def process_one(self) -> bool:
        """Reconcile the next ready key; returns whether there was one."""
        key = self.queue.pop()
        if key is None:
            return False
        controller = self.controllers[key.controller]
        self.queue.cancel_delayed(key)
        start = time.perf_counter()
        self.reconciles += 1
        try:
            result = controller.reconcile(key.namespace, key.name)
        except Conflict as exc:
            self._retry(key, exc)
            return True
        except (OlmkitError, StoreError) as exc:
            self._retry(key, exc)
            return True
        except Exception as exc:  # a bug in a controller must not stop the others
            exc.__notes__ = [*getattr(exc, "__notes__", []), traceback.format_exc()]
            self._retry(key, self._blamed(key, exc))
            return True
        self.queue.forget(key)
        self._waiting.pop(key, None)
        if result is not None and result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after, resync=result.resync)
            if not result.resync and result.waiting:
                self._waiting[key] = result.waiting
        seconds = time.perf_counter() - start
        self.reporter.on_reconcile(key, seconds, result)
        self._notify(key, seconds, None)
        return True

    def _notify(self, key: Key, seconds: float, error: BaseException | None) -> None:
        """Pass a reconcile to the ``olmkit_reconciled`` hook (when the context has a plugin manager)."""
        if self._reconciled is not None:
            self._reconciled(
                context=self.context,
                controller=key.controller,
                namespace=key.namespace,
                name=key.name,
                seconds=seconds,
                error=error,
                queue_depth=self.queue.depth(),
            )

    def _blamed(self, key: Key, exc: Exception) -> Exception:
        """``exc`` as a :class:`PluginError` naming the plugin whose code raised it, when one did."""
        pm = getattr(self.context, "pm", None)
        plugin = pm.culprit(exc) if pm is not None and hasattr(pm, "culprit") else None
        if plugin is None:
            return exc
        error = PluginError(f"raised {exc!r} in controller {key.controller}", plugin=plugin)
        error.__cause__ = exc
        return error

    def _retry(self, key: Key, error: BaseException) -> None:
        attempt = self.queue.failures(key) + 1
        delay = self.queue.add_rate_limited(key)
        self._waiting[key] = f"retrying after error: {error}"
        self.reporter.on_error(key, error, attempt, delay)
        self._notify(key, 0.0, error)

    def run_until_stable(
        self,
        timeout: float | None = None,
        *,
        wait: bool = True,
        max_reconciles: int | None = None,
        wall_timeout: float | None = None,
        settle: Callable[[], bool] | None = None,
    ) -> RunOutcome:
        """Run until no work is pending (only periodic resyncs left), or ``timeout`` seconds passed.

        ``wait=False`` stops as soon as nothing is ready now, without waiting for delayed
        work (a sweep). With a :class:`FakeClock` the clock jumps to the next due key when
        nothing is ready, so waits (install timeouts, backoffs) cost no real time.
        ``wall_timeout``: the longest the run may take in real time (default ``timeout``;
        they differ on a fake clock).

        ``settle`` is asked, whenever nothing is ready, whether what else acts on the store
        has finished reacting: before the run calls itself stable, and, on a fake clock over
        a store with an API server behind it, before each jump of the clock (the server's
        own work happens in real time; it must not lose a race against a timeout in fake
        time). It returns ``True`` when nothing more is on its way, ``False`` when new
        events came in meanwhile (the run goes on with them). The default,
        :meth:`settled`, waits on a store with an API server for its informers to stay quiet.
        """
        settle = settle or self.settled
        fake = isinstance(self.clock, FakeClock)
        deadline = None if timeout is None else self.clock.now() + timeout
        if wall_timeout is None:
            wall_timeout = timeout
        wall_deadline = None if wall_timeout is None else time.monotonic() + wall_timeout
        start_count = self.reconciles
        while True:
            self._poll_when_due()
            if self.queue.has_ready():
                self.process_one()
                if max_reconciles is not None and self.reconciles - start_count >= max_reconciles:
                    return self._outcome(False, start_count)
                continue
            due = self.queue.next_due(pending_only=True)
            if due is None or not wait:
                if settle():
                    return self._outcome(True, start_count)
                continue
            if fake and not self.store.embedded and not settle():
                continue  # the served side reacted: handle that before time jumps
            if deadline is not None and due > deadline:
                return self._outcome(False, start_count)
            if wall_deadline is not None and time.monotonic() >= wall_deadline:
                return self._outcome(False, start_count)
            if fake:
                assert isinstance(self.clock, FakeClock)
                self.clock.advance(due - self.clock.now())
            else:
                self._idle(due)

    def run_forever(
        self,
        should_stop: Callable[[], bool] = lambda: False,
        *,
        on_idle: Callable[[], None] | None = None,
    ) -> None:
        """Run until ``should_stop()`` is true (``olmkit run``).

        ``should_stop`` is checked between reconciles and while idle, so a stop request
        lets the reconcile in progress finish and ends the run within half a second of
        idling. ``on_idle`` is called each time nothing is ready to reconcile; the first
        call means every controller has handled what it found at start-up.
        """
        while not should_stop():
            self._poll_when_due()
            if self.queue.has_ready():
                self.process_one()
                continue
            if on_idle is not None:
                on_idle()
            due = self.queue.next_due()
            self._idle(due if due is not None else self.clock.now() + 1.0, should_stop)

    def close(self) -> None:
        """End the run: each controller gives up what it holds in the store (:meth:`Controller.close`).

        The store stays open. A controller's failure to close is reported and does not keep the
        others from closing.
        """
        for name, controller in self.controllers.items():
            try:
                controller.close()
            except Exception as exc:  # a plugin's controller: report, and close the others
                self.reporter.on_event(f"controller {name} failed to close: {exc!r}")

    def __enter__(self) -> ControllerManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _idle(self, until: float, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Wait for ``until`` or the next change in the store (or a stop request), whichever comes first.

        On the wall clock the store's :meth:`~olmkit.store.Store.wait_for_change` does the
        waiting, so a change wakes the run at once (for a store on an API server: when an
        informer records it, without a request).
        """
        step = 0.05
        while self.clock.now() < until and not should_stop():
            if self.poll():
                return
            pause = min(step, until - self.clock.now())
            if isinstance(self.clock, RealClock):  # woken by changes of the kinds watched
                self.store.wait_for_change_of(self._route_kinds.keys(), self._polled_at, max(pause, 0.0))
            else:
                self.clock.sleep(pause)
            step = min(step * 2, 0.5)

    def settled(self, quiet: float | None = None, *, version: Callable[[], str | None] | None = None) -> bool:
        """Whether nothing more is on its way; ``False`` when events came in (they are queued).

        Always on an embedded store (its watches see every write at once). On a store with an
        API server behind it, once it stayed quiet for ``quiet`` seconds with every watch
        polled (on the wall clock whatever the run's clock is: the server's events arrive in
        real time). ``version`` answers the server's latest resourceVersion (default: the
        store's :meth:`~olmkit.store.Store.server_resource_version`): the pause must also leave
        it unchanged (a change whose event is still on its way moves it), and a server still
        where it was last seen settled needs no pause at all. ``quiet`` defaults to
        :data:`QUIET` when the server's resourceVersion is known, else :data:`SETTLE`.
        """
        if self.store.embedded:
            return True
        asked = version or self.store.server_resource_version

        def version_now() -> str | None:
            try:
                return asked()
            except StoreError:  # the server did not answer: settle on the quiet alone
                return None

        latest = version_now()
        if quiet is None:
            quiet = SETTLE if latest is None else QUIET
        while latest is None or latest != self._quiet_at:
            deadline = time.monotonic() + quiet
            while (remaining := deadline - time.monotonic()) > 0:
                if self.poll():
                    return False
                self.store.wait_for_change(self._polled_at, remaining)
            if self.poll():
                return False
            if latest is None:
                return True
            now = version_now()
            if now == latest:
                self._quiet_at = latest
            latest = now
        return True

    def _outcome(self, stable: bool, start_count: int) -> RunOutcome:
        pending = tuple(f"{key}: {self._waiting.get(key, 'queued')}" for key in self.queue.pending_keys())
        return RunOutcome(stable=stable and not pending, reconciles=self.reconciles - start_count, pending=pending)


def owners_of(obj: Object, kind: str) -> list[tuple[str, str]]:
    """``(namespace, name)`` of the owners of ``kind`` named in the object's ownerReferences."""
    meta = obj.get("metadata") or {}
    ns = str(meta.get("namespace") or "")
    return [(ns, str(ref.get("name"))) for ref in meta.get("ownerReferences") or () if ref.get("kind") == kind]
