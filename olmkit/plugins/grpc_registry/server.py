"""``olmkit catalog serve``: a file-based catalog over the ``api.Registry`` gRPC service.

:class:`RegistryServer` loads the catalog (through the on-disk cache), answers every RPC
from the current snapshot's :class:`~.convert.ApiView`, serves the standard health
service (``""`` and ``api.Registry`` are ``SERVING`` once the catalog is loaded) and
server reflection, and watches the catalog's files: when their stat signature changes the
catalog is loaded again and, when its content digest changed, the new snapshot (its
ListBundles answer already encoded) replaces the old one for the next RPC, with no
connection dropped (a stream under way finishes on the snapshot it started with). A
change that makes the catalog invalid keeps the previous snapshot and says so on stderr.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any, Final

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from olmkit.catalog import Catalog, cache_dir, catalog_files, invalid_catalog, load_catalog_result
from olmkit.errors import InputError, OlmkitError
from olmkit.plugins.grpc_registry import DEFAULT_ADDRESS, WATCH_INTERVAL
from olmkit.plugins.grpc_registry._api import registry_pb2 as pb
from olmkit.plugins.grpc_registry._api import registry_pb2_grpc as pb_grpc
from olmkit.plugins.grpc_registry.convert import ApiView, NotFoundError

__all__ = ["SERVICE_NAME", "RegistryServer", "RegistryServicer"]

SERVICE_NAME: Final = "api.Registry"


def _signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Each catalog file's path, size and modification time: a cheap change detector."""
    out = []
    for path in catalog_files(root):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(out)


class RegistryServicer(pb_grpc.RegistryServicer):  # type: ignore[misc]
    """The ``api.Registry`` RPCs, answered from ``view()`` (the current snapshot)."""

    def __init__(self, view: Callable[[], ApiView]) -> None:
        self._view = view

    def _fail(self, context: Any, exc: Exception) -> None:
        code = grpc.StatusCode.NOT_FOUND if isinstance(exc, NotFoundError) else grpc.StatusCode.INTERNAL
        context.abort(code, str(exc))

    def ListPackages(self, request: Any, context: Any) -> Iterator[Any]:
        for name in self._view().package_names():
            yield pb.PackageName(name=name)

    def GetPackage(self, request: Any, context: Any) -> Any:
        try:
            return self._view().package(request.name)
        except NotFoundError as exc:
            self._fail(context, exc)

    def GetBundle(self, request: Any, context: Any) -> Any:
        view = self._view()
        try:
            entry = view.find(request.pkgName, request.channelName, request.csvName)
            return view.bundle(request.pkgName, request.channelName, entry)
        except NotFoundError as exc:
            self._fail(context, exc)

    def GetBundleForChannel(self, request: Any, context: Any) -> Any:
        view = self._view()
        try:
            pkg, channel = request.pkgName, request.channelName
            return view.bundle(pkg, channel, view.find(pkg, channel, view.head(pkg, channel).name))
        except NotFoundError as exc:
            self._fail(context, exc)

    def GetChannelEntriesThatReplace(self, request: Any, context: Any) -> Iterator[Any]:
        found = self._view().replacing(request.csvName)
        if not found:
            self._fail(context, NotFoundError(f'no channel entries found that replace "{request.csvName}"'))
        yield from found

    def GetBundleThatReplaces(self, request: Any, context: Any) -> Any:
        try:
            return self._view().replacement(request.csvName, request.pkgName, request.channelName)
        except NotFoundError as exc:
            self._fail(context, exc)

    def GetChannelEntriesThatProvide(self, request: Any, context: Any) -> Iterator[Any]:
        found = self._view().providing(request.group, request.version, request.kind)
        if not found:
            self._fail(context, NotFoundError(_no_provider(request)))
        yield from found

    def GetLatestChannelEntriesThatProvide(self, request: Any, context: Any) -> Iterator[Any]:
        found = self._view().latest_providing(request.group, request.version, request.kind)
        if not found:
            self._fail(context, NotFoundError(_no_provider(request)))
        yield from found

    def GetDefaultBundleThatProvides(self, request: Any, context: Any) -> Any:
        try:
            return self._view().default_providing(request.group, request.version, request.kind)
        except NotFoundError as exc:
            self._fail(context, exc)

    def ListBundles(self, request: Any, context: Any) -> Iterator[bytes]:
        yield from self._view().list_bundles()  # already serialized (see _handlers)


