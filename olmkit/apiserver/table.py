"""``Table`` responses (``meta.k8s.io/v1``): what ``kubectl get`` prints, computed by the server.

Columns are Name plus a resource's printer columns (see :mod:`olmkit.apiserver.resources`);
each row carries the object's metadata (``includeObject=Metadata``, the default), the whole
object (``Object``) or nothing (``None``).

.. versionadded:: 0.2
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from olmkit.apiserver.resources import Column, Resource
from olmkit.timestamps import age

__all__ = ["json_path", "partial_metadata", "table"]

_NAME_COLUMN: Final = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}
_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


@functools.lru_cache(maxsize=256)
def _steps(path: str) -> tuple[str | int, ...]:
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    return tuple(field if field else int(index) for field, index in _STEP.findall(path))


def json_path(obj: Any, path: str) -> Any:
    """The value at a simple JSONPath (``.spec.a.b``, ``.items[0].c``, braces allowed), or ``None``."""
    node = obj
    for step in _steps(path):
        if isinstance(step, str):
            node = node.get(step) if isinstance(node, dict) else None
        else:
            node = node[step] if isinstance(node, list) and step < len(node) else None
        if node is None:
            return None
    return node


_PART = re.compile(r"\{([^{}]+)\}")


def _value(obj: Any, path: str) -> Any:
    if path.count("{") > 1:
        return _PART.sub(lambda m: str(json_path(obj, m[1]) or 0), path)
    return json_path(obj, path)


def _cell(value: Any, column: Column, now: datetime) -> Any:
    if column.count:
        return len(value) if isinstance(value, (dict, list)) else 0
    if value is None:
        return None
    if column.type == "date" and isinstance(value, str):
        return age(value, now)
    if isinstance(value, (list, dict)):
        return orjson.dumps(value).decode()
    return value


def partial_metadata(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``PartialObjectMetadata`` of an object."""
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj.get("metadata") or {}}


def table(
    resource: Resource,
    objects: Iterable[Mapping[str, Any]],
    *,
    resource_version: str = "",
    continue_token: str = "",
    include_object: str = "Metadata",
) -> dict[str, Any]:
    """A ``Table`` of ``objects`` with the resource's columns."""
    now = datetime.now(UTC)
    columns = resource.columns
    rows = []
    for obj in objects:
        row: dict[str, Any] = {
            "cells": [
                obj.get("metadata", {}).get("name"),
                *(_cell(_value(obj, c.json_path), c, now) for c in columns),
            ]
        }
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    metadata: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        metadata["continue"] = continue_token
    result: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "rows": rows}
    result["columnDefinitions"] = [
        _NAME_COLUMN,
        *(
            {
                "name": c.name,
                "type": "string" if c.type == "date" else c.type,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            }
            for c in columns
        ),
    ]
    return result
