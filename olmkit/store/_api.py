"""The store interface, its value types and helpers (re-exported by :mod:`olmkit.store`)."""

from __future__ import annotations

import abc
import random
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

import attrs

from olmkit.store.errors import Conflict, Invalid
from olmkit.store.selectors import LabelSelector

Object = dict[str, Any]
"""A stored object: a plain JSON-able mapping with ``apiVersion``, ``kind`` and ``metadata``."""

Selector = str | Mapping[str, Any] | LabelSelector | None
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
PatchType = Literal["merge", "json"]
Propagation = Literal["Background", "Orphan"]

T = TypeVar("T")

# Kinds without a namespace, by (API group, kind). Registration and stored
# CustomResourceDefinitions add to this; every other kind is namespaced.
CLUSTER_SCOPED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("config.openshift.io", "ClusterVersion"),
        ("operators.coreos.com", "OLMConfig"),
        ("operators.coreos.com", "Operator"),
    }
)


def group_of(api_version: str) -> str:
    """The API group of ``api_version`` (``""`` for the core group ``v1``)."""
    return api_version.rpartition("/")[0]


@attrs.frozen
class WatchEvent:
    """One change seen by a watch.

    ``object`` is the object after the change (for ``DELETED``, its last state, carrying the
    resourceVersion of the deletion).
    """

    type: EventType
    object: Object

    @property
    def resource_version(self) -> str:
        """The resourceVersion of the change; a watch resumes after it."""
        return str(self.object["metadata"]["resourceVersion"])


