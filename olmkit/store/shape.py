"""The shape every stored object needs, checked the same way by every backend.

:func:`checked_copy` is what the local backends store and what the ``kube`` backend checks
before a request, so a malformed object fails with the same :class:`~olmkit.store.errors.Invalid`
(naming the field) whichever backend is behind the store.

.. versionadded:: 0.3
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from olmkit.store.errors import Invalid
from olmkit.store.names import is_object_name

__all__ = ["check_name", "check_propagation", "checked_copy"]

Object = dict[str, Any]


def checked_copy(raw: Mapping[str, Any]) -> Object:
    """A private deep copy of ``raw``, checked for the shape every object needs.

    Empty ``labels``/``annotations`` are dropped and repeated finalizers kept once.

    Raises:
        Invalid: not a JSON-able mapping with ``apiVersion``, ``kind`` and ``metadata``, or
            malformed labels, annotations, finalizers or ownerReferences (``field`` names which).
    """
    if not isinstance(raw, Mapping):
        raise Invalid(f"an object is a mapping, not {type(raw).__name__}")
    kind = raw.get("kind")
    meta = raw.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    ref: dict[str, Any] = {
        "kind": str(kind or ""),
        "name": str(name or ""),
        "namespace": ns if isinstance(ns, str) else None,
    }
    try:
        obj: Object = orjson.loads(orjson.dumps(raw))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise Invalid(f"not JSON-able: {exc}", **ref) from None
    if not isinstance(obj.get("apiVersion"), str) or not obj["apiVersion"]:
        raise Invalid("apiVersion is required", field="apiVersion", **ref)
    if not isinstance(kind, str) or not kind:
        raise Invalid("kind is required", field="kind", **ref)
    if not isinstance(meta, Mapping):
        raise Invalid("metadata is required", field="metadata", **ref)
    meta = obj["metadata"]
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is None:
            meta.pop(field, None)
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise Invalid("must map strings to strings", field=f"metadata.{field}", **ref)
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) and f for f in finalizers)
    ):
        raise Invalid("must be a list of names", field="metadata.finalizers", **ref)
    if finalizers is not None:
        meta["finalizers"] = list(dict.fromkeys(finalizers))
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            raise Invalid("must be a list", field="metadata.ownerReferences", **ref)
        for n, owner in enumerate(refs):
            if not isinstance(owner, dict) or not all(
                isinstance(owner.get(f), str) and owner.get(f) for f in ("apiVersion", "kind", "name", "uid")
            ):
                raise Invalid("needs apiVersion, kind, name and uid", field=f"metadata.ownerReferences[{n}]", **ref)
    return obj


def check_propagation(propagation: str, kind: str, namespace: str | None, name: str) -> None:
    """Refuse a deletion propagation policy the store does not know.

    Raises:
        Invalid: not ``Background`` or ``Orphan``.
    """
    if propagation not in ("Background", "Orphan"):
        raise Invalid(
            f"unknown propagation policy {propagation!r} (Background or Orphan)",
            kind=kind,
            namespace=namespace,
            name=name,
        )


def check_name(name: str, kind: str, namespace: str | None) -> None:
    """Refuse a ``metadata.name`` Kubernetes would refuse.

    Raises:
        Invalid: not an RFC 1123 subdomain (``field`` is ``metadata.name``).
    """
    if not is_object_name(name):
        raise Invalid(
            f"invalid name {name!r}: lower-case letters, digits, '-' and '.', starting and ending "
            "with a letter or digit, at most 253 characters",
            kind=kind,
            namespace=namespace,
            name=name,
            field="metadata.name",
        )
