"""Kubernetes Events (core/v1) for what the controllers do, aggregated and pruned as the API server's clients do.

:class:`EventRecorder` writes one ``Event`` per distinct (object, type, reason, message)
and counts repeats on it (``count``, ``lastTimestamp``) instead of writing a new one, as
client-go's event correlator does: a new Event is one create, a repeat one update of the
Event the recorder remembers, and nothing is listed to record one. Its name is derived from
that key, so two processes sharing a store aggregate onto the same object. An object keeps at
most :data:`MAX_EVENTS_PER_OBJECT` events: once this process has recorded that many about it,
the object's events are listed (with those other processes wrote) and the oldest go.

Events expire ``ttl`` seconds (an hour, as the Kubernetes API server's default) after
they last happened; a namespace is swept for them when a new Event is written there, at
most every ``ttl/6`` and the first time ``ttl/6`` after the recorder started (the API server
of a cluster expires Events itself; a short run leaves the sweeping to a long-running one).

Events of cluster-scoped objects (a Namespace ...) live in the ``default`` namespace, as
in Kubernetes.

.. versionadded:: 0.2
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from olmkit.lifecycle.runtime import rfc3339
from olmkit.store import AlreadyExists, Conflict, NotFound, Object, Store, StoreError
from olmkit.store.names import DEFAULT_NAMESPACE

__all__ = [
    "COMPONENT",
    "EVENT_TTL",
    "MAX_EVENTS_PER_OBJECT",
    "EventRecorder",
    "EventType",
    "approval_message",
    "event_sort_key",
    "events_of",
]

EventType = Literal["Normal", "Warning"]

#: ``source.component`` of the events the lifecycle records (upstream's recorder name)
COMPONENT: Final = "operator-lifecycle-manager"
#: events kept per involved object; older ones are deleted when a new one is recorded
MAX_EVENTS_PER_OBJECT: Final = 16
#: seconds an Event is kept after it last happened (the Kubernetes API server's default --event-ttl)
EVENT_TTL: Final = 3600.0
#: Events remembered per process for one-write repeats
CACHE_SIZE: Final = 4096


def _involved(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    ref = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "name": meta.get("name")}
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


def _same_object(ref: Mapping[str, Any], involved: Mapping[str, Any]) -> bool:
    if ref.get("kind") != involved.get("kind") or ref.get("name") != involved.get("name"):
        return False
    if (ref.get("namespace") or "") != (involved.get("namespace") or ""):
        return False
    return not (ref.get("uid") and involved.get("uid") and ref["uid"] != involved["uid"])


def approval_message(plan: Mapping[str, Any]) -> str:
    """The message of an InstallPlan's ``RequiresApproval`` event."""
    meta = plan.get("metadata") or {}
    csvs = ", ".join((plan.get("spec") or {}).get("clusterServiceVersionNames") or [])
    return f"{csvs} waits for approval: olmkit approve {meta.get('name')} -n {meta.get('namespace')}"


def event_sort_key(event: Mapping[str, Any]) -> tuple[str, int, str]:
    """Oldest first: by last occurrence, then by when it was written."""
    meta = event.get("metadata") or {}
    last = str(event.get("lastTimestamp") or event.get("firstTimestamp") or meta.get("creationTimestamp") or "")
    try:
        version = int(meta.get("resourceVersion") or 0)
    except (TypeError, ValueError):
        version = 0
    return last, version, str(meta.get("name") or "")


def _events_about(store: Store, ref: Mapping[str, Any], namespace: str) -> list[Object]:
    """The events of ``namespace`` whose ``involvedObject`` is ``ref``, oldest first."""
    found = [e for e in store.list("v1", "Event", namespace) if _same_object(e.get("involvedObject") or {}, ref)]
    return sorted(found, key=event_sort_key)


def events_of(store: Store, obj: Mapping[str, Any]) -> list[Object]:
    """The events recorded for ``obj``, oldest first."""
    ref = _involved(obj)
    return _events_about(store, ref, ref.get("namespace") or DEFAULT_NAMESPACE)


