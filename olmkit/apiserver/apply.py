"""Server-side apply (``kubectl apply --server-side``): field ownership and conflicts.

Each field manager owns the fields it applied, recorded in ``metadata.managedFields``
(``fieldsV1``, as the API server writes them). Applying sets every field of the applied
configuration, removes the fields the manager applied before and no longer does, and fails
with 409 Conflict when it would change a field another manager owns (``force=true`` takes
the field over instead). Lists are owned whole (atomic), a simplification of the API
server's per-item ownership of keyed lists.

.. versionadded:: 0.2
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from olmkit.apiserver.status import ApiError
from olmkit.lifecycle.runtime import rfc3339

if TYPE_CHECKING:
    from olmkit.apiserver.resources import Resource

__all__ = ["field_paths", "fields_v1", "record_update", "server_side_apply"]

Path = tuple[str, ...]
_IGNORED: Final = frozenset(
    {
        ("apiVersion",),
        ("kind",),
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "resourceVersion"),
        ("metadata", "managedFields"),
        ("metadata", "uid"),
        ("metadata", "generation"),
        ("metadata", "creationTimestamp"),
    }
)


def field_paths(obj: Any, prefix: Path = ()) -> Iterator[Path]:
    """The leaf paths of a configuration (mappings are walked, anything else is a leaf)."""
    if isinstance(obj, Mapping) and obj:
        for key, value in obj.items():
            path = (*prefix, str(key))
            if path in _IGNORED:
                continue
            yield from field_paths(value, path)
    elif prefix:
        yield prefix


def fields_v1(paths: set[Path]) -> dict[str, Any]:
    """``fieldsV1`` of a set of paths (``{"f:spec": {"f:replicas": {}}}``)."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return root


def _paths_of_fields(fields: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    for key, value in fields.items():
        if not key.startswith("f:"):
            continue
        path = (*prefix, key[2:])
        if isinstance(value, Mapping) and any(k.startswith("f:") for k in value):
            yield from _paths_of_fields(value, path)
        else:
            yield path


def _get(obj: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _set(obj: dict[str, Any], path: Path, value: Any) -> None:
    for part in path[:-1]:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: dict[str, Any], path: Path) -> None:
    parents = []
    node: Any = obj
    for part in path[:-1]:
        if not isinstance(node, dict) or part not in node:
            return
        parents.append((node, part))
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    for parent, part in reversed(parents):  # drop mappings the removal emptied
        if parent[part] == {}:
            del parent[part]


_MISSING: Final = object()


def _owned(entry: Mapping[str, Any]) -> set[Path]:
    fields = entry.get("fieldsV1")
    return set(_paths_of_fields(fields)) if isinstance(fields, Mapping) else set()


def _covers(owned: set[Path], path: Path) -> Path | None:
    """The owned path that ``path`` falls under or over, if any."""
    for have in owned:
        if have[: len(path)] == path or path[: len(have)] == have:
            return have
    return None


def _changed_paths(old: Any, new: Any, prefix: Path) -> Iterator[Path]:
    """The leaf paths of ``new`` (as :func:`field_paths` walks it) whose value differs in ``old``.

    Subtrees equal in both are skipped whole: an update usually changes a few fields of a
    large object.
    """
    if not (isinstance(new, Mapping) and new):
        if prefix and old != new:
            yield prefix
        return
    for key, value in new.items():
        path = (*prefix, str(key))
        if path in _IGNORED:
            continue
        before = old.get(key, _MISSING) if isinstance(old, Mapping) else _MISSING
        if before is _MISSING or before != value:
            yield from _changed_paths(before, value, path)


def record_update(
    old: Mapping[str, Any] | None, new: dict[str, Any], manager: str, *, resource: Resource, status: bool = False
) -> None:
    """Record in ``new``'s managedFields that ``manager`` set the fields an update changed.

    The fields ``new`` has with another value than in ``old`` (all of them on create) move to
    the manager's ``Update`` entry, so that a later server-side apply of them by another manager
    is a conflict, as on a cluster.
    """
    entries = [dict(e) for e in (old or {}).get("metadata", {}).get("managedFields") or [] if isinstance(e, Mapping)]
    scope = "status" if status else ""
    top = {key: value for key, value in new.items() if (key == "status") == status}
    changed = set(_changed_paths(_MISSING if old is None else old, top, ()))
    if not changed:
        if entries or "managedFields" in new.get("metadata", {}):
            new["metadata"]["managedFields"] = entries
        return
    mine = next(
        (e for e in entries if e.get("manager") == manager and e.get("operation") == "Update"
         and e.get("subresource", "") == scope),
        None,
    )  # fmt: skip
    kept = []
    for entry in entries:
        if entry is mine:
            continue
        had = _owned(entry)
        remaining = had - changed
        if remaining == had:
            kept.append(entry)  # none of its fields changed hands: kept as it is
        elif remaining:
            entry["fieldsV1"] = fields_v1(remaining)
            kept.append(entry)
    owned = (_owned(mine) if mine is not None else set()) | changed
    entry = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": resource.api_version,
        "time": rfc3339(time.time()),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1({p for p in owned if _get(new, p) is not _MISSING}),
        **({"subresource": "status"} if status else {}),
    }
    new["metadata"]["managedFields"] = [*kept, entry]


