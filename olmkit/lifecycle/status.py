"""Small helpers for the status of objects: conditions, owner references, durations.

.. versionadded:: 0.1
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from olmkit.errors import InputError

__all__ = [
    "find_condition",
    "owner_reference",
    "parse_duration",
    "remove_condition",
    "set_condition",
    "spec_of",
    "status_of",
]


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's ``spec`` (empty when missing or not an object)."""
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def status_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an object's ``status`` (empty when missing or not an object), to change and write back."""
    status = obj.get("status")
    return dict(status) if isinstance(status, Mapping) else {}


def find_condition(conditions: Sequence[Mapping[str, Any]] | None, type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_``, or ``None``."""
    for cond in conditions or ():
        if cond.get("type") == type_:
            return cond
    return None


def set_condition(
    conditions: Sequence[Mapping[str, Any]] | None,
    type_: str,
    status: str,
    *,
    reason: str = "",
    message: str = "",
    now: str,
) -> list[dict[str, Any]]:
    """Conditions with ``type_`` set; ``lastTransitionTime`` moves only when the status changes."""
    out = [dict(c) for c in conditions or ()]
    new: dict[str, Any] = {"type": type_, "status": status}
    if reason:
        new["reason"] = reason
    if message:
        new["message"] = message
    for i, cond in enumerate(out):
        if cond.get("type") != type_:
            continue
        same = all(cond.get(k) == new.get(k) for k in ("status", "reason", "message"))
        if same:
            return out
        new["lastTransitionTime"] = cond.get("lastTransitionTime", now) if cond.get("status") == status else now
        new["lastUpdateTime"] = now
        out[i] = new
        return out
    new["lastTransitionTime"] = now
    new["lastUpdateTime"] = now
    out.append(new)
    return out


def remove_condition(conditions: Sequence[Mapping[str, Any]] | None, *types: str) -> list[dict[str, Any]]:
    """Conditions without the given types."""
    return [dict(c) for c in conditions or () if c.get("type") not in types]


def owner_reference(owner: Mapping[str, Any], *, controller: bool = True, block: bool = False) -> dict[str, Any]:
    """An ownerReference to ``owner`` (as stored: needs ``metadata.uid``)."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": block,
    }


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str, *, field: str = "duration") -> float:
    """Seconds in a Go duration (``30m0s``, ``1h``, ``1.5s``).

    Raises:
        InputError: the text is not a Go duration.
    """
    raw = str(text).strip()
    pos, total = 0, 0.0
    for match in _DURATION.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not raw or pos != len(raw):
        raise InputError(f"{field}: {text!r} is not a duration such as 30m0s, 10s or 1h")
    return total
