"""Object semantics shared by the local backends (memory and SQLite).

A backend supplies storage primitives through a :class:`Txn` (one write transaction) and a few
read methods; this module turns them into the Kubernetes API behaviour: system metadata,
optimistic concurrency, status as a subresource, finalizers and owner garbage collection.
"""

from __future__ import annotations

import abc
import contextlib
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

import orjson

from olmkit.store._api import (
    CLUSTER_SCOPED_KINDS,
    EventType,
    Object,
    ObjectList,
    PatchType,
    Propagation,
    Selector,
    Store,
    Watch,
    WatchEvent,
    group_of,
)
from olmkit.store.errors import AlreadyExists, Conflict, Invalid, NotFound
from olmkit.store.patches import json_patch, merge_patch
from olmkit.store.selectors import LabelSelector, parse_selector
from olmkit.store.shape import check_name, check_propagation, checked_copy

Key = tuple[str, str, str, str]
"""(API group, kind, namespace or "" when cluster-scoped, name)."""

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as the API server's name generator
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "generation", "deletionTimestamp")
CRD_GROUP, CRD_KIND = "apiextensions.k8s.io", "CustomResourceDefinition"


def dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


class Txn(abc.ABC):
    """One write transaction of a backend: reads see its own writes; all or nothing."""

    @abc.abstractmethod
    def get(self, key: Key) -> Object | None: ...

    @abc.abstractmethod
    def find_uid(self, uid: str) -> Key | None: ...

    @abc.abstractmethod
    def dependents(self, owner_uid: str) -> list[Key]: ...

    @abc.abstractmethod
    def next_rv(self) -> int: ...

    @abc.abstractmethod
    def write(self, key: Key, obj: Object, event: EventType) -> None:
        """Store ``obj`` (its resourceVersion already set) and record the event."""

    @abc.abstractmethod
    def remove(self, key: Key, obj: Object) -> None:
        """Remove the object and record a DELETED event carrying ``obj``."""

    @abc.abstractmethod
    def set_scope(self, group: str, kind: str, namespaced: bool) -> None: ...


def _owner_uids(obj: Mapping[str, Any]) -> list[str]:
    return [str(r["uid"]) for r in obj["metadata"].get("ownerReferences") or []]


