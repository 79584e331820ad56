"""Deriving a bundle's properties as ``opm render`` does.

``olm.package`` from the annotations and the CSV's version; ``olm.gvk`` for every served
version of every CRD in ``manifests/`` and every owned API service; ``olm.gvk.required``
for every required one; ``dependencies.yaml`` mapped to requirements; ``properties.yaml``
and the CSV's ``olm.properties`` annotation kept. Rules broken on the way are problems of
the :class:`~olmkit.plugins.bundle_format._files.BundleFiles` they are read from.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from olmkit.catalog.semver import parse_range
from olmkit.plugins.bundle_format._files import BundleFiles, Manifest, get_path, obj_label, plain_json
from olmkit.plugins.bundle_format._vocabulary import (
    CONSTRAINT,
    CRD_API_VERSIONS,
    GVK,
    GVK_REQUIRED,
    LABEL_REQUIRED,
    PACKAGE,
    PACKAGE_REQUIRED,
    PROPERTIES_ANNOTATION,
)

__all__ = ["BundleProperties", "prop"]


def _canonical(value: Any) -> Any:
    """Plain JSON data with mapping keys sorted (how opm writes values it decoded from YAML)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def prop(ptype: str, value: Any) -> dict[str, Any]:
    return {"type": ptype, "value": _canonical(value)}


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _is_gvk(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(value.get(k), str) for k in ("group", "version", "kind"))


