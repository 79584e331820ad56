"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain JSON values."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from olmkit.store.errors import Invalid

__all__ = ["json_patch", "merge_patch"]


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


#: an array index in a JSON pointer (RFC 6901): "0" or digits without a leading zero
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def _index(part: str) -> int:
    """The array index ``part`` names; ``ValueError`` when it is not one (``-1``, ``01``, `` 1``)."""
    if not _ARRAY_INDEX.fullmatch(part):
        raise ValueError(f"bad array index {part!r}")
    return int(part)


def _pointer(path: Any, ref: Mapping[str, Any]) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise Invalid(f"invalid JSON pointer {path!r}", field="patch", **ref)
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def _parent(doc: Any, parts: list[str], ref: Mapping[str, Any]) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        try:
            node = node[_index(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise Invalid(f"path /{'/'.join(parts)} does not exist", field="patch", **ref) from None
    return node, parts[-1]


def _get(doc: Any, parts: list[str], ref: Mapping[str, Any]) -> Any:
    if not parts:
        return doc
    parent, last = _parent(doc, parts, ref)
    try:
        return parent[_index(last)] if isinstance(parent, list) else parent[last]
    except (KeyError, IndexError, ValueError, TypeError):
        raise Invalid(f"path /{'/'.join(parts)} does not exist", field="patch", **ref) from None


def _remove(doc: Any, parts: list[str], ref: Mapping[str, Any]) -> Any:
    if not parts:
        raise Invalid("the whole document cannot be removed (path '')", field="patch", **ref)
    value = _get(doc, parts, ref)
    parent, last = _parent(doc, parts, ref)
    if isinstance(parent, list):
        del parent[_index(last)]
    else:
        del parent[last]
    return value


def _add(doc: Any, parts: list[str], value: Any, ref: Mapping[str, Any], replace: bool = False) -> Any:
    if not parts:
        return value
    parent, last = _parent(doc, parts, ref)
    if isinstance(parent, list):
        try:
            index = len(parent) if last == "-" else _index(last)
        except ValueError:
            raise Invalid(f"bad array index {last!r}", field="patch", **ref) from None
        if not 0 <= index <= len(parent) - (1 if replace else 0):
            raise Invalid(f"array index {index} out of range", field="patch", **ref)
        if replace:
            parent[index] = value
        else:
            parent.insert(index, value)
    elif isinstance(parent, dict):
        if replace and last not in parent:
            raise Invalid(f"path /{'/'.join(parts)} does not exist", field="patch", **ref)
        parent[last] = value
    else:
        raise Invalid(f"path /{'/'.join(parts)} does not exist", field="patch", **ref)
    return doc


def json_patch(doc: Any, operations: Any, ref: Mapping[str, Any] | None = None) -> Any:
    """Apply an RFC 6902 JSON patch (add, remove, replace, move, copy, test); return a new value.

    Raises:
        Invalid: a malformed operation, a missing path or a failed ``test`` (nothing is applied).
    """
    ref = dict(ref or {})
    if not isinstance(operations, list):
        raise Invalid("a JSON patch is a list of operations", field="patch", **ref)
    result = copy.deepcopy(doc)
    for n, op in enumerate(operations):
        if not isinstance(op, Mapping) or "op" not in op or "path" not in op:
            raise Invalid(f"operation {n} needs 'op' and 'path'", field="patch", **ref)
        kind, parts = op["op"], _pointer(op["path"], ref)
        if kind in ("add", "replace", "test") and "value" not in op:
            raise Invalid(f"operation {n} ({kind}) needs 'value'", field="patch", **ref)
        if kind == "add":
            result = _add(result, parts, copy.deepcopy(op["value"]), ref)
        elif kind == "remove":
            _remove(result, parts, ref)
        elif kind == "replace":
            result = _add(result, parts, copy.deepcopy(op["value"]), ref, replace=True)
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from"), ref)
            if kind == "move" and source == parts:
                _get(result, source, ref)  # it must exist; moved onto itself, it stays (even the root)
                continue
            if kind == "move" and parts[: len(source)] == source:
                raise Invalid(f"operation {n} (move) moves {op['from']} into its own child", field="patch", **ref)
            value = _remove(result, source, ref) if kind == "move" else copy.deepcopy(_get(result, source, ref))
            result = _add(result, parts, value, ref)
        elif kind == "test":
            if _get(result, parts, ref) != op["value"]:
                raise Invalid(f"test failed at {op['path']}", field="patch", **ref)
        else:
            raise Invalid(f"unknown operation {kind!r}", field="patch", **ref)
    return result
