"""``olmkit describe``: an object in detail, as ``kubectl describe`` shows it.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from olmkit.cli.fields import age, at, obj_name, obj_namespace
from olmkit.cli.options import (
    EXIT_NOT_FOUND,
    add_namespace_option,
    add_store_option,
    namespace_arg,
    store_from_args,
)
from olmkit.cli.output import Column, render_table
from olmkit.cli.refs import get_or_none, kind_and_names, not_found
from olmkit.errors import UsageError
from olmkit.lifecycle.events import event_sort_key, events_of
from olmkit.lifecycle.kinds import (
    CRD,
    CSV,
    OPERATOR_GROUP,
    kind_of,
)
from olmkit.store import Object, Store

if TYPE_CHECKING:
    from olmkit.manager import PluginManager

__all__ = ["add_commands", "describe_object", "run_describe"]


_WIDTH: Final = 14  # kubectl describe's label column
_PLAIN_KEY: Final = re.compile(r"^[a-z][A-Za-z0-9]*$")
# word breaks: fooBar -> foo Bar, CSVName -> CSV Name; a plural acronym (APIs) stays whole
_WORDS: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z](?:[a-rt-z]|s[a-z]))")


def _title(key: str) -> str:
    """``installPlanApproval`` -> ``Install Plan Approval``; keys that are data (``app.io/x``) stay."""
    if not _PLAIN_KEY.match(key):
        return key
    words = _WORDS.sub(" ", key)
    return words[0].upper() + words[1:]


def _scalar(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "<none>"
    return str(value)


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (Mapping, list))


def _render(value: Any, indent: int) -> list[str]:
    """A mapping or list as kubectl describe prints a custom resource's fields."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        # values of one level line up, as kubectl describe prints them
        width = max((len(_title(str(k))) + 1 for k, v in value.items() if _is_scalar(v) or not v), default=0)
        for key, item in value.items():
            title = _title(str(key))
            if _is_scalar(item):
                text = _scalar(item)
                if "\n" in text:
                    lines.append(f"{pad}{title}:")
                    lines += [f"{pad}  {line}" for line in text.splitlines()]
                else:
                    lines.append(f"{pad}{title + ':':<{width}}  {text}")
            elif not item:
                lines.append(f"{pad}{title + ':':<{width}}  <none>")
            else:
                lines.append(f"{pad}{title}:")
                lines += _render(item, indent + 2)
    elif isinstance(value, list):
        for item in value:
            if _is_scalar(item):
                lines.append(f"{pad}{_scalar(item)}")
                continue
            sub = _render(item, indent + 2)
            if sub:
                sub[0] = f"{pad}- {sub[0][indent + 2 :]}"
            lines += sub
    else:
        lines.append(f"{pad}{_scalar(value)}")
    return lines


def _field(label: str, value: Any) -> list[str]:
    """``Label:        value``; several values go one per line, aligned."""
    values = [value] if _is_scalar(value) else list(value)
    if not values:
        values = ["<none>"]
    head = f"{label + ':':<{_WIDTH - 1}} "
    first, *rest = (_scalar(v) for v in values)
    return [f"{head}{first}".rstrip()] + [" " * _WIDTH + v for v in rest]


def _map_lines(mapping: Any, sep: str) -> list[str]:
    if not isinstance(mapping, Mapping) or not mapping:
        return ["<none>"]
    return [f"{k}{sep}{v}" for k, v in sorted(mapping.items())]


def _table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], indent: int = 2) -> list[str]:
    return [" " * indent + line for line in render_table(rows, columns).splitlines()]


def _message_lines(message: Any, indent: int) -> list[str]:
    """A message kept intact (every line, indentation included), indented as a block."""
    if not message:
        return []
    return [" " * indent + line for line in str(message).splitlines()]


def _conditions(conditions: Any, now: datetime) -> list[str]:
    if not isinstance(conditions, list) or not conditions:
        return []
    conds = [c for c in conditions if isinstance(c, Mapping)]
    by_phase = all("type" not in c and "phase" in c for c in conds)
    columns: list[Column] = [
        ("phase" if by_phase else "type", lambda c: c.get("phase") if by_phase else c.get("type")),
        ("status", lambda c: c.get("status", "")),
        ("reason", lambda c: c.get("reason", "")),
        ("age", lambda c: age(c.get("lastTransitionTime") or c.get("lastUpdateTime"), now)),
    ]
    if by_phase:
        del columns[1]
    table = _table(conds, columns)
    lines = ["Conditions:", table[0]]
    for cond, row in zip(conds, table[1:], strict=True):
        lines.append(row)
        lines += _message_lines(cond.get("message"), 4)
    return lines


