"""``kubectl operator``-style commands: ``install``, ``uninstall``, ``approve``, ``list``, ``list-available``.

``install`` picks the catalog and channel (the visible catalog that has the package with the
highest priority, then by name; the package's default channel) and creates the Subscription,
and an OperatorGroup when the namespace has none.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import attrs

from olmkit.cli.fields import age, at, obj_name, obj_namespace
from olmkit.cli.options import (
    EXIT_NOT_FOUND,
    add_global_namespace_option,
    add_namespace_option,
    add_store_option,
    add_target_options,
    namespace_arg,
    namespace_name,
    new_operator_group,
    parse_duration,
    store_from_args,
)
from olmkit.cli.output import Column, add_output_option, emit
from olmkit.cli.refs import get_or_none, not_found, resource_ref
from olmkit.errors import CatalogError, InputError, OlmkitError, UsageError
from olmkit.lifecycle.kinds import (
    CSV,
    INSTALL_PLAN,
    OPERATOR_GROUP,
    SUBSCRIPTION,
    resolve_kind,
)
from olmkit.store import AlreadyExists, NotFound, Object, Store, retry_on_conflict

if TYPE_CHECKING:
    from olmkit.catalog import Catalog
    from olmkit.manager import PluginManager
import difflib

from olmkit.cli.delete import delete_object
from olmkit.lifecycle.admission import admit
from olmkit.lifecycle.apply import object_label, shape_problems
from olmkit.lifecycle.catalogs import CatalogCache

__all__ = ["add_commands", "run_approve", "run_install", "run_list", "run_list_available", "run_uninstall"]


def _priority(obj: Mapping[str, Any]) -> int:
    value = at(obj, "spec.priority", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _source_ref(obj: Mapping[str, Any]) -> str:
    return f"{obj_namespace(obj)}/{obj_name(obj)}"


@attrs.frozen
class _Visible:
    """The catalogs a namespace sees, loaded; and those that would not load."""

    loaded: list[tuple[Object, Catalog]]
    failed: list[tuple[Object, str]]


def _visible_catalogs(cache: CatalogCache, namespaces: Sequence[str]) -> _Visible:
    loaded, failed = [], []
    for obj in cache.catalog_sources(namespaces):
        try:
            loaded.append((obj, cache.snapshot(obj)))
        except OlmkitError as exc:
            failed.append((obj, str(exc)))
    return _Visible(loaded, failed)


def _warn_failed(visible: _Visible) -> None:
    for obj, error in visible.failed:
        sys.stderr.write(f"warning: catalog {_source_ref(obj)} cannot be read and is skipped: {error}\n")


def _listing(names: Iterable[str], limit: int = 20) -> str:
    items = sorted(set(names))
    if not items:
        return "none"
    shown = ", ".join(items[:limit])
    return shown + (f" ... ({len(items) - limit} more)" if len(items) > limit else "")


def _choose_catalog(
    cache: CatalogCache, package: str, namespace: str, args: argparse.Namespace
) -> tuple[Object, Catalog]:
    """The CatalogSource to install ``package`` from (``--catalog``, else the best that has it)."""
    searched = [args.catalog_namespace] if args.catalog_namespace else [namespace, args.global_namespace]
    searched = list(dict.fromkeys(searched))
    if args.catalog:
        sources = [o for o in cache.catalog_sources(searched) if obj_name(o) == args.catalog]
        if not sources:
            known = _listing(_source_ref(o) for o in cache.catalog_sources(searched))
            raise UsageError(
                f'catalog source "{args.catalog}" not found in namespace(s) {", ".join(searched)} (there are: {known})'
            )
        source = sources[0]
        try:
            catalog = cache.snapshot(source)
        except OlmkitError as exc:
            raise InputError(f"cannot read catalog {_source_ref(source)}: {exc}") from None
        if package not in catalog.packages:
            raise UsageError(
                f'package "{package}" not found in catalog {_source_ref(source)}'
                f"{_did_you_mean(package, catalog.packages)} (it has: {_listing(catalog.packages)})"
            )
        return source, catalog
    visible = _visible_catalogs(cache, searched)
    _warn_failed(visible)
    having = [(o, c) for o, c in visible.loaded if package in c.packages]
    if not having:
        catalogs = _listing(_source_ref(o) for o, _ in visible.loaded)
        packages = {p for _, c in visible.loaded for p in c.packages}
        if not visible.loaded and visible.failed:
            unreadable = ", ".join(_source_ref(o) for o, _ in visible.failed)
            raise UsageError(
                f'package "{package}": no catalog visible from namespace {namespace} can be read ({unreadable}); '
                "fix the CatalogSource (see the warning above) or apply another"
            )
        if not visible.loaded:
            raise UsageError(
                f'package "{package}": no catalog is visible from namespace {namespace} '
                f"(CatalogSources in {', '.join(searched)}); apply one first"
            )
        raise UsageError(
            f'package "{package}" not found in the catalogs visible from namespace {namespace} ({catalogs})'
            f"{_did_you_mean(package, packages)} (packages: {_listing(packages)})"
        )
    having.sort(
        key=lambda oc: (-_priority(oc[0]), obj_name(oc[0]), obj_namespace(oc[0]) != namespace, obj_namespace(oc[0]))
    )
    return having[0]


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.8)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _channel(catalog: Catalog, package: str, source: Object, args: argparse.Namespace) -> str:
    channels = catalog.channels.get(package, {})
    channel = args.channel or catalog.packages[package].default_channel
    if not channel:
        if len(channels) != 1:
            raise UsageError(
                f'package "{package}" has no default channel; choose one with --channel ({_listing(channels)})'
            )
        channel = next(iter(channels))
    if channel not in channels:
        raise UsageError(
            f'channel "{channel}" not found in package "{package}" (catalog {_source_ref(source)})'
            f"{_did_you_mean(channel, channels)}; channels: {_listing(channels)}"
        )
    if args.starting_csv:
        entries = [e.name for e in channels[channel].entries]
        if args.starting_csv not in entries:
            raise UsageError(
                f'--starting-csv "{args.starting_csv}" is not in channel "{channel}" of package "{package}" '
                f"(entries: {_listing(entries)})"
            )
    return channel


def run_install(args: argparse.Namespace, pm: PluginManager) -> int:
    """Subscribe to a package (and make an OperatorGroup when the namespace has none)."""
    package, namespace = args.package, namespace_arg(args)
    with store_from_args(args) as store:
        for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace):
            if obj_name(sub) == package or at(sub, "spec.name") == package:
                raise UsageError(
                    f'package "{package}" is already subscribed in namespace {namespace} '
                    f"(subscription {obj_name(sub)}); uninstall it first, or change it with apply"
                )
        cache = CatalogCache(store, pm.registry, disk_cache=not args.no_cache)
        source, catalog = _choose_catalog(cache, package, namespace, args)
        channel = _channel(catalog, package, source, args)

        spec: dict[str, Any] = {
            "name": package,
            "source": obj_name(source),
            "sourceNamespace": obj_namespace(source),
            "channel": channel,
            "installPlanApproval": args.approval,
        }
        if args.starting_csv:
            spec["startingCSV"] = args.starting_csv
        subscription: Object = {
            "apiVersion": SUBSCRIPTION.api_version,
            "kind": SUBSCRIPTION.kind,
            "metadata": {"name": package, "namespace": namespace},
            "spec": spec,
        }
        group: Object | None = None
        groups = store.list(OPERATOR_GROUP.api_version, OPERATOR_GROUP.kind, namespace).items
        if groups and (args.watch or args.watch_all):
            sys.stderr.write(
                f"warning: --watch is ignored: namespace {namespace} has OperatorGroup {obj_name(groups[0])} already\n"
            )
        if not groups:
            group = new_operator_group(args, namespace)
        for obj in (group, subscription):
            if obj is not None:
                problems = shape_problems(obj) + admit(pm.registry, obj, store=store)
                if problems:
                    raise InputError("; ".join(problems), obj=object_label(obj))

        if group is not None:
            try:
                store.create(group)
                print(f"{resource_ref(OPERATOR_GROUP)}/{namespace} created")
            except AlreadyExists:  # made in between by someone else: it serves as well
                pass
        store.create(subscription)
        print(
            f"{resource_ref(SUBSCRIPTION)}/{package} created "
            f"(channel {channel}, catalog {_source_ref(source)}, approval {args.approval})"
        )
        if args.wait:
            from olmkit.cli.waiting import report_outcome, settle_subscription

            sys.stdout.flush()
            outcome = settle_subscription(
                store, pm, namespace, package, args.timeout, global_namespace=args.global_namespace
            )
            return report_outcome(outcome, timeout=args.timeout)
    return 0


def _find_subscription(store: Store, package: str, namespace: str) -> Object | None:
    found = get_or_none(store, SUBSCRIPTION, package, namespace)
    if found is not None:
        return found
    for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace):
        if at(sub, "spec.name") == package:
            return sub
    return None


def run_uninstall(args: argparse.Namespace, pm: PluginManager) -> int:
    """Delete a package's Subscription and the CSV it installed."""
    namespace = namespace_arg(args)
    with store_from_args(args, existing=True) as store:
        sub = _find_subscription(store, args.package, namespace)
        if sub is None:
            subscribed = [
                str(at(o, "spec.name") or obj_name(o))
                for o in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace)
            ]
            sys.stderr.write(
                f'Error from server (NotFound): package "{args.package}" has no subscription in namespace {namespace}'
                f"{_did_you_mean(args.package, subscribed)}\n"
            )
            return EXIT_NOT_FOUND
        csv_name = at(sub, "status.installedCSV") or at(sub, "status.currentCSV")
        delete_object(store, SUBSCRIPTION, obj_name(sub), namespace, ignore_not_found=True)
        if csv_name:
            delete_object(store, CSV, str(csv_name), namespace, ignore_not_found=True)
            if get_or_none(store, CSV, str(csv_name), namespace) is None:
                return 0
            # a finalizer holds it until the controllers removed what it owns cluster-wide
            print("the operator's workload goes when the controllers next run (olmkit reconcile, or olmkit run)")
    return 0


