"""kubectl-style commands on the cluster store, and ``kubectl operator``-style ones.

Objects: ``apply -f``, ``get``, ``describe``, ``delete``. Operators: ``install``,
``uninstall``, ``approve``, ``list``, ``list-available``. Each takes ``--store PATH``
(default ``$OLMKIT_STORE``, else ``.olmkit/cluster.db``; ``:memory:`` for a throwaway store).

Exit codes: 0 done; 1 an object that was asked for is not there (printed as
``Error from server (NotFound): subscriptions.operators.coreos.com "foo" not found``);
2 usage or input errors (bad flags, an unknown kind or package, a manifest refused by
validation or an admission check), one line on stderr.

``apply`` validates every object of every file (shape, then the registered admission
checks, see :mod:`olmkit.lifecycle.admission`) before it writes anything, so a bad
manifest leaves the store as it was.

Reusable pieces: :func:`add_store_option` / :func:`store_from_args`,
:func:`load_manifest_files`, :func:`prepare_manifests` / :func:`apply_object`,
:func:`age`, :func:`resource_ref`, :func:`describe_object`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import copy
import difflib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from olmkit.cli.output import Column, add_output_option, dump_json, dump_yaml, emit, render_table
from olmkit.errors import CatalogError, InputError, OlmkitError, UsageError
from olmkit.lifecycle.admission import admit
from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION, CatalogCache
from olmkit.lifecycle.kinds import (
    CATALOG_SOURCE,
    CRD,
    CSV,
    DEPLOYMENT,
    INSTALL_PLAN,
    OPERATOR_GROUP,
    SUBSCRIPTION,
    Kind,
    kind_of,
    resolve_kind,
)
from olmkit.resolver.manifests import STDIN
from olmkit.store import (
    STORE_ENV,
    AlreadyExists,
    Conflict,
    NotFound,
    Object,
    Store,
    default_store_path,
    open_store,
    retry_on_conflict,
)

if TYPE_CHECKING:
    from olmkit.catalog import Catalog
    from olmkit.manager import PluginManager
    from olmkit.registry import Registry

__all__ = [
    "EXIT_NOT_FOUND",
    "PreparedObject",
    "add_commands",
    "add_store_option",
    "age",
    "apply_object",
    "describe_object",
    "load_manifest_files",
    "prepare_manifests",
    "print_objects",
    "resource_ref",
    "store_from_args",
]

#: Exit code when an object asked for by name is not in the store.
EXIT_NOT_FOUND: Final = 1

DEFAULT_NAMESPACE: Final = "default"
GLOBAL_NAMESPACE: Final = "olm"
MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")

# metadata.name and metadata.namespace: what the store accepts (RFC 1123 subdomain).
_NAME: Final = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
#: a namespace name is a DNS-1123 label (no dots, at most 63 characters)
_NAMESPACE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def namespace_name(text: str) -> str:
    """``-n``'s value, checked as Kubernetes checks namespace names.

    Raises:
        argparse.ArgumentTypeError: not a DNS-1123 label.
    """
    if not _NAMESPACE.match(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a valid namespace name: at most 63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return text


# =========================================================================== shared helpers


def add_store_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--store PATH`` to a command (read back with :func:`store_from_args`)."""
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help=f"cluster store: an SQLite file or :memory: (default ${STORE_ENV}, else {default_store_path(env={})})",
    )


def store_from_args(args: argparse.Namespace) -> Store:
    """Open the store ``--store`` names (``$OLMKIT_STORE``, else ``.olmkit/cluster.db``).

    Raises:
        StoreError: the file cannot be opened as a store.
    """
    return open_store(getattr(args, "store", None))


def _add_namespace_option(parser: argparse.ArgumentParser, *, all_namespaces: bool = False) -> None:
    parser.add_argument(
        "-n", "--namespace", type=namespace_name, default=None, help=f"namespace (default {DEFAULT_NAMESPACE})"
    )
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def _namespace(args: argparse.Namespace) -> str:
    return str(getattr(args, "namespace", None) or DEFAULT_NAMESPACE)


