"""Resolver case files: a compact catalog + manifests description turned into a real request.

A case (YAML)::

    description: what upstream does
    namespace: operators              # default "operators"
    catalogs:
      cat:                            # CatalogSource name
        namespace: operators          # default: the case namespace
        priority: 0
        packages:
          a:
            default: stable           # default channel (default: first channel)
            channels:
              stable:                 # entries, head first or in any order
                - a.v2.0.0 replaces a.v1.0.0 skips a.v0.9.0 range >=0.1.0 <2.0.0
                - a.v1.0.0
            bundles:                  # name: property shorthands (the package property is added)
              a.v2.0.0: [gvk g/v1/A, needs-gvk g/v1/B, needs-package b >=1.0.0, label x, needs-label x,
                         deprecated, {type: raw, value: ...}]
    subscriptions:
      - {name: a, package: a, channel: stable, source: cat, sourceNamespace: operators,
         startingCSV: ..., installed: a.v1.0.0}
    installed:                        # installed CSVs (annotation from shorthands; version from the name)
      - {name: a.v1.0.0, properties: [...]}          # or raw: true -> no annotation
    manifests: []                     # extra raw manifests (OperatorGroups ...); one OperatorGroup is added
    operatorGroups: 1                 # how many OperatorGroups to add
    expect:
      status: ok | unsatisfiable | error
      steps: ["cat/operators/stable/a.v2.0.0 replaces a.v1.0.0", ...]   # in order
      message: exact text   # or messageContains
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from olmkit.resolver.manifests import Manifest, build_request

PROPS_ANNOTATION = "operatorframework.io/properties"


def version_of(name: str) -> str:
    match = re.search(r"\.v(\d.*)$", name)
    return match.group(1) if match else "0.0.0"


def _gvk(text: str) -> dict[str, str]:
    group, version, kind = text.split("/")
    return {"group": group, "version": version, "kind": kind}


def prop(item: Any) -> dict[str, Any]:
    if isinstance(item, dict):
        return item
    word, _, rest = str(item).partition(" ")
    if word == "gvk":
        return {"type": "olm.gvk", "value": _gvk(rest)}
    if word == "needs-gvk":
        return {"type": "olm.gvk.required", "value": _gvk(rest)}
    if word == "needs-package":
        name, _, rng = rest.partition(" ")
        return {"type": "olm.package.required", "value": {"packageName": name, "versionRange": rng}}
    if word == "label":
        return {"type": "olm.label", "value": {"label": rest}}
    if word == "needs-label":
        return {"type": "olm.label.required", "value": {"label": rest}}
    if word == "deprecated":
        return {"type": "olm.deprecated", "value": {}}
    raise ValueError(f"unknown property shorthand {item!r}")


def _entry(text: str) -> dict[str, Any]:
    words = text.split()
    entry: dict[str, Any] = {"name": words[0]}
    i = 1
    while i < len(words):
        if words[i] == "replaces":
            entry["replaces"] = words[i + 1]
            i += 2
        elif words[i] == "skips":
            entry.setdefault("skips", []).append(words[i + 1])
            i += 2
        elif words[i] == "range":
            rng = []
            i += 1
            while i < len(words) and words[i] not in ("replaces", "skips"):
                rng.append(words[i])
                i += 1
            entry["skipRange"] = " ".join(rng)
        else:
            raise ValueError(f"bad channel entry {text!r}")
    return entry


def _package_blobs(name: str, spec: dict[str, Any]) -> list[dict[str, Any]]:
    channels = spec.get("channels") or {}
    blobs: list[dict[str, Any]] = [
        {"schema": "olm.package", "name": name, "defaultChannel": spec.get("default") or next(iter(channels))}
    ]
    for ch, entries in channels.items():
        blobs.append({"schema": "olm.channel", "package": name, "name": ch, "entries": [_entry(e) for e in entries]})
    for bundle, props in (spec.get("bundles") or {}).items():
        properties = [{"type": "olm.package", "value": {"packageName": name, "version": version_of(bundle)}}]
        properties += [prop(p) for p in props or []]
        blobs.append(
            {
                "schema": "olm.bundle",
                "package": name,
                "name": bundle,
                "image": f"example.invalid/{bundle}",
                "properties": properties,
            }
        )
    return blobs


def case_manifests(case: dict[str, Any], root: Path) -> list[Manifest]:
    """Write the case's catalogs under ``root`` and return every manifest."""
    ns = case.get("namespace", "operators")
    objs: list[dict[str, Any]] = []
    for cat_name, cat in (case.get("catalogs") or {}).items():
        cat_ns = cat.get("namespace", ns)
        directory = root / f"{cat_ns}-{cat_name}"
        directory.mkdir(parents=True, exist_ok=True)
        blobs = [b for pkg, spec in (cat.get("packages") or {}).items() for b in _package_blobs(pkg, spec)]
        (directory / "catalog.json").write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in blobs))
        spec = {"sourceType": "file", "path": str(directory)}
        if "priority" in cat:
            spec["priority"] = cat["priority"]
        objs.append({"kind": "CatalogSource", "metadata": {"name": cat_name, "namespace": cat_ns}, "spec": spec})
    for _ in range(case.get("operatorGroups", 1)):
        objs.append({"kind": "OperatorGroup", "metadata": {"name": f"og{_}", "namespace": ns}})
    for sub in case.get("subscriptions") or []:
        spec = {
            "name": sub["package"],
            "source": sub.get("source", "cat"),
            "sourceNamespace": sub.get("sourceNamespace", ns),
        }
        for key in ("channel", "startingCSV"):
            if key in sub:
                spec[key] = sub[key]
        status = {}
        if "installed" in sub:
            status = {"installedCSV": sub["installed"], "currentCSV": sub["installed"]}
        objs.append(
            {
                "kind": "Subscription",
                "metadata": {"name": sub.get("name", sub["package"]), "namespace": ns},
                "spec": spec,
                "status": status,
            }
        )
    for csv in case.get("installed") or []:
        name = csv["name"]
        meta: dict[str, Any] = {"name": name, "namespace": ns}
        if not csv.get("raw"):
            props = [prop(p) for p in csv.get("properties") or []]
            if "package" in csv:
                props.insert(
                    0, {"type": "olm.package", "value": {"packageName": csv["package"], "version": version_of(name)}}
                )
            meta["annotations"] = {PROPS_ANNOTATION: json.dumps({"properties": props})}
        objs.append(
            {
                "kind": "ClusterServiceVersion",
                "metadata": meta,
                "spec": {"version": version_of(name), **(csv.get("spec") or {})},
            }
        )
    objs += case.get("manifests") or []
    return [Manifest(o, str(root / "case.yaml")) for o in objs]


def case_request(case: dict[str, Any], root: Path, pm: Any, *, cache: bool = False) -> Any:
    """The ResolutionRequest of a case (its catalogs written under ``root``)."""
    return build_request(
        case_manifests(case, root),
        pm=pm,
        namespace=case.get("namespace", "operators"),
        global_namespace=case.get("globalNamespace", "olm"),
        cache=cache,
    )


def run_case(case: dict[str, Any], root: Path, pm: Any) -> Any:
    """Resolve a case through the plugin manager's ``olmkit_resolve``."""
    return pm.hook.olmkit_resolve(request=case_request(case, root, pm))


def step_text(step: Any) -> str:
    text = f"{step.catalog}/{step.catalog_namespace}/{step.channel}/{step.bundle}"
    return text + (f" replaces {step.replaces}" if step.replaces else "")
