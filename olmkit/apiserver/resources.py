"""The resources the API server serves: built-in kinds plus the stored CustomResourceDefinitions.

A :class:`Resource` is what discovery lists and a URL addresses (group, version, plural); a
:class:`Catalog` is every resource at one moment, rebuilt when a CustomResourceDefinition
changes, so that a stored CRD becomes a served resource at once.

Kinds of the Kubernetes API groups are served as built-in resources (strategic merge patch
works on them); every other group is served as custom resources, as it would be on a cluster
where a CRD defines it.

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from olmkit.lifecycle import crds, olmcrds
from olmkit.lifecycle.kinds import CRD, KINDS, Kind

__all__ = ["BUILTIN_GROUPS", "Catalog", "Column", "Resource", "builtin_resources", "resources_of_crd"]

#: API groups whose kinds are the API server's own (everything else is a custom resource).
BUILTIN_GROUPS: Final = frozenset(
    {
        "",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "coordination.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
        "networking.k8s.io",
        "certificates.k8s.io",
        "events.k8s.io",
        "discovery.k8s.io",
        "node.k8s.io",
    }
)

VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS: Final = ("get", "patch", "update")


@attrs.frozen
class Column:
    """A printer column: a ``Table`` cell computed from a JSONPath (``.spec.replicas``, ``.a[0].b``).

    A path with several ``{...}`` parts is a template: each part is replaced by its value (0 when
    missing), as kubectl's ``READY 1/2``. ``count`` shows how many entries the value has (a
    ConfigMap's ``DATA``).
    """

    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    priority: int = 0
    format: str = ""
    count: bool = False

    @classmethod
    def from_crd(cls, raw: Mapping[str, Any]) -> Column:
        """A CRD's ``additionalPrinterColumns`` entry (``jsonPath``, or ``JSONPath`` in v1beta1)."""
        return cls(
            name=str(raw.get("name") or ""),
            json_path=str(raw.get("jsonPath") or raw.get("JSONPath") or ""),
            type=str(raw.get("type") or "string"),
            description=str(raw.get("description") or ""),
            priority=int(raw.get("priority") or 0),
            format=str(raw.get("format") or ""),
        )


AGE: Final = Column("Age", ".metadata.creationTimestamp", "date", "When the object was created.")


@attrs.frozen
class Resource:
    """One served resource: where it lives in the API and how it is shown."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    columns: tuple[Column, ...] = (AGE,)
    schema: Mapping[str, Any] | None = None
    custom: bool = False
    status: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified(self) -> str:
        """``plural.group`` as the API's messages name a resource (``configmaps`` for the core group)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """``Kind.group`` as the API's validation messages name a kind."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


