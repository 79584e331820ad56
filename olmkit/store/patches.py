"""Patches on plain JSON values: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and
Kubernetes' strategic merge patch.

JSON patch is the ``jsonpatch`` library's (a well-kept, complete RFC 6902 implementation with
JSON pointers, ``test`` and atomic application); merge patch and strategic merge patch are
short enough to keep here.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from olmkit.store.errors import Invalid

__all__ = ["MERGE_KEYS", "json_patch", "merge_patch", "strategic_merge_patch"]


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 merge patch: mappings merge recursively, ``None`` removes, anything else replaces.

    Returns a new value; neither argument is changed.
    """
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(doc: Any, operations: Any, ref: Mapping[str, Any] | None = None) -> Any:
    """Apply an RFC 6902 JSON patch (add, remove, replace, move, copy, test); return a new value.

    Raises:
        Invalid: a malformed operation, a missing path or a failed ``test`` (nothing is applied).
    """
    import jsonpatch  # type: ignore[import-untyped,unused-ignore]

    ref = dict(ref or {})
    if not isinstance(operations, list):
        raise Invalid("a JSON patch is a list of operations", field="patch", **ref)
    for n, op in enumerate(operations):
        if not isinstance(op, Mapping) or "op" not in op or "path" not in op:
            raise Invalid(f"operation {n} needs 'op' and 'path'", field="patch", **ref)
        if not isinstance(op["path"], str) or not isinstance(op.get("from", ""), str):
            raise Invalid(f"operation {n}: invalid JSON pointer {op['path']!r}", field="patch", **ref)
    try:
        return jsonpatch.JsonPatch(operations).apply(doc, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as exc:
        raise Invalid(f"JSON patch failed: {exc}", field="patch", **ref) from None


#: List fields that strategic merge patch merges item by item, by the field that keys the items
#: (``patchMergeKey`` of the Kubernetes types that carry them); any other list is replaced.
MERGE_KEYS: Final[Mapping[str, str]] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "ports": "containerPort",  # Service ports are keyed by ``port`` (chosen by the items' fields)
}

#: Lists of scalars that strategic merge patch merges as sets.
_MERGED_SCALAR_LISTS: Final = frozenset({"finalizers"})
_DIRECTIVE: Final = "$patch"
_ORDER: Final = "$setElementOrder/"
_DELETE_FROM: Final = "$deleteFromPrimitiveList/"
_RETAIN: Final = "$retainKeys"


def _merge_key(field: str, items: list[Any]) -> str | None:
    key = MERGE_KEYS.get(field)
    if key == "containerPort" and items and all(isinstance(i, Mapping) and "containerPort" not in i for i in items):
        return "port"
    return key


def _merge_list(field: str, target: Any, patch: list[Any]) -> list[Any]:
    if any(isinstance(i, Mapping) and i.get(_DIRECTIVE) == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, Mapping) and _DIRECTIVE in i)]
    current = copy.deepcopy(target) if isinstance(target, list) else []
    if field in _MERGED_SCALAR_LISTS:
        return current + [copy.deepcopy(i) for i in patch if i not in current]
    key = _merge_key(field, patch or current)
    if key is None or not all(isinstance(i, Mapping) for i in patch):
        return copy.deepcopy(patch)
    for item in patch:
        wanted = item.get(key)
        index = next(
            (n for n, have in enumerate(current) if isinstance(have, Mapping) and have.get(key) == wanted), None
        )
        if item.get(_DIRECTIVE) == "delete":
            if index is not None:
                del current[index]
        elif index is None:
            current.append(strategic_merge_patch({}, item))
        else:
            current[index] = strategic_merge_patch(current[index], item)
    return current


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a Kubernetes strategic merge patch; return a new value.

    Like a merge patch, except that the lists named in :data:`MERGE_KEYS` merge item by item
    (an item with ``$patch: delete`` removes its match), ``finalizers`` merge as a set, and the
    directives ``$patch`` (``replace``, ``delete``), ``$retainKeys``,
    ``$deleteFromPrimitiveList/<field>`` and ``$setElementOrder/<field>`` (ordering only, not
    applied) are understood, as ``kubectl apply`` sends them for built-in kinds.

    Raises:
        Invalid: an unknown ``$patch`` directive.
    """
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    directive = patch.get(_DIRECTIVE)
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != _DIRECTIVE}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise Invalid(f"unknown strategic merge patch directive $patch: {directive!r}", field="patch")
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN) or key.startswith(_ORDER):
            continue
        if key.startswith(_DELETE_FROM):
            field = key[len(_DELETE_FROM) :]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        elif isinstance(value, Mapping):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = copy.deepcopy(value)
    retain = patch.get(_RETAIN)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result
