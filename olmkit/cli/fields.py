"""Reading fields of stored objects for tables and messages, and kubectl's ages.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from olmkit.timestamps import age, parse_time

__all__ = ["age", "at", "obj_name", "obj_namespace", "parse_time"]


def at(obj: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted path (``spec.updateStrategy.registryPoll``), or ``default``."""
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, Mapping):
            return default
        value = value.get(part)
    return default if value is None else value


def obj_name(obj: Mapping[str, Any]) -> str:
    """``metadata.name`` (``""`` when missing)."""
    return str(at(obj, "metadata.name", ""))


def obj_namespace(obj: Mapping[str, Any]) -> str:
    """``metadata.namespace`` (``""`` for cluster-scoped objects)."""
    return str(at(obj, "metadata.namespace", ""))
