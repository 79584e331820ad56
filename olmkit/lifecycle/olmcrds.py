"""The CustomResourceDefinitions of OLM's own kinds, generated from olmkit's model.

On a cluster, OLM's kinds (``operators.coreos.com``: CatalogSource, ClusterServiceVersion,
InstallPlan, OLMConfig, Operator, OperatorCondition, OperatorGroup, Subscription; the same
eight upstream OLM installs) are custom resources: a CustomResourceDefinition each.
:func:`olm_crds` makes them (``apiextensions.k8s.io/v1``) from what olmkit already knows:

* names, short names and scope from :mod:`olmkit.lifecycle.kinds` (``csv``, ``sub``, ``ip``,
  ``catsrc``, ``og`` ..., as upstream's CRDs), category ``olm``;
* the served versions from :data:`olmkit.lifecycle.schemas.SERVED` (OperatorGroup ``v1`` and
  ``v1alpha2``, OperatorCondition ``v2`` and ``v1``), the storage version from the kind's
  preferred ``apiVersion``;
* the structural OpenAPI v3 schema from :data:`olmkit.lifecycle.schemas.SCHEMAS` (the schema
  strict validation checks objects against), whole under :func:`openapi_schema`;
* upstream's printer columns (:func:`printer_columns`) and the ``status`` subresource.

``olmkit serve`` describes the same kinds with the same schemas and columns when no CRD is
stored, so ``kubectl explain`` and ``kubectl get`` read the same before and after
``olmkit cluster init``.

.. versionadded:: 0.3
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from olmkit.lifecycle.kinds import CRD, KINDS, Kind
from olmkit.lifecycle.schemas import SCHEMAS, SERVED

__all__ = ["GROUP", "OLM_KINDS", "olm_crd", "olm_crds", "openapi_schema", "printer_columns"]

#: OLM's API group.
GROUP: Final = "operators.coreos.com"

#: OLM's kinds, by plural (the order upstream's CRD files sort in).
OLM_KINDS: Final[tuple[Kind, ...]] = tuple(
    sorted((k for k in KINDS.values() if k.group == GROUP), key=lambda k: k.plural)
)


def _column(name: str, json_path: str, description: str = "", type_: str = "string") -> dict[str, Any]:
    column = {"name": name, "type": type_, "jsonPath": json_path}
    if description:
        column["description"] = description
    return column


# Upstream's additionalPrinterColumns (deploy/chart/crds of operator-lifecycle-manager).
_COLUMNS: Final[Mapping[str, tuple[dict[str, Any], ...]]] = {
    "ClusterServiceVersion": (
        _column("Display", ".spec.displayName", "The name of the CSV"),
        _column("Version", ".spec.version", "The version of the CSV"),
        _column("Replaces", ".spec.replaces", "The name of a CSV that this one replaces"),
        _column("Phase", ".status.phase"),
    ),
    "Subscription": (
        _column("Package", ".spec.name", "The package subscribed to"),
        _column("Source", ".spec.source", "The catalog source for the specified package"),
        _column("Channel", ".spec.channel", "The channel of updates to subscribe to"),
    ),
    "InstallPlan": (
        _column(
            "CSV", ".spec.clusterServiceVersionNames[0]", "The first CSV in the list of clusterServiceVersionNames"
        ),
        _column("Approval", ".spec.approval", "The approval mode"),
        _column("Approved", ".spec.approved", type_="boolean"),
    ),
    "CatalogSource": (
        _column("Display", ".spec.displayName", "The pretty name of the catalog"),
        _column("Type", ".spec.sourceType", "The type of the catalog"),
        _column("Publisher", ".spec.publisher", "The publisher of the catalog"),
        _column("Age", ".metadata.creationTimestamp", type_="date"),
    ),
}

_API_VERSION: Final = {
    "type": "string",
    "description": "APIVersion defines the versioned schema of this representation of an object.",
}
_KIND: Final = {
    "type": "string",
    "description": "Kind is a string value representing the REST resource this object represents.",
}


def printer_columns(kind: str) -> list[dict[str, Any]]:
    """The ``additionalPrinterColumns`` of one of OLM's kinds (``[]``: kubectl shows NAME and AGE)."""
    return [dict(c) for c in _COLUMNS.get(kind, ())]


def openapi_schema(group: str, kind: str) -> dict[str, Any] | None:
    """The whole ``openAPIV3Schema`` of a built-in kind (apiVersion, kind, metadata, spec, status ...).

    ``None`` when the kind declares no fields (:func:`olmkit.lifecycle.schemas.builtin_schema`).
    """
    declared = SCHEMAS.get((group, kind))
    if declared is None:
        return None
    schema = copy.deepcopy(dict(declared))
    schema["description"] = schema.get("description") or f"{kind} of {group or 'core'}."
    schema["properties"] = {
        "apiVersion": dict(_API_VERSION),
        "kind": dict(_KIND),
        "metadata": {"type": "object"},
        **schema.get("properties", {}),
    }
    return schema


def olm_crd(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of one of OLM's kinds (one of :data:`OLM_KINDS`)."""
    storage = kind.api_version.rpartition("/")[2]
    schema = openapi_schema(kind.group, kind.kind)
    if schema is None:  # pragma: no cover - every OLM kind declares its fields
        raise ValueError(f"no schema for {kind.kind}")
    versions = []
    # the storage version first, then the others as SERVED lists them
    for version in sorted(SERVED[(kind.group, kind.kind)], key=lambda v: v != storage):
        entry: dict[str, Any] = {
            "name": version,
            "served": True,
            "storage": version == storage,
            "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
            "subresources": {"status": {}},
        }
        columns = printer_columns(kind.kind)
        if columns:
            entry["additionalPrinterColumns"] = columns
        versions.append(entry)
    names: dict[str, Any] = {
        "kind": kind.kind,
        "listKind": f"{kind.kind}List",
        "plural": kind.plural,
        "singular": kind.kind.lower(),
        "categories": ["olm"],
    }
    if kind.short_names:
        names["shortNames"] = list(kind.short_names)
    return {
        "apiVersion": CRD.api_version,
        "kind": CRD.kind,
        "metadata": {"name": f"{kind.plural}.{kind.group}", "labels": {"app.kubernetes.io/managed-by": "olmkit"}},
        "spec": {
            "group": kind.group,
            "names": names,
            "scope": "Namespaced" if kind.namespaced else "Cluster",
            "versions": versions,
        },
    }


def olm_crds() -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of every one of OLM's kinds, by plural."""
    return [olm_crd(kind) for kind in OLM_KINDS]