def _steps(plan: Any) -> list[str]:
    if not isinstance(plan, list) or not plan:
        return []
    steps = [s for s in plan if isinstance(s, Mapping)]
    return [
        "Steps:",
        *_table(
            steps,
            [
                ("resolving", lambda s: s.get("resolving")),
                ("kind", lambda s: at(s, "resource.kind")),
                ("name", lambda s: at(s, "resource.name")),
                ("status", lambda s: s.get("status")),
            ],
        ),
    ]


def _requirements(reqs: Any) -> list[str]:
    if not isinstance(reqs, list) or not reqs:
        return []
    rows = [r for r in reqs if isinstance(r, Mapping)]

    def api(r: Mapping[str, Any]) -> str:
        return "/".join(p for p in (r.get("group"), r.get("version")) if p)

    columns: list[Column] = [
        ("kind", lambda r: r.get("kind")),
        ("name", lambda r: r.get("name")),
        ("api", api),
        ("status", lambda r: r.get("status")),
        ("message", lambda r: r.get("message")),
    ]
    table = _table(rows, columns)
    lines = ["Requirements:", table[0]]
    for req, row in zip(rows, table[1:], strict=True):
        lines.append(row)
        for dep in req.get("dependents") or ():
            if isinstance(dep, Mapping):
                what = " ".join(str(dep.get(k)) for k in ("kind", "message") if dep.get(k))
                lines.append(f"    {dep.get('status', '')}: {what}".rstrip())
    return lines


def _csv_spec(spec: Mapping[str, Any]) -> list[str]:
    """A ClusterServiceVersion's spec in brief (its full form is ``get -o yaml``)."""

    def apis(which: str) -> list[str]:
        items = at(spec, f"customresourcedefinitions.{which}", [])
        return [f"{i.get('kind')} ({i.get('name')} {i.get('version')})" for i in items if isinstance(i, Mapping)]

    deployments = at(spec, "install.spec.deployments", [])
    modes = at(spec, "installModes", [])
    summary: dict[str, Any] = {
        "displayName": spec.get("displayName"),
        "version": spec.get("version"),
        "replaces": spec.get("replaces"),
        "skips": spec.get("skips"),
        "minKubeVersion": spec.get("minKubeVersion"),
        "installStrategy": at(spec, "install.strategy"),
        "deployments": [d.get("name") for d in deployments if isinstance(d, Mapping)],
        "installModes": [f"{m.get('type')}={_scalar(m.get('supported'))}" for m in modes if isinstance(m, Mapping)],
        "ownedAPIs": apis("owned"),
        "requiredAPIs": apis("required"),
        "provider": at(spec, "provider.name"),
    }
    return ["Spec:", *_render({k: v for k, v in summary.items() if v}, 2)]


def _crd_spec(spec: Mapping[str, Any]) -> list[str]:
    versions = [
        f"{v.get('name')} (served={_scalar(v.get('served'))}, storage={_scalar(v.get('storage'))})"
        for v in spec.get("versions") or ()
        if isinstance(v, Mapping)
    ]
    summary = {
        "group": spec.get("group"),
        "names": spec.get("names"),
        "scope": spec.get("scope"),
        "versions": versions,
    }
    return ["Spec:", *_render({k: v for k, v in summary.items() if v}, 2)]


_SECTIONED: Final = ("conditions", "plan", "requirementStatus")