_FINISHED: Final = ("Complete", "Failed")


def run_approve(args: argparse.Namespace, pm: PluginManager) -> int:
    """Approve an InstallPlan (``spec.approved: true``)."""
    namespace = namespace_arg(args)
    if "/" in args.name:  # installplan/NAME, as get -o name prints it
        kind_name, _, args.name = args.name.partition("/")
        if resolve_kind(kind_name) != INSTALL_PLAN or not args.name:
            raise UsageError(f"approve takes an InstallPlan: NAME or installplan/NAME, not {kind_name}/{args.name}")
    with store_from_args(args, existing=True) as store:

        def attempt() -> str:
            plan = store.get(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, args.name, namespace)
            if at(plan, "spec.approved") is True:
                return "already approved"
            phase = at(plan, "status.phase")
            if phase in _FINISHED:
                raise UsageError(
                    f"install plan {namespace}/{args.name} has finished (phase {phase}); nothing to approve"
                )
            plan["spec"] = {**(plan.get("spec") or {}), "approved": True}
            store.update(plan)
            return "approved"

        try:
            outcome = retry_on_conflict(attempt)
        except NotFound:
            not_found(INSTALL_PLAN, args.name)
            return EXIT_NOT_FOUND
    print(f"{resource_ref(INSTALL_PLAN)}/{args.name} {outcome}")
    return 0


