"""The SQLite backend: the embedded default, persistent, shared by processes on one machine.

One write is one ``BEGIN IMMEDIATE`` transaction (WAL journal), so concurrent writers queue on
the database lock, a stale ``resourceVersion`` is always detected, and a process killed in the
middle of a write leaves nothing half-written. Every change is appended to an ``events`` table
keyed by resourceVersion; watches in any process poll it, and it is compacted to a bounded
history (a watch resuming from before it gets ``Expired``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from olmkit.store._api import EventType, Object, WatchEvent
from olmkit.store._local import Key, LocalStore, Txn, dumps, loads
from olmkit.store.errors import Expired, StoreError

__all__ = ["SqliteStore"]

log = logging.getLogger("olmkit.store")

SCHEMA_VERSION = 1
#: The events of this process's own writes kept in memory for :meth:`SqliteStore.changes_after`.
RECENT = 4096
_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    grp TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    uid TEXT NOT NULL UNIQUE, rv INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (grp, kind, namespace, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS owner_refs (
    owner_uid TEXT NOT NULL, grp TEXT NOT NULL, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (owner_uid, grp, kind, namespace, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS owner_refs_by_dependent ON owner_refs (grp, kind, namespace, name);
CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, grp TEXT NOT NULL, kind TEXT NOT NULL,
    namespace TEXT NOT NULL, data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_kind ON events (grp, kind, rv);
CREATE TABLE IF NOT EXISTS kinds (
    grp TEXT NOT NULL, kind TEXT NOT NULL, namespaced INTEGER NOT NULL, PRIMARY KEY (grp, kind)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta VALUES ('rv', 0), ('compacted', 0);
"""


