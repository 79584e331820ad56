"""``olmkit run-bundle DIR|FBC -n NS``: render, publish and install a bundle in one step.

What ``operator-sdk run bundle`` does for operator authors, on olmkit's store:

1. render: a bundle directory becomes a catalog (package, channel and bundle blobs, the
   manifests inline, as ``catalog render`` makes them); a file-based catalog is taken as it is;
2. publish: a rendered bundle goes into ConfigMap ``<package>-run-bundle`` and CatalogSource
   ``<package>-catalog`` (``sourceType: configmap``) in the namespace, so the store holds
   everything; a catalog is published where it is (``sourceType: file``, its absolute path,
   so that bundles it names by relative directory are found);
3. install: an OperatorGroup when the namespace has none (targeting the namespace, or what
   ``--watch``/``--watch-all`` say, as ``install`` does), and a Subscription to the bundle
   (``startingCSV``) on its default channel; then the controllers run here until the CSV
   succeeded (exit 0) or it fails, or waits, or ``--timeout`` passes (exit 1, with the reason).

Every object goes through :mod:`olmkit.lifecycle.apply`, as ``olmkit apply`` would.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from olmkit.cli.options import (
    add_store_option,
    add_target_options,
    namespace_arg,
    namespace_name,
    new_operator_group,
    parse_duration,
    store_from_args,
)
from olmkit.cli.refs import get_or_none, resource_ref
from olmkit.errors import UsageError

if TYPE_CHECKING:
    from olmkit.registry import Registry

__all__ = ["add_commands", "bundle_catalog", "run_bundle"]

CONFIG_MAP_KEY: Final = "catalog.json"


def bundle_catalog(
    path: str, registry: Registry, package: str | None = None
) -> tuple[list[dict[str, Any]] | None, str, str, str]:
    """The FBC blobs to publish (``None``: a catalog, published by path), the package, the bundle
    to install (``startingCSV``) and its channel.

    A bundle directory (any registered bundle format) is rendered; a catalog is read, and its
    ``package`` (the only one when not given) is installed from its default channel's head.

    Raises:
        UsageError: the path is neither, or the catalog's package is ambiguous or missing.
    """
    from olmkit.catalog import load_catalog
    from olmkit.catalog.bundles import bundles_to_blobs, find_format, read_bundle

    if not Path(path).exists():
        raise UsageError(f"{path}: no such file or directory")
    if find_format(path, registry) is not None:
        contents = read_bundle(path, registry)
        if package and package != contents.package:
            raise UsageError(f"{path} is a bundle of package {contents.package!r}, not {package!r}")
        channel = contents.default_channel or (contents.channels[0] if contents.channels else None)
        if channel is None:
            raise UsageError(f"{path}: the bundle names no channel to publish it in (give --channel)")
        return bundles_to_blobs([contents], standalone=True), contents.package, str(contents.blob["name"]), channel
    catalog = load_catalog(path, registry)
    packages = sorted(catalog.packages)
    if package is None:
        if len(packages) != 1:
            raise UsageError(
                f"{path} holds {len(packages)} packages ({', '.join(packages)}): choose one with --package"
            )
        package = packages[0]
    if package not in catalog.packages:
        raise UsageError(f"package {package!r} is not in {path} (it has: {', '.join(packages)})")
    default = catalog.packages[package].default_channel
    channels = catalog.channels.get(package, {})
    channel = default if default in channels else next(iter(channels), None)
    if channel is None:
        raise UsageError(f"package {package!r} of {path} has no channel to install from")
    head = catalog.channel_head(package, channel).name
    return None, package, head, channel


def run_bundle(args: argparse.Namespace, pm: Any) -> int:
    """Render, publish, install; wait until the operator is installed or fails."""
    from olmkit.cli.waiting import report_outcome, settle_subscription
    from olmkit.lifecycle.apply import apply_object, prepare_manifests
    from olmkit.lifecycle.kinds import OPERATOR_GROUP, SUBSCRIPTION

    namespace = namespace_arg(args)
    blobs, package, bundle, default_channel = bundle_catalog(args.path, pm.registry, args.package)
    channel = args.channel or default_channel
    catalog_name = f"{package}-catalog"
    source: dict[str, Any] = {"displayName": f"run-bundle {Path(args.path).name}", "publisher": "olmkit run-bundle"}
    objects: list[dict[str, Any]] = []
    if blobs is None:
        source.update(sourceType="file", path=str(Path(args.path).resolve()))
    else:
        source.update(sourceType="configmap", configMap=f"{package}-run-bundle")
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{package}-run-bundle", "namespace": namespace},
                "data": {CONFIG_MAP_KEY: "\n".join(orjson.dumps(b).decode() for b in blobs) + "\n"},
            }
        )
    objects.append(
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": catalog_name, "namespace": namespace},
            "spec": source,
        }
    )
    with store_from_args(args) as store:
        if get_or_none(store, SUBSCRIPTION, package, namespace) is not None:
            raise UsageError(
                f"package {package!r} is already subscribed in namespace {namespace} (subscription {package}); "
                f"olmkit uninstall {package} -n {namespace} first"
            )
        if not store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace).items:
            objects.append(new_operator_group(args, namespace))
        objects.append(
            {
                "apiVersion": SUBSCRIPTION.api_version,
                "kind": SUBSCRIPTION.kind,
                "metadata": {"name": package, "namespace": namespace},
                "spec": {
                    "name": package,
                    "source": catalog_name,
                    "sourceNamespace": namespace,
                    "channel": channel,
                    "startingCSV": bundle,
                    "installPlanApproval": "Automatic",
                },
            }
        )
        where = f"<run-bundle {args.path}>"
        for item in prepare_manifests(store, pm.registry, [(where, o) for o in objects], namespace=namespace):
            action = apply_object(store, item.obj)
            print(f"{resource_ref(item.obj)}/{item.obj['metadata']['name']} {action}")
        sys.stdout.flush()
        outcome = settle_subscription(store, pm, namespace, package, args.timeout)
    return report_outcome(outcome, timeout=args.timeout)


def add_commands(subparsers: Any) -> None:
    """Add ``run-bundle``."""
    p = subparsers.add_parser(
        "run-bundle",
        help="render, publish and install a bundle directory (operator-sdk run bundle)",
        description="Render a bundle directory (or take a file-based catalog), publish it as a ConfigMap and a "
        "CatalogSource in the namespace, subscribe to it and run the controllers until the operator is installed "
        "(exit 0) or fails (exit 1).",
    )
    p.add_argument("path", metavar="DIR|FBC", help="a bundle directory, or a file-based catalog")
    p.add_argument(
        "-n", "--namespace", type=namespace_name, default=None, help="namespace to install into (default default)"
    )
    p.add_argument("--package", default=None, help="with a catalog of several packages: the one to install")
    p.add_argument("--channel", default=None, help="channel to subscribe to (default: the bundle's default)")
    add_target_options(p)
    p.add_argument(
        "--timeout", type=parse_duration, default=300.0, metavar="DURATION", help="give up after this (default 5m)"
    )
    add_store_option(p)
    p.set_defaults(func=run_bundle)
