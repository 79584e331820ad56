"""The in-memory backend: the same semantics as SQLite, in one process, for tests.

Objects are kept serialized (orjson bytes), so callers always get private copies and a
non-JSON value is refused exactly as the SQLite backend refuses it.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Collection, Iterator

from olmkit.store._api import EventType, Object, WatchEvent
from olmkit.store._local import Key, LocalStore, Txn, dumps, loads
from olmkit.store.errors import Expired

__all__ = ["MemoryStore"]

_Event = tuple[int, EventType, str, str, str, bytes]  # rv, type, group, kind, namespace, object


class _MemoryTxn(Txn):
    def __init__(self, store: MemoryStore) -> None:
        self.s = store
        self.undo: dict[Key, bytes | None] = {}
        self.start_rv = store._rv
        self.events: list[_Event] = []

    def get(self, key: Key) -> Object | None:
        data = self.s._objects.get(key)
        return None if data is None else loads(data)

    def find_uid(self, uid: str) -> Key | None:
        return self.s._by_uid.get(uid)

    def dependents(self, owner_uid: str) -> list[Key]:
        return sorted(self.s._owned.get(owner_uid, ()))

    def next_rv(self) -> int:
        self.s._rv += 1
        return self.s._rv

    def _save(self, key: Key) -> None:
        if key not in self.undo:
            self.undo[key] = self.s._objects.get(key)

    def write(self, key: Key, obj: Object, event: EventType) -> None:
        self._save(key)
        data = dumps(obj)
        self.s._unindex(key)
        self.s._objects[key] = data
        self.s._index(key, obj)
        self.events.append((int(obj["metadata"]["resourceVersion"]), event, key[0], key[1], key[2], data))

    def remove(self, key: Key, obj: Object) -> None:
        self._save(key)
        self.s._unindex(key)
        del self.s._objects[key]
        self.events.append((int(obj["metadata"]["resourceVersion"]), "DELETED", key[0], key[1], key[2], dumps(obj)))

    def set_scope(self, group: str, kind: str, namespaced: bool) -> None:
        self.s._registered[(group, kind)] = namespaced

    def rollback(self) -> None:
        for key, data in self.undo.items():
            self.s._unindex(key)
            if data is None:
                self.s._objects.pop(key, None)
            else:
                self.s._objects[key] = data
                self.s._index(key, loads(data))
        self.s._rv = self.start_rv


class MemoryStore(LocalStore):
    """A store in this process's memory; thread-safe; gone when the process ends.

    Args:
        history: how many events a watch can resume from (older resourceVersions are ``Expired``).
        clock: seconds since the epoch, for creation and deletion timestamps.
    """

    def __init__(self, history: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self._cond = threading.Condition(threading.RLock())
        self._objects: dict[Key, bytes] = {}
        self._by_uid: dict[str, Key] = {}
        self._owned: dict[str, set[Key]] = {}
        self._registered: dict[tuple[str, str], bool] = {}
        self._events: collections.deque[_Event] = collections.deque(maxlen=max(1, history))
        self._rv = 0

    def _index(self, key: Key, obj: Object) -> None:
        self._by_uid[obj["metadata"]["uid"]] = key
        for ref in obj["metadata"].get("ownerReferences") or []:
            self._owned.setdefault(ref["uid"], set()).add(key)

    def _unindex(self, key: Key) -> None:
        data = self._objects.get(key)
        if data is None:
            return
        obj = loads(data)
        self._by_uid.pop(obj["metadata"]["uid"], None)
        for ref in obj["metadata"].get("ownerReferences") or []:
            owned = self._owned.get(ref["uid"])
            if owned is not None:
                owned.discard(key)
                if not owned:
                    del self._owned[ref["uid"]]

    def latest_resource_version(self) -> str | None:
        """The store-wide resourceVersion counter."""
        with self._cond:
            return str(self._rv)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Txn]:
        with self._cond:
            txn = _MemoryTxn(self)
            try:
                yield txn
            except BaseException:
                txn.rollback()
                raise
            self._events.extend(txn.events)
            if txn.events:
                self._cond.notify_all()

    def _read(self, key: Key) -> Object | None:
        with self._cond:
            data = self._objects.get(key)
        return None if data is None else loads(data)

    def _scan(self, group: str, kind: str, namespace: str | None) -> tuple[list[Object], int]:
        with self._cond:
            found = sorted(
                (k, v)
                for k, v in self._objects.items()
                if k[0] == group and k[1] == kind and (namespace is None or k[2] == namespace)
            )
            rv = self._rv
        return [loads(v) for _, v in found], rv

    def _oldest(self) -> int:
        """The oldest resourceVersion a watch can resume from."""
        return self._events[0][0] - 1 if self._events else self._rv

    def _picked(self, rv: int, kind: str, match: Callable[[_Event], bool]) -> tuple[list[_Event], int]:
        """The kept events after ``rv`` that ``match``, and the latest resourceVersion.

        Raises:
            Expired: ``rv`` is older than the kept history (naming ``kind``).
        """
        with self._cond:
            oldest = self._oldest()
            if rv < oldest:
                raise Expired(kind=kind, resource_version=str(rv), oldest=str(oldest))
            first = self._events[0][0] if self._events else rv + 1
            picked = [e for e in itertools.islice(self._events, max(0, rv + 1 - first), None) if match(e)]
            return picked, self._rv

    def _events_after(
        self, rv: int, group: str, kind: str, namespace: str | None
    ) -> tuple[list[tuple[EventType, Object]], int]:
        picked, last = self._picked(
            rv, kind, lambda e: e[2] == group and e[3] == kind and (namespace is None or e[4] == namespace)
        )
        return [(e[1], loads(e[5])) for e in picked], last

    def changes_after(
        self, resource_version: int, kinds: Collection[tuple[str, str]]
    ) -> tuple[list[tuple[str, WatchEvent]], int]:
        wanted = set(kinds)
        picked, last = self._picked(resource_version, "", lambda e: (e[2], e[3]) in wanted)
        return [(e[2], WatchEvent(e[1], loads(e[5]))) for e in picked], last

    def _wait(self, rv: int, timeout: float) -> None:
        with self._cond:
            if self._rv <= rv:
                self._cond.wait(timeout)

    def _stored_scope(self, group: str, kind: str) -> bool | None:
        return self._registered.get((group, kind))
