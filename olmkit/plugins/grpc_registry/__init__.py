"""Built-in plugin: OLM's gRPC Registry API, served and consumed.

* ``olmkit catalog serve PATH [--address HOST:PORT] [--cache-dir DIR]`` serves a
  file-based catalog with the ``api.Registry`` service of operator-registry
  (``pkg/api/registry.proto``, re-declared in ``_api/registry.proto``), the standard
  ``grpc.health.v1.Health`` service and server reflection; it re-reads the catalog when
  its files change, without dropping connections (see :mod:`.server`).
* The ``grpc`` catalog source type: a CatalogSource with ``spec.sourceType: grpc`` and
  ``spec.address: HOST:PORT`` reads its catalog from a registry server (olmkit's own or
  any ``opm serve``): ``ListPackages``, ``GetPackage`` for each, then the ``ListBundles``
  stream. Its health is ``CONNECTING`` before the first answer, ``READY`` after a
  successful read and ``TRANSIENT_FAILURE`` (with the gRPC status) after a failed one.
  Between registry polls the server's health service is asked every 30 seconds, so a
  server that goes away (or comes back) is noticed and the catalog read again.
  Manifests of a chosen bundle come from ``GetBundle`` when an InstallPlan needs them.

grpc is imported only when one of these is used.

How the messages are filled, as ``opm serve`` fills them from a file-based catalog:

* ``Bundle``: ``csvName`` the bundle's name, ``channelName``/``replaces``/``skips``/
  ``skipRange`` from the channel entry (a bundle in two channels is two messages),
  ``bundlePath`` its image, ``version`` from its ``olm.package`` property,
  ``providedApis`` from ``olm.gvk`` and ``requiredApis`` from ``olm.gvk.required``
  (``plural`` left empty), ``dependencies`` the ``olm.gvk.required`` and
  ``olm.package.required`` properties renamed to ``olm.gvk`` and ``olm.package``,
  ``properties`` every property as compact JSON except ``olm.bundle.object``,
  ``object`` the manifests of the ``olm.bundle.object`` properties (decoded) and
  ``csvJson`` the one that is a ClusterServiceVersion, ``deprecation`` from the
  package's ``olm.deprecations`` blob.
* ``Package``: channels sorted by name, each with its head as ``csvName``.

Upstream quirks kept (clients depend on them):

* ``ListBundles`` leaves ``csvJson`` and ``object`` empty for bundles that have an
  image (``bundlePath``), as the SQLite-era server did; ``GetBundle`` has them.
* ``GetChannelEntriesThatReplace`` also returns entries that *skip* the bundle; such an
  entry's ``replaces`` is its own ``replaces``, not the bundle asked about.
* ``GetChannelEntriesThatProvide`` and ``GetLatestChannelEntriesThatProvide`` return,
  besides each entry, one entry per skipped bundle with ``replaces`` set to the skipped
  name (for the latest: only skips of bundles in the same channel).
* ``GetDefaultBundleThatProvides`` picks, among channel heads that provide the API, the
  first by package name whose channel is the package's default channel.
* Requests' ``plural`` is ignored: APIs are matched by group, version and kind.

Where olmkit differs: things not found are ``NOT_FOUND`` (upstream: ``UNKNOWN`` with the
same kind of message); packages are listed and streamed sorted by name, each channel's
entries in catalog order (upstream: packages in Go map order, a channel's bundles sorted by
name); a bundle without ``olm.bundle.object``
properties whose image is a bundle directory gets its ``csvJson``/``object`` from that
directory in ``GetBundle``.

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final

import attrs

from olmkit import hookimpl
from olmkit.catalog import Catalog
from olmkit.catalog.sources import CONNECTING, READY, TRANSIENT_FAILURE, SourceContext, SourceHealth
from olmkit.errors import InputError, OlmkitError
from olmkit.types import CatalogSourceType

__all__ = ["GRPC_ORIGIN", "GrpcSource", "parse_address"]

GRPC_ORIGIN: Final = "grpc://"
DEFAULT_ADDRESS: Final = "127.0.0.1:50051"
#: How often ``catalog serve`` checks the catalog's files for changes (seconds).
WATCH_INTERVAL: Final = 1.0


def parse_address(raw: Any, *, obj: str | None = None) -> str:
    """``host:port`` checked (a ``grpc://`` prefix is accepted and dropped).

    Raises:
        InputError: not ``host:port`` with a port number.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise InputError("spec.address is required for sourceType grpc (host:port)", obj=obj)
    address = raw.strip().removeprefix(GRPC_ORIGIN)
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"address {raw!r} is not host:port", obj=obj)
    return address