def describe_object(
    obj: Mapping[str, Any],
    *,
    events: Sequence[Mapping[str, Any]] = (),
    now: datetime | None = None,
    members: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """A readable, kubectl-describe-like text of an object.

    Metadata first, then the spec (in brief for ClusterServiceVersions and CRDs), the status,
    the conditions (each with its reason and its full message, multi-line messages intact and
    indented), an InstallPlan's steps, a CSV's requirement status, an OperatorGroup's
    ``members`` (the CSVs of its namespace, copies left out), and ``events``.
    """
    now = now or datetime.now(UTC)
    meta = obj.get("metadata") or {}
    kind = kind_of(obj)
    lines = _field("Name", meta.get("name"))
    if meta.get("namespace"):
        lines += _field("Namespace", meta["namespace"])
    lines += _field("Labels", _map_lines(meta.get("labels"), "="))
    lines += _field("Annotations", _map_lines(meta.get("annotations"), ": "))
    lines += _field("API Version", obj.get("apiVersion"))
    lines += _field("Kind", obj.get("kind"))
    created = meta.get("creationTimestamp")
    lines += _field("Created", f"{created} ({age(created, now)} ago)" if created else "<unknown>")
    if meta.get("deletionTimestamp"):
        lines += _field("Deleting", f"since {meta['deletionTimestamp']}")
    if meta.get("finalizers"):
        lines += _field("Finalizers", meta["finalizers"])
    refs = [o for o in meta.get("ownerReferences") or () if isinstance(o, Mapping)]
    controllers = [f"{o.get('kind')}/{o.get('name')}" for o in refs if o.get("controller")]
    owners = [f"{o.get('kind')}/{o.get('name')}" for o in refs if not o.get("controller")]
    if controllers:
        lines += _field("Controlled By", controllers)
    if owners:
        lines += _field("Owned By", owners)
    lines += _field("Generation", meta.get("generation"))
    lines += _field("UID", meta.get("uid"))

    spec = obj.get("spec")
    if isinstance(spec, Mapping) and spec:
        if kind.group == CSV.group and kind.kind == CSV.kind:
            lines += _csv_spec(spec)
        elif kind.group == CRD.group and kind.kind == CRD.kind:
            lines += _crd_spec(spec)
        else:
            lines += ["Spec:", *_render(spec, 2)]
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "spec", "status") and value not in (None, {}, []):
            lines += [f"{_title(key)}:", *_render(value, 2)] if not _is_scalar(value) else _field(_title(key), value)

    status = obj.get("status")
    if isinstance(status, Mapping):
        rest = {k: v for k, v in status.items() if k not in _SECTIONED}
        if rest:
            lines += ["Status:", *_render(rest, 2)]
        lines += _steps(status.get("plan"))
        lines += _requirements(status.get("requirementStatus"))
        lines += _conditions(status.get("conditions"), now)
    if members is not None:
        lines += ["Members:", *_table(members, _MEMBER_COLUMNS)] if members else _field("Members", "<none>")

    if events:
        rows = sorted(events, key=event_sort_key)
        lines += [
            "Events:",
            *_table(
                rows,
                [
                    ("type", lambda e: e.get("type")),
                    ("reason", lambda e: e.get("reason")),
                    ("age", lambda e: _event_age(e, now)),
                    ("from", lambda e: at(e, "source.component")),
                    ("message", lambda e: e.get("message")),
                ],
            ),
        ]
    else:
        lines += _field("Events", "<none>")
    return "\n".join(lines) + "\n"


_MEMBER_COLUMNS: Final[Sequence[Column]] = (
    ("name", obj_name),
    ("phase", lambda c: at(c, "status.phase")),
    ("reason", lambda c: at(c, "status.reason")),
)


def _members_of(store: Store, obj: Mapping[str, Any]) -> list[Object] | None:
    """The CSVs an OperatorGroup's namespace holds (not copies), for ``describe og``."""
    kind = kind_of(obj)
    if (kind.group, kind.kind) != (OPERATOR_GROUP.group, OPERATOR_GROUP.kind):
        return None
    from olmkit.lifecycle.operatorgroups import is_copied  # the lifecycle's imports only when needed

    return [c for c in store.list(CSV.api_version, CSV.kind, obj_namespace(obj)) if not is_copied(c)]


def _event_age(event: Mapping[str, Any], now: datetime) -> str:
    """kubectl's ``Age`` of an event: ``5m``, or ``2m (x4 over 9m)`` when it repeated."""
    last = age(event.get("lastTimestamp") or at(event, "metadata.creationTimestamp"), now)
    count = int(event.get("count") or 1)
    if count > 1 and event.get("firstTimestamp"):
        return f"{last} (x{count} over {age(event.get('firstTimestamp'), now)})"
    return last


def run_describe(args: argparse.Namespace, pm: PluginManager) -> int:
    """Describe objects by name."""
    with store_from_args(args, existing=True) as store:
        kind, names = kind_and_names(store, args.kind, args.names)
        namespace = namespace_arg(args)
        if not names:  # every object of the kind, as kubectl describe KIND does
            objects = list(store.list(kind.api_version, kind.kind, namespace, label_selector=args.selector))
            if not objects:
                where = f" in {namespace} namespace" if kind.namespaced else ""
                sys.stderr.write(f"No resources found{where}.\n")
                return 0
            texts = [describe_object(obj, events=events_of(store, obj)) for obj in objects]
            sys.stdout.write("\n".join(texts))
            return 0
        if args.selector:
            raise UsageError("name resources or select them with -l, not both")
        missing = False
        texts = []
        for name in names:
            found = get_or_none(store, kind, name, namespace)
            if found is None:
                not_found(kind, name)
                missing = True
                continue
            texts.append(describe_object(found, events=events_of(store, found), members=_members_of(store, found)))
        sys.stdout.write("\n".join(texts))
    return EXIT_NOT_FOUND if missing else 0


def add_commands(subparsers: Any) -> None:
    """Add ``describe``."""
    p = subparsers.add_parser("describe", help="show an object in detail: status, conditions, steps")
    p.add_argument("kind", metavar="KIND", help="kind, plural or short name; KIND/NAME")
    p.add_argument("names", nargs="*", metavar="NAME", help="the objects (none: every object of the kind)")
    add_namespace_option(p)
    p.add_argument("-l", "--selector", default=None, help="without names: only objects with these labels")
    add_store_option(p)
    p.set_defaults(func=run_describe)