class _SqliteTxn(Txn):
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.rv = 0
        #: the events written: resourceVersion, type, group, kind, the object's encoding
        self.events: list[tuple[int, EventType, str, str, bytes]] = []

    def get(self, key: Key) -> Object | None:
        row = self.db.execute(
            "SELECT data FROM objects WHERE grp=? AND kind=? AND namespace=? AND name=?", key
        ).fetchone()
        return None if row is None else loads(row[0])

    def find_uid(self, uid: str) -> Key | None:
        row = self.db.execute("SELECT grp, kind, namespace, name FROM objects WHERE uid=?", (uid,)).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def dependents(self, owner_uid: str) -> list[Key]:
        rows = self.db.execute(
            "SELECT grp, kind, namespace, name FROM owner_refs WHERE owner_uid=? ORDER BY grp, kind, namespace, name",
            (owner_uid,),
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def next_rv(self) -> int:
        self.rv = int(self.db.execute("UPDATE meta SET value=value+1 WHERE key='rv' RETURNING value").fetchone()[0])
        return self.rv

    def _drop_refs(self, key: Key) -> None:
        self.db.execute("DELETE FROM owner_refs WHERE grp=? AND kind=? AND namespace=? AND name=?", key)

    def write(self, key: Key, obj: Object, event: EventType) -> None:
        meta = obj["metadata"]
        data = dumps(obj)
        rv = int(meta["resourceVersion"])
        self.db.execute("INSERT OR REPLACE INTO objects VALUES (?,?,?,?,?,?,?)", (*key, meta["uid"], rv, data))
        self._drop_refs(key)
        refs = meta.get("ownerReferences")
        if refs:
            self.db.executemany("INSERT OR IGNORE INTO owner_refs VALUES (?,?,?,?,?)", [(r["uid"], *key) for r in refs])
        self.db.execute("INSERT INTO events VALUES (?,?,?,?,?,?)", (rv, event, key[0], key[1], key[2], data))
        self.events.append((rv, event, key[0], key[1], data))

    def remove(self, key: Key, obj: Object) -> None:
        self.db.execute("DELETE FROM objects WHERE grp=? AND kind=? AND namespace=? AND name=?", key)
        self._drop_refs(key)
        rv = int(obj["metadata"]["resourceVersion"])
        data = dumps(obj)
        self.db.execute("INSERT INTO events VALUES (?,?,?,?,?,?)", (rv, "DELETED", key[0], key[1], key[2], data))
        self.events.append((rv, "DELETED", key[0], key[1], data))

    def set_scope(self, group: str, kind: str, namespaced: bool) -> None:
        self.db.execute("INSERT OR REPLACE INTO kinds VALUES (?,?,?)", (group, kind, int(namespaced)))


class SqliteStore(LocalStore):
    """A store in an SQLite database file, safe to share between threads and processes.

    Args:
        path: the database file (created with its directory when missing).
        history: how many events watches can resume from; older ones are compacted away.
        poll_interval: how often a watch looks for changes made by other processes (seconds).
        busy_timeout: how long a write waits for another process's write to finish (seconds).
        clock: seconds since the epoch, for creation and deletion timestamps.

    Raises:
        StoreError: the file cannot be opened as an olmkit store.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        history: int = 10_000,
        poll_interval: float = 0.05,
        busy_timeout: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(clock)
        self.path = Path(path)
        self.history = max(1, history)
        self.poll_interval = poll_interval
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._before_commit: Callable[[], None] | None = None  # test hook: runs inside each write
        #: the events this store's writes committed, by resourceVersion (the last :data:`RECENT`)
        self._recent: dict[int, tuple[EventType, str, str, bytes]] = {}
        self._recent_last = 0
        #: reads across kinds answered from ``_recent`` (for tests)
        self.recent_reads = 0
        self._listeners: list[Callable[[], None]] = []
        #: threads waiting for writes of some kinds (wait_for_change_of): their wake-up, the kinds
        self._waiters: dict[threading.Event, frozenset[tuple[str, str]]] = {}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = self._db()
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise StoreError(f"{self.path}: store schema version {version} is not {SCHEMA_VERSION}")
            db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} PRAGMA user_version={SCHEMA_VERSION}; COMMIT;")
        except (sqlite3.Error, OSError) as exc:
            self.close()
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from None

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout)
            db.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a commit survives a killed process; only power loss may lose the last ones
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            self._connections.clear()
        self._local = threading.local()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[Txn]:
        db = self._db()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot start a write: {exc}") from None
        txn = _SqliteTxn(db)
        try:
            yield txn
            if txn.rv:
                self._compact(db, txn.rv)
            if self._before_commit is not None:
                self._before_commit()
            db.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{self.path}: write failed: {exc}") from None
            raise
        if txn.rv:
            self._remember(txn.events)
            with self._changed:
                self._changed.notify_all()
            if self._waiters:
                touched = {(group, kind) for _, _, group, kind, _ in txn.events}
                with self._lock:
                    for woken, kinds in self._waiters.items():
                        if not kinds.isdisjoint(touched):
                            woken.set()
            for listener in self._listeners:
                try:
                    listener()
                except Exception:  # the write is committed: a listener's failure is not its
                    log.exception("a commit listener of %s failed", self.path)

    def add_commit_listener(self, listener: Callable[[], None]) -> bool:
        self._listeners.append(listener)
        return True

    def wait_for_change_of(
        self, kinds: Collection[tuple[str, str]], resource_version: str | None, timeout: float
    ) -> None:
        """Wait for a write of ``kinds`` by this store object, or ``poll_interval`` (others' writes)."""
        wanted = frozenset(kinds)
        try:
            after = int(resource_version or 0)
        except ValueError:
            after = 0
        woken = threading.Event()
        with self._lock:
            recent, last = self._recent, self._recent_last
            if last - after > RECENT or any(
                (recent.get(rv) or ("", "", "", b""))[1:3] in wanted for rv in range(after + 1, last + 1)
            ):
                return  # written since the reader looked
            self._waiters[woken] = wanted
        try:
            woken.wait(min(timeout, self.poll_interval))
        finally:
            with self._lock:
                self._waiters.pop(woken, None)

    def _remember(self, events: list[tuple[int, EventType, str, str, bytes]]) -> None:
        """Keep a committed write's events for readers in this process (the last :data:`RECENT`)."""
        with self._lock:
            recent = self._recent
            for rv, etype, group, kind, data in events:
                recent[rv] = (etype, group, kind, data)
                self._recent_last = max(self._recent_last, rv)
            if len(recent) > RECENT + RECENT // 4:
                for rv in sorted(recent)[: len(recent) - RECENT]:
                    del recent[rv]

    def _compact(self, db: sqlite3.Connection, rv: int) -> None:
        """Keep the last ``history`` events; trim in batches of a tenth of the history."""
        compacted = db.execute("SELECT value FROM meta WHERE key='compacted'").fetchone()[0]
        if rv - compacted > self.history + max(1, self.history // 10):
            keep_after = rv - self.history
            db.execute("DELETE FROM events WHERE rv <= ?", (keep_after,))
            db.execute("UPDATE meta SET value=? WHERE key='compacted'", (keep_after,))

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    def _read(self, key: Key) -> Object | None:
        row = (
            self._db()
            .execute("SELECT data FROM objects WHERE grp=? AND kind=? AND namespace=? AND name=?", key)
            .fetchone()
        )
        return None if row is None else loads(row[0])

    def _scan(self, group: str, kind: str, namespace: str | None) -> tuple[list[Object], int]:
        with self._snapshot() as db:
            if namespace is None:
                rows = db.execute("SELECT data FROM objects WHERE grp=? AND kind=?", (group, kind)).fetchall()
            else:
                rows = db.execute(
                    "SELECT data FROM objects WHERE grp=? AND kind=? AND namespace=?", (group, kind, namespace)
                ).fetchall()
            rv = db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0]
        return [loads(r[0]) for r in rows], int(rv)

    def latest_resource_version(self) -> str | None:
        """The store-wide resourceVersion counter (one indexed read)."""
        return str(self._db().execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0])

    def _events_after(
        self, rv: int, group: str, kind: str, namespace: str | None, limit: int = 1000
    ) -> tuple[list[tuple[EventType, Object]], int]:
        with self._snapshot() as db:
            current = _resumable(db, rv, kind)
            sql = "SELECT rv, type, data FROM events WHERE grp=? AND kind=? AND rv>?"
            args: tuple[object, ...] = (group, kind, rv)
            if namespace is not None:
                sql += " AND namespace=?"
                args += (namespace,)
            rows = db.execute(sql + " ORDER BY rv LIMIT ?", (*args, limit)).fetchall()
        last = rows[-1][0] if len(rows) == limit else current
        return [(r[1], loads(r[2])) for r in rows], int(last)

    def changes_after(
        self, resource_version: int, kinds: Collection[tuple[str, str]]
    ) -> tuple[list[tuple[str, WatchEvent]], int]:
        """Every change to ``kinds`` after ``resource_version`` (see :meth:`Store.changes_after`).

        When every change since is one this store object committed (no other process or store
        wrote in between) and within the kept history, the changes come from memory: the only
        read is the latest resourceVersion. Otherwise from the ``events`` table.
        """
        wanted = set(kinds)
        current = int(self.latest_resource_version() or 0)
        if resource_version >= current - self.history and current - resource_version <= RECENT:
            with self._lock:
                picked = [self._recent.get(rv) for rv in range(resource_version + 1, current + 1)]
            if None not in picked:
                self.recent_reads += 1
                found = [(e[1], WatchEvent(e[0], loads(e[3]))) for e in picked if e is not None and e[1:3] in wanted]
                return found, current
        with self._snapshot() as db:
            current = _resumable(db, resource_version, "")
            rows = db.execute(
                "SELECT type, grp, kind, data FROM events WHERE rv>? ORDER BY rv", (resource_version,)
            ).fetchall()
        found = [(r[1], WatchEvent(r[0], loads(r[3]))) for r in rows if (r[1], r[2]) in wanted]
        return found, current

    def _wait(self, rv: int, timeout: float) -> None:
        # a write in this process wakes the watch at once; other processes' writes are polled
        with self._changed:
            self._changed.wait(min(timeout, self.poll_interval))

    def _stored_scope(self, group: str, kind: str) -> bool | None:
        row = self._db().execute("SELECT namespaced FROM kinds WHERE grp=? AND kind=?", (group, kind)).fetchone()
        return None if row is None else bool(row[0])


def _resumable(db: sqlite3.Connection, rv: int, kind: str) -> int:
    """The store's latest resourceVersion, checking that the events after ``rv`` are still kept.

    Raises:
        Expired: ``rv`` is older than the kept history (naming ``kind``).
    """
    compacted = db.execute("SELECT value FROM meta WHERE key='compacted'").fetchone()[0]
    if rv < compacted:
        raise Expired(kind=kind, resource_version=str(rv), oldest=str(compacted))
    return int(db.execute("SELECT value FROM meta WHERE key='rv'").fetchone()[0])
