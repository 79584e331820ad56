"""The HTTP side of the API server: routing, discovery, CRUD, patch, watch, tables, errors.

Every request is authenticated (client certificate or bearer token, see
:mod:`olmkit.apiserver.server`), answered in JSON, and fails as a ``metav1.Status``. Store
calls are blocking and run in a thread pool; watches stream from a :class:`WatchHub`.
Writes go through :func:`olmkit.lifecycle.apply.prepare_manifests`, the validation and
admission ``olmkit apply`` runs, so the API server and the command line accept the same objects.

.. versionadded:: 0.2
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import hmac
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

import attrs
import orjson
import yaml
from aiohttp import web

from olmkit import __version__
from olmkit.apiserver import openapi
from olmkit.apiserver.apply import record_update, server_side_apply
from olmkit.apiserver.metrics import RequestMetrics, request_info
from olmkit.apiserver.resources import CRD_API_VERSION, CRD_KIND, SUBRESOURCE_VERBS, VERBS, Catalog, Resource
from olmkit.apiserver.status import ApiError, from_store_error, status_object
from olmkit.apiserver.table import json_path, partial_metadata, table
from olmkit.apiserver.watch import Delivered, WatchHub, relabelled
from olmkit.errors import InputError, OlmkitError
from olmkit.lifecycle.apply import STORED, prepare_manifests
from olmkit.lifecycle.observe import CONTENT_TYPE as METRICS_CONTENT_TYPE
from olmkit.store import Conflict, Expired, Invalid, NotFound, Store, StoreError, parse_selector
from olmkit.store.patches import json_patch, merge_patch, strategic_merge_patch

__all__ = ["ApiServer", "ServerOptions"]

log = logging.getLogger("olmkit.apiserver")
T = TypeVar("T")

MAX_BODY: Final = 3 * 1024 * 1024  # the API server's request size limit
_GENERATE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_JSON: Final = "application/json"
_MERGE: Final = "application/merge-patch+json"
_JSON_PATCH: Final = "application/json-patch+json"
_STRATEGIC: Final = "application/strategic-merge-patch+json"
_APPLY: Final = "application/apply-patch+yaml"
#: the aggregated discovery document's media type parameters (one request for every group)
_AGGREGATED: Final = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


@attrs.frozen
class ServerOptions:
    """Tunables of the API server.

    Args:
        bookmark_interval: seconds between BOOKMARK events on watches that allow them.
        watch_timeout: the longest a watch lasts when the client names no ``timeoutSeconds``.
        token: the bearer token that authenticates (besides client certificates).
        workers: threads running store calls.
    """

    bookmark_interval: float = 10.0
    watch_timeout: float = 1800.0
    token: str = ""
    workers: int = 8


@attrs.frozen
class Target:
    """What a resource URL addresses."""

    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(obj), status=status, content_type=_JSON)


def _error(code: int, reason: str, message: str) -> web.Response:
    return _json(status_object(code, reason, message), code)


def _wants(request: web.Request, what: str) -> bool:
    return f"as={what}" in request.headers.get("Accept", "")


def _query_bool(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


def _names(resource: Resource) -> dict[str, list[str]]:
    """A discovery entry's short names and categories (left out when empty)."""
    names = {"shortNames": list(resource.short_names), "categories": list(resource.categories)}
    return {key: value for key, value in names.items() if value}


def _manager(request: web.Request) -> str:
    """The field manager of a write: ``fieldManager``, else the client's name from its User-Agent."""
    given = request.query.get("fieldManager")
    if given:
        return given
    agent = request.headers.get("User-Agent", "").split("/", 1)[0].strip()
    return agent or "unknown"