# Printer columns of the built-in kinds, as the Kubernetes API server prints them (OLM's kinds
# take theirs from the CRDs `olmkit cluster init` installs: olmkit.lifecycle.olmcrds).
_COLUMNS: Final[Mapping[tuple[str, str], tuple[Column, ...]]] = {
    ("apps", "Deployment"): (
        Column("Ready", "{.status.readyReplicas}/{.spec.replicas}", description="Ready pods of the wanted number"),
        Column("Up-to-date", ".status.updatedReplicas", "integer"),
        Column("Available", ".status.availableReplicas", "integer"),
        AGE,
    ),
    ("", "Namespace"): (Column("Status", ".status.phase"), AGE),
    ("", "ConfigMap"): (Column("Data", ".data", "integer", count=True), AGE),
    ("", "Secret"): (Column("Type", ".type"), Column("Data", ".data", "integer", count=True), AGE),
    ("", "Event"): (
        Column("Last Seen", ".lastTimestamp", "date"),
        Column("Type", ".type"),
        Column("Reason", ".reason"),
        Column("Object", "{.involvedObject.kind}/{.involvedObject.name}"),
        Column("Message", ".message"),
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (
        Column("Created At", ".metadata.creationTimestamp", "string", format="date-time"),
    ),
    ("coordination.k8s.io", "Lease"): (Column("Holder", ".spec.holderIdentity"), AGE),
}

#: Kinds the API server serves beyond the lifecycle's table (so that clients find them).
_EXTRA_KINDS: Final = (
    Kind("Pod", "v1", "pods", ("po",)),
    Kind("Node", "v1", "nodes", ("no",), False),
    Kind("Job", "batch/v1", "jobs"),
)


#: Kinds without a ``status`` subresource (the RBAC kinds and the data kinds have no status;
#: ClusterServiceVersion has one, as upstream's CRD declares).
_NO_STATUS: Final = frozenset(
    {"ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
)


#: Kinds in kubectl's ``all`` category (``kubectl get all``), as the API server lists them.
_ALL: Final = frozenset({("", "Pod"), ("", "Service"), ("apps", "Deployment"), ("batch", "Job")})


def _categories(group: str, kind: str) -> tuple[str, ...]:
    if group == "operators.coreos.com":
        return ("olm",)
    return ("all",) if (group, kind) in _ALL else ()


def _columns(group: str, kind: str) -> tuple[Column, ...]:
    if group == olmcrds.GROUP:
        return tuple(Column.from_crd(c) for c in olmcrds.printer_columns(kind)) or (AGE,)
    return _COLUMNS.get((group, kind), (AGE,))


def builtin_resources() -> list[Resource]:
    """The resources served without a stored CRD: the lifecycle's kinds and a few more."""
    found = []
    for kind in (*KINDS.values(), *_EXTRA_KINDS):
        group, _, version = kind.api_version.rpartition("/")
        found.append(
            Resource(
                group=group,
                version=version,
                kind=kind.kind,
                plural=kind.plural,
                namespaced=kind.namespaced,
                short_names=kind.short_names,
                categories=_categories(group, kind.kind),
                columns=_columns(group, kind.kind),
                schema=olmcrds.openapi_schema(group, kind.kind) if group == olmcrds.GROUP else None,
                custom=group not in BUILTIN_GROUPS,
                status=kind.kind not in _NO_STATUS,
            )
        )
    return found


def resources_of_crd(crd: Mapping[str, Any]) -> list[Resource]:
    """One resource per served version of a CustomResourceDefinition (none when it is malformed)."""
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return []
    names = spec.get("names")
    group = spec.get("group")
    if not isinstance(names, Mapping) or not isinstance(group, str) or not group:
        return []
    kind, plural = names.get("kind"), names.get("plural")
    if not isinstance(kind, str) or not isinstance(plural, str) or not kind or not plural:
        return []
    short = tuple(str(s) for s in names.get("shortNames") or () if isinstance(s, str))
    categories = tuple(str(s) for s in names.get("categories") or () if isinstance(s, str))
    found = []
    for version in crds.served_versions(crd):
        entry = next((v for v in spec.get("versions") or () if isinstance(v, Mapping) and v.get("name") == version), {})
        raw_columns = entry.get("additionalPrinterColumns") or spec.get("additionalPrinterColumns")
        columns = (
            tuple(Column.from_crd(c) for c in raw_columns if isinstance(c, Mapping))
            if isinstance(raw_columns, list) and raw_columns
            else (AGE,)
        )
        subresources = entry.get("subresources") or spec.get("subresources") or {}
        found.append(
            Resource(
                group=group,
                version=version,
                kind=kind,
                plural=plural,
                namespaced=spec.get("scope", "Namespaced") != "Cluster",
                short_names=short,
                categories=categories,
                columns=columns,
                schema=crds.schema_for(crd, version),
                custom=True,
                status=isinstance(subresources, Mapping) and "status" in subresources,
            )
        )
    return found


class Catalog:
    """Every served resource, by group and version, then by plural."""

    def __init__(self, resources: Iterable[Resource]) -> None:
        self.by_gv: dict[tuple[str, str], dict[str, Resource]] = {}
        for resource in resources:
            self.by_gv.setdefault((resource.group, resource.version), {})[resource.plural] = resource
        self.by_kind: dict[tuple[str, str, str], Resource] = {
            (r.group, r.version, r.kind): r for gv in self.by_gv.values() for r in gv.values()
        }

    @classmethod
    def build(cls, stored_crds: Sequence[Mapping[str, Any]]) -> Catalog:
        """The built-in resources, overridden (by group and kind) by the stored CRDs' resources."""
        custom = [r for crd in stored_crds for r in resources_of_crd(crd)]
        defined = {(r.group, r.kind) for r in custom}
        return cls([*(r for r in builtin_resources() if (r.group, r.kind) not in defined), *custom])

    def lookup(self, group: str, version: str, plural: str) -> Resource | None:
        return self.by_gv.get((group, version), {}).get(plural)

    def groups(self) -> dict[str, list[str]]:
        """Named groups (not the core one) and their versions, the preferred version first."""
        found: dict[str, list[str]] = {}
        for group, version in sorted(self.by_gv, key=lambda gv: (gv[0], _version_rank(gv[1]))):
            if group:
                found.setdefault(group, []).append(version)
        return found


def _version_rank(version: str) -> tuple[int, int, int]:
    """Kubernetes' version priority: GA before beta before alpha, then higher numbers first."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0)
    major, stage, minor = int(match[1]), match[2], int(match[3] or 0)
    return ({"alpha": 2, "beta": 1, None: 0}[stage], -major, -minor)


#: What a CRD is addressed by (for the catalog's refresh on CRD changes).
CRD_API_VERSION: Final = CRD.api_version
CRD_KIND: Final = CRD.kind