def _installed_rows(store: Store, namespace: str | None) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    csvs = {(obj_namespace(c), obj_name(c)): c for c in store.list(CSV.api_version, CSV.kind, namespace)}
    rows: list[dict[str, Any]] = []
    claimed: set[tuple[str, str]] = set()
    for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace):
        installed = str(at(sub, "status.installedCSV", ""))
        current = str(at(sub, "status.currentCSV", ""))
        csv = csvs.get((obj_namespace(sub), installed or current))
        claimed.update({(obj_namespace(sub), installed), (obj_namespace(sub), current)})
        rows.append(
            {
                "namespace": obj_namespace(sub),
                "package": at(sub, "spec.name", ""),
                "subscription": obj_name(sub),
                "installedCSV": installed,
                "currentCSV": current,
                "phase": at(csv, "status.phase", "") if csv else "",
                "state": at(sub, "status.state", ""),
                "catalog": f"{at(sub, 'spec.sourceNamespace') or obj_namespace(sub)}/{at(sub, 'spec.source', '')}",
                "age": age(at(sub, "metadata.creationTimestamp"), now),
            }
        )
    for key, csv in csvs.items():
        if key in claimed or at(csv, "status.reason") == "Copied":
            continue
        rows.append(
            {
                "namespace": key[0],
                "package": "",
                "subscription": "",
                "installedCSV": key[1],
                "currentCSV": "",
                "phase": at(csv, "status.phase", ""),
                "state": "",
                "catalog": "",
                "age": age(at(csv, "metadata.creationTimestamp"), now),
            }
        )
    rows.sort(key=lambda r: (r["namespace"], r["package"] or "~", r["installedCSV"]))
    return rows


