"""Write the bundle directories of the example catalog (run from the repository root).

Each ``olm.bundle`` of ``examples/catalog`` names its bundle directory in ``image``
(``../../bundles/<bundle>``, relative to the catalog file); this script writes those
directories in the bundle format (``manifests/`` with the CSV, its CRDs and a few optional
objects; ``metadata/annotations.yaml``, ``dependencies.yaml``, ``properties.yaml``) so that
they say what the catalog says about each bundle. Re-run it after changing the catalog:

    .venv/bin/python examples/bundles/generate.py
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from olmkit.catalog import load_catalog
from olmkit.manager import get_plugin_manager

ROOT = Path(__file__).resolve().parent
CATALOG = ROOT.parent / "catalog"

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 1},
                "version": {"type": "string"},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def plural(kind: str) -> str:
    return kind.lower() + ("es" if kind.lower().endswith("s") else "s")


def crd(group: str, kind: str, versions: list[str]) -> dict[str, Any]:
    storage = sorted(versions)[-1]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural(kind)}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural(kind), "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {"name": v, "served": True, "storage": v == storage, "schema": {"openAPIV3Schema": SCHEMA}}
                for v in sorted(versions)
            ],
        },
    }


def csv(
    bundle: Any, package: str, entry: Any, owned: dict[tuple[str, str], list[str]], required: list[dict[str, str]]
) -> dict[str, Any]:
    name = bundle.package
    annotations: dict[str, str] = {"capabilities": "Basic Install"}
    if entry is not None and entry.skip_range:
        annotations["olm.skipRange"] = entry.skip_range
    rules = [
        {
            "apiGroups": [""],
            "resources": ["configmaps", "secrets", "services"],
            "verbs": ["get", "list", "watch", "create", "update", "delete"],
        },
    ] + [{"apiGroups": [g], "resources": ["*"], "verbs": ["*"]} for g in sorted({g for g, _ in owned})]
    cluster_rules = [
        {"apiGroups": [r["group"]], "resources": [plural(r["kind"])], "verbs": ["get", "list", "watch"]}
        for r in required
    ]
    install: dict[str, Any] = {
        "permissions": [{"serviceAccountName": name, "rules": rules}],
        "deployments": [
            {
                "name": name,
                "label": {"app.kubernetes.io/name": name},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                    "template": {
                        "metadata": {"labels": {"app.kubernetes.io/name": name}},
                        "spec": {
                            "serviceAccountName": name,
                            "containers": [{"name": "manager", "image": f"example.invalid/{name}:v{bundle.version}"}],
                        },
                    },
                },
            }
        ],
    }
    if cluster_rules:
        install["clusterPermissions"] = [{"serviceAccountName": name, "rules": cluster_rules}]
    spec: dict[str, Any] = {
        "displayName": " ".join(w.capitalize() for w in name.split("-")),
        "description": f"{name} {bundle.version}, an example operator of the olmkit example catalog.",
        "version": bundle.version,
        "maturity": "stable",
        "provider": {"name": "olmkit examples"},
        "installModes": [
            {"type": "OwnNamespace", "supported": True},
            {"type": "SingleNamespace", "supported": True},
            {"type": "MultiNamespace", "supported": False},
            {"type": "AllNamespaces", "supported": True},
        ],
        "customresourcedefinitions": {
            "owned": [
                {"name": f"{plural(k)}.{g}", "version": v, "kind": k, "displayName": k}
                for (g, k), vs in sorted(owned.items())
                for v in sorted(vs)
            ],
            "required": [
                {
                    "name": f"{plural(r['kind'])}.{r['group']}",
                    "version": r["version"],
                    "kind": r["kind"],
                    "displayName": r["kind"],
                }
                for r in required
            ],
        },
        "install": {"strategy": "deployment", "spec": install},
    }
    if entry is not None and entry.replaces:
        spec["replaces"] = entry.replaces
    if entry is not None and entry.skips:
        spec["skips"] = list(entry.skips)
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": bundle.name, "annotations": annotations},
        "spec": spec,
    }


def extra_objects(bundle: Any) -> list[dict[str, Any]]:
    """postgres-operator carries optional objects: one that keeps its name, one renamed in 2.3.0."""
    if bundle.package != "postgres-operator":
        return []
    release = tuple(int(x) for x in bundle.version.split("-")[0].split("."))
    alerts = "postgres-operator-alerts" if release < (2, 3, 0) else "postgres-operator-alerts-v2"
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "postgres-operator-defaults"},
            "data": {"version": bundle.version, "max_connections": "100"},
        },
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": alerts},
            "spec": {"groups": [{"name": "postgres", "rules": [{"alert": "PostgresDown", "expr": "up == 0"}]}]},
        },
    ]


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def main() -> None:
    pm = get_plugin_manager()
    catalog = load_catalog(CATALOG, pm.registry, cache=False)
    for child in ROOT.iterdir():
        if child.is_dir():
            shutil.rmtree(child)
    for package, bundles in catalog.bundles.items():
        pkg = catalog.packages[package]
        for bundle in bundles.values():
            channels = sorted(
                c for c, ch in catalog.channels[package].items() if any(e.name == bundle.name for e in ch.entries)
            )
            default = pkg.default_channel if pkg.default_channel in channels else channels[0]
            entry = next(e for e in catalog.channels[package][default].entries if e.name == bundle.name)
            owned: dict[tuple[str, str], list[str]] = {}
            required: list[dict[str, str]] = []
            dependencies: list[dict[str, Any]] = []
            properties: list[dict[str, Any]] = []
            for prop in bundle.properties:
                if prop.type == "olm.gvk":
                    owned.setdefault((prop.value["group"], prop.value["kind"]), []).append(prop.value["version"])
                elif prop.type == "olm.gvk.required":
                    required.append(dict(prop.value))
                    dependencies.append({"type": "olm.gvk", "value": dict(prop.value)})
                elif prop.type == "olm.package.required":
                    value = {"packageName": prop.value["packageName"], "version": prop.value["versionRange"]}
                    dependencies.append({"type": "olm.package", "value": value})
                elif prop.type == "olm.constraint":
                    dependencies.append({"type": "olm.constraint", "value": prop.value})
                elif prop.type != "olm.package":
                    properties.append({"type": prop.type, "value": prop.value})
            out = ROOT / bundle.name
            manifests = [csv(bundle, package, entry, owned, required)]
            manifests += [crd(g, k, vs) for (g, k), vs in sorted(owned.items())]
            manifests += extra_objects(bundle)
            for obj in manifests:
                kind = obj["kind"].lower()
                write(out / "manifests" / f"{obj['metadata']['name']}.{kind}.yaml", obj)
            annotations = {
                "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
                "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
                "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
                "operators.operatorframework.io.bundle.package.v1": package,
                "operators.operatorframework.io.bundle.channels.v1": ",".join(channels),
            }
            if pkg.default_channel in channels:  # the default must be one of the bundle's channels
                annotations["operators.operatorframework.io.bundle.channel.default.v1"] = pkg.default_channel
            write(out / "metadata" / "annotations.yaml", {"annotations": annotations})
            if dependencies:
                write(out / "metadata" / "dependencies.yaml", {"dependencies": dependencies})
            if properties:
                write(out / "metadata" / "properties.yaml", {"properties": properties})


if __name__ == "__main__":
    main()
