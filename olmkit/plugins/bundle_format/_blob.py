"""Assembling a bundle directory into its ``olm.bundle`` blob and :class:`~olmkit.types.BundleContents`.

Properties are deduplicated and sorted by type, then by their JSON value, with the
inline content (``olm.bundle.object`` or ``olm.csv.metadata``) last, as opm writes them.
``relatedImages`` lists the CSV's related images, the bundle image and the images of the
install strategy's deployments.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any, Final

import orjson

from olmkit.errors import BundleError, InvalidBundleError
from olmkit.model import ChannelEntry
from olmkit.plugins.bundle_format._files import Manifest, get_path, obj_label, plain_json
from olmkit.plugins.bundle_format._properties import BundleProperties, prop
from olmkit.plugins.bundle_format._vocabulary import (
    BUNDLE_OBJECT,
    CRD_KIND,
    CSV_METADATA,
    DEFAULT_CHANNEL_KEY,
    INLINE,
    PACKAGE_KEY,
    SKIP_RANGE_ANNOTATION,
)
from olmkit.types import BundleContents

__all__ = ["BundleReader"]


#: Fields of an ``olm.csv.metadata`` value: (its key, where it comes from in the CSV,
#: kept even when empty). Upstream's struct writes its nested structs even when empty.
_CSV_METADATA_FIELDS: Final = (
    ("annotations", ("metadata", "annotations"), False),
    ("apiServiceDefinitions", ("spec", "apiservicedefinitions"), True),
    ("crdDescriptions", ("spec", "customresourcedefinitions"), True),
    ("description", ("spec", "description"), False),
    ("displayName", ("spec", "displayName"), False),
    ("installModes", ("spec", "installModes"), False),
    ("keywords", ("spec", "keywords"), False),
    ("labels", ("metadata", "labels"), False),
    ("links", ("spec", "links"), False),
    ("maintainers", ("spec", "maintainers"), False),
    ("maturity", ("spec", "maturity"), False),
    ("minKubeVersion", ("spec", "minKubeVersion"), False),
    ("nativeAPIs", ("spec", "nativeAPIs"), False),
    ("provider", ("spec", "provider"), True),
)


class BundleReader(BundleProperties):
    """Reads one bundle directory, collecting every broken rule before raising."""

    def read(self, image: str | None) -> BundleContents:
        root = self.root
        if not root.is_dir():
            raise BundleError("no such bundle directory", path=str(root))
        for sub in ("manifests", "metadata"):
            if not (root / sub).is_dir():
                raise BundleError(f"not a bundle directory: {sub}/ is missing", path=str(root))
        annotations = self.annotations()
        manifests = self.manifests()
        csv = self.csv(manifests)
        crds = [m for m in manifests if m.kind == CRD_KIND]
        package = annotations.get(PACKAGE_KEY) or ""
        channels = self.channels(annotations)
        version = self.version(csv) if csv is not None else None
        properties: list[dict[str, Any]] = []
        entry = None
        package_info = None
        related: list[dict[str, Any]] = []
        name = ""
        if csv is not None:
            name = str(csv.name)
            provided = self.provided_apis(csv, crds)
            required = self.required_apis(csv)
            properties = self.properties(csv, package, version, provided, required)
            entry = self.entry(csv)
            package_info = self.package_info(csv)
            related = self.related_images(csv, image)
        if self.problems:
            raise InvalidBundleError("invalid bundle", path=str(root), problems=self.problems)
        assert csv is not None  # a missing CSV is a problem, reported above
        plain = [plain_json(m.obj) for m in manifests]
        if image:
            properties.append(prop(CSV_METADATA, _csv_metadata(plain[manifests.index(csv)])))
        else:
            properties += [{"type": BUNDLE_OBJECT, "value": {"data": _b64(obj)}} for obj in plain]
        blob: dict[str, Any] = {"schema": "olm.bundle", "name": name, "package": package}
        if image:
            blob["image"] = image
        blob["properties"] = _sorted(properties)
        if related:
            blob["relatedImages"] = related
        return BundleContents(
            blob=blob,
            manifests=tuple(plain),
            manifest_files=tuple(str(m.file) for m in manifests),
            source=str(root),
            package=package,
            version=version,
            channels=channels,
            default_channel=annotations.get(DEFAULT_CHANNEL_KEY) or None,
            entry=entry,
            package_info=package_info,
        )

    def entry(self, csv: Manifest) -> ChannelEntry:
        spec = csv.obj["spec"]
        label = obj_label(csv.obj)
        replaces = spec.get("replaces") or None
        if replaces is not None and not isinstance(replaces, str):
            self.problem("spec.replaces must be a string", csv.file, label)
            replaces = None
        skips = spec.get("skips") or []
        if not isinstance(skips, list) or not all(isinstance(s, str) and s for s in skips):
            self.problem("spec.skips must be a list of bundle names", csv.file, label)
            skips = []
        skip_range = get_path(csv.obj, "metadata", "annotations", SKIP_RANGE_ANNOTATION) or None
        if skip_range is not None and not isinstance(skip_range, str):
            self.problem(f"annotation {SKIP_RANGE_ANNOTATION} must be a string", csv.file, label)
            skip_range = None
        return ChannelEntry(str(csv.name), replaces, tuple(skips), skip_range)

    def package_info(self, csv: Manifest) -> dict[str, Any]:
        info: dict[str, Any] = {}
        description = get_path(csv.obj, "spec", "description")
        if isinstance(description, str) and description:
            info["description"] = description
        icons = get_path(csv.obj, "spec", "icon")
        if isinstance(icons, list) and icons and isinstance(icons[0], Mapping):
            icon = {k: icons[0][k] for k in ("base64data", "mediatype") if isinstance(icons[0].get(k), str)}
            if icon:
                info["icon"] = icon
        return info

    def related_images(self, csv: Manifest, image: str | None) -> list[dict[str, Any]]:
        label = obj_label(csv.obj)
        out: list[dict[str, Any]] = []
        raw = get_path(csv.obj, "spec", "relatedImages") or []
        if not isinstance(raw, list):
            self.problem("spec.relatedImages must be a list", csv.file, label)
            raw = []
        for i, item in enumerate(raw):
            ref = item.get("image") if isinstance(item, Mapping) else None
            if not isinstance(ref, str) or not ref:
                self.problem(f"spec.relatedImages[{i}].image is required", csv.file, label)
                continue
            entry = {"name": item["name"]} if isinstance(item.get("name"), str) and item["name"] else {}
            out.append({**entry, "image": ref})
        seen = {r["image"] for r in out}
        extra = [image] if image else []
        extra += sorted(_operator_images(csv.obj))
        for ref in extra:
            if ref not in seen:
                seen.add(ref)
                out.append({"image": ref})
        return sorted(out, key=lambda r: r["image"])


def _operator_images(csv: Mapping[str, Any]) -> Iterator[str]:
    """Images of the pods of the ``deployment`` install strategy (the only one OLM knows)."""
    if get_path(csv, "spec", "install", "strategy") != "deployment":
        return
    for dep in get_path(csv, "spec", "install", "spec", "deployments") or []:
        pod = get_path(dep, "spec", "template", "spec")
        for key in ("containers", "initContainers"):
            for container in get_path(pod, key) or []:
                ref = get_path(container, "image")
                if isinstance(ref, str) and ref:
                    yield ref


def _csv_metadata(csv: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, path, always in _CSV_METADATA_FIELDS:
        value = get_path(csv, *path)
        if value in (None, "", [], {}):
            if always:
                out[key] = {}
            continue
        out[key] = value
    return out


def _b64(obj: Any) -> str:
    return base64.b64encode(_json(obj)).decode()


def _sorted(props: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Deduplicate, sort by type then JSON value, inline content last (opm's order)."""
    unique: dict[tuple[str, bytes], dict[str, Any]] = {}
    for p in props:
        unique.setdefault((p["type"], _json(p["value"])), p)
    ordered = sorted(unique.items(), key=lambda item: item[0])
    return [p for (t, _), p in ordered if t not in INLINE] + [p for (t, _), p in ordered if t in INLINE]


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