class EventRecorder:
    """Records Events about stored objects.

    Args:
        store: where the Events are written.
        now: the current time as a Kubernetes timestamp.
        component: ``source.component`` of the events.
        limit: events kept per object.
        ttl: seconds an Event is kept after it last happened (the API server's ``--event-ttl``).
        clock: the current time in seconds (for ``ttl``; ``None``: the wall clock).
    """

    def __init__(
        self,
        store: Store,
        now: Callable[[], str],
        *,
        component: str = COMPONENT,
        limit: int = MAX_EVENTS_PER_OBJECT,
        ttl: float = EVENT_TTL,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.now = now
        self.component = component
        self.limit = limit
        self.ttl = ttl
        self.clock = clock or time.time
        # when this process last swept each namespace for expired Events (or started)
        self._started = self.clock()
        self._swept: dict[str, float] = {}
        # events per involved object: those this process made, until it lists them at the limit
        self._known: dict[tuple[str, str, str], int] = {}
        # the Events this process wrote last, so a repeat is one update (no read first)
        self._last: dict[tuple[str, str], Object] = {}

    def record(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> Object | None:
        """Record one occurrence; returns the stored Event (``None`` when the store refused it).

        Recording never fails the caller: an Event is a report, not state.
        """
        try:
            return self._record(obj, type_, reason, message)
        except StoreError:
            return None

    def _record(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> Object:
        ref = _involved(obj)
        namespace = ref.get("namespace") or DEFAULT_NAMESPACE
        key = "\0".join((str(ref.get("uid") or ""), str(ref["kind"]), str(ref["name"]), type_, reason, message))
        name = f"{str(ref['name'])[:200]}.{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16]}"
        now = self.now()
        cached = self._last.get((namespace, name))
        if cached is not None:  # a repeat this process recorded: one write, unless someone else wrote in between
            try:
                return self._remember(namespace, self.store.update(self._repeat(cached, ref, now)))
            except (Conflict, NotFound):
                self._last.pop((namespace, name), None)
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type_,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": self.component},
            "reportingComponent": self.component,
        }
        for _ in range(5):
            try:
                stored = self.store.create(event)
            except AlreadyExists:  # recorded before (another process, an earlier run): count it there
                pass
            else:
                self._prune(ref, namespace)
                self._expire(namespace)
                return self._remember(namespace, stored)
            try:
                current = self.store.get("v1", "Event", name, namespace)
                return self._remember(namespace, self.store.update(self._repeat(current, ref, now)))
            except (Conflict, NotFound):
                continue
        current = self.store.get("v1", "Event", name, namespace)  # still racing: a last try, errors go to record()
        return self._remember(namespace, self.store.update(self._repeat(current, ref, now)))

    @staticmethod
    def _repeat(current: Mapping[str, Any], ref: Mapping[str, Any], now: str) -> Object:
        return {**current, "count": int(current.get("count") or 1) + 1, "lastTimestamp": now, "involvedObject": ref}

    def _remember(self, namespace: str, event: Object) -> Object:
        if len(self._last) >= CACHE_SIZE:
            self._last.clear()
        self._last[(namespace, str(event["metadata"]["name"]))] = event
        return event

    def _expire(self, namespace: str) -> None:
        """Delete the namespace's Events that last happened more than ``ttl`` ago (at most every ``ttl/6``)."""
        now = self.clock()
        if now - self._swept.get(namespace, self._started) < self.ttl / 6:
            return
        self._swept[namespace] = now
        cutoff = rfc3339(now - self.ttl)  # Kubernetes timestamps compare as strings
        for event in self.store.list("v1", "Event", namespace):
            if (
                str(event.get("lastTimestamp") or "") < cutoff
                and event.get("source", {}).get("component") == self.component
            ):
                self._last.pop((namespace, str(event["metadata"]["name"])), None)
                with contextlib.suppress(NotFound):
                    self.store.delete("v1", "Event", event["metadata"]["name"], namespace)

    def _prune(self, ref: Mapping[str, Any], namespace: str) -> None:
        """Keep at most ``limit`` events for the object (the newest ones).

        The object's events are listed only once this process counts ``limit`` of them: until
        then it counts the ones it made (as client-go's recorder, which never lists).
        """
        object_key = (namespace, str(ref["kind"]), str(ref["name"]))
        known = self._known.get(object_key, 0)
        if known + 1 <= self.limit:
            self._known[object_key] = known + 1
            return
        events = _events_about(self.store, ref, namespace)
        excess = len(events) - self.limit
        for old in events[: max(excess, 0)]:
            self._last.pop((namespace, str(old["metadata"]["name"])), None)
            with contextlib.suppress(NotFound):
                self.store.delete("v1", "Event", old["metadata"]["name"], namespace)
        self._known[object_key] = min(len(events), self.limit)
