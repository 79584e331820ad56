"""Reading a catalog from an ``api.Registry`` server (olmkit's own or any ``opm serve``).

:func:`fetch_catalog` lists the packages, gets each (concurrently), streams
``ListBundles`` and builds a :class:`~olmkit.catalog.Catalog` from what came back;
:func:`fetch_bundle_manifests` gets one bundle's manifests (``GetBundle``) when an
InstallPlan needs them, since ``ListBundles`` leaves them out.

What the API does not carry is not there: a package's description and icon, a bundle's
``relatedImages``, and the order of channels and bundles in the files (channels come
sorted by name, bundles in stream order, entries in the order the server streams them,
which for olmkit's server is catalog order). Resolution does not depend on any of these.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Final

import grpc
import orjson

from olmkit.catalog import Catalog, build_catalog
from olmkit.errors import CatalogError
from olmkit.plugins.grpc_registry import GRPC_ORIGIN
from olmkit.plugins.grpc_registry._api import registry_pb2 as pb
from olmkit.plugins.grpc_registry._api import registry_pb2_grpc as pb_grpc
from olmkit.plugins.grpc_registry.convert import blobs_from_api

__all__ = ["RegistryUnavailable", "fetch_bundle_manifests", "fetch_catalog"]

#: Seconds the first call may take to connect and answer (a dead address fails at once).
CONNECT_TIMEOUT: Final = 10.0
#: Seconds the whole ListBundles stream may take.
LIST_TIMEOUT: Final = 300.0
#: Seconds a health check may take.
HEALTH_TIMEOUT: Final = 2.0
#: GetPackage calls under way at once.
IN_FLIGHT: Final = 32
#: Messages up to this size are accepted (bundles with large inline manifests).
MAX_MESSAGE: Final = 64 * 1024 * 1024


class RegistryUnavailable(CatalogError):
    """The registry server could not be reached or failed an RPC."""


def _channel(address: str) -> Any:
    options = [("grpc.max_receive_message_length", MAX_MESSAGE)]
    return grpc.insecure_channel(address, options=options)


def _status(exc: grpc.RpcError) -> str:
    """The failed call's status code name (``UNAVAILABLE`` ...)."""
    code = exc.code() if hasattr(exc, "code") else None
    return code.name if code is not None else "UNKNOWN"


def _rpc_error(address: str, what: str, exc: grpc.RpcError) -> RegistryUnavailable:
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return RegistryUnavailable(f"registry server {address}: {what}: {_status(exc)}: {details}")


def fetch_catalog(address: str, registry: Any, *, name: str) -> Catalog:
    """The catalog a registry server serves.

    Raises:
        RegistryUnavailable: the server cannot be reached or an RPC failed (names the
            address, the RPC and the gRPC status).
        CatalogError: what it serves does not make a valid catalog.
    """
    origin = f"{GRPC_ORIGIN}{address}"  # what olmkit_bundle_content recognises
    with _channel(address) as channel:
        stub = pb_grpc.RegistryStub(channel)
        try:
            names = [p.name for p in stub.ListPackages(pb.ListPackageRequest(), timeout=CONNECT_TIMEOUT)]
        except grpc.RpcError as exc:
            raise _rpc_error(address, "ListPackages", exc) from None
        packages = []
        try:
            for i in range(0, len(names), IN_FLIGHT):  # a few at a time: thousands at once get cancelled
                calls = [
                    stub.GetPackage.future(pb.GetPackageRequest(name=n), timeout=LIST_TIMEOUT)
                    for n in names[i : i + IN_FLIGHT]
                ]
                packages += [c.result() for c in calls]
        except grpc.RpcError as exc:
            raise _rpc_error(address, "GetPackage", exc) from None
        try:
            stream = stub.ListBundles(pb.ListBundlesRequest(), timeout=LIST_TIMEOUT)
            result = build_catalog(blobs_from_api(packages, stream, origin), registry, name=name)
        except grpc.RpcError as exc:
            raise _rpc_error(address, "ListBundles", exc) from None
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise CatalogError(f"registry server {address}: malformed answer: {exc}") from None
    if result.problems:
        lines = [str(p) for p in result.problems[:20]]
        raise CatalogError(f"registry server {address} serves an invalid catalog:\n  " + "\n  ".join(lines))
    return result.catalog


def serving(address: str) -> str:
    """The server's overall health (``SERVING`` ...; what opm serve reports too) or the failed check's status."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with _channel(address) as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=HEALTH_TIMEOUT
            )
        except grpc.RpcError as exc:
            return _status(exc)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status))


def fetch_bundle_manifests(address: str, package: str, channel: str, bundle: str) -> list[dict[str, Any]] | None:
    """A bundle's manifests from ``GetBundle`` (``object``), or ``None`` when it has none.

    Raises:
        RegistryUnavailable: the server cannot be reached or does not have the bundle.
    """
    with _channel(address) as ch:
        stub = pb_grpc.RegistryStub(ch)
        try:
            msg = stub.GetBundle(
                pb.GetBundleRequest(pkgName=package, channelName=channel, csvName=bundle), timeout=LIST_TIMEOUT
            )
        except grpc.RpcError as exc:
            raise _rpc_error(address, f"GetBundle {package}/{channel}/{bundle}", exc) from None
    texts = list(msg.object) or ([msg.csvJson] if msg.csvJson else [])
    if not texts:
        return None
    out = []
    for text in texts:
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise RegistryUnavailable(f"registry server {address}: bundle {bundle}: malformed object: {exc}") from None
        if isinstance(obj, dict):
            out.append(obj)
    return out
