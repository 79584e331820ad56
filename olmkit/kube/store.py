"""The ``kube`` store backend: the store interface over a Kubernetes API server.

Every kind goes through one generic path: discovery (one request per API group version the
process uses, cached for the process) says a kind's plural, scope and whether it has a
``status`` subresource, and the request is a plain REST call on the collection or item URL,
sent through the official client's connection pool (see :mod:`olmkit.kube.transport` for why
not the dynamic client).

A kind gets an :class:`~olmkit.kube.informer.Informer` the first time it is watched (a one-shot
command that only gets or applies starts none). From then on its watches, gets and lists are
served from the informer's cache, as a controller's listers are: no request while nothing
changes. They see this process's own writes at once (a read waits until the informer has the
write's event), and other writers' changes, the server's garbage collection included, as soon
as their watch events arrive. Kinds without an informer are read from the API server.
Writes always go to the API server, with the resourceVersion preconditions the caller gives:
a write based on a stale read is a ``Conflict``, which the controllers retry.

.. versionadded:: 0.3
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs
import orjson

from olmkit.kube.informer import Informer
from olmkit.kube.transport import Ref, Transport, quote_name
from olmkit.store import (
    CLUSTER_SCOPED_KINDS,
    Conflict,
    Invalid,
    NotFound,
    Object,
    ObjectList,
    PatchType,
    Propagation,
    Selector,
    Store,
    StoreError,
    Watch,
    WatchEvent,
    group_of,
    parse_selector,
)
from olmkit.store.shape import check_name, check_propagation, checked_copy

__all__ = ["KubeStore", "Resource"]

_CRD: Final = ("apiextensions.k8s.io", "CustomResourceDefinition")
#: Seconds a kind the server does not serve is taken as still missing (unless this store writes a
#: CRD of its group): controllers that watch it poll without asking discovery every time.
MISSING_TTL: Final = 10.0
_PATCH_TYPES: Final = {"merge": "application/merge-patch+json", "json": "application/json-patch+json"}


@attrs.frozen
class Resource:
    """A served resource, as discovery describes it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    status: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote_name(namespace)}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote_name(name)}"
        if subresource:
            base += f"/{subresource}"
        return base


def _gv_path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