@attrs.define
class GrpcSource:
    """A catalog read from a registry server at ``address``."""

    name: str
    address: str
    context: SourceContext
    _last_error: str | None = None
    _loaded: bool = False

    @classmethod
    def open(cls, spec: Mapping[str, Any], context: SourceContext) -> GrpcSource:
        """Build from a CatalogSource spec (``spec.address``).

        Raises:
            InputError: no valid ``spec.address`` (a ``spec.image`` alone is refused: olmkit
                runs no catalog pods; serve the catalog and give its address).
        """
        obj = f"catalogsource {context.namespace}/{context.name}"
        if not spec.get("address") and spec.get("image"):
            raise InputError(
                "spec.image is not supported for sourceType grpc (olmkit runs no catalog pods): serve the "
                "catalog (olmkit catalog serve, opm serve) and give spec.address HOST:PORT",
                obj=obj,
            )
        address = parse_address(spec.get("address"), obj=obj)
        return cls(context.name, address, context)

    def load(self) -> Catalog:
        """Read the whole catalog from the server.

        Raises:
            CatalogError: the server cannot be reached, an RPC failed, or the answer is
                not a valid catalog.
        """
        from olmkit.plugins.grpc_registry.client import fetch_catalog

        try:
            catalog = fetch_catalog(self.address, self.context.registry, name=self.name)
        except OlmkitError as exc:
            self._last_error = str(exc)
            raise
        self._last_error = None
        self._loaded = True
        return catalog

    def revision(self) -> str | None:
        """The server's health, as a change token: a server that went away (or came back) is read again."""
        from olmkit.plugins.grpc_registry.client import serving

        return serving(self.address)

    def health(self) -> SourceHealth:
        """``READY`` after a successful read, ``TRANSIENT_FAILURE`` after a failed one, else ``CONNECTING``."""
        if self._last_error is not None:
            return SourceHealth(TRANSIENT_FAILURE, self._last_error)
        return SourceHealth(READY if self._loaded else CONNECTING)


@hookimpl
def olmkit_catalog_source_types() -> Iterator[CatalogSourceType]:
    """The ``grpc`` source type."""
    yield CatalogSourceType(
        name="grpc", open=GrpcSource.open, description="a registry server (api.Registry) at spec.address"
    )


@hookimpl(tryfirst=True)
def olmkit_bundle_content(bundle: Any, registry: Any) -> list[dict[str, Any]] | None:
    """Manifests of a bundle read from a registry server, through ``GetBundle``."""
    origin = getattr(bundle, "origin", None)
    path = getattr(origin, "path", None) or ""
    if not path.startswith(GRPC_ORIGIN) or any(p.type == "olm.bundle.object" for p in bundle.properties):
        return None
    address, _, rest = path[len(GRPC_ORIGIN) :].partition("/")
    package, _, channel = rest.partition("/")
    from olmkit.plugins.grpc_registry.client import fetch_bundle_manifests

    return fetch_bundle_manifests(address, package or bundle.package, channel, bundle.name)


# --------------------------------------------------------------------------- the command


def _catalog_commands(subparsers: Any) -> Any:
    """The ``catalog`` group's own subparsers (to add ``catalog serve`` to it)."""
    group = subparsers.choices.get("catalog")
    if group is None:
        return None
    for action in group._actions:  # argparse has no public accessor for a parser's subparsers
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


@hookimpl
def olmkit_add_commands(subparsers: Any) -> None:
    """``olmkit catalog serve``."""
    sub = _catalog_commands(subparsers)
    if sub is None:
        return
    p = sub.add_parser("serve", help="serve a catalog with OLM's gRPC Registry API (as opm serve)")
    p.add_argument("path", metavar="PATH", help="a file-based catalog directory or file")
    p.add_argument("--address", default=DEFAULT_ADDRESS, help=f"host:port to listen on (default {DEFAULT_ADDRESS})")
    p.add_argument("--cache-dir", metavar="DIR", help="the parsed-catalog cache (default: $OLMKIT_CACHE_DIR)")
    p.add_argument("--no-cache", action="store_true", help="do not use the on-disk catalog cache")
    p.add_argument(
        "--watch-interval",
        type=float,
        default=WATCH_INTERVAL,
        metavar="SECONDS",
        help="how often the catalog's files are checked for changes (0: never)",
    )
    p.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace, pm: Any) -> int:
    """Serve until interrupted (SIGINT/SIGTERM end it with exit code 0)."""
    import signal

    parse_address(args.address)
    if not os.path.exists(args.path):
        raise InputError("no such file or directory", path=args.path)
    if args.cache_dir:
        from olmkit.catalog import CACHE_ENV

        os.environ[CACHE_ENV] = args.cache_dir
    from olmkit.plugins.grpc_registry.server import RegistryServer

    start = time.perf_counter()
    server = RegistryServer(
        args.path, pm, address=args.address, cache=not args.no_cache, watch_interval=args.watch_interval
    )
    port = server.start()
    catalog = server.view().catalog  # (a catalog from the cache builds bundles on first use: not counted here)
    host = args.address.rpartition(":")[0]
    sys.stderr.write(
        f"olmkit catalog serve: serving {len(catalog.packages)} packages on {host}:{port} "
        f"(ready in {time.perf_counter() - start:.2f}s)\n"
    )
    sys.stderr.flush()

    def stop(signum: int, frame: Any) -> None:
        server._stop.set()

    signal.signal(signal.SIGTERM, stop)
    try:
        server.wait()
    except KeyboardInterrupt:
        server.stop()
    return 0
