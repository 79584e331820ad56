"""Informers: a cache of one kind, fed by a watch that a background thread keeps open.

An informer lists its kind once (every namespace), then watches from the list's
resourceVersion. Each change updates the cache and is appended to an event buffer, which the
store's watches read without a request (``Store.watch(..., timeout=0)`` is a look at the
buffer). A broken connection resumes the watch from the last resourceVersion seen; a watch
that has expired (410 Gone: the server no longer has that history) lists again and turns the
difference between the cache and the new list into events, so no change is lost to a watcher.
No polling: the thread blocks on the watch stream, and bookmarks keep its resourceVersion fresh.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import orjson

from olmkit.kube.transport import ApiUnreachable, Ref, StreamedWatch, Transport
from olmkit.store import Expired, Object, StoreError, WatchEvent

__all__ = ["Informer"]

log = logging.getLogger("olmkit.kube")

#: How long one watch request lasts before the server ends it (a new one resumes at once).
WATCH_SECONDS: Final = 300
#: Retry delays after a failed watch or list: doubling from the first to the last.
BACKOFF: Final = (0.05, 5.0)
#: The longest a watch waits for the events of this process's own writes.
CATCH_UP: Final = 5.0

Key = tuple[str, str]  # namespace ("" when cluster-scoped), name


def _key(obj: Object) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _copy(data: bytes) -> Object:
    """A private copy of a cached object from its encoding (cached objects are shared by every reader)."""
    copied: Object = orjson.loads(data)
    return copied


class _Cache:
    """The objects of a kind: shared parsed objects (read-only), their encodings (for private
    copies) and an index by namespace, so that a namespace's list touches only its objects."""

    __slots__ = ("_sorted", "by_namespace", "encoded", "items")

    def __init__(self, objects: list[Object]) -> None:
        self.items: dict[Key, Object] = {}
        self.encoded: dict[Key, bytes] = {}
        self.by_namespace: dict[str, dict[str, Object]] = {}
        self._sorted: list[Key] | None = None
        for obj in objects:
            self.put(_key(obj), obj, orjson.dumps(obj))

    def put(self, key: Key, obj: Object, data: bytes) -> None:
        if key not in self.items:
            self._sorted = None
        self.items[key] = obj
        self.encoded[key] = data
        self.by_namespace.setdefault(key[0], {})[key[1]] = obj

    def pop(self, key: Key) -> None:
        if self.items.pop(key, None) is not None:
            self._sorted = None
            del self.encoded[key]
            names = self.by_namespace[key[0]]
            del names[key[1]]
            if not names:
                del self.by_namespace[key[0]]

    def ordered(self, namespace: str | None = None) -> list[Key]:
        """The keys (of one namespace, or all) by namespace, then name."""
        if namespace is not None:
            return [(namespace, name) for name in sorted(self.by_namespace.get(namespace, ()))]
        if self._sorted is None:
            self._sorted = sorted(self.items)
        return self._sorted


def _rv(obj: Object) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