def _files_in(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
    return [path]


def load_manifest_files(paths: Iterable[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """Every object of the given manifest files, as ``(file, object)`` pairs in file order.

    A path may be a file, a directory (its ``.yaml``, ``.yml`` and ``.json`` files, by
    name, not recursively) or ``-`` for standard input. Files hold YAML or JSON, several documents each; ``kind: List``
    objects are flattened. Objects are returned as read (plain dicts), not validated
    beyond having a kind and a ``metadata.name``.

    Raises:
        InputError: a file is missing or unreadable, not YAML, or holds an object without
            kind or ``metadata.name`` (the message names the file).
    """
    from olmkit.resolver.manifests import load_manifests

    files: list[Path | str] = []
    for raw in paths:
        if str(raw) == "-":  # standard input
            files.append("-")
            continue
        path = Path(raw)
        if not path.exists():
            raise InputError("no such file or directory", path=str(raw))
        files.extend(_files_in(path))
    out: list[tuple[str, dict[str, Any]]] = []
    for file in files:
        try:
            manifests = load_manifests([file])
        except (AttributeError, TypeError):
            # load_manifests trips over a null or non-string kind (kind.endswith); say what is wrong
            raise InputError("an object's kind must be a non-empty string", path=str(file)) from None
        out.extend((m.path, dict(m.obj)) for m in manifests)
    return out


def resource_ref(kind: Kind | Mapping[str, Any]) -> str:
    """How kubectl names a kind in its messages: ``subscription.operators.coreos.com``, ``configmap``."""
    k = kind if isinstance(kind, Kind) else kind_of(kind)
    return f"{k.kind.lower()}.{k.group}" if k.group else k.kind.lower()


def _plural_ref(kind: Kind) -> str:
    return f"{kind.plural}.{kind.group}" if kind.group else kind.plural


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """kubectl's human duration since an RFC 3339 ``timestamp`` (``45s``, ``5m30s``, ``3h``, ``2d4h``).

    Returns ``<unknown>`` for a missing or unparsable timestamp, ``<invalid>`` for one more
    than a second in the future.
    """
    when = _parse_time(timestamp)
    if when is None:
        return "<unknown>"
    now = now or datetime.now(UTC)
    seconds = int((now - when).total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def _at(obj: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted path (``spec.updateStrategy.registryPoll``), or ``default``."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return default
        value = value.get(part)
    return default if value is None else value


def _name(obj: Mapping[str, Any]) -> str:
    return str(_at(obj, "metadata.name", ""))


def _ns(obj: Mapping[str, Any]) -> str:
    return str(_at(obj, "metadata.namespace", ""))


def _label(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind') or '?'}/{_at(obj, 'metadata.name', '?')}"


def _not_found(kind: Kind, name: str) -> None:
    sys.stderr.write(f'Error from server (NotFound): {_plural_ref(kind)} "{name}" not found\n')


def _get_or_none(store: Store, kind: Kind, name: str, namespace: str | None) -> Object | None:
    try:
        return store.get(kind.api_version, kind.kind, name, namespace)
    except NotFound:
        return None


def _kind_and_names(store: Store, kind_arg: str, names: Sequence[str]) -> tuple[Kind, list[str]]:
    """``KIND NAME...`` or ``KIND/NAME``."""
    if "/" in kind_arg:
        if names:
            raise UsageError(f"there is no need to name a resource after {kind_arg!r}")
        kind_name, _, name = kind_arg.partition("/")
        return resolve_kind(kind_name, store), [name]
    return resolve_kind(kind_arg, store), list(names)


# =========================================================================== apply


@attrs.frozen
class PreparedObject:
    """One validated object of ``apply``: the file it came from and the object to write."""

    path: str
    obj: dict[str, Any]

    @property
    def label(self) -> str:
        """``Kind/name``."""
        return _label(self.obj)


def _string_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _shape_problems(obj: Mapping[str, Any]) -> list[str]:
    """What every object needs before the store (and the admission checks) can judge it."""
    problems = []
    if not isinstance(obj.get("apiVersion"), str) or not obj.get("apiVersion"):
        problems.append("apiVersion is required")
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return [*problems, "metadata must be an object"]
    name = meta.get("name")
    if not isinstance(name, str) or len(name) > 253 or not _NAME.match(name):
        problems.append(
            f"metadata.name {name!r} is not a valid name: lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    namespace = meta.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not _NAMESPACE.match(namespace)):
        problems.append(f"metadata.namespace {namespace!r} is not a valid namespace name")
    for field in ("labels", "annotations"):
        if meta.get(field) is not None and not _string_map(meta[field]):
            problems.append(f"metadata.{field} must map strings to strings")
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) and f for f in finalizers)
    ):
        problems.append("metadata.finalizers must be a list of names")
    refs = meta.get("ownerReferences")
    if refs is not None and (
        not isinstance(refs, list)
        or not all(
            isinstance(r, Mapping)
            and all(isinstance(r.get(f), str) and r.get(f) for f in ("apiVersion", "kind", "name", "uid"))
            for r in refs
        )
    ):
        problems.append("metadata.ownerReferences must be a list of {apiVersion, kind, name, uid}")
    if meta.get("resourceVersion") is not None and not isinstance(meta.get("resourceVersion"), str):
        problems.append("metadata.resourceVersion must be a string")
    try:
        orjson.dumps(obj)
    except TypeError as exc:
        problems.append(f"not representable as JSON: {exc}")
    return problems


def prepare_manifests(
    store: Store,
    registry: Registry,
    manifests: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    namespace: str | None = None,
) -> list[PreparedObject]:
    """Validate every object and make it ready to write; nothing is written.

    Each object gets its namespace (its own, else ``namespace``, else ``default``; none for
    cluster-scoped kinds) and, for a CatalogSource, the :data:`MANIFEST_DIR_ANNOTATION` with
    the absolute directory of its file. Then the object's shape and the registered admission
    checks are run on it.

    Args:
        store: the store the objects are for (scope of kinds, the stored objects the checks see).
        registry: the registry with the admission checks.
        manifests: ``(file, object)`` pairs, as :func:`load_manifest_files` returns them.
        namespace: the namespace asked for with ``-n``; an object naming another one is refused.

    Raises:
        InputError: an object is refused; names the file, ``Kind/name`` and every problem, and
            how many other objects were refused too.
    """
    prepared: list[PreparedObject] = []
    refused: list[InputError] = []
    for path, raw in manifests:
        obj = copy.deepcopy(dict(raw))
        problems = _shape_problems(obj)
        if not problems:
            meta = obj["metadata"] = dict(obj["metadata"])
            if store.is_namespaced(obj["apiVersion"], obj["kind"]):
                own = meta.get("namespace")
                if namespace and own and own != namespace:
                    problems.append(
                        f"the object's namespace {own!r} does not match the namespace {namespace!r} given with -n"
                    )
                meta["namespace"] = own or namespace or DEFAULT_NAMESPACE
            else:
                meta.pop("namespace", None)
            if kind_of(obj) == CATALOG_SOURCE and path and (path == STDIN or not path.startswith("<")):
                # relative spec.path: from the manifest's directory (standard input: the working one)
                base = Path.cwd() if path == STDIN else Path(path).resolve().parent
                meta["annotations"] = {**(meta.get("annotations") or {}), MANIFEST_DIR_ANNOTATION: str(base)}
        if not problems:
            old = _get_or_none(store, kind_of(obj), obj["metadata"]["name"], obj["metadata"].get("namespace"))
            problems += admit(registry, obj, store=store, old=old)
        if problems:
            refused.append(InputError("; ".join(problems), path=path, obj=_label(obj)))
        else:
            prepared.append(PreparedObject(path, obj))
    if refused:
        first = refused[0]
        if len(refused) > 1:
            first.message += f" (and {len(refused) - 1} more object(s) refused)"
        raise first
    return prepared


_KEPT: Final = ("apiVersion", "kind", "metadata", "status")


def _applied(existing: Mapping[str, Any], obj: Mapping[str, Any]) -> Object:
    """``existing`` updated by ``obj``: its content replaced, labels and annotations merged, status kept."""
    new: Object = copy.deepcopy(dict(existing))
    for key in list(new):
        if key not in _KEPT and key not in obj:
            del new[key]
    for key, value in obj.items():
        if key not in ("metadata", "status"):
            new[key] = copy.deepcopy(value)
    meta, given = new["metadata"], obj["metadata"]
    for field in ("labels", "annotations"):
        if given.get(field):
            meta[field] = {**(meta.get(field) or {}), **given[field]}
    for field in ("finalizers", "ownerReferences"):
        if field in given:
            meta[field] = copy.deepcopy(given[field])
    return new


def apply_object(store: Store, obj: Mapping[str, Any], *, dry_run: bool = False) -> str:
    """Create or update one (prepared) object as ``kubectl apply`` does; returns what happened.

    An existing object keeps its status and metadata; its content (``spec``, ``data`` ...)
    is replaced by the object's and the labels and annotations given are merged in.
    Writes through :func:`~olmkit.store.retry_on_conflict`.

    Returns:
        ``"created"``, ``"configured"`` or ``"unchanged"``.
    """
    api_version, kind = obj["apiVersion"], obj["kind"]
    name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")

    def attempt() -> str:
        try:
            existing = store.get(api_version, kind, name, namespace)
        except NotFound:
            if not dry_run:
                try:
                    store.create({k: v for k, v in obj.items() if k != "status"})
                except AlreadyExists:  # created in between: read it again and update
                    raise Conflict("created concurrently", kind=kind, namespace=namespace, name=name) from None
            return "created"
        new = _applied(existing, obj)
        if new == existing:
            return "unchanged"
        if not dry_run:
            store.update(new)  # carries the resourceVersion read: a concurrent write is a Conflict
        return "configured"

    return retry_on_conflict(attempt)


def run_apply(args: argparse.Namespace, pm: PluginManager) -> int:
    """Validate every object of every file, then create or update each."""
    if not args.files:
        raise UsageError("apply needs manifests: -f FILE (a file or a directory, repeatable)")
    manifests = load_manifest_files(args.files)
    with store_from_args(args) as store:
        prepared = prepare_manifests(store, pm.registry, manifests, namespace=args.namespace)
        suffix = " (dry run)" if args.dry_run else ""
        for item in prepared:
            action = apply_object(store, item.obj, dry_run=args.dry_run)
            print(f"{resource_ref(item.obj)}/{item.obj['metadata']['name']} {action}{suffix}")
    return 0


# =========================================================================== get


def _bool(value: Any) -> str:
    return "true" if value is True else "false" if value is False else ""


def _deployment_ready(obj: Mapping[str, Any]) -> str:
    replicas = _at(obj, "spec.replicas", 1)
    return f"{_at(obj, 'status.readyReplicas', 0)}/{replicas}"


def _target_namespaces(obj: Mapping[str, Any]) -> str:
    targets = _at(obj, "spec.targetNamespaces")
    if targets:
        return ",".join(str(t) for t in targets)
    if _at(obj, "spec.selector"):
        return "<selector>"
    return "<all>"


def _containers(obj: Mapping[str, Any], field: str) -> str:
    containers = _at(obj, "spec.template.spec.containers", [])
    return ",".join(str(c.get(field, "")) for c in containers if isinstance(c, Mapping))


def _columns_for(kind: Kind, now: datetime) -> tuple[list[Column], list[Column]]:
    """The table columns of a kind and the extra ones of ``-o wide``."""

    def since(obj: Mapping[str, Any]) -> str:
        return age(_at(obj, "metadata.creationTimestamp"), now)

    name: Column = ("name", _name)
    age_col: Column = ("age", since)
    if kind.group == CSV.group:
        if kind.kind == CSV.kind:
            return (
                [
                    name,
                    ("display", lambda o: _at(o, "spec.displayName")),
                    ("version", lambda o: _at(o, "spec.version")),
                    ("replaces", lambda o: _at(o, "spec.replaces")),
                    ("phase", lambda o: _at(o, "status.phase")),
                ],
                [("reason", lambda o: _at(o, "status.reason")), age_col],
            )
        if kind.kind == SUBSCRIPTION.kind:
            return (
                [
                    name,
                    ("package", lambda o: _at(o, "spec.name")),
                    ("source", lambda o: _at(o, "spec.source")),
                    ("channel", lambda o: _at(o, "spec.channel")),
                ],
                [
                    ("approval", lambda o: _at(o, "spec.installPlanApproval")),
                    ("state", lambda o: _at(o, "status.state")),
                    ("installed-csv", lambda o: _at(o, "status.installedCSV")),
                    age_col,
                ],
            )
        if kind.kind == INSTALL_PLAN.kind:
            return (
                [
                    name,
                    ("csv", lambda o: _at(o, "spec.clusterServiceVersionNames")),
                    ("approval", lambda o: _at(o, "spec.approval")),
                    ("approved", lambda o: _bool(_at(o, "spec.approved", False))),
                ],
                [("phase", lambda o: _at(o, "status.phase")), age_col],
            )
        if kind.kind == CATALOG_SOURCE.kind:
            return (
                [
                    name,
                    ("display", lambda o: _at(o, "spec.displayName")),
                    ("type", lambda o: _at(o, "spec.sourceType")),
                    ("publisher", lambda o: _at(o, "spec.publisher")),
                    age_col,
                ],
                [
                    ("priority", lambda o: _at(o, "spec.priority", 0)),
                    ("state", lambda o: _at(o, "status.connectionState.lastObservedState")),
                ],
            )
    if kind.group == OPERATOR_GROUP.group and kind.kind == OPERATOR_GROUP.kind:
        return [name, age_col], [("target-namespaces", _target_namespaces)]
    if kind.group == DEPLOYMENT.group and kind.kind == DEPLOYMENT.kind:
        return (
            [
                name,
                ("ready", _deployment_ready),
                ("up-to-date", lambda o: _at(o, "status.updatedReplicas", 0)),
                ("available", lambda o: _at(o, "status.availableReplicas", 0)),
                age_col,
            ],
            [("containers", lambda o: _containers(o, "name")), ("images", lambda o: _containers(o, "image"))],
        )
    return [name, age_col], []


def _as_list(items: list[Object]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def print_objects(
    store: Store,
    kind: Kind,
    objects: list[Object],
    fmt: str,
    *,
    all_namespaces: bool = False,
    single: bool = False,
    qualified: bool = False,
) -> None:
    """Print objects of one kind as ``get`` does (``table``, ``wide``, ``json``, ``yaml``, ``name``).

    ``qualified`` names objects ``kind/name`` in tables, as kubectl does when several kinds are listed.
    """
    if fmt in ("json", "yaml"):
        data: Any = objects[0] if single and len(objects) == 1 else _as_list(objects)
        sys.stdout.write(dump_json(data) + "\n" if fmt == "json" else dump_yaml(data))
        return
    if fmt == "name":
        for obj in objects:
            print(f"{resource_ref(kind)}/{_name(obj)}")
        return
    columns, wide = _columns_for(kind, datetime.now(UTC))
    if fmt == "wide":
        columns = columns + wide
    if qualified:
        ref = resource_ref(kind)
        columns = [("name", lambda obj: f"{ref}/{_name(obj)}"), *columns[1:]]
    if all_namespaces and store.is_namespaced(kind.api_version, kind.kind):
        columns = [("namespace", _ns), *columns]
    if objects:
        print(render_table(objects, columns))


def _kinds_and_names(store: Store, kind_arg: str, names: Sequence[str]) -> tuple[list[Kind], list[str]]:
    """``KIND[,KIND...] [NAME...]`` or ``KIND/NAME``: the kinds asked for, in order, and the names."""
    if "," not in kind_arg or "/" in kind_arg:
        kind, found = _kind_and_names(store, kind_arg, names)
        return [kind], found
    parts = [part.strip() for part in kind_arg.split(",")]
    if not all(parts):
        raise UsageError(f"an empty kind in {kind_arg!r}")
    kinds = list(dict.fromkeys(resolve_kind(part, store) for part in parts))
    return kinds, list(names)


def run_get(args: argparse.Namespace, pm: PluginManager) -> int:
    """List objects of one or more kinds (``csv,deploy``), or get some by name."""
    with store_from_args(args) as store:
        kinds, names = _kinds_and_names(store, args.kind, args.names)
        if names and args.all_namespaces:
            raise UsageError("a resource cannot be retrieved by name across all namespaces (drop -A)")
        if names and args.selector:
            raise UsageError("name resources or select them with -l, not both")
        namespace = None if args.all_namespaces else _namespace(args)
        missing = False
        groups: list[tuple[Kind, list[Object]]] = []
        for kind in kinds:
            if names:
                objects = []
                for name in names:
                    found = _get_or_none(store, kind, name, namespace)
                    if found is None:
                        _not_found(kind, name)
                        missing = True
                    else:
                        objects.append(found)
            else:
                objects = list(store.list(kind.api_version, kind.kind, namespace, label_selector=args.selector))
            groups.append((kind, objects))
        found_any = any(objects for _, objects in groups)
        if not names and not found_any and args.output in ("table", "wide", "name"):
            namespaced = any(kind.namespaced for kind in kinds)
            where = "" if namespace is None or not namespaced else f" in {namespace} namespace"
            sys.stderr.write(f"No resources found{where}.\n")
            return 0
        if len(groups) == 1:
            kind, objects = groups[0]
            if objects or not missing:
                single = len(names) == 1
                print_objects(store, kind, objects, args.output, all_namespaces=args.all_namespaces, single=single)
        elif args.output in ("json", "yaml"):
            if found_any or not missing:
                every = [obj for _, objects in groups for obj in objects]
                print_objects(store, kinds[0], every, args.output)
        else:
            shown = [(kind, objects) for kind, objects in groups if objects]
            for index, (kind, objects) in enumerate(shown):
                if index and args.output != "name":
                    print()
                print_objects(store, kind, objects, args.output, all_namespaces=args.all_namespaces, qualified=True)
    return EXIT_NOT_FOUND if missing else 0


# =========================================================================== describe

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
                ("kind", lambda s: _at(s, "resource.kind")),
                ("name", lambda s: _at(s, "resource.name")),
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
        items = _at(spec, f"customresourcedefinitions.{which}", [])
        return [f"{i.get('kind')} ({i.get('name')} {i.get('version')})" for i in items if isinstance(i, Mapping)]

    deployments = _at(spec, "install.spec.deployments", [])
    modes = _at(spec, "installModes", [])
    summary: dict[str, Any] = {
        "displayName": spec.get("displayName"),
        "version": spec.get("version"),
        "replaces": spec.get("replaces"),
        "skips": spec.get("skips"),
        "minKubeVersion": spec.get("minKubeVersion"),
        "installStrategy": _at(spec, "install.strategy"),
        "deployments": [d.get("name") for d in deployments if isinstance(d, Mapping)],
        "installModes": [f"{m.get('type')}={_scalar(m.get('supported'))}" for m in modes if isinstance(m, Mapping)],
        "ownedAPIs": apis("owned"),
        "requiredAPIs": apis("required"),
        "provider": _at(spec, "provider.name"),
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
    obj: Mapping[str, Any], *, events: Sequence[Mapping[str, Any]] = (), now: datetime | None = None
) -> str:
    """A readable, kubectl-describe-like text of an object.

    Metadata first, then the spec (in brief for ClusterServiceVersions and CRDs), the status,
    the conditions (each with its reason and its full message, multi-line messages intact and
    indented), an InstallPlan's steps, a CSV's requirement status, and ``events``.
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

    if events:
        rows = sorted(events, key=lambda e: str(e.get("lastTimestamp") or _at(e, "metadata.creationTimestamp", "")))
        lines += [
            "Events:",
            *_table(
                rows,
                [
                    ("type", lambda e: e.get("type")),
                    ("reason", lambda e: e.get("reason")),
                    ("age", lambda e: age(e.get("lastTimestamp") or _at(e, "metadata.creationTimestamp"), now)),
                    ("from", lambda e: _at(e, "source.component")),
                    ("message", lambda e: e.get("message")),
                ],
            ),
        ]
    else:
        lines += _field("Events", "<none>")
    return "\n".join(lines) + "\n"


def _events_of(store: Store, obj: Mapping[str, Any]) -> list[Object]:
    namespace = _ns(obj) or DEFAULT_NAMESPACE
    uid = _at(obj, "metadata.uid")
    out = []
    for event in store.list("v1", "Event", namespace):
        involved = event.get("involvedObject") or {}
        if involved.get("kind") != obj.get("kind") or involved.get("name") != _name(obj):
            continue
        if involved.get("uid") and uid and involved["uid"] != uid:
            continue
        out.append(event)
    return out


def run_describe(args: argparse.Namespace, pm: PluginManager) -> int:
    """Describe objects by name."""
    with store_from_args(args) as store:
        kind, names = _kind_and_names(store, args.kind, args.names)
        if not names:
            raise UsageError("describe needs a name: describe KIND NAME")
        missing = False
        texts = []
        for name in names:
            found = _get_or_none(store, kind, name, _namespace(args))
            if found is None:
                _not_found(kind, name)
                missing = True
                continue
            texts.append(describe_object(found, events=_events_of(store, found)))
        sys.stdout.write("\n".join(texts))
    return EXIT_NOT_FOUND if missing else 0


# =========================================================================== delete


def _delete(store: Store, kind: Kind, name: str, namespace: str | None, *, ignore_not_found: bool) -> bool:
    """Delete one object and say so; ``False`` when it was not there (and that was not ignored)."""
    try:
        store.delete(kind.api_version, kind.kind, name, namespace)
    except NotFound:
        if ignore_not_found:
            return True
        _not_found(kind, name)
        return False
    print(f'{resource_ref(kind)} "{name}" deleted')
    return True


def run_delete(args: argparse.Namespace, pm: PluginManager) -> int:
    """Delete objects by name, by selector, every one of a kind, or those of manifest files."""
    ok = True
    with store_from_args(args) as store:
        if args.files:
            if args.kind or args.names:
                raise UsageError("delete takes either -f FILE or KIND NAME, not both")
            for _path, obj in load_manifest_files(args.files):
                problems = _shape_problems(obj)
                if problems:
                    raise InputError("; ".join(problems), path=_path, obj=_label(obj))
                kind = kind_of(obj)
                ns = _ns(obj) or _namespace(args)
                ok &= _delete(store, kind, _name(obj), ns, ignore_not_found=args.ignore_not_found)
            return 0 if ok else EXIT_NOT_FOUND
        if not args.kind:
            raise UsageError("delete needs KIND NAME, KIND -l SELECTOR, KIND --all or -f FILE")
        kind, names = _kind_and_names(store, args.kind, args.names)
        namespace = _namespace(args)
        if names:
            if args.selector or args.all:
                raise UsageError("name resources, or select them with -l or --all, not both")
            targets = names
        elif args.selector or args.all:
            targets = [_name(o) for o in store.list(kind.api_version, kind.kind, namespace, args.selector)]
            if not targets:
                sys.stderr.write("No resources found\n")
        else:
            raise UsageError(f"delete {args.kind} needs a name (or -l SELECTOR, or --all)")
        for name in targets:
            ok &= _delete(store, kind, name, namespace, ignore_not_found=args.ignore_not_found)
    return 0 if ok else EXIT_NOT_FOUND


# =========================================================================== operators


def _priority(obj: Mapping[str, Any]) -> int:
    value = _at(obj, "spec.priority", 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _source_ref(obj: Mapping[str, Any]) -> str:
    return f"{_ns(obj)}/{_name(obj)}"


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
        sources = [o for o in cache.catalog_sources(searched) if _name(o) == args.catalog]
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
    having.sort(key=lambda oc: (-_priority(oc[0]), _name(oc[0]), _ns(oc[0]) != namespace, _ns(oc[0])))
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
            f'channel "{channel}" not found in package "{package}" (catalog {_source_ref(source)}); '
            f"channels: {_listing(channels)}"
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
    package, namespace = args.package, _namespace(args)
    with store_from_args(args) as store:
        for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace):
            if _name(sub) == package or _at(sub, "spec.name") == package:
                raise UsageError(
                    f'package "{package}" is already subscribed in namespace {namespace} '
                    f"(subscription {_name(sub)}); uninstall it first, or change it with apply"
                )
        cache = CatalogCache(store, pm.registry, disk_cache=not args.no_cache)
        source, catalog = _choose_catalog(cache, package, namespace, args)
        channel = _channel(catalog, package, source, args)

        spec: dict[str, Any] = {
            "name": package,
            "source": _name(source),
            "sourceNamespace": _ns(source),
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
                f"warning: --watch is ignored: namespace {namespace} has OperatorGroup {_name(groups[0])} already\n"
            )
        if not groups:
            targets = [] if args.watch_all else [t for w in args.watch or [namespace] for t in w.split(",") if t]
            group = {
                "apiVersion": OPERATOR_GROUP.api_version,
                "kind": OPERATOR_GROUP.kind,
                "metadata": {"name": namespace, "namespace": namespace},
                "spec": {"targetNamespaces": targets} if targets else {},
            }
        for obj in (group, subscription):
            if obj is not None:
                problems = _shape_problems(obj) + admit(pm.registry, obj, store=store)
                if problems:
                    raise InputError("; ".join(problems), obj=_label(obj))

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
    return 0


def _find_subscription(store: Store, package: str, namespace: str) -> Object | None:
    found = _get_or_none(store, SUBSCRIPTION, package, namespace)
    if found is not None:
        return found
    for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace):
        if _at(sub, "spec.name") == package:
            return sub
    return None


def run_uninstall(args: argparse.Namespace, pm: PluginManager) -> int:
    """Delete a package's Subscription and the CSV it installed."""
    namespace = _namespace(args)
    with store_from_args(args) as store:
        sub = _find_subscription(store, args.package, namespace)
        if sub is None:
            sys.stderr.write(
                f'Error from server (NotFound): package "{args.package}" has no subscription in namespace {namespace}\n'
            )
            return EXIT_NOT_FOUND
        csv_name = _at(sub, "status.installedCSV") or _at(sub, "status.currentCSV")
        _delete(store, SUBSCRIPTION, _name(sub), namespace, ignore_not_found=True)
        if csv_name:
            _delete(store, CSV, str(csv_name), namespace, ignore_not_found=True)
            try:
                store.get(CSV.api_version, CSV.kind, str(csv_name), namespace)
            except NotFound:
                return 0
            # a finalizer holds it until the controllers removed what it owns cluster-wide
            print("the operator's workload goes when the controllers next run (olmkit reconcile, or olmkit run)")
    return 0


_FINISHED: Final = ("Complete", "Failed")


def run_approve(args: argparse.Namespace, pm: PluginManager) -> int:
    """Approve an InstallPlan (``spec.approved: true``)."""
    namespace = _namespace(args)
    with store_from_args(args) as store:

        def attempt() -> str:
            plan = store.get(INSTALL_PLAN.api_version, INSTALL_PLAN.kind, args.name, namespace)
            if _at(plan, "spec.approved") is True:
                return "already approved"
            phase = _at(plan, "status.phase")
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
            _not_found(INSTALL_PLAN, args.name)
            return EXIT_NOT_FOUND
    print(f"{resource_ref(INSTALL_PLAN)}/{args.name} {outcome}")
    return 0


def _installed_rows(store: Store, namespace: str | None) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    csvs = {(_ns(c), _name(c)): c for c in store.list(CSV.api_version, CSV.kind, namespace)}
    rows: list[dict[str, Any]] = []
    claimed: set[tuple[str, str]] = set()
    for sub in store.list(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, namespace):
        installed = str(_at(sub, "status.installedCSV", ""))
        current = str(_at(sub, "status.currentCSV", ""))
        csv = csvs.get((_ns(sub), installed or current))
        claimed.update({(_ns(sub), installed), (_ns(sub), current)})
        rows.append(
            {
                "namespace": _ns(sub),
                "package": _at(sub, "spec.name", ""),
                "subscription": _name(sub),
                "installedCSV": installed,
                "currentCSV": current,
                "phase": _at(csv, "status.phase", "") if csv else "",
                "state": _at(sub, "status.state", ""),
                "catalog": f"{_at(sub, 'spec.sourceNamespace') or _ns(sub)}/{_at(sub, 'spec.source', '')}",
                "age": age(_at(sub, "metadata.creationTimestamp"), now),
            }
        )
    for key, csv in csvs.items():
        if key in claimed or _at(csv, "status.reason") == "Copied":
            continue
        rows.append(
            {
                "namespace": key[0],
                "package": "",
                "subscription": "",
                "installedCSV": key[1],
                "currentCSV": "",
                "phase": _at(csv, "status.phase", ""),
                "state": "",
                "catalog": "",
                "age": age(_at(csv, "metadata.creationTimestamp"), now),
            }
        )
    rows.sort(key=lambda r: (r["namespace"], r["package"] or "~", r["installedCSV"]))
    return rows


def run_list(args: argparse.Namespace, pm: PluginManager) -> int:
    """Installed operators: Subscriptions with their CSVs (and CSVs no Subscription claims)."""
    namespace = None if args.all_namespaces else _namespace(args)
    with store_from_args(args) as store:
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
                    "catalogDisplayName": _at(obj, "spec.displayName", ""),
                    "defaultChannel": default,
                    "channels": channels,
                    "head": head,
                }
            )
    rows.sort(key=lambda r: (r["package"], r["catalog"]))
    return rows


def run_list_available(args: argparse.Namespace, pm: PluginManager) -> int:
    """Packages in the catalogs visible from a namespace (its own and the global one)."""
    namespace = _namespace(args)
    with store_from_args(args) as store:
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
            ("channels", "channels"),
            ("head", "head"),
        ],
    )
    return 0


# =========================================================================== the parser


def add_commands(subparsers: Any) -> None:
    """Add ``apply``, ``get``, ``describe``, ``delete`` and the operator commands.

    The operator commands: ``install``, ``uninstall``, ``approve``, ``list``, ``list-available``.
    """

    def files_option(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "-f",
            "--filename",
            dest="files",
            action="append",
            default=[],
            metavar="FILE",
            help=f"manifest file or directory (YAML or JSON; - for standard input) {what}; repeatable",
        )

    p = subparsers.add_parser("apply", help="create or update objects from manifest files")
    files_option(p, "to apply")
    _add_namespace_option(p)
    p.add_argument("--dry-run", action="store_true", help="validate and report, write nothing")
    add_store_option(p)
    p.set_defaults(func=run_apply)

    p = subparsers.add_parser("get", help="list objects of a kind, or get some by name")
    p.add_argument(
        "kind", metavar="KIND", help="kind, plural or short name (csv, sub, ip, catsrc, og, crd, deploy ...)"
    )
    p.add_argument("names", nargs="*", metavar="NAME")
    _add_namespace_option(p, all_namespaces=True)
    p.add_argument("-l", "--selector", default=None, help="label selector (app=x,tier in (a,b))")
    add_output_option(p, formats=("table", "wide", "yaml", "json", "name"))
    add_store_option(p)
    p.set_defaults(func=run_get)

    p = subparsers.add_parser("describe", help="show an object in detail: status, conditions, steps")
    p.add_argument("kind", metavar="KIND")
    p.add_argument("names", nargs="*", metavar="NAME")
    _add_namespace_option(p)
    add_store_option(p)
    p.set_defaults(func=run_describe)

    p = subparsers.add_parser("delete", help="delete objects by name, selector or manifest file")
    p.add_argument("kind", metavar="KIND", nargs="?")
    p.add_argument("names", nargs="*", metavar="NAME")
    files_option(p, "whose objects to delete")
    _add_namespace_option(p)
    p.add_argument("-l", "--selector", default=None, help="delete the objects of KIND this label selector matches")
    p.add_argument("--all", action="store_true", help="delete every object of KIND in the namespace")
    p.add_argument("--ignore-not-found", action="store_true", help="a missing object is not an error")
    add_store_option(p)
    p.set_defaults(func=run_delete)

    def catalog_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--global-namespace",
            default=GLOBAL_NAMESPACE,
            help=f"global catalog namespace (default {GLOBAL_NAMESPACE})",
        )
        p.add_argument("--no-cache", action="store_true", help="do not use the on-disk catalog cache")

    p = subparsers.add_parser("install", help="subscribe to an operator package (kubectl operator install)")
    p.add_argument("package", metavar="PKG")
    _add_namespace_option(p)
    p.add_argument("--channel", "-c", default=None, help="channel (default: the package's default channel)")
    p.add_argument("--approval", choices=("Automatic", "Manual"), default="Automatic", help="install plan approval")
    p.add_argument("--catalog", default=None, metavar="NAME", help="CatalogSource (default: the best that has PKG)")
    p.add_argument(
        "--catalog-namespace", type=namespace_name, default=None, metavar="NS", help="namespace of --catalog"
    )
    p.add_argument("--starting-csv", default=None, metavar="CSV", help="install this version first")
    p.add_argument(
        "--watch",
        action="append",
        default=None,
        metavar="NS[,NS]",
        help="target namespaces of a new OperatorGroup (default: the install namespace)",
    )
    p.add_argument("--watch-all", action="store_true", help="a new OperatorGroup targets every namespace")
    catalog_options(p)
    add_store_option(p)
    p.set_defaults(func=run_install)

    p = subparsers.add_parser("uninstall", help="delete a package's Subscription and its CSV")
    p.add_argument("package", metavar="PKG")
    _add_namespace_option(p)
    add_store_option(p)
    p.set_defaults(func=run_uninstall)

    p = subparsers.add_parser("approve", help="approve an InstallPlan that waits for approval")
    p.add_argument("name", metavar="INSTALLPLAN")
    _add_namespace_option(p)
    add_store_option(p)
    p.set_defaults(func=run_approve)

    p = subparsers.add_parser("list", help="installed operators (Subscriptions and their CSVs)")
    _add_namespace_option(p, all_namespaces=True)
    add_output_option(p, formats=("table", "wide", "json", "yaml"))
    add_store_option(p)
    p.set_defaults(func=run_list)

    p = subparsers.add_parser("list-available", help="packages in the catalogs visible from a namespace")
    p.add_argument("package", metavar="PKG", nargs="?", help="only this package")
    _add_namespace_option(p)
    add_output_option(p)
    catalog_options(p)
    add_store_option(p)
    p.set_defaults(func=run_list_available)