def _spec_part(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class LocalStore(Store):
    """The API semantics over a local backend's primitives."""

    embedded: ClassVar[bool] = True

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._scopes: dict[tuple[str, str], bool] = dict.fromkeys(CLUSTER_SCOPED_KINDS, False)

    # -- backend primitives -------------------------------------------------------------

    @abc.abstractmethod
    def _transaction(self) -> contextlib.AbstractContextManager[Txn]: ...

    @abc.abstractmethod
    def _read(self, key: Key) -> Object | None: ...

    @abc.abstractmethod
    def _scan(self, group: str, kind: str, namespace: str | None) -> tuple[list[Object], int]:
        """Objects of a kind (in a namespace or all) in key order, and the store's resourceVersion."""

    @abc.abstractmethod
    def _events_after(
        self, rv: int, group: str, kind: str, namespace: str | None
    ) -> tuple[list[tuple[EventType, Object]], int]:
        """Events after ``rv`` for a kind, and the last resourceVersion scanned; raises Expired."""

    @abc.abstractmethod
    def _wait(self, rv: int, timeout: float) -> None:
        """Block until a change after ``rv`` may be there, at most ``timeout`` seconds."""

    @abc.abstractmethod
    def _stored_scope(self, group: str, kind: str) -> bool | None:
        """The scope registered in the backend (by this or another process), if any."""

    # -- scope and addressing -----------------------------------------------------------

    def register_kind(self, api_version: str, kind: str, *, namespaced: bool) -> None:
        with self._transaction() as txn:
            txn.set_scope(group_of(api_version), kind, namespaced)
        self._scopes[(group_of(api_version), kind)] = namespaced

    def is_namespaced(self, api_version: str, kind: str) -> bool:
        gk = (group_of(api_version), kind)
        if gk not in self._scopes:
            stored = self._stored_scope(*gk)
            if stored is None:
                return True
            self._scopes[gk] = stored
        return self._scopes[gk]

    def _key(self, api_version: str, kind: str, name: str, namespace: str | None) -> Key:
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            raise Invalid("apiVersion and kind are required", kind=str(kind or ""), name=str(name))
        if not isinstance(name, str) or not name:
            raise Invalid("a name is required", kind=kind, namespace=namespace, field="metadata.name")
        if self.is_namespaced(api_version, kind):
            if not namespace:
                raise Invalid(
                    f"{kind} is namespaced: a namespace is required", kind=kind, name=name, field="metadata.namespace"
                )
            return (group_of(api_version), kind, namespace, name)
        return (group_of(api_version), kind, "", name)

    @staticmethod
    def _view(obj: Object, api_version: str) -> Object:
        obj["apiVersion"] = api_version
        return obj

    def _now(self) -> str:
        return datetime.fromtimestamp(self._clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    # -- validation ----------------------------------------------------------------------

    _validated = staticmethod(checked_copy)
    _check_name = staticmethod(check_name)

    def _address(self, obj: Object) -> Key:
        meta = obj["metadata"]
        api_version, kind = obj["apiVersion"], obj["kind"]
        if self.is_namespaced(api_version, kind):
            ns = meta.get("namespace")
            if not isinstance(ns, str) or not ns:
                raise Invalid(
                    f"{kind} is namespaced: metadata.namespace is required",
                    kind=kind,
                    name=str(meta.get("name") or ""),
                    field="metadata.namespace",
                )
            self._check_name(ns, kind, None)
        else:
            meta.pop("namespace", None)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise Invalid(
                "metadata.name is required", kind=kind, namespace=meta.get("namespace"), field="metadata.name"
            )
        return self._key(api_version, kind, name, meta.get("namespace"))

    # -- writes ----------------------------------------------------------------------------

    def create(self, obj: Mapping[str, Any]) -> Object:
        new = self._validated(obj)
        meta = new["metadata"]
        kind = new["kind"]
        if meta.get("resourceVersion"):
            raise Invalid(
                "resourceVersion must not be set on create",
                kind=kind,
                namespace=meta.get("namespace"),
                name=str(meta.get("name") or ""),
                field="metadata.resourceVersion",
            )
        generate = meta.get("generateName")
        generated = not meta.get("name") and isinstance(generate, str) and bool(generate)
        if generated:
            meta["name"] = generate + "xxxxx"  # placeholder for validation; replaced below
        key = self._address(new)
        self._check_name(key[3], kind, meta.get("namespace"))
        for field in (*_SYSTEM_FIELDS, "resourceVersion"):
            meta.pop(field, None)
        new.pop("status", None)
        if (key[0], kind) == (CRD_GROUP, CRD_KIND):
            crd_scope = self._crd_scope(new)
        with self._transaction() as txn:
            if generated:
                while True:
                    meta["name"] = generate + "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
                    key = (*key[:3], meta["name"])
                    if txn.get(key) is None:
                        break
            elif txn.get(key) is not None:
                raise AlreadyExists(kind=kind, namespace=meta.get("namespace"), name=key[3])
            rv = txn.next_rv()
            meta.update(uid=str(uuid.uuid4()), resourceVersion=str(rv), generation=1, creationTimestamp=self._now())
            if (key[0], kind) == (CRD_GROUP, CRD_KIND) and crd_scope is not None:
                txn.set_scope(*crd_scope)
            txn.write(key, new, "ADDED")
        if (key[0], kind) == (CRD_GROUP, CRD_KIND) and crd_scope is not None:
            self._scopes[crd_scope[:2]] = crd_scope[2]
        return new

    @staticmethod
    def _crd_scope(crd: Object) -> tuple[str, str, bool] | None:
        spec = crd.get("spec")
        if not isinstance(spec, dict):
            return None
        group, names, scope = spec.get("group"), spec.get("names"), spec.get("scope")
        if not isinstance(group, str) or not isinstance(names, dict) or not isinstance(names.get("kind"), str):
            return None
        return (group, names["kind"], scope != "Cluster")

    def update(self, obj: Mapping[str, Any]) -> Object:
        new = self._validated(obj)
        key = self._address(new)
        with self._transaction() as txn:
            old = self._current(txn, key)
            return self._apply_update(txn, key, old, new, None)

    def update_status(self, obj: Mapping[str, Any]) -> Object:
        new = self._validated(obj)
        key = self._address(new)
        with self._transaction() as txn:
            old = self._current(txn, key)
            return self._apply_update(txn, key, old, new, "status")

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
        key = self._key(api_version, kind, name, namespace)
        ref: dict[str, Any] = {"kind": kind, "namespace": namespace, "name": name}
        with self._transaction() as txn:
            old = self._current(txn, key)
            if patch_type == "merge":
                if not isinstance(patch, Mapping):
                    raise Invalid("a merge patch is a mapping", **ref)
                patched = merge_patch(old, patch)
                wanted = (
                    (patch.get("metadata") or {}).get("resourceVersion")
                    if isinstance(patch.get("metadata"), Mapping)
                    else None
                )
                patched.setdefault("metadata", {})
                if isinstance(patched["metadata"], dict):
                    patched["metadata"]["resourceVersion"] = wanted or old["metadata"]["resourceVersion"]
            elif patch_type == "json":
                patched = json_patch(old, patch, ref)
            else:
                raise Invalid(f"unknown patch type {patch_type!r} (merge or json)", **ref)
            new = self._validated(patched)
            if (new["kind"], new["metadata"].get("name")) != (kind, name) or self._address(new) != key:
                raise Invalid("a patch cannot change kind, namespace or name", **ref)
            result = self._apply_update(txn, key, old, new, subresource)
        return self._view(result, api_version)

    def _current(self, txn: Txn, key: Key) -> Object:
        old = txn.get(key)
        if old is None:
            raise NotFound(kind=key[1], namespace=key[2] or None, name=key[3])
        return old

    def _apply_update(self, txn: Txn, key: Key, old: Object, new: Object, subresource: str | None) -> Object:
        kind, ns, name = key[1], key[2] or None, key[3]
        meta, old_meta = new["metadata"], old["metadata"]
        for field in ("resourceVersion", "uid"):
            wanted = meta.get(field)
            if wanted not in (None, "") and str(wanted) != str(old_meta[field]):
                raise Conflict(kind=kind, namespace=ns, name=name, expected=str(wanted), actual=str(old_meta[field]))
        if subresource == "status":
            # ``old`` is this transaction's private copy (decoded from storage): no deep copy needed
            result = {**old, "metadata": dict(old_meta)}
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
        elif subresource is None:
            result = new
            if "status" in old:
                result["status"] = old["status"]
            else:
                result.pop("status", None)
            for field in (*_SYSTEM_FIELDS, "namespace", "name"):
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            meta.pop("generateName", None)
            if "generateName" in old_meta:
                meta["generateName"] = old_meta["generateName"]
            if old_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
                if added:
                    raise Invalid(
                        f"no new finalizers can be added while the object is being deleted: {sorted(added)}",
                        kind=kind,
                        namespace=ns,
                        name=name,
                        field="metadata.finalizers",
                    )
            if _spec_part(result) != _spec_part(old):
                meta["generation"] = int(old_meta.get("generation", 1)) + 1
        else:
            raise Invalid(f"unknown subresource {subresource!r} (only status)", kind=kind, namespace=ns, name=name)
        result["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if not result["metadata"].get("finalizers"):
            result["metadata"].pop("finalizers", None)
        if not result["metadata"].get("ownerReferences"):
            result["metadata"].pop("ownerReferences", None)
        comparable_old = {**old, "apiVersion": result["apiVersion"]}
        if result == comparable_old:
            return result
        if (key[0], kind) == (CRD_GROUP, CRD_KIND) and subresource is None:
            scope = self._crd_scope(result)
            if scope is not None:
                txn.set_scope(*scope)
                self._scopes[scope[:2]] = scope[2]
        result["metadata"]["resourceVersion"] = str(txn.next_rv())
        if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
            self._remove(txn, key, result, orphan=False, bump=False)
        else:
            txn.write(key, result, "MODIFIED")
        return result

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
        key = self._key(api_version, kind, name, namespace)
        with self._transaction() as txn:
            old = self._current(txn, key)
            for wanted, field in ((resource_version, "resourceVersion"), (uid, "uid")):
                if wanted and str(wanted) != str(old["metadata"][field]):
                    raise Conflict(
                        kind=kind,
                        namespace=key[2] or None,
                        name=name,
                        expected=str(wanted),
                        actual=str(old["metadata"][field]),
                    )
            if old["metadata"].get("finalizers"):
                if not old["metadata"].get("deletionTimestamp"):
                    old["metadata"]["deletionTimestamp"] = self._now()
                    old["metadata"]["resourceVersion"] = str(txn.next_rv())
                    txn.write(key, old, "MODIFIED")
                result = old
            else:
                result = self._remove(txn, key, old, orphan=propagation == "Orphan", bump=True)
        return self._view(result, api_version)

    def _remove(self, txn: Txn, key: Key, obj: Object, *, orphan: bool, bump: bool) -> Object:
        """Remove ``obj`` and garbage-collect what it owned, transitively."""
        if bump:
            obj["metadata"]["resourceVersion"] = str(txn.next_rv())
        txn.remove(key, obj)
        work: list[tuple[Key, str, bool]] = [(key, obj["metadata"]["uid"], orphan)]
        while work:
            owner_key, owner_uid, orphaning = work.pop()
            for dep_key in txn.dependents(owner_uid):
                dep = txn.get(dep_key)
                if dep is None or (owner_key[2] and owner_key[2] != dep_key[2]):
                    continue  # a namespaced owner owns only objects in its namespace
                dmeta = dep["metadata"]
                refs = dmeta.get("ownerReferences") or []
                others = [r for r in refs if r["uid"] != owner_uid]
                if orphaning or any(self._owner_present(txn, r["uid"], dep_key) for r in others):
                    if others:
                        dmeta["ownerReferences"] = others
                    else:
                        dmeta.pop("ownerReferences", None)
                    dmeta["resourceVersion"] = str(txn.next_rv())
                    txn.write(dep_key, dep, "MODIFIED")
                elif dmeta.get("finalizers"):
                    if not dmeta.get("deletionTimestamp"):
                        dmeta["deletionTimestamp"] = self._now()
                        dmeta["resourceVersion"] = str(txn.next_rv())
                        txn.write(dep_key, dep, "MODIFIED")
                else:
                    dmeta["resourceVersion"] = str(txn.next_rv())
                    txn.remove(dep_key, dep)
                    work.append((dep_key, dmeta["uid"], False))
        return obj

    @staticmethod
    def _owner_present(txn: Txn, uid: str, dep_key: Key) -> bool:
        found = txn.find_uid(uid)
        return found is not None and (not found[2] or found[2] == dep_key[2])

    # -- reads -----------------------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Object:
        key = self._key(api_version, kind, name, namespace)
        obj = self._read(key)
        if obj is None:
            raise NotFound(kind=kind, namespace=key[2] or None, name=name)
        return self._view(obj, api_version)

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: Selector = None
    ) -> ObjectList:
        selector = parse_selector(label_selector)
        group = group_of(api_version)
        ns = namespace if self.is_namespaced(api_version, kind) else None
        objs, rv = self._scan(group, kind, ns)
        items = [self._view(o, api_version) for o in objs if selector.matches(o["metadata"].get("labels"))]
        return ObjectList(items=items, resource_version=str(rv))

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
        group = group_of(api_version)
        ns = namespace if self.is_namespaced(api_version, kind) else None
        initial: list[WatchEvent] = []
        if resource_version in (None, "", "0"):
            listed = self.list(api_version, kind, ns, selector)
            initial = [WatchEvent("ADDED", o) for o in listed.items]
            start = int(listed.resource_version)
        else:
            try:
                start = int(str(resource_version))
            except ValueError:
                raise Invalid(
                    f"resourceVersion {resource_version!r} is not a number", kind=kind, field="resourceVersion"
                ) from None
            self._events_after(start, group, kind, ns)  # raises Expired now rather than on first next()

        def fetch(after: int) -> tuple[list[WatchEvent], int]:
            events, last = self._events_after(after, group, kind, ns)
            return [
                self._match(t, o, selector, api_version)
                for t, o in events
                if selector.matches(o["metadata"].get("labels"))
            ], last

        return Watch(fetch, self._wait, start, initial, timeout)

    def wait_for_change(self, resource_version: str | None, timeout: float) -> None:
        try:
            rv = int(resource_version or 0)
        except ValueError:
            rv = 0
        self._wait(rv, timeout)

    def _match(self, etype: EventType, obj: Object, selector: LabelSelector, api_version: str) -> WatchEvent:
        return WatchEvent(etype, self._view(obj, api_version))
