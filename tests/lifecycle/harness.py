"""Catalogs for lifecycle tests, and the cluster they run on (:class:`olmkit.testing.EmbeddedCluster`).

Catalogs are written as FBC with inline bundle manifests (``olm.bundle.object``), built from
a compact description (:class:`B`) by :func:`write_catalog`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from olmkit.testing import EmbeddedCluster as Cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: every install mode (``B(install_modes=ALL_MODES)`` supports them all)
ALL_MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
V1A1 = "operators.coreos.com/v1alpha1"

__all__ = [
    "EXAMPLES",
    "V1A1",
    "B",
    "Cluster",
    "bundle_blob",
    "crd",
    "csv_manifest",
    "manifests",
    "seed_store",
    "write_catalog",
]


def seed_store(path: Path, package: str) -> None:
    """An SQLite store with the example catalog in ``olm``, an OperatorGroup and a Subscription in ``operators``."""
    from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION
    from olmkit.store import SqliteStore

    with SqliteStore(str(path)) as store:
        store.create(
            {
                "apiVersion": V1A1,
                "kind": "CatalogSource",
                "metadata": {
                    "name": "examples",
                    "namespace": "olm",
                    "annotations": {MANIFEST_DIR_ANNOTATION: str(EXAMPLES)},
                },
                "spec": {"sourceType": "file", "path": "catalog"},
            }
        )
        store.create(
            {
                "apiVersion": "operators.coreos.com/v1",
                "kind": "OperatorGroup",
                "metadata": {"name": "og", "namespace": "operators"},
            }
        )
        store.create(
            {
                "apiVersion": V1A1,
                "kind": "Subscription",
                "metadata": {"name": package, "namespace": "operators"},
                "spec": {"name": package, "source": "examples", "sourceNamespace": "olm", "channel": "stable"},
            }
        )


# --------------------------------------------------------------------------- test catalogs


def plural(kind: str) -> str:
    return kind.lower() + "s"


def crd(
    group: str, kind: str, versions: Sequence[str] = ("v1",), schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A CRD serving ``versions`` (the last is the storage version)."""
    schema = schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural(kind)}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural(kind), "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": "Namespaced",
            "versions": [
                {"name": v, "served": True, "storage": i == len(versions) - 1, "schema": {"openAPIV3Schema": schema}}
                for i, v in enumerate(versions)
            ],
        },
    }


@attrs.frozen
class B:
    """A bundle of a test catalog."""

    package: str
    version: str
    replaces: str | None = None
    skips: tuple[str, ...] = ()
    skip_range: str | None = None
    owns: tuple[tuple[str, str, str], ...] = ()  # (group, version, kind)
    requires: tuple[tuple[str, str, str], ...] = ()
    objects: tuple[Mapping[str, Any], ...] = ()
    crds: tuple[Mapping[str, Any], ...] | None = None  # default: one CRD per owned kind
    never_ready: bool = False
    inline: bool = True
    properties: tuple[Mapping[str, Any], ...] = ()
    install_modes: tuple[str, ...] | None = None  # the supported modes (None: the CSV declares none)
    spec: Mapping[str, Any] | None = attrs.field(default=None, eq=False)  # merged into the CSV's spec

    @property
    def name(self) -> str:
        return f"{self.package}.v{self.version}"


def csv_manifest(b: B) -> dict[str, Any]:
    annotations = {"olmkit.io/simulate": "never-ready"} if b.never_ready else {}
    spec: dict[str, Any] = {
        "displayName": b.package,
        "version": b.version,
        "customresourcedefinitions": {
            "owned": [{"name": f"{plural(k)}.{g}", "version": v, "kind": k} for g, v, k in b.owns],
            "required": [{"name": f"{plural(k)}.{g}", "version": v, "kind": k} for g, v, k in b.requires],
        },
        "install": {
            "strategy": "deployment",
            "spec": {
                "permissions": [
                    {
                        "serviceAccountName": b.package,
                        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
                    }
                ],
                "deployments": [
                    {
                        "name": b.package,
                        "spec": {
                            "replicas": 1,
                            "selector": {"matchLabels": {"app": b.package}},
                            "template": {
                                "metadata": {"labels": {"app": b.package}, "annotations": annotations},
                                "spec": {
                                    "serviceAccountName": b.package,
                                    "containers": [{"name": "m", "image": f"example.invalid/{b.package}:{b.version}"}],
                                },
                            },
                        },
                    }
                ],
            },
        },
    }
    if b.replaces:
        spec["replaces"] = b.replaces
    if b.install_modes is not None:
        spec["installModes"] = [{"type": t, "supported": t in b.install_modes} for t in ALL_MODES]
    spec.update(b.spec or {})
    return {"apiVersion": V1A1, "kind": "ClusterServiceVersion", "metadata": {"name": b.name}, "spec": spec}


def manifests(b: B) -> list[dict[str, Any]]:
    """The bundle's manifests: its CSV, its CRDs and its extra objects."""
    crds: list[Mapping[str, Any]]
    if b.crds is not None:
        crds = list(b.crds)
    else:
        by_kind: dict[tuple[str, str], list[str]] = {}
        for g, v, k in b.owns:
            by_kind.setdefault((g, k), []).append(v)
        crds = [crd(g, k, vs) for (g, k), vs in by_kind.items()]
    return [csv_manifest(b), *map(dict, crds), *map(dict, b.objects)]


def bundle_blob(b: B) -> dict[str, Any]:
    props: list[dict[str, Any]] = [{"type": "olm.package", "value": {"packageName": b.package, "version": b.version}}]
    props += [{"type": "olm.gvk", "value": {"group": g, "version": v, "kind": k}} for g, v, k in b.owns]
    props += [{"type": "olm.gvk.required", "value": {"group": g, "version": v, "kind": k}} for g, v, k in b.requires]
    props += [dict(p) for p in b.properties]
    if b.inline:
        props += [
            {"type": "olm.bundle.object", "value": {"data": base64.b64encode(orjson.dumps(m)).decode()}}
            for m in manifests(b)
        ]
    return {
        "schema": "olm.bundle",
        "package": b.package,
        "name": b.name,
        "image": f"example.invalid/{b.package}-bundle:v{b.version}",
        "properties": props,
    }


def write_catalog(root: Path, bundles: Iterable[B], channels: Mapping[str, Sequence[str]] | None = None) -> Path:
    """Write an FBC directory: one package file each; channel ``stable`` lists every bundle unless ``channels`` says."""
    root.mkdir(parents=True, exist_ok=True)
    for f in root.glob("*.json"):
        f.unlink()
    by_package: dict[str, list[B]] = {}
    for b in bundles:
        by_package.setdefault(b.package, []).append(b)
    for package, items in by_package.items():
        blobs: list[dict[str, Any]] = [{"schema": "olm.package", "name": package, "defaultChannel": "stable"}]
        names = list((channels or {}).get(package) or [b.name for b in items])
        entries = []
        for b in items:
            if b.name not in names:
                continue
            entry: dict[str, Any] = {"name": b.name}
            if b.replaces:
                entry["replaces"] = b.replaces
            if b.skips:
                entry["skips"] = list(b.skips)
            if b.skip_range:
                entry["skipRange"] = b.skip_range
            entries.append(entry)
        blobs.append({"schema": "olm.channel", "package": package, "name": "stable", "entries": entries})
        blobs += [bundle_blob(b) for b in items if b.name in names]
        (root / f"{package}.json").write_bytes(b"\n".join(orjson.dumps(x) for x in blobs) + b"\n")
    return root