class BundleProperties(BundleFiles):
    """A bundle directory's files, and the properties derived from them."""

    def definitions(self, csv: Manifest, section: str, which: str) -> list[Mapping[str, Any]]:
        items = get_path(csv.obj, "spec", section, which)
        if items is None:
            return []
        label = obj_label(csv.obj)
        if not isinstance(items, list):
            self.problem(f"spec.{section}.{which} must be a list", csv.file, label)
            return []
        out = []
        for i, item in enumerate(items):
            field = f"spec.{section}.{which}[{i}]"
            if not isinstance(item, Mapping):
                self.problem(f"{field} must be an object", csv.file, label)
                continue
            keys = (
                ("name", "version", "kind") if section == "customresourcedefinitions" else ("group", "version", "kind")
            )
            missing = [k for k in keys if not isinstance(item.get(k), str) or not item.get(k)]
            if missing:
                self.problem(f"{field}: {', '.join(missing)} required", csv.file, label)
                continue
            if section == "customresourcedefinitions" and "." not in item["name"]:
                self.problem(f"{field}: name {item['name']!r} is not <plural>.<group>", csv.file, label)
                continue
            out.append(item)
        return out

    def crd_versions(self, crd: Manifest) -> tuple[str, str, list[tuple[str, bool]]] | None:
        """``(group, kind, [(version, served)])`` of a CRD, or ``None`` after reporting why not."""
        obj = crd.obj
        label = obj_label(obj)
        if obj.get("apiVersion") not in CRD_API_VERSIONS:
            self.problem(
                f"unsupported CRD apiVersion {obj.get('apiVersion')!r} (expected {' or '.join(CRD_API_VERSIONS)})",
                crd.file,
                label,
            )
            return None
        group = get_path(obj, "spec", "group")
        kind = get_path(obj, "spec", "names", "kind")
        if not isinstance(group, str) or not group or not isinstance(kind, str) or not kind:
            self.problem("spec.group and spec.names.kind are required", crd.file, label)
            return None
        versions: list[tuple[str, bool]] = []
        for i, v in enumerate(get_path(obj, "spec", "versions") or []):
            name = v.get("name") if isinstance(v, Mapping) else None
            if not isinstance(name, str) or not name:
                self.problem(f"spec.versions[{i}].name is required", crd.file, label)
                continue
            versions.append((name, v.get("served", True) is not False))
        single = get_path(obj, "spec", "version")  # v1beta1's deprecated single version, always served
        if isinstance(single, str) and single and single not in {n for n, _ in versions}:
            versions.append((single, True))
        if not versions:
            self.problem("the CRD declares no versions", crd.file, label)
        return group, kind, versions

    def provided_apis(self, csv: Manifest, crds: list[Manifest]) -> list[dict[str, str]]:
        provided: list[dict[str, str]] = []
        by_name: dict[str, tuple[Manifest, str, str, list[tuple[str, bool]]]] = {}
        for crd in crds:
            info = self.crd_versions(crd)
            if info is None:
                continue
            group, kind, versions = info
            by_name[str(crd.name)] = (crd, group, kind, versions)
            provided += [_gvk(group, name, kind) for name, served in versions if served]
        label = obj_label(csv.obj)
        for item in self.definitions(csv, "customresourcedefinitions", "owned"):
            found = by_name.get(item["name"])
            if found is None:
                self.problem(
                    f"owns CRD {item['name']} ({item['kind']} {item['version']}), which is not in manifests/",
                    csv.file,
                    label,
                )
                continue
            crd, group, kind, versions = found
            if kind != item["kind"]:
                self.problem(
                    f"owns CRD {item['name']} as kind {item['kind']}, but {self.rel(crd.file)} defines kind {kind}",
                    csv.file,
                    label,
                )
            if item["version"] not in {name for name, _ in versions}:
                self.problem(
                    f"owns CRD {item['name']} version {item['version']}, but {self.rel(crd.file)} has versions "
                    + ", ".join(name for name, _ in versions),
                    csv.file,
                    label,
                )
        for item in self.definitions(csv, "apiservicedefinitions", "owned"):
            provided.append(_gvk(item["group"], item["version"], item["kind"]))
        return provided

    def required_apis(self, csv: Manifest) -> list[dict[str, str]]:
        required = []
        for item in self.definitions(csv, "customresourcedefinitions", "required"):
            required.append(_gvk(item["name"].split(".", 1)[1], item["version"], item["kind"]))
        for item in self.definitions(csv, "apiservicedefinitions", "required"):
            required.append(_gvk(item["group"], item["version"], item["kind"]))
        return required

    def property_list(self, items: list[Any], file: Path, what: str, obj: str | None = None) -> list[dict[str, Any]]:
        out = []
        for i, item in enumerate(items):
            if isinstance(item, Mapping) and set(item) == {"property"}:
                item = item["property"]  # the spec also shows properties wrapped as {property: {type, value}}
            if not isinstance(item, Mapping):
                self.problem(f"{what}[{i}] must be an object with type and value", file, obj)
                continue
            ptype, value = item.get("type"), item.get("value")
            if not isinstance(ptype, str) or not ptype:
                self.problem(f"{what}[{i}].type is required and must be a string", file, obj)
                continue
            if value is None:
                self.problem(f"{what}[{i}].value is required ({ptype})", file, obj)
                continue
            out.append(prop(ptype, plain_json(value)))
        return out

    def declared_properties(self, csv: Manifest) -> list[dict[str, Any]]:
        declared: list[dict[str, Any]] = []
        found = self.metadata_doc("properties", "properties")
        if found is not None:
            declared += self.property_list(found[1], found[0], "properties")
        raw = get_path(csv.obj, "metadata", "annotations", PROPERTIES_ANNOTATION)
        if raw is not None:
            label = obj_label(csv.obj)
            try:
                items = orjson.loads(raw) if isinstance(raw, str | bytes) else None
            except orjson.JSONDecodeError as exc:
                self.problem(f"annotation {PROPERTIES_ANNOTATION} is not valid JSON: {exc}", csv.file, label)
                items = []
            if not isinstance(items, list):
                self.problem(
                    f"annotation {PROPERTIES_ANNOTATION} must be a JSON list of {{type, value}}", csv.file, label
                )
                items = []
            declared += self.property_list(items, csv.file, f"annotation {PROPERTIES_ANNOTATION}", label)
        return declared

    def dependencies(self) -> list[dict[str, Any]]:
        found = self.metadata_doc("dependencies", "dependencies")
        if found is None:
            return []
        file, items = found
        out = []
        for i, item in enumerate(items):
            field = f"dependencies[{i}]"
            if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
                self.problem(f"{field} must be an object with type and value", file)
                continue
            dtype, value = item["type"], item.get("value")
            if not isinstance(value, Mapping):
                self.problem(f"{field} ({dtype}): value must be an object", file)
                continue
            value = plain_json(value)
            if dtype == GVK:
                missing = [k for k in ("group", "version", "kind") if not isinstance(value.get(k), str) or not value[k]]
                if missing:
                    self.problem(f"{field} ({dtype}): {', '.join(missing)} required", file)
                    continue
                out.append(prop(GVK_REQUIRED, _gvk(value["group"], value["version"], value["kind"])))
            elif dtype == PACKAGE:
                name, rng = value.get("packageName"), value.get("version")
                if not isinstance(name, str) or not name or not isinstance(rng, str) or not rng:
                    self.problem(f"{field} ({dtype}): packageName and version (a version range) required", file)
                    continue
                try:
                    parse_range(rng)
                except ValueError as exc:
                    self.problem(f"{field} ({dtype}): version {rng!r} is not a valid range: {exc}", file)
                    continue
                out.append(prop(PACKAGE_REQUIRED, {"packageName": name, "versionRange": rng}))
            elif dtype == "olm.label":
                if not isinstance(value.get("label"), str) or not value["label"]:
                    self.problem(f"{field} ({dtype}): label required", file)
                    continue
                out.append(prop(LABEL_REQUIRED, value))
            elif dtype == CONSTRAINT:
                out.append(prop(CONSTRAINT, value))
            else:
                self.problem(
                    f"{field}: unsupported dependency type {dtype!r} (olm.gvk, olm.package, olm.label, olm.constraint)",
                    file,
                )
        return out

    def properties(
        self,
        csv: Manifest,
        package: str,
        version: str | None,
        provided: list[dict[str, str]],
        required: list[dict[str, str]],
    ) -> list[dict[str, Any]]:
        props = [prop(PACKAGE, {"packageName": package, "version": version or ""})]
        props += [prop(GVK, g) for g in provided]
        props += [prop(GVK_REQUIRED, g) for g in required]
        props += self.dependencies()
        for p in self.declared_properties(csv):
            if p["type"] == PACKAGE:
                continue  # annotations.yaml is authoritative for the package (spec 2.2.1.2)
            if p["type"] in (GVK, GVK_REQUIRED) and not _is_gvk(p["value"]):
                self.problem(f"a {p['type']} property needs group, version and kind", csv.file, obj_label(csv.obj))
                continue
            props.append(p)
        return props