#: The RPCs: name, whether the answer is a stream, request and response message names.
_METHODS: Final = (
    ("ListPackages", True, "ListPackageRequest", "PackageName"),
    ("GetPackage", False, "GetPackageRequest", "Package"),
    ("GetBundle", False, "GetBundleRequest", "Bundle"),
    ("GetBundleForChannel", False, "GetBundleInChannelRequest", "Bundle"),
    ("GetChannelEntriesThatReplace", True, "GetAllReplacementsRequest", "ChannelEntry"),
    ("GetBundleThatReplaces", False, "GetReplacementRequest", "Bundle"),
    ("GetChannelEntriesThatProvide", True, "GetAllProvidersRequest", "ChannelEntry"),
    ("GetLatestChannelEntriesThatProvide", True, "GetLatestProvidersRequest", "ChannelEntry"),
    ("GetDefaultBundleThatProvides", False, "GetDefaultProviderRequest", "Bundle"),
    ("ListBundles", True, "ListBundlesRequest", "Bundle"),
)


def _passthrough(data: bytes) -> bytes:
    return data


def _handlers(servicer: RegistryServicer) -> dict[str, Any]:
    """The method handlers of the generated code, except that ListBundles streams serialized bytes."""
    out = {}
    for name, stream, request, response in _METHODS:
        make = grpc.unary_stream_rpc_method_handler if stream else grpc.unary_unary_rpc_method_handler
        serializer = _passthrough if name == "ListBundles" else getattr(pb, response).SerializeToString
        out[name] = make(
            getattr(servicer, name),
            request_deserializer=getattr(pb, request).FromString,
            response_serializer=serializer,
        )
    return out


def _no_provider(request: Any) -> str:
    what = f'group:"{request.group}" version:"{request.version}" kind:"{request.kind}"'
    return f"no channel entries found that provide {what}"