def run_list(args: argparse.Namespace, pm: PluginManager) -> int:
    """Installed operators: Subscriptions with their CSVs (and CSVs no Subscription claims)."""
    namespace = None if args.all_namespaces else namespace_arg(args)
    with store_from_args(args, existing=True) as store:
        rows = _installed_rows(store, namespace)
    columns: list[Column] = [
        ("package", "package"),
        ("subscription", "subscription"),
        ("installed-csv", "installedCSV"),
        ("phase", "phase"),
    ]
    if args.output == "wide":
        columns += [("current-csv", "currentCSV"), ("state", "state"), ("catalog", "catalog"), ("age", "age")]
    if args.all_namespaces:
        columns.insert(0, ("namespace", "namespace"))
    if not rows and args.output in ("table", "wide"):
        sys.stderr.write("No operators installed" + ("" if namespace is None else f" in {namespace} namespace") + ".\n")
        return 0
    emit(rows, "table" if args.output == "wide" else args.output, columns=columns)
    return 0


def _available_rows(visible: _Visible, package: str | None) -> list[dict[str, Any]]:
    rows = []
    for obj, catalog in visible.loaded:
        for name in sorted(catalog.packages):
            if package and name != package:
                continue
            default = catalog.packages[name].default_channel or ""
            channels = sorted(catalog.channels.get(name, {}), key=lambda c: (c != default, c))
            head = ""
            if default in catalog.channels.get(name, {}):
                try:
                    head = catalog.channel_head(name, default).name
                except CatalogError:
                    head = "<no unique head>"
            rows.append(
                {
                    "package": name,
                    "catalog": _source_ref(obj),
                    "catalogDisplayName": at(obj, "spec.displayName", ""),
                    "defaultChannel": default,
                    "channels": channels,
                    "head": head,
                }
            )
    rows.sort(key=lambda r: (r["package"], r["catalog"]))
    return rows


#: how wide list-available's CHANNELS cell may grow before the rest is counted, not listed
CHANNELS_WIDTH: Final = 48


def _channels_cell(row: Mapping[str, Any]) -> str:
    """The channels, default first, as many as fit :data:`CHANNELS_WIDTH`, then ``(+N more)``."""
    channels = [str(c) for c in row["channels"]]
    shown: list[str] = []
    for index, channel in enumerate(channels):
        rest = len(channels) - index - 1
        candidate = ",".join([*shown, channel])
        if len(candidate) + (len(f" (+{rest} more)") if rest else 0) > CHANNELS_WIDTH and shown:
            return ",".join(shown) + f" (+{len(channels) - len(shown)} more)"
        shown.append(channel)
    return ",".join(shown)