def _field_selector(text: str) -> list[tuple[str, bool, str]]:
    """``a=b,c!=d`` as ``(path, equal, value)`` triples."""
    found = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "!=" in part:
            path, _, value = part.partition("!=")
            found.append((path.strip(), False, value.strip()))
        elif "=" in part:
            path, _, value = part.replace("==", "=").partition("=")
            found.append((path.strip(), True, value.strip()))
        else:
            raise ApiError.bad_request(f'invalid field selector "{text}": "{part}" is not key=value or key!=value')
    return found


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value = json_path(obj, "." + path)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _encode_continue(rv: str, key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "start": list(key)})).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        start = raw["start"]
        return (str(start[0]), str(start[1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise ApiError.bad_request("continue key is not valid") from None


def _too_many_conflicts(resource: Resource, name: str) -> ApiError:
    """A patch or apply that lost every retry to other writers."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource.qualified} "{name}": too many concurrent writes; try again',
    )


def _method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


class ApiServer:
    """The aiohttp application over a store.

    Args:
        store: the cluster store.
        registry: the plugin registry (admission checks).
        options: tunables.
    """

    def __init__(self, store: Store, registry: Any, options: ServerOptions | None = None) -> None:
        self.store = store
        self.registry = registry
        self.options = options or ServerOptions()
        self.executor = ThreadPoolExecutor(max_workers=self.options.workers, thread_name_prefix="olmkit-api")
        # one writer thread: writes queue here instead of in SQLite's busy handler, whose sleeps
        # (up to 100 ms each) made the slowest writes slow when several threads wrote at once
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="olmkit-api-write")
        self.metrics = RequestMetrics()
        self.hub: WatchHub | None = None
        self._catalog: Catalog | None = None
        #: the stored CRDs the catalog was built from (every resource request refreshes it when stale)
        self._stored_crds: list[dict[str, Any]] | None = None
        #: CRD changes seen (written here, or seen by the watch hub); the catalog's own is the count
        #: it was listed after: they differ while it is stale
        self._crd_changes = 1
        self._catalog_at = 0
        self.address = ""

    # -- plumbing ---------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        app.on_startup.append(self._startup)
        app.on_cleanup.append(self._cleanup)
        return app

    async def _startup(self, app: web.Application) -> None:
        self.hub = WatchHub(self.store, asyncio.get_running_loop(), self.executor)
        self.hub.listeners.append(self._on_change)
        await self.hub.ensure(CRD_API_VERSION, CRD_KIND)

    async def _cleanup(self, app: web.Application) -> None:
        if self.hub is not None:
            self.hub.stop()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.writer.shutdown(wait=True, cancel_futures=True)

    def _on_change(self, api_version: str, kind: str) -> None:
        if kind == CRD_KIND:
            self._crd_changes += 1

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call (a store call) in the thread pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, lambda: fn(*args, **kwargs))

    async def write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a store write in the writer thread.

        The writer thread also reads the write's watch events and hands them to the loop with
        its answer (:meth:`WatchHub.scan_now`): one wake-up of the loop, and every watcher has
        the events before the writer has the answer, as the API server's watch cache does.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[T] = loop.create_future()

        def finish(deliver: Callable[[], None] | None, result: Any, error: BaseException | None) -> None:
            if deliver is not None:
                deliver()
            if done.done():  # cancelled: the client went away
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result)

        def work() -> None:
            result: Any = None
            error: BaseException | None = None
            try:
                with self.hub.writing() if self.hub is not None else contextlib.nullcontext():
                    result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the awaiting request, as run_in_executor does
                error = exc

            def post(deliver: Callable[[], None]) -> None:
                loop.call_soon_threadsafe(finish, deliver, result, error)

            handed = False
            if self.hub is not None:  # also after a failure: part of the work may have been written
                try:
                    handed = self.hub.scan_now(post)
                except Exception:  # the loop closed, or a failed read: the dispatcher thread delivers
                    handed = False
            if not handed:
                with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
                    loop.call_soon_threadsafe(finish, None, result, error)

        self.writer.submit(work)
        return await done

    async def catalog(self, refresh: bool = False) -> Catalog:
        if self._catalog is None or refresh or self._catalog_at != self._crd_changes:
            # requests arriving while this list runs see the catalog still stale and list too: none
            # is answered from a catalog listed before a CRD change it came after
            changes = self._crd_changes
            listed = await self.run(self.store.list, CRD_API_VERSION, CRD_KIND)
            built = Catalog.build(listed.items)
            if changes >= self._catalog_at:  # one listed earlier that ends later keeps the newer
                self._catalog, self._stored_crds, self._catalog_at = built, listed.items, changes
            return built
        return self._catalog

    def _authenticated(self, request: web.Request) -> bool:
        transport = request.transport
        if transport is not None and transport.get_extra_info("peercert"):
            return True  # a client certificate the CA signed (checked in the TLS handshake)
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        return (
            bool(self.options.token)
            and scheme.lower() == "bearer"
            and hmac.compare_digest(token.strip().encode(), self.options.token.encode())
        )

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if not self._authenticated(request):
            return _error(401, "Unauthorized", "Unauthorized")
        info = request_info(request.method, request.path, request.query, request.headers.get("Content-Type", ""))
        self.metrics.started(info)
        code: int | None = None  # None: the client went away before an answer
        try:
            response = await self._answer(request, handler)
            code = response.status
            return response
        finally:
            self.metrics.ended(info, code)

    async def _answer(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return _json(exc.status(), exc.code)
        except web.HTTPRequestEntityTooLarge:
            return _error(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}")
        except web.HTTPException as exc:
            return _error(exc.status, exc.reason.replace(" ", ""), exc.text or exc.reason)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a bug: answer 500 and keep serving
            log.exception("internal error on %s %s", request.method, request.path)
            return _error(500, "InternalError", f"Internal error occurred: {exc!r}")

    # -- routing ----------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        parts = [p for p in request.path.split("/") if p]
        if parts == ["version"]:
            return _json(self._version())
        if parts in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok")
        if parts == ["metrics"] and request.method == "GET":
            return web.Response(body=self.metrics.render(), headers={"Content-Type": METRICS_CONTENT_TYPE})
        if parts[:1] == ["openapi"]:
            return await self._openapi(request, parts[1:])
        if parts in (["api"], ["apis"]) and _AGGREGATED in request.headers.get("Accept", ""):
            body = orjson.dumps(await self._aggregated(core=parts == ["api"]))
            return web.Response(body=body, headers={"Content-Type": f"application/json;{_AGGREGATED}"})
        if parts == ["api"]:
            return _json(
                {
                    "kind": "APIVersions",
                    "apiVersion": "v1",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": self.address}],
                }
            )
        if parts == ["apis"]:
            return _json(await self._group_list())
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) == 2:
            return _json(await self._group(parts[1]))
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise self._no_route()
        if not rest:
            return _json(await self._resource_list(group, version))
        target = await self._target(group, version, rest)
        return await self._serve(request, target)

    @staticmethod
    def _no_route() -> ApiError:
        return ApiError(404, "NotFound", "the server could not find the requested resource")

    async def _target(self, group: str, version: str, rest: list[str]) -> Target:
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            candidate = await self._lookup(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        resource = await self._lookup(group, version, rest[0])
        if resource is None or len(rest) > 3:
            raise self._no_route()
        if resource.namespaced and namespace is None and len(rest) > 1:
            raise self._no_route()  # a namespaced object needs /namespaces/NS/
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and (sub != "status" or not resource.status):
            raise self._no_route()
        return Target(resource, namespace, name, sub)

    async def _lookup(self, group: str, version: str, plural: str) -> Resource | None:
        catalog = await self.catalog()
        found = catalog.lookup(group, version, plural)
        if found is None:  # a CRD another process stored since: look again once
            found = (await self.catalog(refresh=True)).lookup(group, version, plural)
        return found

    async def _serve(self, request: web.Request, target: Target) -> web.StreamResponse:
        method = request.method
        if target.name is None:
            if method == "GET":
                if _query_bool(request, "watch"):
                    return await self._watch(request, target)
                return await self._list(request, target)
            if method == "POST":
                return await self._create(request, target)
            if method == "DELETE":
                return await self._delete_collection(request, target)
        else:
            if method == "GET":
                return await self._get(request, target)
            if method == "PUT":
                return await self._update(request, target)
            if method == "PATCH":
                return await self._patch(request, target)
            if method == "DELETE":
                return await self._delete(request, target)
        raise _method_not_allowed()

    # -- discovery --------------------------------------------------------------------

    @staticmethod
    def _version() -> dict[str, Any]:
        return {
            "major": "1",
            "minor": "32",
            "gitVersion": f"v1.32.0+olmkit-{__version__}",
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "",
            "goVersion": "",
            "compiler": "olmkit",
            "platform": "python",
        }

    async def _group_list(self) -> dict[str, Any]:
        catalog = await self.catalog()
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [self._group_entry(g, versions) for g, versions in catalog.groups().items()],
        }

    @staticmethod
    def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    async def _group(self, group: str) -> dict[str, Any]:
        versions = (await self.catalog()).groups().get(group)
        if not versions:
            raise self._no_route()
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group_entry(group, versions)}

    async def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        catalog = await self.catalog()
        resources = catalog.by_gv.get((group, version))
        if resources is None:
            raise self._no_route()
        listed: list[dict[str, Any]] = []
        for r in sorted(resources.values(), key=lambda r: r.plural):
            listed.append(
                {
                    "name": r.plural,
                    "singularName": r.singular,
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": VERBS,
                    **_names(r),
                }
            )
            if r.status:
                listed.append(
                    {
                        "name": f"{r.plural}/status",
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": SUBRESOURCE_VERBS,
                    }
                )
        group_version = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": listed}

    async def _aggregated(self, *, core: bool) -> dict[str, Any]:
        """The aggregated discovery list (``apidiscovery.k8s.io/v2``): the core group, or every named one."""
        catalog = await self.catalog()
        groups = {"": ["v1"]} if core else catalog.groups()
        items = []
        for group, versions in groups.items():
            entries = []
            for version in versions:
                resources = []
                for r in sorted(catalog.by_gv.get((group, version), {}).values(), key=lambda r: r.plural):
                    gvk = {"group": group, "version": version, "kind": r.kind}
                    entry: dict[str, Any] = {
                        "resource": r.plural,
                        "responseKind": gvk,
                        "scope": "Namespaced" if r.namespaced else "Cluster",
                        "singularResource": r.singular,
                        "verbs": VERBS,
                        **_names(r),
                    }
                    if r.status:
                        entry["subresources"] = [
                            {"subresource": "status", "responseKind": gvk, "verbs": SUBRESOURCE_VERBS}
                        ]
                    resources.append(entry)
                entries.append({"version": version, "resources": resources, "freshness": "Current"})
            items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": entries})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}

    async def _openapi(self, request: web.Request, parts: list[str]) -> web.StreamResponse:
        catalog = await self.catalog()
        if parts == ["v2"]:
            if "protobuf" in request.headers.get("Accept", ""):
                return web.Response(body=openapi.v2_protobuf(), headers={"Content-Type": openapi.V2_PROTOBUF})
            return _json(openapi.v2_json())
        if parts == ["v3"]:
            return _json(openapi.v3_index(catalog))
        if parts[:1] == ["v3"] and len(parts) >= 3:
            if parts[1] == "api" and len(parts) == 3:
                group, version = "", parts[2]
            elif parts[1] == "apis" and len(parts) == 4:
                group, version = parts[2], parts[3]
            else:
                raise self._no_route()
            if (group, version) not in catalog.by_gv:
                raise self._no_route()
            return _json(openapi.v3_document(catalog, group, version))
        raise self._no_route()

    # -- reading ----------------------------------------------------------------------

    def _view(self, obj: dict[str, Any], resource: Resource) -> dict[str, Any]:
        obj["apiVersion"] = resource.api_version
        obj["kind"] = resource.kind
        return obj

    def _shaped(self, request: web.Request, target: Target, obj: dict[str, Any]) -> dict[str, Any]:
        """One object as the client asked for it: itself, a Table or its metadata."""
        if _wants(request, "Table"):
            return table(
                target.resource,
                [obj],
                resource_version=str(obj["metadata"].get("resourceVersion", "")),
                include_object=request.query.get("includeObject", "Metadata"),
            )
        if _wants(request, "PartialObjectMetadata"):
            return partial_metadata(obj)
        return obj

    async def _get(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        assert target.name is not None
        try:
            obj = await self.run(self.store.get, r.api_version, r.kind, target.name, target.namespace)
        except StoreError as exc:
            raise from_store_error(exc, r, target.name) from None
        return _json(self._shaped(request, target, self._view(obj, r)))

    def _matcher(
        self, request: web.Request, target: Target
    ) -> tuple[Callable[[dict[str, Any]], bool], Callable[[Any], bool] | None]:
        """What an object must be to be listed, and the label selector's own test (``None`` without one)."""
        try:
            labels = parse_selector(request.query.get("labelSelector") or None)
        except Invalid as exc:
            raise ApiError.bad_request(f"unable to parse requirement: {exc.message}") from None
        fields = _field_selector(request.query.get("fieldSelector", ""))
        namespace = target.namespace

        def matches(obj: dict[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            if namespace is not None and meta.get("namespace") != namespace:
                return False
            if not labels.matches(meta.get("labels")):
                return False
            return all((_field_value(obj, path) == value) == equal for path, equal, value in fields)

        return matches, (labels.matches if request.query.get("labelSelector") else None)

    async def _list(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        matches, _ = self._matcher(request, target)
        try:
            listed = await self.run(self.store.list, r.api_version, r.kind, target.namespace)
        except StoreError as exc:
            raise from_store_error(exc, r) from None
        items = [self._view(o, r) for o in listed.items if matches(o)]
        token = request.query.get("continue", "")
        if token:
            start = _decode_continue(token)
            items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start]
        next_token = ""
        remaining = 0
        limit_text = request.query.get("limit", "")
        if limit_text:
            try:
                limit = int(limit_text)
            except ValueError:
                raise ApiError.bad_request(f"limit {limit_text!r} is not a number") from None
            if 0 < limit < len(items):
                remaining = len(items) - limit
                items = items[:limit]
                last = items[-1]["metadata"]
                next_token = _encode_continue(listed.resource_version, (last.get("namespace", ""), last["name"]))
        if _wants(request, "Table"):
            return _json(
                table(
                    r,
                    items,
                    resource_version=listed.resource_version,
                    continue_token=next_token,
                    include_object=request.query.get("includeObject", "Metadata"),
                )
            )
        metadata: dict[str, Any] = {"resourceVersion": listed.resource_version}
        if next_token:
            metadata["continue"] = next_token
            metadata["remainingItemCount"] = remaining
        if _wants(request, "PartialObjectMetadataList"):
            return _json(
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": metadata,
                    "items": [partial_metadata(o) for o in items],
                }
            )
        return _json({"kind": f"{r.kind}List", "apiVersion": r.api_version, "metadata": metadata, "items": items})

    # -- watching ---------------------------------------------------------------------

    def _encoded(
        self, request: web.Request, target: Target, item: tuple[Delivered, str], shape: tuple[str, ...]
    ) -> bytes:
        """An event's line, encoded once for every watcher that asks for the same shape."""
        delivered, etype = item
        key = (*shape, etype)
        data = delivered.encoded.get(key)
        if data is None:
            obj = delivered.event.object
            if etype == "DELETED" and delivered.event.type == "MODIFIED":
                # it stopped matching the label selector: as the API server, send it as it matched
                obj = relabelled(obj, delivered.old_labels)
            data = delivered.encoded[key] = self._event_bytes(request, target, etype, obj)
        return data

    def _event_bytes(self, request: web.Request, target: Target, etype: str, obj: dict[str, Any]) -> bytes:
        view = {**obj, "apiVersion": target.resource.api_version, "kind": target.resource.kind}
        return orjson.dumps({"type": etype, "object": self._shaped(request, target, view)}) + b"\n"

    async def _watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        assert self.hub is not None
        r = target.resource
        matches, labels = self._matcher(request, target)
        rv = request.query.get("resourceVersion", "")
        send_initial = _query_bool(request, "sendInitialEvents")
        bookmarks = _query_bool(request, "allowWatchBookmarks")
        try:
            timeout = float(request.query.get("timeoutSeconds") or self.options.watch_timeout)
        except ValueError:
            raise ApiError.bad_request("timeoutSeconds is not a number") from None
        await self.hub.ensure(r.api_version, r.kind)
        initial: list[dict[str, Any]] = []
        if rv in ("", "0") or send_initial:
            listed = await self.run(self.store.list, r.api_version, r.kind, target.namespace)
            initial = [o for o in listed.items if matches(o)]
            start = int(listed.resource_version)
        else:
            try:
                start = int(rv)
            except ValueError:
                raise ApiError.bad_request(f'invalid resource version "{rv}"') from None
        response = web.StreamResponse(status=200, headers={"Content-Type": _JSON})
        try:
            sub = await self.hub.subscribe(r.api_version, r.kind, start, matches, labels)
        except Expired as exc:
            await response.prepare(request)
            error = from_store_error(exc, r).status()
            await response.write(orjson.dumps({"type": "ERROR", "object": error}) + b"\n")
            return response
        try:
            response.enable_chunked_encoding()
            await response.prepare(request)
            for obj in initial:
                await response.write(self._event_bytes(request, target, "ADDED", obj))
            if send_initial and bookmarks:
                await response.write(self._bookmark(r, start, initial_end=True))
            deadline = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            accept = request.headers.get("Accept", "")
            shape = (r.api_version, accept if "as=" in accept else "", request.query.get("includeObject", ""))
            while True:
                now = time.monotonic()
                if now >= deadline:
                    break
                transport = request.transport
                if transport is None or transport.is_closing():
                    break  # the client went away
                try:
                    if sub.queue.empty():
                        async with asyncio.timeout(min(deadline - now, 1.0)):
                            kind, item = await sub.queue.get()
                    else:
                        kind, item = sub.queue.get_nowait()
                except TimeoutError:
                    if bookmarks and time.monotonic() - last_bookmark >= self.options.bookmark_interval:
                        await response.write(self._bookmark(r, sub.position))
                        last_bookmark = time.monotonic()
                    continue
                # send what is queued in one write: fewer TLS records when many events arrive at once
                batch = [(kind, item)]
                while not sub.queue.empty() and len(batch) < 1000:
                    batch.append(sub.queue.get_nowait())
                chunks = []
                failed = False
                for kind, item in batch:
                    if kind == "error":
                        error = from_store_error(item, r).status()
                        chunks.append(orjson.dumps({"type": "ERROR", "object": error}) + b"\n")
                        failed = True
                        break
                    chunks.append(self._encoded(request, target, item, shape))
                await response.write(b"".join(chunks))
                if failed:
                    break
        except (ConnectionResetError, ConnectionError):
            pass  # the client disconnected mid-watch
        finally:
            self.hub.unsubscribe(r.api_version, r.kind, sub)
        return response

    @staticmethod
    def _bookmark(r: Resource, rv: int, *, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return (
            orjson.dumps(
                {"type": "BOOKMARK", "object": {"kind": r.kind, "apiVersion": r.api_version, "metadata": meta}}
            )
            + b"\n"
        )

    # -- writing ----------------------------------------------------------------------

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw.strip():
            raise ApiError.bad_request("the request body is empty")
        ctype = request.content_type
        if ctype == "application/vnd.kubernetes.protobuf":
            from olmkit.apiserver.protobuf import ProtobufError, decode

            try:
                return decode(raw)
            except ProtobufError as exc:
                raise ApiError(
                    415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {exc}"
                ) from None
        if "protobuf" in ctype or "cbor" in ctype:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format ({ctype}) - accepted media types include: "
                "application/json, application/yaml",
            )
        try:
            if "yaml" in ctype:
                return yaml.safe_load(raw)
            return orjson.loads(raw)
        except (orjson.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ApiError.bad_request(
                f"the request body is not valid {'YAML' if 'yaml' in ctype else 'JSON'}: {detail}"
            ) from None

    def _object_body(self, body: Any, target: Target) -> dict[str, Any]:
        r = target.resource
        if not isinstance(body, dict):
            raise ApiError.bad_request(f"the request body must be an object, not {type(body).__name__}")
        # as the API server decodes: a missing apiVersion or kind is the URL's, another one is refused
        api_version = body.setdefault("apiVersion", r.api_version) or r.api_version
        kind = body.setdefault("kind", r.kind) or r.kind
        body["apiVersion"], body["kind"] = api_version, kind
        if api_version != r.api_version:
            raise ApiError.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({r.api_version})"
            )
        if kind != r.kind:
            raise ApiError.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({r.kind})")
        meta = body.get("metadata")
        if meta is None:
            meta = body["metadata"] = {}
        if not isinstance(meta, dict):
            raise ApiError.bad_request("metadata must be an object")
        if r.namespaced:
            own = meta.get("namespace")
            if own and own != target.namespace:
                raise ApiError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = target.namespace
        else:
            meta.pop("namespace", None)
        if target.name is not None:
            if meta.get("name") and meta["name"] != target.name:
                raise ApiError.bad_request(
                    f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})"
                )
            meta["name"] = target.name
        return body

    def _admit(self, obj: dict[str, Any], target: Target, current: Any = STORED) -> dict[str, Any]:
        """The object as ``olmkit apply`` would write it, or 422 with every problem.

        ``current``: the stored object it replaces, when just read (else admission reads it).
        """
        try:
            prepared = prepare_manifests(
                self.store,
                self.registry,
                [("<api>", obj)],
                namespace=target.namespace,
                stored_crds=self._stored_crds,
                owned=True,  # the request's body: nothing else holds it
                current=current,
            )
        except InputError as exc:
            name = str((obj.get("metadata") or {}).get("name") or "")
            raise ApiError.invalid(target.resource, name, [("", exc.message)]) from None
        except OlmkitError as exc:
            raise ApiError(500, "InternalError", f"Internal error occurred: {exc}") from None
        return prepared[0].obj

    @staticmethod
    def _dry_run(request: web.Request) -> bool:
        return "All" in request.query.getall("dryRun", [])

    def _written(self, target: Target, obj: dict[str, Any]) -> dict[str, Any]:
        if target.resource.kind == CRD_KIND and target.resource.group == "apiextensions.k8s.io":
            self._crd_changes += 1
        return self._view(obj, target.resource)

    async def _create(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        obj = self._object_body(await self._body(request), target)
        meta = obj["metadata"]
        if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
            meta["name"] = meta["generateName"] + "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
        if meta.get("resourceVersion"):
            raise ApiError.invalid(
                r, str(meta.get("name") or ""), [("metadata.resourceVersion", "must be empty on create")]
            )
        name = str(meta.get("name") or "")
        if not name:
            raise ApiError.invalid(r, "", [("metadata.name", "Required value: name or generateName is required")])
        dry_run = self._dry_run(request)
        try:
            # admitted and written in one call to the writer thread: each hand-over costs
            created = await (self.run if dry_run else self.write)(
                self._admit_and_create, target, obj, _manager(request), dry_run
            )
        except StoreError as exc:
            raise from_store_error(exc, r, name) from None
        return _json(self._view(created, r) if dry_run else self._written(target, created), 201)

    def _admit_and_create(self, target: Target, obj: dict[str, Any], manager: str, dry_run: bool) -> dict[str, Any]:
        """Admit and create an object (blocking); with ``dry_run``, only admit it."""
        r = target.resource
        # a create has no old object (as the API server's admission of a CREATE); one already
        # stored is the store's AlreadyExists
        prepared = self._admit(obj, target, current=None)
        record_update(None, prepared, manager, resource=r)
        if dry_run:
            return prepared
        created = self.store.create(prepared)
        if (r.group, r.kind) == ("", "Namespace"):  # as the API server's namespace strategy does
            created = self.store.update_status({**created, "status": {"phase": "Active"}})
        return created

    async def _update(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        assert target.name is not None
        obj = self._object_body(await self._body(request), target)
        try:
            # read, admitted and written in one call to the writer thread: each hand-over costs
            return await self._write_over(request, target, None, obj)
        except StoreError as exc:
            raise from_store_error(exc, r, target.name) from None

    async def _write_over(
        self, request: web.Request, target: Target, old: dict[str, Any] | None, new: dict[str, Any]
    ) -> web.Response:
        """Replace ``old`` (``None``: read it in the same call) by ``new`` (see :meth:`_replace`)
        and answer the result.

        Raises:
            StoreError: the read or the write failed (``Conflict`` when ``old`` is stale).
        """
        dry_run = self._dry_run(request)
        written = await (self.run if dry_run else self.write)(
            self._replace, target, old, new, _manager(request), dry_run
        )
        return _json(self._view(written, target.resource) if dry_run else self._written(target, written))

    def _replace(
        self, target: Target, old: dict[str, Any] | None, new: dict[str, Any], manager: str, dry_run: bool
    ) -> dict[str, Any]:
        """Replace ``old`` (``None``: read it now) by ``new``: admitted, fields recorded, written
        (only the status, or all but it); with ``dry_run``, not written. Blocking.

        Raises:
            StoreError: the read or the write failed (``Conflict`` when ``old`` is stale).
        """
        r = target.resource
        if old is None:
            assert target.name is not None
            old = self.store.get(r.api_version, r.kind, target.name, target.namespace)
        status = target.subresource == "status"
        if not status:  # the main resource never changes the status
            new.pop("status", None)
            if "status" in old:
                new["status"] = old["status"]
        prepared = self._admit(new, target, current=old)
        record_update(old, prepared, manager, resource=r, status=status)
        if dry_run:
            return prepared
        write = self.store.update_status if status else self.store.update
        return write(prepared)

    def _patched(self, old: dict[str, Any], patch: Any, ctype: str, target: Target) -> dict[str, Any]:
        ref = {"kind": target.resource.kind, "namespace": target.namespace, "name": target.name or ""}
        if ctype == _JSON_PATCH:
            result = json_patch(old, patch, ref)
        elif not isinstance(patch, dict):
            raise ApiError.bad_request("a merge patch must be a JSON object")
        elif ctype == _STRATEGIC:
            result = strategic_merge_patch(old, patch)
        else:
            result = merge_patch(old, patch)
        if not isinstance(result, dict):
            raise ApiError.bad_request("the patch does not leave an object")
        return result

    async def _patch(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        assert target.name is not None
        ctype = request.content_type
        if ctype not in (_MERGE, _JSON_PATCH, _STRATEGIC, _APPLY) or (ctype == _STRATEGIC and r.custom):
            accepted = [_JSON_PATCH, _MERGE, _APPLY] if r.custom else [_JSON_PATCH, _MERGE, _STRATEGIC, _APPLY]
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(accepted),
            )
        patch = await self._body(request)
        if ctype == _APPLY:
            return await self._apply(request, target, patch)
        precondition = None
        if isinstance(patch, dict) and isinstance(patch.get("metadata"), dict):
            precondition = patch["metadata"].get("resourceVersion")
        for _attempt in range(10):
            try:
                old = await self.run(self.store.get, r.api_version, r.kind, target.name, target.namespace)
            except StoreError as exc:
                raise from_store_error(exc, r, target.name) from None
            try:
                new = self._patched(copy.deepcopy(old), patch, ctype, target)
            except Invalid as exc:
                raise ApiError(
                    422, "Invalid", f'{r.qualified_kind} "{target.name}" is invalid: {exc.message}'
                ) from None
            new = self._object_body(new, target)
            new["metadata"]["resourceVersion"] = precondition or old["metadata"]["resourceVersion"]
            try:
                return await self._write_over(request, target, old, new)
            except Conflict as exc:
                if precondition:
                    raise from_store_error(exc, r, target.name) from None
                continue  # written in between: patch the new state
            except StoreError as exc:
                raise from_store_error(exc, r, target.name) from None
        raise _too_many_conflicts(r, target.name)

    async def _apply(self, request: web.Request, target: Target, config: Any) -> web.StreamResponse:
        r = target.resource
        assert target.name is not None
        manager = request.query.get("fieldManager", "")
        if not manager:
            raise ApiError.bad_request("PATCH with application/apply-patch+yaml requires a fieldManager")
        config = self._object_body(config, target)
        force = _query_bool(request, "force")
        for _attempt in range(10):
            try:
                old = await self.run(self.store.get, r.api_version, r.kind, target.name, target.namespace)
            except NotFound:
                old = None
            except StoreError as exc:
                raise from_store_error(exc, r, target.name) from None
            new = server_side_apply(
                old, config, manager, force=force, resource=r, status=target.subresource == "status"
            )
            prepared = await self.run(self._admit, new, target)
            if self._dry_run(request):
                return _json(self._view(prepared, r), 200 if old else 201)
            try:
                if old is None:
                    written = await self.write(self.store.create, prepared)
                elif target.subresource == "status":
                    written = await self.write(self.store.update_status, prepared)
                else:
                    written = await self.write(self.store.update, prepared)
            except Conflict:
                continue
            except StoreError as exc:
                if exc.reason == "AlreadyExists":
                    continue
                raise from_store_error(exc, r, target.name) from None
            return _json(self._written(target, written), 200 if old else 201)
        raise _too_many_conflicts(r, target.name)

    async def _delete_options(self, request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        if not raw.strip():
            return {}
        try:
            options = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ApiError.bad_request(f"the request body is not valid JSON: {exc}") from None
        if not isinstance(options, dict):
            raise ApiError.bad_request("DeleteOptions must be an object")
        return options

    def _propagation(self, request: web.Request, options: Mapping[str, Any]) -> str:
        policy = request.query.get("propagationPolicy") or options.get("propagationPolicy") or "Background"
        if policy == "Foreground":
            return "Background"  # the store collects dependents at once; nothing waits in between
        if policy not in ("Background", "Orphan"):
            raise ApiError.bad_request(f'unsupported propagation policy "{policy}" (Background, Foreground or Orphan)')
        if _query_bool(request, "orphanDependents") or options.get("orphanDependents") is True:
            return "Orphan"
        return str(policy)

    async def _delete(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        assert target.name is not None
        if target.subresource is not None:
            raise _method_not_allowed()
        options = await self._delete_options(request)
        propagation = self._propagation(request, options)
        given = options.get("preconditions")
        pre: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            if self._dry_run(request) or "All" in (options.get("dryRun") or []):
                obj = await self.run(self.store.get, r.api_version, r.kind, target.name, target.namespace)
            else:
                if (r.group, r.kind) == ("", "Namespace"):
                    await self.run(self.store.get, r.api_version, r.kind, target.name)  # NotFound first
                    await self._empty_namespace(target.name)
                obj = await self.write(
                    self.store.delete,
                    r.api_version,
                    r.kind,
                    target.name,
                    target.namespace,
                    resource_version=pre.get("resourceVersion"),
                    uid=pre.get("uid"),
                    propagation=propagation,
                )
        except StoreError as exc:
            raise from_store_error(exc, r, target.name) from None
        return _json(self._written(target, obj))

    async def _empty_namespace(self, namespace: str) -> None:
        """Delete everything in a namespace before the namespace itself, as the namespace controller does.

        Objects with finalizers are only marked for deletion; their controllers finish them.
        """
        catalog = await self.catalog()
        seen: set[tuple[str, str]] = set()
        for resource in catalog.by_kind.values():
            if not resource.namespaced or (resource.group, resource.kind) in seen:
                continue
            seen.add((resource.group, resource.kind))
            listed = await self.run(self.store.list, resource.api_version, resource.kind, namespace)
            for obj in listed.items:
                with contextlib.suppress(NotFound):
                    await self.write(
                        self.store.delete, resource.api_version, resource.kind, obj["metadata"]["name"], namespace
                    )

    async def _delete_collection(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        options = await self._delete_options(request)
        propagation = self._propagation(request, options)
        matches, _ = self._matcher(request, target)
        listed = await self.run(self.store.list, r.api_version, r.kind, target.namespace)
        deleted = []
        for obj in listed.items:
            if not matches(obj):
                continue
            meta = obj["metadata"]
            try:
                if not self._dry_run(request):
                    obj = await self.write(
                        self.store.delete,
                        r.api_version,
                        r.kind,
                        meta["name"],
                        meta.get("namespace"),
                        propagation=propagation,
                    )
            except NotFound:
                continue
            except StoreError as exc:
                raise from_store_error(exc, r, meta["name"]) from None
            deleted.append(self._written(target, obj))
        return _json({"kind": f"{r.kind}List", "apiVersion": r.api_version, "metadata": {}, "items": deleted})