class RegistryServer:
    """A catalog served over gRPC: load, serve, watch.

    Args:
        path: the file-based catalog (directory or file).
        pm: the plugin manager (its registry loads the catalog; its ``olmkit_bundle_content``
            hook gives manifests of bundles without inline ones).
        address: ``host:port`` to listen on (port 0: any free port, see :attr:`port`).
        cache: use the on-disk catalog cache.
        watch_interval: seconds between checks of the catalog's files (0: no watching).
        warm: encode the ListBundles answer in the background once serving (and after each reload).
        log: where messages go (stderr by default).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        pm: Any,
        *,
        address: str = DEFAULT_ADDRESS,
        cache: bool = True,
        watch_interval: float = WATCH_INTERVAL,
        log: Callable[[str], None] | None = None,
        warm: bool = True,
    ) -> None:
        self.path = Path(path)
        self.pm = pm
        self.address = address
        self.cache = cache
        self.watch_interval = watch_interval
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.port = 0
        self.reloads = 0
        self.warm = warm
        self._view: ApiView | None = None
        self._signature: tuple[tuple[str, int, int], ...] = ()
        self._stop = threading.Event()
        self._server: Any = None
        self._workers: futures.ThreadPoolExecutor | None = None
        self._health: Any = None
        self._watcher: threading.Thread | None = None

    # -- the catalog ------------------------------------------------------------------

    def _objects(self, bundle: Any) -> list[Any] | None:
        try:
            found = self.pm.hook.olmkit_bundle_content(bundle=bundle, registry=self.pm.registry)
        except OlmkitError:
            return None
        return list(found) if found is not None else None

    def load(self, *, warm: bool = False, signature: tuple[tuple[str, int, int], ...] | None = None) -> Catalog:
        """Load the catalog and make it the served snapshot (unless its digest did not change).

        Args:
            warm: encode the new snapshot's ListBundles answer before it is served.
            signature: the files' stat signature taken just before (by :meth:`check`), else taken here.

        Raises:
            OlmkitError: the catalog cannot be read or is invalid.
        """
        if signature is None:
            signature = _signature(self.path)
        result = load_catalog_result(self.path, self.pm.registry, cache=self.cache)
        if result.problems:
            raise invalid_catalog(self.path, result.problems)
        old = self._view
        if old is not None and result.catalog.digest and result.catalog.digest == old.catalog.digest:
            self._signature = signature  # touched, not changed: keep the snapshot (and its encoded answers)
            return old.catalog
        view = ApiView(result.catalog, self._objects)
        stored = self._stored(result.catalog)
        if stored is not None:
            view.load_list_bundles(stored)
        if warm:
            self._encode(view)
        self._view = view
        self._signature = signature
        return result.catalog

    def _stored(self, catalog: Catalog) -> Path | None:
        """Where the encoded ListBundles answer of a cached catalog is kept (next to the catalog cache)."""
        return cache_dir() / f"{catalog.digest}.api-bundles" if self.cache and catalog.digest else None

    def _encode(self, view: ApiView) -> None:
        """Encode the ListBundles answer (unless it was read back) and keep it for the next start."""
        stored = self._stored(view.catalog)
        fresh = not view.encoded
        view.list_bundles()
        if fresh and stored is not None:
            view.save_list_bundles(stored)

    def view(self) -> ApiView:
        """The current snapshot's answers."""
        assert self._view is not None, "load() first"
        return self._view

    def check(self) -> bool:
        """Reload when the catalog's files changed (stat, then digest); True when a new snapshot is served."""
        try:
            signature = _signature(self.path)
        except OlmkitError as exc:
            self.log(f"olmkit catalog serve: {exc} (still serving the previous catalog)")
            return False
        if signature == self._signature:
            return False
        before = self._view
        try:
            catalog = self.load(warm=self.warm, signature=signature)  # on the watcher thread, before anyone asks
        except OlmkitError as exc:
            self._signature = signature  # report once per change
            self.log(f"olmkit catalog serve: {exc} (still serving the previous catalog)")
            return False
        if self._view is before:
            return False
        self.reloads += 1
        self.log(f"olmkit catalog serve: catalog changed, serving {len(catalog.packages)} packages")
        return True

    def _watch(self) -> None:
        while not self._stop.wait(self.watch_interval):
            self.check()

    # -- the server -------------------------------------------------------------------

    def start(self) -> int:
        """Load the catalog and start serving; returns the port.

        Raises:
            OlmkitError: the catalog cannot be loaded.
            InputError: the address cannot be bound.
        """
        self.load()
        self._workers = futures.ThreadPoolExecutor(max_workers=8)
        server = grpc.server(self._workers)
        handlers = _handlers(RegistryServicer(self.view))
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
        server.add_registered_method_handlers(SERVICE_NAME, handlers)
        self._health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        names = (
            pb.DESCRIPTOR.services_by_name["Registry"].full_name,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        )
        reflection.enable_server_reflection(names, server)
        try:
            port = int(server.add_insecure_port(self.address))
        except RuntimeError as exc:
            raise InputError(f"cannot listen on {self.address}: {exc}") from None
        if not port:
            raise InputError(f"cannot listen on {self.address}")
        server.start()
        for service in ("", SERVICE_NAME):
            self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        self._server, self.port = server, port
        if self.warm:  # after start-up, so that it does not hold readiness back
            threading.Thread(target=self._encode, args=(self.view(),), name="olmkit-catalog-warm", daemon=True).start()
        if self.watch_interval > 0:
            self._watcher = threading.Thread(target=self._watch, name="olmkit-catalog-watch", daemon=True)
            self._watcher.start()
        return port

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop watching and serving (streams under way get ``grace`` seconds)."""
        self._stop.set()
        if self._health is not None:
            self._health.enter_graceful_shutdown()
        if self._server is not None:
            self._server.stop(grace).wait()
        if self._workers is not None:  # grpc does not shut down the executor it was given
            self._workers.shutdown()
        if self._watcher is not None:
            self._watcher.join(timeout=5)

    def wait(self) -> None:
        """Serve until interrupted."""
        assert self._server is not None
        try:
            while not self._stop.wait(3600):
                pass
        finally:
            self.stop()


def serve_for_tests(path: str | os.PathLike[str], pm: Any, **kwargs: Any) -> RegistryServer:
    """Start a server on 127.0.0.1 on a free port (for tests and benchmarks)."""
    server = RegistryServer(path, pm, address="127.0.0.1:0", **kwargs)
    server.start()
    return server