def run_list_available(args: argparse.Namespace, pm: PluginManager) -> int:
    """Packages in the catalogs visible from a namespace (its own and the global one)."""
    namespace = namespace_arg(args)
    with store_from_args(args, existing=True) as store:
        cache = CatalogCache(store, pm.registry, disk_cache=not args.no_cache)
        visible = _visible_catalogs(cache, list(dict.fromkeys([namespace, args.global_namespace])))
    _warn_failed(visible)
    rows = _available_rows(visible, args.package)
    if not rows and args.output == "table":
        what = f'package "{args.package}"' if args.package else "packages"
        sys.stderr.write(f"No {what} found in the catalogs visible from namespace {namespace}.\n")
        return EXIT_NOT_FOUND if args.package else 0
    emit(
        rows,
        args.output,
        columns=[
            ("package", "package"),
            ("catalog", "catalog"),
            ("default-channel", "defaultChannel"),
            ("channels", _channels_cell),
            ("head", "head"),
        ],
    )
    return 0


def add_commands(subparsers: Any) -> None:
    """Add ``install``, ``uninstall``, ``approve``, ``list`` and ``list-available``."""

    def catalog_options(p: argparse.ArgumentParser) -> None:
        add_global_namespace_option(p)
        p.add_argument("--no-cache", action="store_true", help="do not use the on-disk catalog cache")

    p = subparsers.add_parser("install", help="subscribe to an operator package (kubectl operator install)")
    p.add_argument("package", metavar="PKG")
    add_namespace_option(p)
    p.add_argument("--channel", "-c", default=None, help="channel (default: the package's default channel)")
    p.add_argument("--approval", choices=("Automatic", "Manual"), default="Automatic", help="install plan approval")
    p.add_argument("--catalog", default=None, metavar="NAME", help="CatalogSource (default: the best that has PKG)")
    p.add_argument(
        "--catalog-namespace", type=namespace_name, default=None, metavar="NS", help="namespace of --catalog"
    )
    p.add_argument("--starting-csv", default=None, metavar="CSV", help="install this version first")
    p.add_argument(
        "--wait",
        action="store_true",
        help="run the controllers until the operator is installed (exit 0) or fails (exit 1, with the reason)",
    )
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=300.0,
        metavar="DURATION",
        help="with --wait: give up after this (30s, 5m; default 5m)",
    )
    add_target_options(p)
    catalog_options(p)
    add_store_option(p)
    p.set_defaults(func=run_install)

    p = subparsers.add_parser("uninstall", help="delete a package's Subscription and its CSV")
    p.add_argument("package", metavar="PKG")
    add_namespace_option(p)
    add_store_option(p)
    p.set_defaults(func=run_uninstall)

    p = subparsers.add_parser("approve", help="approve an InstallPlan that waits for approval")
    p.add_argument("name", metavar="INSTALLPLAN", help="the InstallPlan: NAME or installplan/NAME")
    add_namespace_option(p)
    add_store_option(p)
    p.set_defaults(func=run_approve)

    p = subparsers.add_parser("list", help="installed operators (Subscriptions and their CSVs)")
    add_namespace_option(p, all_namespaces=True)
    add_output_option(p, formats=("table", "wide", "json", "yaml"))
    add_store_option(p)
    p.set_defaults(func=run_list)

    p = subparsers.add_parser("list-available", help="packages in the catalogs visible from a namespace")
    p.add_argument("package", metavar="PKG", nargs="?", help="only this package")
    add_namespace_option(p)
    add_output_option(p)
    catalog_options(p)
    add_store_option(p)
    p.set_defaults(func=run_list_available)
