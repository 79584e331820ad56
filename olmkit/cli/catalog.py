"""``olmkit catalog``: validate, render, list and draw file-based catalogs.

* ``validate PATH...``: every problem, each naming file, line, package, blob and field;
  exit 0 valid (warnings allowed), 1 invalid, 2 unreadable input.
* ``render PATH...``: catalogs and bundle directories as one FBC stream (JSON, or
  ``-o yaml``); bundles come with the package and channel blobs they ask for unless
  ``--bundles-only``.
* ``render-template FILE``: a catalog template (``olm.template.basic``, ``olm.semver`` ...)
  as one FBC stream.
* ``list packages|channels|bundles PATH``.
* ``upgrade-path PATH --package P [--channel C] --from BUNDLE``.
* ``graph PATH PKG [--channel C] -o mermaid|dot``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from olmkit.catalog import Catalog, defer_writes, load_catalog
from olmkit.catalog.bundles import bundles_to_blobs, fill_image_template, find_format, read_bundle
from olmkit.catalog.graph import to_dot, to_mermaid, upgrade_walk
from olmkit.catalog.problems import ERROR
from olmkit.catalog.validate import validate_path
from olmkit.cli.output import add_output_option, emit
from olmkit.errors import CatalogError, UsageError
from olmkit.manager import PluginManager
from olmkit.serde import (
    SCHEMA_PACKAGE,
    blob_to_dict,
    bundle_to_dict,
    channel_to_dict,
    dump_json_stream,
    dump_yaml_stream,
    package_to_dict,
)

__all__ = ["add_commands", "catalog_blobs"]


def add_commands(subparsers: Any) -> None:
    """Add the ``catalog`` command group."""
    group = subparsers.add_parser("catalog", help="validate, render and query file-based catalogs")
    sub = group.add_subparsers(title="catalog commands", metavar="COMMAND")
    group.set_defaults(func=lambda args, pm: (group.print_help(sys.stderr), 2)[1])

    val = sub.add_parser("validate", help="check catalogs; every problem with file, line, package, blob, field")
    val.add_argument("paths", nargs="+", metavar="PATH")
    val.add_argument("--no-cache", action="store_true", help="do not use the on-disk catalog cache")
    add_output_option(val, formats=("text", "json", "yaml"), default="text")
    val.set_defaults(func=run_validate)

    ren = sub.add_parser("render", help="print catalogs and bundle directories as one FBC stream")
    ren.add_argument("paths", nargs="+", metavar="PATH", help="a catalog directory or file, or a bundle directory")
    ren.add_argument(
        "--image-ref-template",
        metavar="TEMPLATE",
        help="image reference recorded in rendered bundles, with {package}, {name} and {version} "
        "(opm's {{.Package}} ... work too); default: none, manifests carried inline",
    )
    ren.add_argument(
        "--bundles-only",
        action="store_true",
        help="print only the bundle blobs of bundle directories, not the package and channel blobs they ask for",
    )
    add_output_option(ren, formats=("json", "yaml"), default="json")
    ren.set_defaults(func=run_render)

    tpl = sub.add_parser("render-template", help="render a catalog template (olm.template.basic, olm.semver ...)")
    tpl.add_argument("template", metavar="FILE", help="the template file (YAML or JSON); - reads standard input")
    tpl.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="PATH",
        help="a catalog whose bundles the template may reference by image (repeatable)",
    )
    add_output_option(tpl, formats=("json", "yaml"), default="json")
    tpl.set_defaults(func=run_render_template)

    lst = sub.add_parser("list", help="list packages, channels or bundles")
    lst.add_argument("what", choices=("packages", "channels", "bundles"))
    lst.add_argument("path", metavar="PATH", nargs="?", help="a catalog directory or file (or give --address)")
    lst.add_argument("--address", metavar="HOST:PORT", help="read the catalog from a registry server (gRPC) instead")
    lst.add_argument("--package", help="only this package")
    add_output_option(lst)
    lst.set_defaults(func=run_list)

    up = sub.add_parser("upgrade-path", help="the upgrades from an installed bundle to the channel head")
    up.add_argument("path", metavar="PATH")
    up.add_argument("--package", required=True)
    up.add_argument("--channel", help="default: the package's default channel")
    up.add_argument("--from", dest="start", required=True, metavar="BUNDLE")
    add_output_option(up)
    up.set_defaults(func=run_upgrade_path)

    gr = sub.add_parser("graph", help="draw a package's upgrade graph")
    gr.add_argument("path", metavar="PATH")
    gr.add_argument("package", metavar="PKG")
    gr.add_argument("--channel", help="only this channel")
    gr.add_argument("-o", "--output", choices=("mermaid", "dot"), default="mermaid")
    gr.set_defaults(func=run_graph)


def run_validate(args: argparse.Namespace, pm: PluginManager) -> int:
    """Validate every path; 1 when any has an error."""
    defer_writes()  # the catalog caches are written once the report is out
    registry = pm.registry
    report = []
    invalid = False
    for path in args.paths:
        _, problems, _ = validate_path(path, registry, cache=not args.no_cache)
        errors = sum(1 for p in problems if p.severity == ERROR)
        invalid |= errors > 0
        if args.output != "text":  # the problems as dicts only for the structured report
            report.append(
                {
                    "path": path,
                    "valid": errors == 0,
                    "errors": errors,
                    "warnings": len(problems) - errors,
                    "problems": [p.to_dict() for p in problems],
                }
            )
        else:
            sys.stdout.write("".join([f"{p}\n" for p in problems]))
            state = "invalid" if errors else "valid"
            warnings = len(problems) - errors
            sys.stdout.write(
                f"{path}: {state}: {errors} error{'' if errors == 1 else 's'}, "
                f"{warnings} warning{'' if warnings == 1 else 's'}\n"
            )
    if args.output != "text":
        emit(report, args.output)
    return 1 if invalid else 0


def catalog_blobs(catalog: Catalog) -> list[dict[str, Any]]:
    """A catalog as FBC blobs: per package its package blob, channels, bundles, deprecations."""
    out: list[dict[str, Any]] = []
    for name in sorted(set(catalog.packages) | set(catalog.channels) | set(catalog.bundles)):
        if name in catalog.packages:
            out.append(package_to_dict(catalog.packages[name]))
        out += [channel_to_dict(c) for c in catalog.channels.get(name, {}).values()]
        out += [bundle_to_dict(b) for b in catalog.bundles.get(name, {}).values()]
        dep = catalog.deprecations.get(name)
        if dep is not None and dep.data is not None:
            out.append(dict(dep.data))
    out += [blob_to_dict(b) for b in catalog.others]
    return out


def _print_blobs(blobs: list[dict[str, Any]], fmt: str) -> None:
    if fmt == "yaml":
        sys.stdout.write(dump_yaml_stream(blobs))
    else:
        sys.stdout.buffer.write(dump_json_stream(blobs))
        sys.stdout.flush()


def run_render(args: argparse.Namespace, pm: PluginManager) -> int:
    """Print catalogs, then bundles read by a registered bundle format, as FBC.

    Bundles of a package that no catalog argument defines come with the package and
    channel blobs they ask for (unless ``--bundles-only``), so that the output is a
    complete catalog.
    """
    registry = pm.registry
    blobs: list[dict[str, Any]] = []
    bundles = []
    for path in args.paths:
        if find_format(path, registry) is None:
            blobs += catalog_blobs(load_catalog(path, registry))
            continue
        contents = read_bundle(path, registry)
        if args.image_ref_template:
            contents = read_bundle(path, registry, image=fill_image_template(args.image_ref_template, contents))
        bundles.append(contents)
    defined = {str(b.get("name")) for b in blobs if b.get("schema") == SCHEMA_PACKAGE}
    blobs += bundles_to_blobs(bundles, standalone=not args.bundles_only, defined=defined)
    _print_blobs(blobs, args.output)
    return 0


def run_render_template(args: argparse.Namespace, pm: PluginManager) -> int:
    """Print the catalog a template renders to."""
    from olmkit.catalog.templates import render_template  # only this command renders templates

    registry = pm.registry
    catalogs = [load_catalog(path, registry) for path in args.catalog]
    _print_blobs(render_template(args.template, registry, catalogs=catalogs), args.output)
    return 0


def _list_source(args: argparse.Namespace, pm: PluginManager) -> Catalog:
    """The catalog ``list`` reads: PATH, or the registry server at ``--address`` (a ``grpc`` source)."""
    if (args.path is None) == (args.address is None):
        raise UsageError("give a catalog PATH or --address HOST:PORT (one of them)")
    if args.path is not None:
        return load_catalog(args.path, pm.registry)
    from olmkit.catalog.sources import open_source

    spec = {"sourceType": "grpc", "address": args.address}
    source = open_source(spec, registry=pm.registry, name=args.address, namespace="", base_dir=None)
    args.path = args.address
    return source.load()


def run_list(args: argparse.Namespace, pm: PluginManager) -> int:
    """List packages, channels or bundles."""
    catalog = _list_source(args, pm)
    packages = [args.package] if args.package else sorted(set(catalog.packages) | set(catalog.bundles))
    if args.package and args.package not in catalog.packages:
        raise UsageError(f'package "{args.package}" not found in {args.path}')
    rows: list[dict[str, Any]] = []
    if args.what == "packages":
        for name in packages:
            pkg = catalog.packages.get(name)
            default = pkg.default_channel if pkg else None
            head = _head(catalog, name, default) if default else None
            rows.append(
                {
                    "name": name,
                    "defaultChannel": default,
                    "head": head,
                    "channels": list(catalog.channels.get(name, {})),
                }
            )
        columns = [("name", "name"), ("default channel", "defaultChannel"), ("head", "head"), ("channels", "channels")]
    elif args.what == "channels":
        for name in packages:
            for ch in catalog.channels.get(name, {}).values():
                rows.append(
                    {
                        "package": name,
                        "name": ch.name,
                        "head": _head(catalog, name, ch.name),
                        "entries": len(ch.entries),
                    }
                )
        columns = [("package", "package"), ("name", "name"), ("head", "head"), ("entries", "entries")]
    else:
        for name in packages:
            for b in catalog.bundles.get(name, {}).values():
                chans = [
                    c.name for c in catalog.channels.get(name, {}).values() if any(e.name == b.name for e in c.entries)
                ]
                rows.append(
                    {"package": name, "name": b.name, "version": b.version, "image": b.image, "channels": chans}
                )
        columns = [("package", "package"), ("name", "name"), ("version", "version"), ("channels", "channels")]
    emit(rows, args.output, columns=columns)
    return 0


def _head(catalog: Catalog, package: str, channel: str) -> str:
    try:
        return catalog.channel_head(package, channel).name
    except CatalogError:
        return "(invalid)"


def run_upgrade_path(args: argparse.Namespace, pm: PluginManager) -> int:
    """Print the upgrade steps from ``--from`` to the head."""
    catalog = load_catalog(args.path, pm.registry)
    package = catalog.packages.get(args.package)
    if package is None:
        raise UsageError(f'package "{args.package}" not found in {args.path}')
    channel = args.channel or package.default_channel
    if not channel:
        raise UsageError(f'package "{args.package}" has no default channel; pass --channel')
    found = catalog.channels.get(args.package, {}).get(channel)
    if found is None:
        raise UsageError(f'channel "{channel}" not found in package "{args.package}"')
    if args.start not in catalog.bundles.get(args.package, {}) and all(e.name != args.start for e in found.entries):
        raise UsageError(f'bundle "{args.start}" not found in package "{args.package}"')
    try:
        steps, stop = upgrade_walk(catalog, args.package, channel, args.start)
    except CatalogError as exc:  # a broken channel: a fact about the catalog
        raise CatalogError(str(exc), exit_code=1) from exc
    rows = [
        {"step": i + 1, "from": prev, "to": name, "via": how}
        for i, ((name, how), prev) in enumerate(zip(steps, [args.start] + [s[0] for s in steps], strict=False))
    ]
    if args.output == "table" and not rows and stop is None:
        sys.stdout.write(f"{args.start} is the head of channel {channel}: nothing to upgrade\n")
        return 0
    if rows or args.output != "table":
        emit(rows, args.output, columns=[("step", "step"), ("from", "from"), ("to", "to"), ("via", "via")])
    if stop is None:
        return 0
    # a fact about the catalog, not a usage error: the path as far as it goes, and why it stops
    where = f"in channel {channel!r} of package {args.package!r}"
    if steps:
        n = len(steps)
        what = (
            f"the upgrade path from {args.start!r} {where} stops after {n} step{'' if n == 1 else 's'} "
            f"at {stop.bundle!r}, short of the head {stop.head!r}"
        )
    else:
        what = f"no upgrade from {args.start!r} {where} towards the head {stop.head!r}"
    sys.stderr.write(f"olmkit: {what}: {stop.reason}\n")
    return 1


def run_graph(args: argparse.Namespace, pm: PluginManager) -> int:
    """Print the upgrade graph as mermaid or dot."""
    catalog = load_catalog(args.path, pm.registry)
    draw = to_dot if args.output == "dot" else to_mermaid
    sys.stdout.write(draw(catalog, args.package, args.channel))
    return 0