def server_side_apply(
    old: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    manager: str,
    *,
    force: bool,
    resource: Resource,
    status: bool = False,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``old`` (``None``: create it).

    Raises:
        ApiError: 409 Conflict naming each field another manager owns and ``config`` changes.
    """
    applied = set(field_paths(config))
    entries = [dict(e) for e in (old or {}).get("metadata", {}).get("managedFields") or [] if isinstance(e, Mapping)]
    conflicts: list[tuple[str, Path]] = []
    if old is not None:
        for entry in entries:
            if entry.get("manager") == manager and entry.get("operation") == "Apply":
                continue
            owned = _owned(entry)
            for path in sorted(applied):
                have = _covers(owned, path)
                if have is not None and _get(old, path) != _get(config, path):
                    conflicts.append((str(entry.get("manager")), path))
    if conflicts and not force:
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f'conflict with "{who}": .{".".join(path)}',
                "field": "." + ".".join(path),
            }
            for who, path in conflicts
        ]
        name = str(config.get("metadata", {}).get("name") or "")
        lines = "\n".join(f"- {c['message']}" for c in causes)
        raise ApiError(
            409,
            "Conflict",
            f"Apply failed with {len(conflicts)} conflict{'s' if len(conflicts) > 1 else ''}: {lines}",
            {"name": name, "group": resource.group, "kind": resource.plural, "causes": causes},
        )
    new: dict[str, Any] = copy.deepcopy(dict(old)) if old is not None else {}
    previous = next((e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"), None)
    others = set().union(*(_owned(e) for e in entries if e is not previous)) if entries else set()
    if previous is not None:
        for path in _owned(previous) - applied:
            if _covers(others, path) is None:
                _remove(new, path)
    for key in ("apiVersion", "kind"):
        new[key] = config[key]
    new.setdefault("metadata", {})
    for field in ("name", "namespace"):
        if field in config.get("metadata", {}):
            new["metadata"][field] = config["metadata"][field]
    for path in applied:
        _set(new, path, _get(config, path))
    taken = {path for _, path in conflicts}
    kept = []
    for entry in entries:
        if entry is previous:
            continue
        if taken:
            remaining = {p for p in _owned(entry) if p not in taken}
            if not remaining:
                continue
            entry["fieldsV1"] = fields_v1(remaining)
        kept.append(entry)
    kept.append(
        {
            "manager": manager,
            "operation": "Apply",
            "apiVersion": resource.api_version,
            "time": rfc3339(time.time()),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(applied),
            **({"subresource": "status"} if status else {}),
        }
    )
    new["metadata"]["managedFields"] = kept
    return new