class Informer:
    """The cache and event buffer of one kind.

    Args:
        transport: the connection to the API server.
        path: the kind's collection URL path (every namespace).
        api_version: the served apiVersion (set on listed items, which the API leaves without one).
        kind: the kind.
        history: how many events the buffer keeps (older positions are ``Expired`` to watchers).
        on_change: called (without the informer's lock) after events were recorded.
    """

    def __init__(
        self,
        transport: Transport,
        path: str,
        api_version: str,
        kind: str,
        history: int,
        on_change: Callable[[], None],
    ) -> None:
        self.transport = transport
        self.path = path
        self.api_version = api_version
        self.kind = kind
        self.cond = threading.Condition()
        self.cache = _Cache([])
        #: buffered events: position, event (its object shared), the object's encoding
        self.events: collections.deque[tuple[int, WatchEvent, bytes]] = collections.deque(maxlen=max(1, history))
        #: the last resourceVersion this informer has seen (events, lists and bookmarks)
        self.rv = 0
        #: the oldest position a watcher can resume from
        self.oldest = 0
        #: lists after a 410 (the first list not counted)
        self.relists = 0
        #: the resourceVersion of the last list: events up to it are in the cache already
        self.listed_at = 0
        #: watches opened again from the resourceVersion already reached (after a broken connection
        #: or the server ending a watch), without a list
        self.resumes = 0
        self._listed = True
        #: the highest resourceVersion of this kind's writes made through this process's store
        self.expected = 0
        #: deletions made through this process's store, not seen yet: key -> the object's last resourceVersion
        self.pending_deletes: dict[Key, int] = {}
        self._on_change = on_change
        self._stopped = threading.Event()
        self._stream: StreamedWatch | None = None
        self._thread: threading.Thread | None = None

    # -- life -------------------------------------------------------------------------

    def start(self, since: int | None = None) -> None:
        """List the kind (in the caller's thread, so the cache is full on return), then watch it.

        ``since``: an older resourceVersion watchers will resume from (a command that listed
        before it watched): the watch starts there instead, and the changes up to the list
        become events without touching the cache, which is already past them. If the server no
        longer has that history, such watchers get ``Expired``.
        """
        items, rv = self._list()
        cache = _Cache(items)
        with self.cond:
            self.cache = cache
            self.listed_at = rv
            self.rv = self.oldest = rv
            if since is not None and since < rv:
                self.rv = self.oldest = since
                # the replay certainly reaches the last change of a listed object
                self.expected = max((_rv(o) for o in items), default=since)
        self._thread = threading.Thread(target=self._run, name=f"olmkit-informer-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        stream = self._stream
        if stream is not None:
            stream.shutdown()
        with self.cond:
            self.cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    # -- reading (any thread) -------------------------------------------------------------

    @property
    def watching(self) -> bool:
        """Whether a watch request is open now."""
        return self._stream is not None

    def snapshot(self) -> tuple[list[Object], int]:
        """The cached objects (by namespace, then name; shared: not to be changed) and the
        resourceVersion they are at."""
        with self.cond:
            return [self.cache.items[k] for k in self.cache.ordered()], max(self.rv, self.listed_at)

    def lookup(self, namespace: str, name: str) -> Object | None:
        """A private copy of the cached object, or ``None``."""
        with self.cond:
            found = self.cache.encoded.get((namespace, name))
        return None if found is None else _copy(found)

    def select(self, wanted: Callable[[Object], bool], namespace: str | None = None) -> tuple[list[Object], int]:
        """Private copies of the cached objects (of ``namespace``, or all) that ``wanted`` accepts
        (by namespace, then name), and the resourceVersion the cache is at."""
        with self.cond:
            cache = self.cache
            found = [cache.encoded[k] for k in cache.ordered(namespace) if wanted(cache.items[k])]
            at = max(self.rv, self.listed_at)
        return [_copy(data) for data in found], at

    def events_after(self, after: int) -> tuple[list[tuple[WatchEvent, bytes]], int]:
        """The buffered events after position ``after`` (each with its object's encoding, for a
        private copy: the event's object is shared), and the position they reach.

        Raises:
            Expired: ``after`` is older than the buffer.
            StoreError: the store was closed.
        """
        with self.cond:
            if self._stopped.is_set():
                raise StoreError(f"the watch of {self.kind} ended: its store was closed", kind=self.kind)
            if after < self.oldest:
                raise Expired(kind=self.kind, resource_version=str(after), oldest=str(self.oldest))
            found = []
            for position, event, data in reversed(self.events):
                if position <= after:
                    break
                found.append((event, data))
            found.reverse()
            return found, max(after, self.rv)

    def expect(self, obj: Object) -> None:
        """A write of this kind was made: reads of the buffer wait until its event is in."""
        with self.cond:
            self.expected = max(self.expected, _rv(obj))

    def expect_deletion(self, obj: Object) -> None:
        """An object of this kind was deleted (its last state is ``obj``): wait for its DELETED event."""
        key, last = _key(obj), _rv(obj)
        with self.cond:
            # absent although the informer is past the object's last state: its DELETED event is in
            if key in self.cache.items or self.rv < last:
                self.pending_deletes[key] = last

    def catch_up(self, timeout: float = CATCH_UP) -> None:
        """Wait until the buffer holds the events of this process's own writes (at most ``timeout`` s).

        Watches read the buffer without a request; this keeps a write followed by a watch in
        the same process from missing the write (as on the embedded stores).
        """
        deadline = time.monotonic() + timeout
        with self.cond:
            while (self.rv < self.expected or self.pending_deletes) and not self._stopped.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    # an event that never comes (a server that drops it) must not slow every read
                    log.warning("the %s informer did not see this process's writes in %.0fs", self.kind, timeout)
                    self.expected = min(self.expected, self.rv)
                    self.pending_deletes.clear()
                    return
                self.cond.wait(remaining)

    def wait(self, after: int, timeout: float) -> None:
        """Block until the informer is past ``after``, at most ``timeout`` seconds."""
        with self.cond:
            if self.rv <= after and not self._stopped.is_set():
                self.cond.wait(timeout)

    # -- the watch thread -------------------------------------------------------------------

    def _list(self) -> tuple[list[Object], int]:
        items: list[Object] = []
        query: dict[str, Any] = {"limit": 500}
        rv = ""
        while True:
            answer = self.transport.request("GET", self.path, Ref(self.kind), query=query)
            meta = answer.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "0")
            for item in answer.get("items") or []:
                item["apiVersion"], item["kind"] = self.api_version, self.kind
                items.append(item)
            if not meta.get("continue"):
                break
            query = {"limit": 500, "continue": meta["continue"]}
        return items, int(rv)

    def _run(self) -> None:
        delay = BACKOFF[0]
        while not self._stopped.is_set():
            try:
                self._watch_once()
                delay = BACKOFF[0]
            except Expired:
                self._relist()
            except (ApiUnreachable, OSError, ValueError) as exc:
                if self._stopped.is_set():
                    return
                log.info("watch of %s broke (%s); resuming from resourceVersion %s", self.kind, exc, self.rv)
                self._stopped.wait(delay)
                delay = min(delay * 2, BACKOFF[1])
            except StoreError as exc:
                log.warning("watch of %s failed: %s; retrying in %.1fs", self.kind, exc, delay)
                self._stopped.wait(delay)
                delay = min(delay * 2, BACKOFF[1])
            except Exception as exc:
                if self._stopped.is_set():
                    return
                log.info("watch of %s broke (%r); resuming", self.kind, exc)
                self._stopped.wait(delay)
                delay = min(delay * 2, BACKOFF[1])

    def _watch_once(self) -> None:
        query = {
            "watch": "1",
            "resourceVersion": str(self.rv),
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(WATCH_SECONDS),
        }
        if not self._listed:
            self.resumes += 1
        self._listed = False
        stream = self.transport.stream_lines(self.path, Ref(self.kind), query, read_timeout=WATCH_SECONDS + 30)
        self._stream = stream
        try:
            if self._stopped.is_set():
                return
            for raw in stream:
                self._handle(raw)
                if self._stopped.is_set():
                    return
        finally:
            self._stream = None
            stream.close()

    def _handle(self, raw: dict[str, Any]) -> None:
        etype = raw.get("type")
        obj = raw.get("object") or {}
        if etype == "ERROR":
            code = obj.get("code") if isinstance(obj, dict) else None
            if code == 410:
                raise Expired(kind=self.kind, resource_version=str(self.rv), oldest="")
            raise StoreError(str(obj.get("message") or "watch error") if isinstance(obj, dict) else "watch error")
        rv = _rv(obj)
        if etype == "BOOKMARK":
            with self.cond:
                if rv > self.rv:
                    self.rv = rv
                    self.cond.notify_all()
            return
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            return
        obj["apiVersion"], obj["kind"] = self.api_version, self.kind
        key = _key(obj)
        data = orjson.dumps(obj)
        with self.cond:
            if rv <= self.listed_at:
                pass  # replaying history before the list: the cache is past it
            elif etype == "DELETED":
                self.cache.pop(key)
            else:
                self.cache.put(key, obj, data)
            # the DELETED event carries the deletion's resourceVersion: the one DELETE answered
            # with (olmkit serve) or a later one (the object's last state, as Kubernetes answers)
            if key in self.pending_deletes and (rv > self.pending_deletes[key] or etype == "DELETED"):
                del self.pending_deletes[key]
            self.events.append((rv, WatchEvent(etype, obj), data))
            self.rv = max(self.rv, rv)
            self._trim()
            self.cond.notify_all()
        self._on_change()

    def _trim(self) -> None:
        if len(self.events) == self.events.maxlen:
            self.oldest = max(self.oldest, self.events[0][0])

    def _relist(self) -> None:
        """List again after a 410 and record the difference from the cache as events."""
        delay = BACKOFF[0]
        while not self._stopped.is_set():
            try:
                items, rv = self._list()
                break
            except StoreError as exc:
                log.info("listing %s again failed (%s); retrying", self.kind, exc)
                self._stopped.wait(delay)
                delay = min(delay * 2, BACKOFF[1])
        else:
            return
        fresh = _Cache(items)
        with self.cond:
            self.relists += 1
            position = max(rv, self.rv)
            changed: list[tuple[WatchEvent, bytes]] = []
            for key in fresh.ordered():
                obj, old = fresh.items[key], self.cache.items.get(key)
                if old is None:
                    changed.append((WatchEvent("ADDED", obj), fresh.encoded[key]))
                elif _rv(old) != _rv(obj):
                    changed.append((WatchEvent("MODIFIED", obj), fresh.encoded[key]))
            for key in self.cache.ordered():
                if key not in fresh.items:
                    old = self.cache.items[key]
                    gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(position)}}
                    changed.append((WatchEvent("DELETED", gone), orjson.dumps(gone)))
            if self.rv < self.listed_at:
                # the history before the first list was gone before it was replayed: watchers
                # from there would miss changes the cache already holds
                self.oldest = max(self.oldest, self.listed_at)
            self.cache = fresh
            self.listed_at = max(self.listed_at, rv)
            self._listed = True
            self.pending_deletes.clear()
            for event, data in changed:
                self.events.append((position, event, data))
                self._trim()
            self.rv = position
            self.cond.notify_all()
        log.info("relisted %s after its watch expired: %d changes", self.kind, len(changed))
        if changed:
            self._on_change()
