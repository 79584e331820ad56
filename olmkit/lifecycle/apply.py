"""Validate objects and write them to the store as ``kubectl apply`` does.

One code path for every writer that takes objects from people: ``olmkit apply``, ``delete -f``,
``install`` and the API server all check objects with :func:`prepare_manifests` (shape, then
:func:`object_problems`, then the registered admission checks, see
:mod:`olmkit.lifecycle.admission`) and write them with :func:`apply_object`, so they never
disagree about what is a valid object.

:func:`object_problems` is the API server's strict validation: the kind and version must be
served (built in, see :mod:`olmkit.lifecycle.schemas`, or by a stored CustomResourceDefinition,
or one applied in the same batch); a built-in kind's fields must be declared (``spec.chanel``
is ``strict decoding error: unknown field "spec.chanel" (did you mean "spec.channel"?)``);
a custom resource must be valid under its CRD version's ``openAPIV3Schema``, with Kubernetes'
error texts (``spec.replicas: Invalid value: "three": spec.replicas in body must be of type
integer``).

:func:`load_manifest_files` reads manifests (YAML or JSON, several documents, ``kind: List``)
from files, directories or standard input.

.. versionadded:: 0.2
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from olmkit.errors import InputError
from olmkit.lifecycle.admission import admit
from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION
from olmkit.lifecycle.kinds import CATALOG_SOURCE, CRD, kind_of
from olmkit.lifecycle.openapi import FORBIDDEN, validate
from olmkit.lifecycle.schemas import SERVED, builtin_schema, served_versions
from olmkit.resolver.manifests import STDIN
from olmkit.store import AlreadyExists, Conflict, NotFound, Object, Store, retry_on_conflict
from olmkit.store.names import DEFAULT_NAMESPACE, is_namespace_name, is_object_name

if TYPE_CHECKING:
    from olmkit.registry import Registry

__all__ = [
    "DEFAULT_NAMESPACE",
    "MANIFEST_SUFFIXES",
    "OBJECT_META_FIELDS",
    "STORED",
    "KnownKinds",
    "PreparedObject",
    "apply_object",
    "load_manifest_files",
    "object_label",
    "object_problems",
    "prepare_manifests",
    "shape_problems",
]

#: The files of a directory that ``-f DIR`` reads.
MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")


def object_label(obj: Mapping[str, Any]) -> str:
    """``Kind/name`` of an object, for messages (``?`` for what is missing)."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{obj.get('kind') or '?'}/{name if name is not None else '?'}"


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
        out.extend((m.path, dict(m.obj)) for m in load_manifests([file]))
    return out


@attrs.frozen
class PreparedObject:
    """One validated object of ``apply``: the file it came from and the object to write."""

    path: str
    obj: dict[str, Any]

    @property
    def label(self) -> str:
        """``Kind/name``."""
        return object_label(self.obj)