class KubeStore(Store):
    """A store on a Kubernetes API server (a real cluster, or ``olmkit serve``).

    Args:
        api_client: a configured ``kubernetes.client.ApiClient`` (see :func:`olmkit.kube.connect`).
        where: how errors name the server (kubeconfig file and context).
        history: events each informer keeps for watchers that fall behind.
    """

    embedded = False

    def __init__(self, api_client: Any, where: str = "", history: int = 10_000) -> None:
        self.transport = Transport(api_client, where)
        self.history = history
        self._lock = threading.RLock()
        self._group_versions: dict[tuple[str, str], dict[str, Resource] | None] = {}
        self._group_prefs: dict[str, list[str]] = {}
        self._resources: dict[tuple[str, str], Resource] = {}
        self._registered: dict[tuple[str, str], bool] = {}
        self._missing: dict[tuple[str, str], float] = {}
        self._informers: dict[tuple[str, str], Informer] = {}
        self._changes = 0
        self._changed = threading.Condition()

    # -- discovery ------------------------------------------------------------------------

    def _discover(self, group: str, version: str) -> dict[str, Resource] | None:
        """The kinds one group version serves (``None`` when the server does not serve it)."""
        with self._lock:
            if (group, version) in self._group_versions:
                return self._group_versions[(group, version)]
        try:
            answer = self.transport.request("GET", _gv_path(group, version), Ref())
        except NotFound:
            found = None
        else:
            entries = answer.get("resources") or []
            with_status = {
                str(e.get("name")).partition("/")[0] for e in entries if str(e.get("name")).endswith("/status")
            }
            found = {
                str(e["kind"]): Resource(
                    group, version, str(e["kind"]), str(e["name"]), bool(e.get("namespaced")), e["name"] in with_status
                )
                for e in entries
                if "/" not in str(e.get("name")) and e.get("kind")
            }
        with self._lock:
            self._group_versions[(group, version)] = found
        return found

    def _versions_of(self, group: str) -> list[str]:
        """The versions a named group serves, the preferred one first."""
        with self._lock:
            if group in self._group_prefs:
                return self._group_prefs[group]
        try:
            answer = self.transport.request("GET", f"/apis/{group}", Ref())
        except NotFound:
            versions: list[str] = []
        else:
            preferred = str((answer.get("preferredVersion") or {}).get("version") or "")
            versions = [str(v.get("version")) for v in answer.get("versions") or [] if v.get("version")]
            versions.sort(key=lambda v: v != preferred)
        with self._lock:
            self._group_prefs[group] = versions
        return versions

    def resource(self, api_version: str, kind: str) -> Resource | None:
        """The resource serving ``kind`` of ``api_version``'s group (its version if served), or ``None``."""
        group, _, version = api_version.rpartition("/")
        with self._lock:
            cached = self._resources.get((group, kind))
            missing_until = self._missing.get((group, kind))
        if cached is not None and cached.version == version:
            return cached
        if cached is None and missing_until is not None and time.monotonic() < missing_until:
            return None
        served = self._discover(group, version) or {}
        if kind in served:
            found = served[kind]
        elif cached is not None:
            return cached  # another version of the group serves it: objects are addressed by group
        else:
            found = None
            for other in self._versions_of(group) if group else []:
                candidates = self._discover(group, other) or {}
                if kind in candidates:
                    found = candidates[kind]
                    break
        if found is None:
            self._forget_group(group)  # a CRD may define it later: ask again after a while
            with self._lock:
                self._missing[(group, kind)] = time.monotonic() + MISSING_TTL
            return None
        with self._lock:
            if (group, kind) not in self._resources or found.version == version:
                self._resources[(group, kind)] = found
        return found

    def _forget_group(self, group: str) -> None:
        with self._lock:
            for gv in [gv for gv in self._group_versions if gv[0] == group]:
                del self._group_versions[gv]
            self._group_prefs.pop(group, None)
            for gk in [gk for gk in self._resources if gk[0] == group]:
                del self._resources[gk]
            for gk in [gk for gk in self._missing if gk[0] == group]:
                del self._missing[gk]

    def _served(self, api_version: str, kind: str, ref: Ref) -> Resource:
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            raise Invalid("apiVersion and kind are required", **ref.fields())
        found = self.resource(api_version, kind)
        if found is None:
            raise NotFound(
                f"the server at {self.transport.host} serves no kind {kind} in {api_version} "
                "(is its CustomResourceDefinition installed?)",
                **ref.fields(),
            )
        return found

    def register_kind(self, api_version: str, kind: str, *, namespaced: bool) -> None:
        """Declare the scope of a kind the server does not serve (yet); discovery wins for served ones."""
        with self._lock:
            self._registered[(group_of(api_version), kind)] = namespaced

    def is_namespaced(self, api_version: str, kind: str) -> bool:
        found = self.resource(api_version, kind)
        if found is not None:
            return found.namespaced
        gk = (group_of(api_version), kind)
        with self._lock:
            if gk in self._registered:
                return self._registered[gk]
        return gk not in CLUSTER_SCOPED_KINDS

    # -- addressing -----------------------------------------------------------------------

    def _item(self, api_version: str, kind: str, name: str, namespace: str | None) -> tuple[Resource, str | None, Ref]:
        ref = Ref(str(kind or ""), namespace, str(name or ""))
        resource = self._served(api_version, kind, ref)
        if not isinstance(name, str) or not name:
            raise Invalid("a name is required", kind=kind, namespace=namespace, field="metadata.name")
        if resource.namespaced:
            if not namespace:
                raise Invalid(
                    f"{kind} is namespaced: a namespace is required", kind=kind, name=name, field="metadata.namespace"
                )
            return resource, namespace, ref
        return resource, None, Ref(kind, None, name)

    @staticmethod
    def _view(obj: Any, api_version: str, kind: str) -> Object:
        if not isinstance(obj, dict) or obj.get("kind") == "Status":
            raise Invalid(f"the API server answered with {str(obj)[:200]} instead of a {kind}", kind=kind)
        obj["apiVersion"] = api_version
        obj["kind"] = kind
        return obj

    def _body(self, raw: Mapping[str, Any], *, creating: bool = False) -> tuple[Object, Resource, str | None, Ref]:
        """A private copy of an object to send, checked as the local backends check it (no request
        for what is malformed anyway), with the apiVersion the server serves its kind in."""
        obj = checked_copy(raw)
        meta = obj["metadata"]
        kind = str(obj["kind"])
        ns = meta.get("namespace")
        ref = Ref(kind, ns if isinstance(ns, str) else None, str(meta.get("name") or ""))
        resource = self._served(obj["apiVersion"], kind, ref)
        if resource.namespaced:
            if not isinstance(ns, str) or not ns:
                raise Invalid(
                    f"{kind} is namespaced: metadata.namespace is required", field="metadata.namespace", **ref.fields()
                )
            check_name(ns, kind, None)
        else:
            meta.pop("namespace", None)
            ref = Ref(kind, None, ref.name)
        if ref.name or not creating or not meta.get("generateName"):
            if not ref.name:
                raise Invalid("metadata.name is required", field="metadata.name", **ref.fields())
            check_name(ref.name, kind, ref.namespace)
        obj["apiVersion"] = resource.api_version
        return obj, resource, ref.namespace, ref

    def _conflict(self, exc: Conflict, resource: Resource, ref: Ref, sent: Any) -> Conflict:
        """``exc`` with the resourceVersions at odds (the API's message names neither)."""
        if not sent:
            return exc
        try:
            current = self.transport.request("GET", resource.path(ref.namespace, ref.name), ref)
        except StoreError:
            current = {}
        actual = str((current.get("metadata") or {}).get("resourceVersion") or "")
        return Conflict("" if actual else exc.message, expected=str(sent), actual=actual, **ref.fields())

    def _wrote(self, resource: Resource, obj: Any, *, deleted: bool = False) -> None:
        """Tell the kind's informer (if any) to expect the event of a write; forget a changed CRD's group."""
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            return
        with self._lock:
            informer = self._informers.get((resource.group, resource.kind))
        if informer is not None:
            gone = deleted and not (obj["metadata"].get("finalizers") and obj["metadata"].get("deletionTimestamp"))
            if gone:
                informer.expect_deletion(obj)
            else:
                informer.expect(obj)
        if (resource.group, resource.kind) == _CRD:
            self._crd_changed(obj)

    def _crd_changed(self, obj: Mapping[str, Any]) -> None:
        spec = obj.get("spec")
        if isinstance(spec, Mapping) and isinstance(spec.get("group"), str):
            self._forget_group(spec["group"])

    # -- reads ----------------------------------------------------------------------------

    def _cache(self, resource: Resource) -> Informer | None:
        """The kind's informer when one runs (caught up with this process's writes), else ``None``."""
        with self._lock:
            informer = self._informers.get((resource.group, resource.kind))
        if informer is not None:
            informer.catch_up()
        return informer

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Object:
        resource, ns, ref = self._item(api_version, kind, name, namespace)
        cache = self._cache(resource)
        if cache is not None:
            found = cache.lookup(ns or "", name)
            if found is None:
                raise NotFound(**ref.fields())
            return self._view(found, api_version, kind)
        return self._view(self.transport.request("GET", resource.path(ns, name), ref), api_version, kind)

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: Selector = None
    ) -> ObjectList:
        selector = parse_selector(label_selector)
        resource = self.resource(api_version, kind)
        if resource is None:
            return ObjectList(items=[], resource_version="0")
        ns = namespace if resource.namespaced else None
        cache = self._cache(resource)
        if cache is not None:

            def wanted(obj: Object) -> bool:
                return selector.matches(obj["metadata"].get("labels"))

            found, at = cache.select(wanted, ns)
            return ObjectList(items=[self._view(o, api_version, kind) for o in found], resource_version=str(at))
        ref = Ref(kind, ns)
        items: list[Object] = []
        query: dict[str, Any] = {"labelSelector": str(selector) if selector else None, "limit": 500}
        rv = ""
        while True:
            answer = self.transport.request("GET", resource.path(ns), ref, query=query)
            meta = answer.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "0")
            items.extend(self._view(item, api_version, kind) for item in answer.get("items") or [])
            if not meta.get("continue"):
                break
            query = {**query, "continue": meta["continue"]}
        items.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"].get("name") or ""))
        return ObjectList(items=items, resource_version=rv)

    # -- writes ---------------------------------------------------------------------------

    def create(self, obj: Mapping[str, Any]) -> Object:
        body, resource, ns, ref = self._body(obj, creating=True)
        if body["metadata"].get("resourceVersion"):
            raise Invalid("resourceVersion must not be set on create", field="metadata.resourceVersion", **ref.fields())
        body.pop("status", None)
        created = self.transport.request("POST", resource.path(ns), ref, body=body)
        self._wrote(resource, created)
        return self._view(created, str(obj["apiVersion"]), resource.kind)

    def update(self, obj: Mapping[str, Any]) -> Object:
        body, resource, ns, ref = self._body(obj)
        try:
            updated = self.transport.request("PUT", resource.path(ns, ref.name), ref, body=body)
        except Conflict as exc:
            raise self._conflict(exc, resource, ref, body["metadata"].get("resourceVersion")) from None
        self._wrote(resource, updated)
        return self._view(updated, str(obj["apiVersion"]), resource.kind)

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        body, resource, ns, ref = self._body(obj)
        if not resource.status:
            # no status subresource: write the status onto the current object, same preconditions
            current = self.transport.request("GET", resource.path(ns, ref.name), ref)
            wanted = body["metadata"].get("resourceVersion")
            current["metadata"]["resourceVersion"] = wanted or current["metadata"]["resourceVersion"]
            if "status" in body:
                current["status"] = body["status"]
            else:
                current.pop("status", None)
            body = current
        path = resource.path(ns, ref.name, "status" if resource.status else None)
        try:
            updated = self.transport.request("PUT", path, ref, body=body)
        except Conflict as exc:
            raise self._conflict(exc, resource, ref, body["metadata"].get("resourceVersion")) from None
        self._wrote(resource, updated)
        return self._view(updated, str(obj["apiVersion"]), resource.kind)

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
        resource, ns, ref = self._item(api_version, kind, name, namespace)
        if patch_type not in _PATCH_TYPES:
            raise Invalid(f"unknown patch type {patch_type!r} (merge or json)", **ref.fields())
        if patch_type == "merge" and not isinstance(patch, Mapping):
            raise Invalid("a merge patch is a mapping", **ref.fields())
        if subresource not in (None, "status"):
            raise Invalid(f"unknown subresource {subresource!r} (only status)", **ref.fields())
        try:
            orjson.dumps(patch)
        except TypeError as exc:
            raise Invalid(f"the patch is not JSON-able: {exc}", **ref.fields()) from None
        path = resource.path(ns, name, "status" if subresource and resource.status else None)
        try:
            patched = self.transport.request("PATCH", path, ref, body=patch, content_type=_PATCH_TYPES[patch_type])
        except Conflict as exc:
            sent = (patch.get("metadata") or {}).get("resourceVersion") if patch_type == "merge" else None
            raise self._conflict(exc, resource, ref, sent if isinstance(sent, str) else None) from None
        self._wrote(resource, patched)
        return self._view(patched, api_version, kind)

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
        check_propagation(propagation, kind, namespace, name)
        resource, ns, ref = self._item(api_version, kind, name, namespace)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        preconditions = {k: v for k, v in (("resourceVersion", resource_version), ("uid", uid)) if v}
        if preconditions:
            options["preconditions"] = preconditions
        try:
            gone = self.transport.request("DELETE", resource.path(ns, name), ref, body=options)
        except Conflict as exc:
            if uid and not resource_version:
                raise
            raise self._conflict(exc, resource, ref, resource_version) from None
        if isinstance(gone, dict) and gone.get("kind") == "Status":
            # some servers answer a completed deletion with a Status, not the object's last state
            details = gone.get("details") or {}
            meta = {"name": name, "uid": str(details.get("uid") or "")}
            gone = {"metadata": {**meta, "namespace": ns} if ns else meta}
        self._wrote(resource, gone, deleted=True)
        return self._view(gone, api_version, kind)

    # -- watches --------------------------------------------------------------------------

    def informer(self, api_version: str, kind: str, since: int | None = None) -> Informer | None:
        """The informer of a kind, started (list, then watch) on first use; ``None`` when not served.

        ``since``: a first watcher's resourceVersion, from before the informer's list (see
        :meth:`Informer.start`).
        """
        resource = self.resource(api_version, kind)
        if resource is None:
            return None
        gk = (resource.group, resource.kind)
        with self._lock:
            found = self._informers.get(gk)
            if found is not None:
                return found
            informer = Informer(
                self.transport,
                resource.path(),
                resource.api_version,
                resource.kind,
                self.history,
                self._crd_seen if gk == _CRD else self._bump,
            )
            informer.start(since)
            self._informers[gk] = informer
            return informer

    def _crd_seen(self) -> None:
        """A CRD changed (maybe written by another client): kinds taken as missing may be served now."""
        with self._lock:
            self._missing.clear()
        self._bump()

    def _bump(self) -> None:
        with self._changed:
            self._changes += 1
            self._changed.notify_all()

    def watch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: Selector = None,
        resource_version: str | None = None,
        timeout: float | None = None,
    ) -> Watch:
        selector = parse_selector(label_selector)
        start_rv: int | None = None
        if resource_version not in (None, "", "0"):
            try:
                start_rv = int(str(resource_version))
            except ValueError:
                raise Invalid(
                    f"resourceVersion {resource_version!r} is not a number", kind=kind, field="resourceVersion"
                ) from None
        informer = self.informer(api_version, kind, since=start_rv)
        if informer is None:
            return Watch(lambda after: ([], after), lambda rv, t: None, start_rv or 0, [], 0)
        ns = namespace if self.is_namespaced(api_version, kind) else None

        def wanted(obj: Object) -> bool:
            meta = obj.get("metadata") or {}
            return (ns is None or meta.get("namespace") == ns) and selector.matches(meta.get("labels"))

        def view(event: WatchEvent, data: bytes) -> WatchEvent:
            obj: Object = orjson.loads(data)  # a private copy: buffered objects are shared
            obj["apiVersion"] = api_version
            return WatchEvent(event.type, obj)

        informer.catch_up()
        initial: list[WatchEvent] = []
        if start_rv is None:
            items, start = informer.select(wanted, ns)
            initial = [WatchEvent("ADDED", {**o, "apiVersion": api_version}) for o in items]
        else:
            start = start_rv
            informer.events_after(start)  # raises Expired now rather than on the first next()

        def fetch(after: int) -> tuple[list[WatchEvent], int]:
            informer.catch_up()
            events, last = informer.events_after(after)
            return [view(e, data) for e, data in events if wanted(e.object)], last

        return Watch(fetch, informer.wait, start, initial, timeout)

    def latest_resource_version(self) -> str | None:
        """A token that changes whenever an informer records a change (``None`` before any is started).

        The informers see different kinds at different moments, so the largest resourceVersion
        among them could hide a change a lagging one records later; a count of recorded changes
        cannot.
        """
        with self._changed:
            return None if not self._informers else f"changes-{self._changes}"

    def server_resource_version(self) -> str | None:
        """The server's latest resourceVersion: that of a one-item list of Namespaces (read from etcd)."""
        answer = self.transport.request("GET", "/api/v1/namespaces", Ref("Namespace"), query={"limit": 1})
        return str((answer.get("metadata") or {}).get("resourceVersion") or "") or None

    def sync_problem(self) -> str | None:
        """Which informers have no watch open now (broken and being retried, or not yet reopened)."""
        with self._lock:
            informers = list(self._informers.values())
        closed = sorted(informer.kind for informer in informers if not informer.watching)
        if not closed:
            return None
        named = ", ".join(closed[:3]) + (f" and {len(closed) - 3} more" if len(closed) > 3 else "")
        return f"no watch open for {len(closed)} of {len(informers)} kinds ({named})"

    def wait_for_change(self, resource_version: str | None, timeout: float) -> None:
        with self._changed:
            if resource_version == self.latest_resource_version():
                self._changed.wait(timeout)

    # -- the rest -------------------------------------------------------------------------

    @property
    def request_count(self) -> int:
        """API requests sent so far (discovery, reads, writes, lists and watches of informers)."""
        return self.transport.request_count

    def close(self) -> None:
        with self._lock:
            informers = list(self._informers.values())
            self._informers.clear()
        for informer in informers:
            informer.stop()
        self.transport.close()
