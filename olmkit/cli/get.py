"""``olmkit get``: list objects of one or more kinds, or get some by name, as kubectl does.

With kubectl's habits: ``-o jsonpath=TEMPLATE``, ``-o custom-columns=HEADER:PATH,...``,
``--sort-by=PATH``, ``--no-headers``, ``--show-labels``, ``--field-selector=PATH=VALUE,...``
and ``-w``/``--watch`` (``--watch-only``; ``--watch-timeout`` ends the watch).

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from olmkit.cli.fields import age, at, obj_name, obj_namespace
from olmkit.cli.options import (
    EXIT_NOT_FOUND,
    add_namespace_option,
    add_store_option,
    namespace_arg,
    store_from_args,
)
from olmkit.cli.output import Column, add_output_option, custom_columns, dump_json, dump_yaml, render_table
from olmkit.cli.refs import get_or_none, kind_and_names, not_found, resource_ref
from olmkit.errors import UsageError
from olmkit.lifecycle.events import event_sort_key
from olmkit.lifecycle.kinds import (
    CATALOG_SOURCE,
    CSV,
    DEPLOYMENT,
    INSTALL_PLAN,
    KINDS,
    OPERATOR_GROUP,
    SUBSCRIPTION,
    Kind,
    resolve_kind,
)
from olmkit.store import Object, Store

if TYPE_CHECKING:
    from olmkit.manager import PluginManager

__all__ = ["add_commands", "print_objects", "run_get"]


def _field(header: str, path: str, default: Any = None) -> Column:
    """A table column showing the value at a dotted path."""
    return (header, lambda o: at(o, path, default))


def _bool(value: Any) -> str:
    return "true" if value is True else "false" if value is False else ""


def _deployment_ready(obj: Mapping[str, Any]) -> str:
    replicas = at(obj, "spec.replicas", 1)
    return f"{at(obj, 'status.readyReplicas', 0)}/{replicas}"


def _target_namespaces(obj: Mapping[str, Any]) -> str:
    targets = at(obj, "spec.targetNamespaces")
    if targets:
        return ",".join(str(t) for t in targets)
    if at(obj, "spec.selector"):
        return "<selector>"
    return "<all>"


def _containers(obj: Mapping[str, Any], field: str) -> str:
    containers = at(obj, "spec.template.spec.containers", [])
    return ",".join(str(c.get(field, "")) for c in containers if isinstance(c, Mapping))


def _involved_ref(event: Mapping[str, Any]) -> str:
    involved = event.get("involvedObject") or {}
    return f"{str(involved.get('kind') or '').lower()}/{involved.get('name') or ''}"


def _is_event(kind: Kind) -> bool:
    return kind.group == "" and kind.kind == "Event"


def _events_for(store: Store, events: list[Object], target: str | None) -> list[Object]:
    """Events about ``KIND/NAME`` only (all when ``target`` is ``None``), oldest first, as kubectl sorts them."""
    if target is not None:
        kind_arg, sep, name = target.partition("/")
        if not sep or not kind_arg or not name:
            raise UsageError(f"--for {target!r}: expected KIND/NAME (for example csv/my-operator.v1.0.0)")
        kind = resolve_kind(kind_arg, store)
        events = [
            e
            for e in events
            if (e.get("involvedObject") or {}).get("kind") == kind.kind
            and (e.get("involvedObject") or {}).get("name") == name
        ]
    return sorted(events, key=event_sort_key)


def _columns_for(kind: Kind, now: datetime) -> tuple[list[Column], list[Column]]:
    """The table columns of a kind and the extra ones of ``-o wide``."""

    def since(obj: Mapping[str, Any]) -> str:
        return age(at(obj, "metadata.creationTimestamp"), now)

    name: Column = ("name", obj_name)
    age_col: Column = ("age", since)
    if kind.group == CSV.group:
        if kind.kind == CSV.kind:
            return (
                [
                    name,
                    _field("display", "spec.displayName"),
                    _field("version", "spec.version"),
                    _field("replaces", "spec.replaces"),
                    _field("phase", "status.phase"),
                ],
                [_field("reason", "status.reason"), age_col],
            )
        if kind.kind == SUBSCRIPTION.kind:
            return (
                [
                    name,
                    _field("package", "spec.name"),
                    _field("source", "spec.source"),
                    _field("channel", "spec.channel"),
                ],
                [
                    _field("approval", "spec.installPlanApproval"),
                    _field("state", "status.state"),
                    _field("installed-csv", "status.installedCSV"),
                    age_col,
                ],
            )
        if kind.kind == INSTALL_PLAN.kind:
            return (
                [
                    name,
                    _field("csv", "spec.clusterServiceVersionNames"),
                    _field("approval", "spec.approval"),
                    ("approved", lambda o: _bool(at(o, "spec.approved", False))),
                ],
                [_field("phase", "status.phase"), age_col],
            )
        if kind.kind == CATALOG_SOURCE.kind:
            return (
                [
                    name,
                    _field("display", "spec.displayName"),
                    _field("type", "spec.sourceType"),
                    _field("publisher", "spec.publisher"),
                    age_col,
                ],
                [
                    _field("priority", "spec.priority", 0),
                    _field("state", "status.connectionState.lastObservedState"),
                ],
            )
    if _is_event(kind):
        return (
            [
                ("last seen", lambda o: age(o.get("lastTimestamp") or at(o, "metadata.creationTimestamp"), now)),
                ("type", lambda o: o.get("type")),
                ("reason", lambda o: o.get("reason")),
                ("object", _involved_ref),
                ("message", lambda o: o.get("message")),
            ],
            [
                _field("source", "source.component"),
                ("first seen", lambda o: age(o.get("firstTimestamp"), now)),
                ("count", lambda o: o.get("count", 1)),
                name,
            ],
        )
    if kind.group == OPERATOR_GROUP.group and kind.kind == OPERATOR_GROUP.kind:
        return [name, age_col], [("target-namespaces", _target_namespaces)]
    if kind.group == DEPLOYMENT.group and kind.kind == DEPLOYMENT.kind:
        return (
            [
                name,
                ("ready", _deployment_ready),
                _field("up-to-date", "status.updatedReplicas", 0),
                _field("available", "status.availableReplicas", 0),
                age_col,
            ],
            [("containers", lambda o: _containers(o, "name")), ("images", lambda o: _containers(o, "image"))],
        )
    return [name, age_col], []


def _as_list(items: list[Object]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def _labels(obj: Mapping[str, Any]) -> str:
    labels = at(obj, "metadata.labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) if labels else "<none>"


def print_objects(
    store: Store,
    kind: Kind,
    objects: list[Object],
    fmt: str,
    *,
    all_namespaces: bool = False,
    single: bool = False,
    qualified: bool = False,
    headers: bool = True,
    show_labels: bool = False,
) -> None:
    """Print objects of one kind as ``get`` does (``table``, ``wide``, ``json``, ``yaml``, ``name``,
    ``jsonpath=TEMPLATE``, ``custom-columns=SPEC``).

    ``qualified`` names objects ``kind/name`` in tables, as kubectl does when several kinds are
    listed; ``headers=False`` leaves out the header line, ``show_labels`` adds a LABELS column.
    """
    if fmt in ("json", "yaml"):
        data: Any = objects[0] if single and len(objects) == 1 else _as_list(objects)
        sys.stdout.write(dump_json(data) + "\n" if fmt == "json" else dump_yaml(data))
        return
    if fmt == "name":
        for obj in objects:
            print(f"{resource_ref(kind)}/{obj_name(obj)}")
        return
    if fmt.startswith("jsonpath="):
        from olmkit.cli.jsonpath import JSONPath

        data = objects[0] if single and len(objects) == 1 else _as_list(objects)
        sys.stdout.write(JSONPath(fmt.partition("=")[2]).render(data))
        return
    if fmt.startswith("custom-columns="):
        columns = custom_columns(fmt.partition("=")[2])
    else:
        columns, wide = _columns_for(kind, datetime.now(UTC))
        if fmt == "wide":
            columns = columns + wide
        if qualified:
            ref = resource_ref(kind)
            columns = [("name", lambda obj: f"{ref}/{obj_name(obj)}"), *columns[1:]]
        if all_namespaces and store.is_namespaced(kind.api_version, kind.kind):
            columns = [("namespace", obj_namespace), *columns]
    if show_labels:
        columns = [*columns, ("labels", _labels)]
    if objects:
        print(render_table(objects, columns, headers=headers))


def _field_selector(text: str) -> list[tuple[str, str, str]]:
    """``metadata.name=a,status.phase!=Failed`` as ``(path, op, value)`` terms."""
    terms = []
    for part in text.split(","):
        for op in ("!=", "==", "="):
            path, found, value = part.partition(op)
            if found:
                break
        else:
            raise UsageError(f"--field-selector {text!r}: {part!r} is not PATH=VALUE, PATH==VALUE or PATH!=VALUE")
        path = path.strip().lstrip(".")
        if not path:
            raise UsageError(f"--field-selector {text!r}: a term without a field")
        terms.append((path, "!=" if found == "!=" else "=", value.strip()))
    return terms


def _field_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _selected(obj: Mapping[str, Any], terms: Sequence[tuple[str, str, str]]) -> bool:
    for path, op, value in terms:
        equal = _field_text(at(obj, path)) == value
        if equal != (op == "="):
            return False
    return True


def _sort_key(template: Any) -> Any:
    def key(obj: Mapping[str, Any]) -> tuple[int, Any]:
        found = template.values(obj)
        if not found or found[0] is None:
            return (0, "")
        value = found[0]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return (1, value)
        return (2, str(value))

    return key


def _kind_list() -> str:
    names = sorted({k.short_names[0] if k.short_names else k.plural for k in KINDS.values()})
    return ", ".join(names)


def _kinds_and_names(store: Store, kind_arg: str, names: Sequence[str]) -> tuple[list[Kind], list[str]]:
    """``KIND[,KIND...] [NAME...]`` or ``KIND/NAME``: the kinds asked for, in order, and the names."""
    if "," not in kind_arg or "/" in kind_arg:
        kind, found = kind_and_names(store, kind_arg, names)
        return [kind], found
    parts = [part.strip() for part in kind_arg.split(",")]
    if not all(parts):
        raise UsageError(f"an empty kind in {kind_arg!r}")
    kinds = list(dict.fromkeys(resolve_kind(part, store) for part in parts))
    return kinds, list(names)


def run_get(args: argparse.Namespace, pm: PluginManager) -> int:
    """List objects of one or more kinds (``csv,deploy``), or get some by name."""
    if args.kind is None:
        raise UsageError(
            f"get needs the kind of resource: one of {_kind_list()}, or a stored CRD's kind (see 'olmkit get --help')"
        )
    with store_from_args(args, existing=True) as store:
        kinds, names = _kinds_and_names(store, args.kind, args.names)
        terms = _field_selector(args.field_selector) if args.field_selector else []
        sort_key = None
        if args.sort_by:
            from olmkit.cli.jsonpath import JSONPath

            path = args.sort_by if args.sort_by.startswith("{") else "{" + args.sort_by + "}"
            sort_key = _sort_key(JSONPath(path))
        watching = args.watch or args.watch_only
        if watching and len(kinds) > 1:
            raise UsageError("watch one kind at a time (get -w KIND)")
        if names and args.all_namespaces:
            raise UsageError("a resource cannot be retrieved by name across all namespaces (drop -A)")
        if names and args.selector:
            raise UsageError("name resources or select them with -l, not both")
        namespace = None if args.all_namespaces else namespace_arg(args)
        if args.for_object is not None and not any(_is_event(kind) for kind in kinds):
            raise UsageError("--for KIND/NAME selects events: use it with `get events`")
        missing = False
        groups: list[tuple[Kind, list[Object]]] = []
        resource_version: str | None = None
        for kind in kinds:
            if names:
                if watching:  # changes are watched from here on
                    resource_version = store.list(kind.api_version, kind.kind, namespace).resource_version
                objects = []
                for name in names:
                    found = get_or_none(store, kind, name, namespace)
                    if found is None:
                        not_found(kind, name)
                        missing = True
                    else:
                        objects.append(found)
            else:
                listed = store.list(kind.api_version, kind.kind, namespace, label_selector=args.selector)
                resource_version, objects = listed.resource_version, list(listed)
            if _is_event(kind):
                objects = _events_for(store, objects, args.for_object)
            objects = [obj for obj in objects if _selected(obj, terms)]
            if sort_key is not None:
                objects.sort(key=sort_key)
            groups.append((kind, objects))
        if watching:
            return _watch(store, args, kinds[0], groups[0][1], names, namespace, terms, resource_version)
        found_any = any(objects for _, objects in groups)
        tabular = args.output in ("table", "wide", "name") or args.output.startswith("custom-columns=")
        if not names and not found_any and tabular:
            namespaced = any(kind.namespaced for kind in kinds)
            where = "" if namespace is None or not namespaced else f" in {namespace} namespace"
            sys.stderr.write(f"No resources found{where}.\n")
            return 0
        show = functools.partial(
            print_objects,
            store,
            all_namespaces=args.all_namespaces,
            headers=not args.no_headers,
            show_labels=args.show_labels,
        )
        if len(groups) == 1:
            kind, objects = groups[0]
            if objects or not missing:
                show(kind, objects, args.output, single=len(names) == 1)
        elif args.output in ("json", "yaml") or args.output.startswith("jsonpath="):  # one List of every kind
            if found_any or not missing:
                every = [obj for _, objects in groups for obj in objects]
                print_objects(store, kinds[0], every, args.output)
        else:
            shown = [(kind, objects) for kind, objects in groups if objects]
            for index, (kind, objects) in enumerate(shown):
                if index and args.output != "name":
                    print()
                show(kind, objects, args.output, qualified=True)
    return EXIT_NOT_FOUND if missing else 0


def _watch(
    store: Store,
    args: argparse.Namespace,
    kind: Kind,
    objects: list[Object],
    names: Sequence[str],
    namespace: str | None,
    terms: Sequence[tuple[str, str, str]],
    resource_version: str | None,
) -> int:
    """``get -w``: the current objects (unless ``--watch-only``), then each change after ``resource_version``."""
    options = {"all_namespaces": args.all_namespaces, "show_labels": args.show_labels}
    if not args.watch_only and objects:
        print_objects(store, kind, objects, args.output, headers=not args.no_headers, **options)
        sys.stdout.flush()
    headers = args.watch_only and not args.no_headers
    with store.watch(
        kind.api_version,
        kind.kind,
        namespace,
        label_selector=args.selector,
        resource_version=resource_version,
        timeout=args.watch_timeout,
    ) as watch:
        for event in watch:
            obj = event.object
            if (names and obj_name(obj) not in names) or not _selected(obj, terms):
                continue
            print_objects(store, kind, [obj], args.output, headers=headers, single=True, **options)
            headers = False
            sys.stdout.flush()
    return 0


def add_commands(subparsers: Any) -> None:
    """Add ``get``."""
    p = subparsers.add_parser("get", help="list objects of a kind, or get some by name")
    p.add_argument(
        "kind",
        nargs="?",
        metavar="KIND",
        help="kind, plural or short name (csv, sub, ip, catsrc, og, crd, deploy ...); KIND/NAME; KIND,KIND",
    )
    p.add_argument("names", nargs="*", metavar="NAME")
    add_namespace_option(p, all_namespaces=True)
    p.add_argument("-l", "--selector", default=None, help="label selector (app=x,tier in (a,b))")
    p.add_argument(
        "--for",
        dest="for_object",
        default=None,
        metavar="KIND/NAME",
        help="with `get events`: only the events about this object (csv/NAME, ip/NAME, sub/NAME, namespace/NAME)",
    )
    p.add_argument(
        "--field-selector",
        default=None,
        metavar="SELECTOR",
        help="keep objects whose fields match: PATH=VALUE, PATH!=VALUE, comma-separated (metadata.name=x)",
    )
    add_output_option(p, formats=("table", "wide", "yaml", "json", "name"), templates=True)
    p.add_argument("--sort-by", default=None, metavar="JSONPATH", help="sort by a field ({.metadata.name})")
    p.add_argument("--no-headers", action="store_true", help="tables without the header line")
    p.add_argument("--show-labels", action="store_true", help="add a LABELS column")
    p.add_argument("-w", "--watch", action="store_true", help="after listing, print every change")
    p.add_argument("--watch-only", action="store_true", help="print only the changes")
    p.add_argument("--watch-timeout", type=float, default=None, metavar="SECONDS", help="stop watching after this long")
    add_store_option(p)
    p.set_defaults(func=run_get)