def _string_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def shape_problems(obj: Mapping[str, Any]) -> list[str]:
    """What every object needs before the store (and the admission checks) can judge it."""
    problems = []
    if not isinstance(obj.get("apiVersion"), str) or not obj.get("apiVersion"):
        problems.append("apiVersion is required")
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return [*problems, "metadata must be an object"]
    name = meta.get("name")
    if not is_object_name(name):
        problems.append(
            f"metadata.name {name!r} is not a valid name: lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    namespace = meta.get("namespace")
    if namespace is not None and not is_namespace_name(namespace):
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


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


@attrs.define
class KnownKinds:
    """The kinds that are served: built in, by a stored CRD, or by a CRD about to be applied.

    Build one per batch with :meth:`of` (it lists the stored CRDs once).

    .. versionadded:: 0.2
    """

    crds: dict[tuple[str, str], Mapping[str, Any]]

    @classmethod
    def of(
        cls,
        store: Store,
        pending: Iterable[Mapping[str, Any]] = (),
        stored: Iterable[Mapping[str, Any]] | None = None,
    ) -> KnownKinds:
        """The stored CRDs, then the CRDs among ``pending`` objects (they win: they are newer).

        ``stored``: the stored CRDs when the caller has them at hand (the API server keeps
        them), instead of listing them.
        """
        crds: dict[tuple[str, str], Mapping[str, Any]] = {}
        if stored is None:
            stored = store.list(CRD.api_version, CRD.kind)
        for crd in [*stored, *(o for o in pending if _is_crd(o))]:
            spec = crd.get("spec")
            if isinstance(spec, Mapping) and isinstance(spec.get("names"), Mapping):
                crds[(str(spec.get("group") or ""), str(spec["names"].get("kind") or ""))] = crd
        return cls(crds)

    def served(self, group: str, kind: str) -> tuple[str, ...] | None:
        """The versions serving ``group``/``kind``, or ``None`` when nothing serves the kind."""
        builtin = served_versions(group, kind)
        if builtin is not None:
            return builtin
        crd = self.crds.get((group, kind))
        if crd is None:
            return None
        return tuple(str(v.get("name")) for v in _crd_versions(crd) if v.get("served", True))

    def crd_version(self, group: str, kind: str, version: str) -> Mapping[str, Any] | None:
        """The CRD's entry for ``version`` (its schema, subresources), or ``None``."""
        crd = self.crds.get((group, kind))
        if crd is None:
            return None
        return next((v for v in _crd_versions(crd) if v.get("name") == version), None)

    def kinds(self) -> list[tuple[str, str]]:
        """Every known ``(group, kind)``."""
        return [*SERVED, *self.crds]


def _is_crd(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == CRD.kind and _group_version(str(obj.get("apiVersion") or ""))[0] == CRD.group


def _crd_versions(crd: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = crd.get("spec") or {}
    versions = spec.get("versions")
    if isinstance(versions, list) and versions:
        return [v for v in versions if isinstance(v, Mapping)]
    version = spec.get("version")  # the old single-version form
    return [{"name": version, "served": True, "schema": spec.get("validation")}] if version else []


def _api_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def _similar_kind(group: str, kind: str, known: list[tuple[str, str]]) -> str | None:
    """The kind the user probably meant: a plural or a case slip of a known kind, else a close one."""
    same_group = [k for g, k in known if g == group] or [k for _, k in known]
    lowered = kind.lower()
    for candidate in same_group:
        low = candidate.lower()
        if lowered in (low, low + "s", low + "es") or (
            lowered.endswith("ies") and low.endswith("y") and lowered[:-3] == low[:-1]
        ):
            return candidate
    close = difflib.get_close_matches(kind, same_group, n=1)
    return close[0] if close else None


def _kind_problem(group: str, version: str, kind: str, kinds: KnownKinds) -> str | None:
    served = kinds.served(group, kind)
    where = f'no matches for kind "{kind}" in version "{_api_version(group, version)}"'
    if served is None:
        similar = _similar_kind(group, kind, kinds.kinds())
        hint = f' (did you mean "{similar}"?)' if similar else ""
        return f"{where}{hint}; ensure CRDs are installed first"
    if version not in served:
        versions = ", ".join(_api_version(group, v) for v in served) or "none"
        return f"{where} (served versions: {versions})"
    return None


_SEGMENT: Final = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _declared_at(schema: Mapping[str, Any], path: str) -> list[str]:
    """The field names the schema declares at ``path`` (``spec.config``, ``spec.versions[0]``)."""
    node: Any = schema
    for name, index in _SEGMENT.findall(path):
        if not isinstance(node, Mapping):
            return []
        node = node.get("items") if index else (node.get("properties") or {}).get(name)
    if not isinstance(node, Mapping):
        return []
    return list((node.get("properties") or {}).keys())


def _schema_problems(
    obj: Mapping[str, Any], schema: Mapping[str, Any], *, report_unknown: bool, only_unknown: bool = False
) -> list[str]:
    problems = []
    for error in validate(obj, schema, report_unknown=report_unknown):
        unknown = error.reason == FORBIDDEN and error.detail == "field not declared in schema"
        if only_unknown and not unknown:
            continue
        if unknown:
            parent, _, field = error.path.rpartition(".")
            close = difflib.get_close_matches(field, _declared_at(schema, parent), n=1)
            hint = f' (did you mean "{parent + "." if parent else ""}{close[0]}"?)' if close else ""
            problems.append(f'strict decoding error: unknown field "{error.path}"{hint}')
        else:
            problems.append(str(error))
    return problems


#: the fields of ObjectMeta (what ``metadata`` may hold)
OBJECT_META_FIELDS: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)


def _metadata_problems(obj: Mapping[str, Any]) -> list[str]:
    meta = obj.get("metadata")
    problems = []
    for key in meta if isinstance(meta, Mapping) else ():
        if key not in OBJECT_META_FIELDS:
            close = difflib.get_close_matches(str(key), OBJECT_META_FIELDS, n=1)
            hint = f' (did you mean "metadata.{close[0]}"?)' if close else ""
            problems.append(f'strict decoding error: unknown field "metadata.{key}"{hint}')
    return problems


def object_problems(store: Store, obj: Mapping[str, Any], *, kinds: KnownKinds | None = None) -> list[str]:
    """What the API server's strict validation says about an object (``[]``: nothing).

    The kind and version must be served (:class:`KnownKinds`); a built-in kind's fields must be
    declared (:mod:`olmkit.lifecycle.schemas`; their values are the admission checks' to judge);
    a custom resource must be valid under its CRD
    version's ``openAPIV3Schema`` (unknown fields included, unless the CRD preserves them), its
    ``status`` too unless the version has a status subresource. Call it on every create and
    update of an object that comes from outside.

    Args:
        store: where the CRDs are (unused when ``kinds`` is given).
        obj: the object, with a string ``apiVersion`` and ``kind``.
        kinds: the known kinds of a batch (:meth:`KnownKinds.of`), to list CRDs only once.

    .. versionadded:: 0.2
    """
    kinds = kinds if kinds is not None else KnownKinds.of(store)
    group, version = _group_version(str(obj.get("apiVersion") or ""))
    kind = str(obj.get("kind") or "")
    problem = _kind_problem(group, version, kind, kinds)
    if problem is not None:
        return [problem]
    problems = _metadata_problems(obj)
    schema = builtin_schema(group, kind)
    if schema is not None:  # values are the admission checks' (their texts say more): fields only
        return problems + _schema_problems(obj, schema, report_unknown=True, only_unknown=True)
    entry = kinds.crd_version(group, kind, version)
    if entry is None:
        return problems
    raw_schema = entry.get("schema")
    schema = raw_schema.get("openAPIV3Schema") if isinstance(raw_schema, Mapping) else None
    if not isinstance(schema, Mapping):
        return problems
    crd_spec = kinds.crds[(group, kind)].get("spec") or {}
    subresources = entry.get("subresources") or crd_spec.get("subresources") or {}
    checked = dict(obj)
    if isinstance(subresources, Mapping) and "status" in subresources:
        checked.pop("status", None)  # written through the status subresource, not with the object
    return problems + _schema_problems(
        checked, schema, report_unknown=crd_spec.get("preserveUnknownFields") is not True
    )


#: ``prepare_manifests(current=...)``'s default: read each object's stored version from the store
STORED: Final[Any] = object()


def prepare_manifests(
    store: Store,
    registry: Registry,
    manifests: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    namespace: str | None = None,
    strict: bool = True,
    stored_crds: Iterable[Mapping[str, Any]] | None = None,
    owned: bool = False,
    current: Any = STORED,
) -> list[PreparedObject]:
    """Validate every object and make it ready to write; nothing is written.

    Each object gets its namespace (its own, else ``namespace``, else ``default``; none for
    cluster-scoped kinds) and, for a CatalogSource, the :data:`MANIFEST_DIR_ANNOTATION` with
    the absolute directory of its file. Then the object's shape, :func:`object_problems`
    (CRDs of the same batch count as served) and the registered admission checks are run on it.

    Args:
        store: the store the objects are for (scope of kinds, the stored objects the checks see).
        registry: the registry with the admission checks.
        manifests: ``(file, object)`` pairs, as :func:`load_manifest_files` returns them.
        namespace: the namespace asked for with ``-n``; an object naming another one is refused.
        strict: run :func:`object_problems` (``False``: shape and admission checks only).
        stored_crds: the stored CRDs, when the caller keeps them current (else they are listed).
        owned: the objects are the caller's to give away (an API server's decoded request
            bodies): they are prepared in place instead of copied first.
        current: for a single object, its stored version (``None``: there is none), when the
            caller has just read it; by default each object's is read from the store.

    .. versionchanged:: 0.2
        Strict validation (``strict``).

    .. versionchanged:: 0.3
        ``owned`` and ``current``.

    Raises:
        InputError: an object is refused; names the file, ``Kind/name`` and every problem, and
            how many other objects were refused too.
    """
    if current is not STORED and len(manifests) != 1:
        raise ValueError("current is the stored version of a single object")
    prepared: list[PreparedObject] = []
    refused: list[InputError] = []
    kinds = KnownKinds.of(store, [raw for _, raw in manifests], stored_crds) if strict else None
    for path, raw in manifests:
        obj = dict(raw) if owned else copy.deepcopy(dict(raw))
        problems = shape_problems(obj)
        if not problems and kinds is not None:
            problems = object_problems(store, obj, kinds=kinds)
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
            old = _stored(store, obj) if current is STORED else current
            problems += admit(registry, obj, store=store, old=old)
        if problems:
            refused.append(InputError("; ".join(problems), path=path, obj=object_label(obj)))
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


def _stored(store: Store, obj: Mapping[str, Any]) -> Object | None:
    """The stored version of ``obj``, or ``None``."""
    try:
        return store.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
    except NotFound:
        return None
