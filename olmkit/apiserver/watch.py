"""Watches for many clients from one reader of the store.

The store is synchronous; the server is asyncio. One dispatcher thread reads the changes of
every kind someone watches (a single cheap "did anything change?" read when idle, woken at
once by the store on writes in this process) and hands them to the event loop, where each
kind keeps a bounded buffer of recent events and a set of subscribers. A watch that starts
from a resourceVersion older than the buffer first reads the gap from the store's history (so
a resourceVersion the store has compacted away gives ``Expired``, the API's 410 Gone), then
joins the live stream: every subscriber sees every matching event once, in order.

.. versionadded:: 0.2
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import Any

from olmkit.store import Expired, Store, StoreError, WatchEvent, group_of

__all__ = ["Delivered", "Subscriber", "WatchHub", "relabelled"]

Matcher = Callable[[dict[str, Any]], bool]
LabelMatcher = Callable[[Any], bool]
UNKNOWN: Any = object()
#: How often the dispatcher reads the changes other processes made to a store that reports this
#: process's writes itself (SQLite's own watches look as often).
OTHERS_POLL = 0.05


def _labels(obj: dict[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("labels")


def relabelled(obj: dict[str, Any], labels: Any) -> dict[str, Any]:
    """``obj`` with other labels (as it was before a label change)."""
    return {**obj, "metadata": {**obj["metadata"], "labels": labels}}


def _object_key(meta: dict[str, Any]) -> tuple[str, str]:
    """An object's (namespace, name), the key its labels are remembered by."""
    return (str(meta.get("namespace") or ""), str(meta.get("name")))


def _known_old_labels(backlog: list[tuple[int, Delivered]]) -> None:
    """Set each history event's previous labels where the history itself shows them."""
    seen: dict[tuple[str, str], Any] = {}
    for _, delivered in backlog:
        meta = delivered.event.object.get("metadata") or {}
        key = _object_key(meta)
        if delivered.event.type == "ADDED":
            delivered.old_labels = None
        elif key in seen:
            delivered.old_labels = seen[key]
        if delivered.event.type == "DELETED":
            seen.pop(key, None)
        else:
            seen[key] = meta.get("labels")


class Delivered:
    """An event as handed to subscribers, with its encodings shared by every subscriber that sends it."""

    __slots__ = ("encoded", "event", "old_labels", "rv")

    def __init__(self, rv: int, event: WatchEvent, old_labels: Any = UNKNOWN) -> None:
        self.rv = rv
        self.event = event
        #: the object's labels before this change (``None``: it did not exist; UNKNOWN: not known)
        self.old_labels = old_labels
        self.encoded: dict[tuple[str, ...], bytes] = {}


class Subscriber:
    """One client's watch: a queue of ``("event", Delivered)`` and ``("error", Expired)`` items."""

    def __init__(self, start: int, matches: Matcher, limit: int, labels: LabelMatcher | None = None) -> None:
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.start = start
        self.matches = matches
        self.labels = labels
        self.limit = limit
        self.progress = start
        self.closed = False
        #: the kind followed, once subscribed: its delivery position counts as this watch's
        self.kind: _Kind | None = None

    @property
    def position(self) -> int:
        """The resourceVersion this watch has seen every matching change up to (for bookmarks).

        Every event of the kind is offered to each subscriber before the kind's position passes
        it, so the kind's position is each subscriber's too (kinds with no change in a round are
        not walked subscriber by subscriber).
        """
        kind = self.kind
        return self.progress if kind is None else max(self.progress, kind.progress)

    def offer(self, rv: int, delivered: Delivered) -> None:
        if self.closed or rv <= self.start:
            return
        event = delivered.event
        etype: str | None = event.type if self.matches(event.object) else None
        if self.labels is not None and event.type == "MODIFIED" and delivered.old_labels is not UNKNOWN:
            # a label selector: an object that starts matching is ADDED, one that stops is DELETED
            was = delivered.old_labels is not None and self.labels(delivered.old_labels)
            now = self.labels(_labels(event.object))
            if now and not was and etype is not None:
                etype = "ADDED"
            elif was and not now and self.matches(relabelled(event.object, delivered.old_labels)):
                etype = "DELETED"
        if etype is not None:
            if self.queue.qsize() >= self.limit:
                self.fail(
                    Expired(kind=str(event.object.get("kind")), resource_version=str(self.progress), oldest=str(rv))
                )
                return
            self.queue.put_nowait(("event", (delivered, etype)))
        self.progress = max(self.progress, rv)

    def advance(self, rv: int) -> None:
        self.progress = max(self.progress, rv)

    def fail(self, error: Exception) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(("error", error))