@attrs.frozen
class ObjectList:
    """The result of a list: the items (by namespace, then name) and the store's resourceVersion.

    Start a watch from ``resource_version`` to see every change after this list.
    """

    items: list[Object]
    resource_version: str

    def __iter__(self) -> Iterator[Object]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class Watch:
    """An iterator of :class:`WatchEvent` that a backend feeds; close it (or use ``with``) when done.

    Iteration ends when the watch is closed or ``timeout`` seconds have passed; ``timeout=0``
    delivers what is pending now and ends (the deterministic mode for tests and single-threaded
    controllers); ``timeout=None`` waits for changes until closed. ``resource_version`` is the
    last resourceVersion delivered or scanned: pass it to a new watch to resume.
    """

    def __init__(
        self,
        fetch: Callable[[int], tuple[list[WatchEvent], int]],
        wait: Callable[[int, float], None],
        start: int,
        initial: list[WatchEvent] | None = None,
        timeout: float | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._fetch = fetch
        self._wait = wait
        self._rv = start
        self._pending = list(initial or [])
        self._pending.reverse()
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._closed = False
        self._on_close = on_close

    @property
    def resource_version(self) -> str:
        """Resume a later watch from here."""
        return str(self._rv)

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        while not self._closed:
            if self._pending:
                return self._pending.pop()
            events, last = self._fetch(self._rv)
            if events:
                self._pending = list(reversed(events))
            self._rv = max(self._rv, last)
            if self._pending:
                continue
            remaining = None if self._deadline is None else self._deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            self._wait(self._rv, 1.0 if remaining is None else min(remaining, 1.0))
        self.close()
        raise StopIteration

    def close(self) -> None:
        """Stop the watch; iteration ends."""
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


#: changes across kinds, each with its API group (see :meth:`Store.changes_after`)
Changes = list[tuple[str, WatchEvent]]


class Store(abc.ABC):
    """A cluster store shaped like the Kubernetes API.

    Objects are plain JSON-able mappings addressed by apiVersion, kind, namespace and name;
    the store maintains ``metadata.uid``, ``resourceVersion`` (one monotonic counter across the
    store, as etcd's revision), ``generation`` (bumped only when something outside ``metadata``
    and ``status`` changes), ``creationTimestamp`` and ``deletionTimestamp``. Every method acts
    on one object (plus the garbage collection a deletion triggers): there are no transactions
    across objects, so a backend on a real cluster fits the same interface.

    ``status`` is a subresource: :meth:`create`, :meth:`update` and :meth:`patch` keep the stored
    status; :meth:`update_status` (and ``patch(..., subresource="status")``) change only the status.
    Objects are addressed by API group, not version: reading with another version of the group
    returns the stored object with that ``apiVersion`` (no conversion, as a CRD's ``None`` strategy).

    Every method raises a :class:`~olmkit.store.errors.StoreError`: ``NotFound``, ``AlreadyExists``,
    ``Conflict`` (stale ``metadata.resourceVersion`` or ``uid`` precondition), ``Invalid``,
    ``Expired`` (a watch resuming from a compacted resourceVersion).

    ``embedded`` says whether the store is olmkit's own (memory, SQLite): no API server or
    kubelet is behind it, so olmkit's simulated ones stand in for them. A store on an API
    server (``olmkit.kube``) is not embedded, and nothing simulated runs against it.

    .. versionadded:: 0.1
    .. versionchanged:: 0.3
       ``embedded``.
    """

    #: olmkit's own store (True), or one with an API server and kubelets behind it (False).
    embedded: ClassVar[bool] = False

    @abc.abstractmethod
    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Object:
        """The object, or ``NotFound``. ``namespace`` is ignored for cluster-scoped kinds."""

    @abc.abstractmethod
    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: Selector = None
    ) -> ObjectList:
        """Objects of a kind in ``namespace`` (``None``: all namespaces) matching the label selector."""

    @abc.abstractmethod
    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: Selector = None,
        resource_version: str | None = None,
        timeout: float | None = None,
    ) -> Watch:
        """Changes to objects of a kind.

        Args:
            resource_version: deliver the changes after this resourceVersion; ``None`` or ``"0"``
                first delivers every current object as ``ADDED``, then the changes after that.
            timeout: see :class:`Watch`.

        Raises:
            Expired: ``resource_version`` is older than the history the store keeps (also raised
                while iterating, when a slow watcher falls behind the compaction).
        """

    @abc.abstractmethod
    def create(self, obj: Mapping[str, Any]) -> Object:
        """Store a new object and return it as stored.

        ``metadata.generateName`` makes a unique name; ``status`` is dropped (set it with
        :meth:`update_status`); ``metadata.namespace`` is required for namespaced kinds and
        dropped for cluster-scoped ones.
        """

    @abc.abstractmethod
    def update(self, obj: Mapping[str, Any]) -> Object:
        """Replace an object's spec and metadata (not its status).

        A ``metadata.resourceVersion`` (or ``uid``) that is not the stored one raises ``Conflict``;
        without one the update is unconditional. An update that changes nothing writes nothing.
        Removing the last finalizer of an object being deleted removes it.
        """

    @abc.abstractmethod
    def update_status(self, obj: Mapping[str, Any]) -> Object:
        """Replace an object's status only (same concurrency rules as :meth:`update`)."""

    @abc.abstractmethod
    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: Literal["status"] | None = None,
    ) -> Object:
        """Apply a JSON merge patch (RFC 7386) or a JSON patch (RFC 6902, ``patch_type="json"``).

        A ``metadata.resourceVersion`` in a merge patch is a precondition, as in the API.
        """

    @abc.abstractmethod
    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        resource_version: str | None = None,
        uid: str | None = None,
        propagation: Propagation = "Background",
    ) -> Object:
        """Delete an object; return its last state.

        While finalizers remain, deletion only sets ``metadata.deletionTimestamp``; the object goes
        when an update removes the last one. When an object goes, the objects it owns (through
        ``metadata.ownerReferences``, in its namespace, or anywhere when it is cluster-scoped) are
        deleted in turn, unless they have another owner still present, or ``propagation`` is
        ``"Orphan"`` (their reference to it is removed instead).
        """

    @abc.abstractmethod
    def register_kind(self, api_version: str, kind: str, *, namespaced: bool) -> None:
        """Declare the scope of a kind (stored ``CustomResourceDefinition`` objects declare theirs)."""

    @abc.abstractmethod
    def is_namespaced(self, api_version: str, kind: str) -> bool:
        """Whether objects of the kind live in a namespace (unknown kinds do)."""

    def latest_resource_version(self) -> str | None:
        """The resourceVersion of the store's latest change, if the backend can tell cheaply.

        Controllers use it to skip polling their watches when nothing changed. ``None``
        (the default) means "unknown": poll every watch. Compare it for equality only: a
        backend that sees changes through several watches (``olmkit.kube``) answers a token
        that changes with every change it sees, not a resourceVersion.

        .. versionchanged:: 0.3
           may be a token rather than a resourceVersion.
        """
        return None

    def server_resource_version(self) -> str | None:
        """The latest resourceVersion of the API server behind the store, asked of the server.

        One request; ``None`` (the default) when no API server is behind the store or it
        cannot tell. A run of the controllers compares it before and after a pause to tell
        whether the server is still changing things (a change whose watch event has not
        arrived yet moves it too). Compare it for equality only.

        .. versionadded:: 0.4
        """
        return None

    def sync_problem(self) -> str | None:
        """Why the store's watches may be missing changes now; ``None`` when they are not.

        A store fed by watches of an API server (``olmkit.kube``) answers which of its watches
        is not open (broken, being retried); it sends no request. The default: ``None`` (an
        embedded store's watches read the store itself). ``olmkit run``'s ``/readyz`` reports
        it, as client-go's controllers are not ready until their caches sync.

        .. versionadded:: 0.4
        """
        return None

    def changes_after(self, resource_version: int, kinds: Collection[tuple[str, str]]) -> tuple[Changes, int] | None:
        """Every change to objects of ``kinds`` after ``resource_version``, across kinds, oldest first.

        For a reader that follows many kinds (the API server's watches): one read instead of
        one watch per kind. ``kinds`` are ``(API group, kind)`` pairs. Returns each event with
        its API group (objects keep the apiVersion they were stored with) and the
        resourceVersion read up to, or ``None`` (the default) when the backend cannot read
        changes across kinds: read each kind's watch instead.

        Raises:
            Expired: ``resource_version`` is older than the store's history.

        .. versionadded:: 0.4
        """
        return None

    def wait_for_change(self, resource_version: str | None, timeout: float) -> None:
        """Block until the store may have changed after ``resource_version``, at most ``timeout`` seconds.

        A hint for loops that poll many watches (one wake-up instead of one per watch); it may
        return early. The default sleeps a short while.

        .. versionadded:: 0.2
        """
        time.sleep(min(timeout, 0.05))

    def wait_for_change_of(
        self, kinds: Collection[tuple[str, str]], resource_version: str | None, timeout: float
    ) -> None:
        """:meth:`wait_for_change`, for a reader of ``kinds`` only (``(API group, kind)`` pairs).

        A backend may sleep through this store object's writes of other kinds (the SQLite store
        does); other processes' writes wake it as :meth:`wait_for_change` does. The default is
        :meth:`wait_for_change`.

        .. versionadded:: 0.4
        """
        self.wait_for_change(resource_version, timeout)

    def add_commit_listener(self, listener: Callable[[], None]) -> bool:
        """Have ``listener`` called after each write this store object commits, in the writing thread.

        For a reader that follows the store's changes in the same process (the API server's
        watch hub): it reads a write's changes at once instead of a thread of its own being
        woken for each. Writes by other processes (or other store objects) are not reported:
        poll for those. A listener's exception is not the write's (it is logged). Returns
        whether the backend calls listeners (the default: ``False``).

        .. versionadded:: 0.4
        """
        return False

    def close(self) -> None:  # noqa: B027 - optional for backends without resources
        """Release the backend's resources."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def retry_on_conflict(fn: Callable[[], T], attempts: int = 5, backoff: float = 0.01) -> T:
    """Call ``fn`` until it does not raise ``Conflict``, at most ``attempts`` times.

    ``fn`` must read the object afresh each time (read, modify, write). Between attempts it
    sleeps a jittered, doubling delay starting at ``backoff`` seconds (client-go's
    ``RetryOnConflict``).

    Raises:
        Conflict: the last attempt conflicted too.
        Invalid: ``attempts`` is less than 1.
    """
    if attempts < 1:
        raise Invalid(f"retry_on_conflict needs at least one attempt, not {attempts}")
    delay = backoff
    for attempt in range(attempts):
        try:
            return fn()
        except Conflict:
            if attempt == attempts - 1:
                raise
            if delay > 0:
                time.sleep(delay * random.uniform(0.5, 1.5))
                delay = min(delay * 2, 1.0)
    raise AssertionError("unreachable")  # pragma: no cover