class _Kind:
    """The loop-side state of one watched kind."""

    def __init__(self, api_version: str, kind: str, floor: int) -> None:
        self.api_version = api_version
        self.kind = kind
        self.rv = floor  # the dispatcher thread's position
        self.floor = floor  # every event after it is in the buffer
        self.progress = floor  # every event up to it has been delivered
        self.buffer: collections.deque[tuple[int, Delivered]] = collections.deque()
        self.subscribers: set[Subscriber] = set()
        #: every object's labels, by (namespace, name): what a change's labels were before it
        self.labels: dict[tuple[str, str], Any] | None = None


class WatchHub:
    """Fans the store's changes out to asyncio subscribers.

    Args:
        store: the store to read.
        loop: the event loop subscribers live in.
        executor: where blocking store reads run.
        buffer: events kept per kind for watches that start slightly in the past.
        queue_limit: events a slow subscriber may have queued before it is dropped (410).
    """

    def __init__(
        self,
        store: Store,
        loop: asyncio.AbstractEventLoop,
        executor: Executor,
        *,
        buffer: int = 1000,
        queue_limit: int = 100_000,
    ) -> None:
        self.store = store
        self.loop = loop
        self.executor = executor
        self.buffer_size = buffer
        self.queue_limit = queue_limit
        self._kinds: dict[tuple[str, str], _Kind] = {}
        self._lock = threading.Lock()
        #: held while reading changes and handing them to the loop, so deliveries keep the store's order
        self._scan_lock = threading.Lock()
        self._stop = threading.Event()
        #: set in a thread whose writes' changes it reads itself (:meth:`writing`)
        self._writing = threading.local()
        #: the store reports this process's writes (:meth:`Store.add_commit_listener`): the
        #: dispatcher thread only polls for other processes' writes
        self._pushed = store.add_commit_listener(self._committed)
        self._thread = threading.Thread(target=self._run, name="olmkit-watch", daemon=True)
        self._thread.start()
        self.listeners: list[Callable[[str, str], None]] = []

    # -- the dispatcher thread -----------------------------------------------------------

    def _run(self) -> None:
        seen: str | None = None
        while not self._stop.is_set():
            with self._lock:
                kinds = list(self._kinds.values())
            position = self._scan_all(kinds)
            if position is not None:
                if self._pushed:  # this process's writes are read as they commit (_committed)
                    self._stop.wait(OTHERS_POLL)
                else:
                    self.store.wait_for_change(str(position), 0.5)
                continue
            latest = self.store.latest_resource_version()
            if latest is None or latest != seen:
                for state in kinds:
                    self._scan(state)
                seen = latest
            self.store.wait_for_change(latest, 0.5)

    def _scan_all(self, kinds: list[_Kind], post: Callable[[Callable[[], None]], None] | None = None) -> int | None:
        """Read the changes of every followed kind at once and hand them to the loop in one call;
        returns the resourceVersion read up to.

        ``post`` hands the delivery to the loop instead of a call of its own (it is called with
        the lock held, so deliveries reach the loop in the store's order); nothing is handed over
        when nothing changed since the last read.

        Returns ``None`` when the store cannot read across kinds, when a kind fell behind the
        store's history or the store failed (each kind is then read alone, and the one behind
        expires), or when no kind is followed yet.
        """
        if not kinds:
            return None
        by_kind = {(group_of(state.api_version), state.kind): state for state in kinds}
        with self._scan_lock:
            start = min(state.rv for state in kinds)
            try:
                found = self.store.changes_after(start, by_kind.keys())
            except StoreError:  # Expired among them
                return None
            if found is None:
                return None
            changes, last = found
            if not changes and last <= start:
                return last  # nothing happened since the last read
            events: dict[tuple[str, str], list[WatchEvent]] = {key: [] for key in by_kind}
            for group, event in changes:
                key = (group, str(event.object.get("kind")))
                state = by_kind.get(key)
                if state is not None and int(event.resource_version) > state.rv:
                    event.object["apiVersion"] = state.api_version  # as a watch of the kind reads it
                    events[key].append(event)
            for state in kinds:
                state.rv = max(state.rv, last)
            batches = [(state, events[key]) for key, state in by_kind.items()]
            if post is None:
                self._call(self._deliver_all, batches, last)
            else:
                post(functools.partial(self._deliver_all, batches, last))
        return last

    def _committed(self) -> None:
        """A write of this process committed (in its thread): read its changes and post them to the loop."""
        if self._stop.is_set() or getattr(self._writing, "active", False):
            return  # stopped, or a writer that reads its changes itself (scan_now)
        with self._lock:
            kinds = list(self._kinds.values())
        self._scan_all(kinds)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Writes of the calling thread inside this block are left to it: it calls :meth:`scan_now` after."""
        self._writing.active = True
        try:
            yield
        finally:
            self._writing.active = False

    def scan_now(self, post: Callable[[Callable[[], None]], None]) -> bool:
        """Read the changes of every followed kind in the calling thread (a writer, right after
        its write) and hand their delivery to ``post`` (called at most once), which must have
        the loop run it: with a write's answer, one wake-up of the loop instead of two, and the
        watch events go out before the answer. ``False`` when nothing was handed over (nothing
        changed, or this store is read kind by kind: the dispatcher thread delivers).
        """
        with self._lock:
            kinds = list(self._kinds.values())
        handed = False

        def hand(deliver: Callable[[], None]) -> None:
            nonlocal handed
            handed = True
            post(deliver)

        self._scan_all(kinds, hand)
        return handed

    def _scan(self, state: _Kind) -> None:
        with self._scan_lock:
            try:
                with self.store.watch(
                    state.api_version, state.kind, resource_version=str(state.rv), timeout=0
                ) as watch:
                    events = list(watch)
                state.rv = max(state.rv, int(watch.resource_version))
            except Expired as exc:  # fell behind the store's compaction: every subscriber must list again
                self._call(self._expire, state, exc)
                return
            except StoreError:
                return  # the store is busy or closing; the next round tries again
            self._call(self._deliver, state, events, state.rv)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
            self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    # -- the loop side ----------------------------------------------------------------

    def _deliver(self, state: _Kind, events: list[WatchEvent], progress: int) -> None:
        if not events:
            state.progress = max(state.progress, progress)
            return
        for event in events:
            rv = int(event.resource_version)
            if rv <= state.progress:
                continue
            delivered = Delivered(rv, event)
            if state.labels is not None:
                meta = event.object.get("metadata") or {}
                key = _object_key(meta)
                delivered.old_labels = state.labels.get(key)
                if event.type == "DELETED":
                    state.labels.pop(key, None)
                else:
                    state.labels[key] = meta.get("labels")
            state.buffer.append((rv, delivered))
            while len(state.buffer) > self.buffer_size:
                state.floor = state.buffer.popleft()[0]
            for sub in list(state.subscribers):
                sub.offer(rv, delivered)
            state.progress = rv
        state.progress = max(state.progress, progress)
        for listener in self.listeners:
            listener(state.api_version, state.kind)

    def _deliver_all(self, batches: list[tuple[_Kind, list[WatchEvent]]], progress: int) -> None:
        for state, events in batches:
            self._deliver(state, events, progress)

    def _expire(self, state: _Kind, error: Expired) -> None:
        for sub in state.subscribers:
            sub.fail(error)
        state.subscribers.clear()
        state.buffer.clear()
        state.labels = None  # not known any more: label transitions are not reported
        latest = int(self.store.latest_resource_version() or 0)
        state.rv = state.floor = state.progress = latest

    async def ensure(self, api_version: str, kind: str) -> None:
        """Start following a kind (before listing it, so that the list's resourceVersion is covered)."""
        key = (group_of(api_version), kind)
        if key in self._kinds:
            return
        listed = await self.loop.run_in_executor(self.executor, self.store.list, api_version, kind)
        if key not in self._kinds:
            state = _Kind(api_version, kind, int(listed.resource_version))
            state.labels = {_object_key(o["metadata"]): o["metadata"].get("labels") for o in listed.items}
            with self._lock:
                self._kinds[key] = state
            # the dispatcher may have read past the list already and now waits for the next
            # change: read the kind's changes since the list at once instead
            self.loop.run_in_executor(self.executor, self._scan, state)

    def _history(self, api_version: str, kind: str, after: int, until: int) -> list[tuple[int, Delivered]]:
        with self.store.watch(api_version, kind, resource_version=str(after), timeout=0) as watch:
            found = [(int(e.resource_version), e) for e in watch]
        return [(rv, Delivered(rv, e)) for rv, e in found if rv <= until]

    async def subscribe(
        self, api_version: str, kind: str, after: int, matches: Matcher, labels: LabelMatcher | None = None
    ) -> Subscriber:
        """A subscriber that receives every matching event after resourceVersion ``after``.

        With ``labels`` (the label selector of ``matches``), a change that makes an object match
        arrives as ADDED and one that makes it stop matching as DELETED, as the API server does.

        Raises:
            Expired: ``after`` is older than the store's history.
        """
        await self.ensure(api_version, kind)
        state = self._kinds[(group_of(api_version), kind)]
        position = after
        backlog: list[tuple[int, Delivered]] = []
        while position < state.floor:
            target = state.floor
            backlog += await self.loop.run_in_executor(
                self.executor, self._history, state.api_version, kind, position, target
            )
            position = target
        _known_old_labels(backlog)
        sub = Subscriber(after, matches, self.queue_limit, labels)
        for rv, event in backlog:
            sub.offer(rv, event)
        for rv, event in state.buffer:
            if rv > position:
                sub.offer(rv, event)
        sub.advance(max(position, state.progress))
        sub.kind = state
        state.subscribers.add(sub)
        return sub

    def unsubscribe(self, api_version: str, kind: str, sub: Subscriber) -> None:
        sub.closed = True
        state = self._kinds.get((group_of(api_version), kind))
        if state is not None:
            state.subscribers.discard(sub)
