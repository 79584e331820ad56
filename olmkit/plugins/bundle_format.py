"""Built-in plugin: the ``registry+v1`` bundle directory (OLM's bundle format).

A bundle directory holds ``manifests/`` (exactly one ClusterServiceVersion, the CRDs it
owns and optional objects of the kinds the spec lists) and ``metadata/``
(``annotations.yaml``, optional ``dependencies.yaml`` and ``properties.yaml``; ``.yml``
and ``.json`` spellings are accepted too). :func:`read_bundle_dir` reads one into its
file-based catalog bundle blob and its manifests, deriving properties as ``opm render``
does:

* ``olm.package`` from the annotations' package (authoritative, as the spec says) and the
  CSV's ``spec.version``; an ``olm.package`` in ``properties.yaml`` or the CSV's
  ``olm.properties`` annotation is dropped in its favour;
* ``olm.gvk`` for every served version of every CRD in ``manifests/`` and for every owned
  API service; ``olm.gvk.required`` for every required CRD and API service;
* ``dependencies.yaml``: ``olm.gvk`` -> ``olm.gvk.required``, ``olm.package`` ->
  ``olm.package.required`` (``version`` becomes ``versionRange``), ``olm.label`` ->
  ``olm.label.required``, ``olm.constraint`` kept (OLM's own mapping of legacy
  dependencies);
* ``properties.yaml`` and the CSV's ``olm.properties`` annotation (a JSON list), kept;
* without an image: one ``olm.bundle.object`` (base64 of the JSON of each manifest); with
  an image: one ``olm.csv.metadata`` instead (what opm does for bundle images).

Properties are deduplicated and sorted by type, then by their JSON value, with the
inline content last, as opm writes them. ``relatedImages`` lists the CSV's related
images, the bundle image and the images of the install strategy's deployments.

Rules enforced (each violation names its file and object; all are reported at once, exit
code 1): at least one channel; a default channel that is one of them; exactly one CSV;
every owned CRD present in ``manifests/`` with the owned version and kind; only
supported object kinds; a valid semver ``spec.version``; well-formed dependencies and
properties. A missing directory or ``annotations.yaml`` and malformed YAML/JSON are
unreadable input (exit code 2).

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from olmkit import hookimpl
from olmkit.catalog.semver import parse_range, parse_version
from olmkit.errors import BundleError, InvalidBundleError
from olmkit.model import ChannelEntry
from olmkit.serde import decode_json_stream, decode_yaml_stream
from olmkit.types import BundleContents, BundleFormat

__all__ = [
    "ANNOTATION_PREFIX",
    "MEDIA_TYPE",
    "SUPPORTED_KINDS",
    "is_bundle_dir",
    "read_bundle_dir",
]

MEDIA_TYPE: Final = "registry+v1"
ANNOTATION_PREFIX: Final = "operators.operatorframework.io.bundle."
MEDIATYPE_KEY: Final = ANNOTATION_PREFIX + "mediatype.v1"
MANIFESTS_KEY: Final = ANNOTATION_PREFIX + "manifests.v1"
METADATA_KEY: Final = ANNOTATION_PREFIX + "metadata.v1"
PACKAGE_KEY: Final = ANNOTATION_PREFIX + "package.v1"
CHANNELS_KEY: Final = ANNOTATION_PREFIX + "channels.v1"
DEFAULT_CHANNEL_KEY: Final = ANNOTATION_PREFIX + "channel.default.v1"

PROPERTIES_ANNOTATION: Final = "olm.properties"
SKIP_RANGE_ANNOTATION: Final = "olm.skipRange"

CSV_KIND: Final = "ClusterServiceVersion"
CRD_KIND: Final = "CustomResourceDefinition"
CRD_API_VERSIONS: Final = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")

#: Kinds a registry+v1 bundle may hold: the CSV, CRDs and the spec's optional objects
#: (``ConsoleYAMLSample`` is how the API spells the spec's ``ConsoleYamlSample``).
SUPPORTED_KINDS: Final = frozenset(
    {
        CSV_KIND,
        CRD_KIND,
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "ConsoleCLIDownload",
        "ConsoleLink",
        "ConsoleQuickStart",
        "ConsoleYAMLSample",
        "ConsoleYamlSample",
        "PodDisruptionBudget",
        "PriorityClass",
        "PrometheusRule",
        "Role",
        "RoleBinding",
        "Secret",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "VerticalPodAutoscaler",
    }
)

PACKAGE: Final = "olm.package"
GVK: Final = "olm.gvk"
GVK_REQUIRED: Final = "olm.gvk.required"
PACKAGE_REQUIRED: Final = "olm.package.required"
LABEL_REQUIRED: Final = "olm.label.required"
CONSTRAINT: Final = "olm.constraint"
BUNDLE_OBJECT: Final = "olm.bundle.object"
CSV_METADATA: Final = "olm.csv.metadata"
_INLINE: Final = (BUNDLE_OBJECT, CSV_METADATA)

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

_METADATA_SUFFIXES: Final = (".yaml", ".yml", ".json")


# --------------------------------------------------------------------------- detection


def is_bundle_dir(ref: str | os.PathLike[str]) -> bool:
    """Whether ``ref`` is a directory with a ``manifests/`` or a ``metadata/`` subdirectory.

    opm needs both; one is enough here, so that a bundle missing the other is reported
    as a broken bundle rather than read as a catalog.
    """
    path = Path(ref)
    return path.is_dir() and ((path / "manifests").is_dir() or (path / "metadata").is_dir())


# --------------------------------------------------------------------------- helpers


def _canonical(value: Any) -> Any:
    """Plain JSON data with mapping keys sorted (how opm writes values it decoded from YAML)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


def _plain(value: Any) -> Any:
    """YAML data as JSON data: string keys, dates as text."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))


def _prop(ptype: str, value: Any) -> dict[str, Any]:
    return {"type": ptype, "value": _canonical(value)}


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _is_gvk(value: Any) -> bool:
    return isinstance(value, Mapping) and all(isinstance(value.get(k), str) for k in ("group", "version", "kind"))


def _label(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{obj.get('kind')}/{name}" if name else str(obj.get("kind"))


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


class _Manifest:
    __slots__ = ("file", "line", "obj")

    def __init__(self, obj: dict[str, Any], file: Path, line: int) -> None:
        self.obj = obj
        self.file = file
        self.line = line

    @property
    def kind(self) -> Any:
        return self.obj.get("kind")

    @property
    def name(self) -> Any:
        return _get(self.obj, "metadata", "name")


class _Reader:
    """Reads one bundle directory, collecting every broken rule before raising."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[str] = []
        self.annotations_file: Path | None = None

    # -- reporting --------------------------------------------------------------------

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def problem(self, message: str, file: Path | None = None, obj: str | None = None, line: int | None = None) -> None:
        """Record a broken rule as ``file[:line]: object: message`` (file relative to the bundle)."""
        parts = []
        if file is not None:
            parts.append(f"{self.rel(file)}:{line}" if line else self.rel(file))
        if obj:
            parts.append(obj)
        self.problems.append(": ".join([*parts, message]))

    def unreadable(self, message: str, file: Path, obj: str | None = None) -> BundleError:
        return BundleError(message, path=str(file), obj=obj)

    # -- files ------------------------------------------------------------------------

    def decode(self, file: Path) -> list[tuple[int, Any]]:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise self.unreadable(f"cannot read file: {exc.strerror}", file) from None
        try:
            if file.suffix.lower() == ".json":
                return list(decode_json_stream(data))
            return list(decode_yaml_stream(data))
        except ValueError as exc:
            raise self.unreadable(str(exc), file) from None

    def metadata_file(self, stem: str) -> Path | None:
        for suffix in _METADATA_SUFFIXES:
            candidate = self.root / "metadata" / (stem + suffix)
            if candidate.is_file():
                return candidate
        return None

    def metadata_doc(self, stem: str, key: str) -> tuple[Path, list[Any]] | None:
        """``(file, items)`` of ``metadata/<stem>`` whose top level is ``{key: [...]}``."""
        file = self.metadata_file(stem)
        if file is None:
            return None
        docs = self.decode(file)
        if not docs:
            return file, []
        if len(docs) > 1:
            self.problem("holds more than one YAML document", file)
        doc = docs[0][1]
        if not isinstance(doc, Mapping) or not isinstance(doc.get(key), list | type(None)):
            self.problem(f"must be a mapping with a list under {key!r}", file)
            return file, []
        return file, list(doc.get(key) or [])

    # -- reading ----------------------------------------------------------------------

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
        plain = [_plain(m.obj) for m in manifests]
        if image:
            properties.append(_prop(CSV_METADATA, _csv_metadata(plain[manifests.index(csv)])))
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

    def annotations(self) -> dict[str, str]:
        file = self.metadata_file("annotations")
        if file is None:
            raise BundleError(
                "annotations.yaml is missing (a bundle needs metadata/annotations.yaml)",
                path=str(self.root / "metadata"),
            )
        docs = self.decode(file)
        doc = docs[0][1] if docs else None
        raw = doc.get("annotations") if isinstance(doc, Mapping) else None
        if not isinstance(raw, Mapping):
            self.problem("must be a mapping with an 'annotations' mapping", file)
            return {}
        out: dict[str, str] = {}
        for key, value in raw.items():
            if not isinstance(value, str):
                self.problem(f"annotation {key!r} must be a string, not {type(value).__name__}", file)
                continue
            out[str(key)] = value.strip()
        media = out.get(MEDIATYPE_KEY)
        if media is not None and media != MEDIA_TYPE:
            self.problem(f"{MEDIATYPE_KEY} is {media!r}; only {MEDIA_TYPE!r} bundles are supported", file)
        for key, expected in ((MANIFESTS_KEY, "manifests/"), (METADATA_KEY, "metadata/")):
            value = out.get(key)
            if value is not None and value.rstrip("/") + "/" != expected:
                self.problem(f"{key} must be {expected!r}, not {value!r}", file)
        if not out.get(PACKAGE_KEY):
            self.problem(f"{PACKAGE_KEY} (the package name) is required", file)
        self.annotations_file = file
        return out

    def channels(self, annotations: Mapping[str, str]) -> tuple[str, ...]:
        file = self.annotations_file
        raw = annotations.get(CHANNELS_KEY, "")
        channels = tuple(c.strip() for c in raw.split(",")) if raw else ()
        if not channels:
            self.problem(f"a bundle needs at least one channel ({CHANNELS_KEY} is missing or empty)", file)
            return ()
        if any(not c for c in channels):
            self.problem(f"{CHANNELS_KEY} {raw!r} has an empty channel name", file)
            channels = tuple(c for c in channels if c)
        default = annotations.get(DEFAULT_CHANNEL_KEY)
        if default and default not in channels:
            self.problem(
                f"default channel {default!r} ({DEFAULT_CHANNEL_KEY}) is not one of the bundle's channels: "
                + ", ".join(channels),
                file,
            )
        return tuple(dict.fromkeys(channels))

    def manifests(self) -> list[_Manifest]:
        out: list[_Manifest] = []
        directory = self.root / "manifests"
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            raise self.unreadable(f"cannot list directory: {exc.strerror}", directory) from None
        for name in names:
            file = directory / name
            if name.startswith(".") or not file.is_file():
                continue
            for line, doc in self.decode(file):
                if not isinstance(doc, dict):
                    raise self.unreadable(f"line {line}: a manifest must be an object, not {type(doc).__name__}", file)
                manifest = _Manifest(doc, file, line)
                label = _label(doc)
                if not isinstance(doc.get("apiVersion"), str) or not doc.get("apiVersion"):
                    self.problem("apiVersion is required", file, label, line)
                if not isinstance(manifest.kind, str) or not manifest.kind:
                    self.problem("kind is required", file, None, line)
                    continue
                if not isinstance(manifest.name, str) or not manifest.name:
                    self.problem("metadata.name is required", file, label, line)
                if manifest.kind not in SUPPORTED_KINDS:
                    self.problem(
                        f"kind {manifest.kind} is not supported in a {MEDIA_TYPE} bundle "
                        f"(supported: {', '.join(sorted(SUPPORTED_KINDS - {'ConsoleYamlSample'}))})",
                        file,
                        label,
                        line,
                    )
                out.append(manifest)
        if not out:
            self.problem("no manifests: a bundle needs a ClusterServiceVersion", directory)
        return out

    def csv(self, manifests: list[_Manifest]) -> _Manifest | None:
        csvs = [m for m in manifests if m.kind == CSV_KIND]
        if len(csvs) > 1:
            where = ", ".join(f"{_label(m.obj)} in {self.rel(m.file)}" for m in csvs)
            self.problem(f"a bundle has exactly one {CSV_KIND}, found {len(csvs)}: {where}", self.root / "manifests")
            return None
        if not csvs:
            if manifests:
                self.problem(f"a bundle has exactly one {CSV_KIND}, found none", self.root / "manifests")
            return None
        csv = csvs[0]
        if not isinstance(csv.obj.get("spec"), Mapping):
            self.problem("spec is required", csv.file, _label(csv.obj))
            return None
        return csv

    def version(self, csv: _Manifest) -> str | None:
        raw = _get(csv.obj, "spec", "version")
        label = _label(csv.obj)
        if raw is None or raw == "":
            self.problem("spec.version is required", csv.file, label)
            return None
        if not isinstance(raw, str):
            self.problem(f"spec.version must be a string, not {type(raw).__name__} (quote it)", csv.file, label)
            return None
        try:
            parse_version(raw)
        except ValueError as exc:
            self.problem(f"spec.version is not a valid semantic version: {exc}", csv.file, label)
            return None
        return raw

    def definitions(self, csv: _Manifest, section: str, which: str) -> list[Mapping[str, Any]]:
        items = _get(csv.obj, "spec", section, which)
        if items is None:
            return []
        label = _label(csv.obj)
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

    def crd_versions(self, crd: _Manifest) -> tuple[str, str, list[tuple[str, bool]]] | None:
        """``(group, kind, [(version, served)])`` of a CRD, or ``None`` after reporting why not."""
        obj = crd.obj
        label = _label(obj)
        if obj.get("apiVersion") not in CRD_API_VERSIONS:
            self.problem(
                f"unsupported CRD apiVersion {obj.get('apiVersion')!r} (expected {' or '.join(CRD_API_VERSIONS)})",
                crd.file,
                label,
            )
            return None
        group = _get(obj, "spec", "group")
        kind = _get(obj, "spec", "names", "kind")
        if not isinstance(group, str) or not group or not isinstance(kind, str) or not kind:
            self.problem("spec.group and spec.names.kind are required", crd.file, label)
            return None
        versions: list[tuple[str, bool]] = []
        for i, v in enumerate(_get(obj, "spec", "versions") or []):
            name = v.get("name") if isinstance(v, Mapping) else None
            if not isinstance(name, str) or not name:
                self.problem(f"spec.versions[{i}].name is required", crd.file, label)
                continue
            versions.append((name, v.get("served", True) is not False))
        single = _get(obj, "spec", "version")  # v1beta1's deprecated single version, always served
        if isinstance(single, str) and single and single not in {n for n, _ in versions}:
            versions.append((single, True))
        if not versions:
            self.problem("the CRD declares no versions", crd.file, label)
        return group, kind, versions

    def provided_apis(self, csv: _Manifest, crds: list[_Manifest]) -> list[dict[str, str]]:
        provided: list[dict[str, str]] = []
        by_name: dict[str, tuple[_Manifest, str, str, list[tuple[str, bool]]]] = {}
        for crd in crds:
            info = self.crd_versions(crd)
            if info is None:
                continue
            group, kind, versions = info
            by_name[str(crd.name)] = (crd, group, kind, versions)
            provided += [_gvk(group, name, kind) for name, served in versions if served]
        label = _label(csv.obj)
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

    def required_apis(self, csv: _Manifest) -> list[dict[str, str]]:
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
            out.append(_prop(ptype, _plain(value)))
        return out

    def declared_properties(self, csv: _Manifest) -> list[dict[str, Any]]:
        declared: list[dict[str, Any]] = []
        found = self.metadata_doc("properties", "properties")
        if found is not None:
            declared += self.property_list(found[1], found[0], "properties")
        raw = _get(csv.obj, "metadata", "annotations", PROPERTIES_ANNOTATION)
        if raw is not None:
            label = _label(csv.obj)
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
            value = _plain(value)
            if dtype == GVK:
                missing = [k for k in ("group", "version", "kind") if not isinstance(value.get(k), str) or not value[k]]
                if missing:
                    self.problem(f"{field} ({dtype}): {', '.join(missing)} required", file)
                    continue
                out.append(_prop(GVK_REQUIRED, _gvk(value["group"], value["version"], value["kind"])))
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
                out.append(_prop(PACKAGE_REQUIRED, {"packageName": name, "versionRange": rng}))
            elif dtype == "olm.label":
                if not isinstance(value.get("label"), str) or not value["label"]:
                    self.problem(f"{field} ({dtype}): label required", file)
                    continue
                out.append(_prop(LABEL_REQUIRED, value))
            elif dtype == CONSTRAINT:
                out.append(_prop(CONSTRAINT, value))
            else:
                self.problem(
                    f"{field}: unsupported dependency type {dtype!r} (olm.gvk, olm.package, olm.label, olm.constraint)",
                    file,
                )
        return out

    def properties(
        self,
        csv: _Manifest,
        package: str,
        version: str | None,
        provided: list[dict[str, str]],
        required: list[dict[str, str]],
    ) -> list[dict[str, Any]]:
        props = [_prop(PACKAGE, {"packageName": package, "version": version or ""})]
        props += [_prop(GVK, g) for g in provided]
        props += [_prop(GVK_REQUIRED, g) for g in required]
        props += self.dependencies()
        for p in self.declared_properties(csv):
            if p["type"] == PACKAGE:
                continue  # annotations.yaml is authoritative for the package (spec 2.2.1.2)
            if p["type"] in (GVK, GVK_REQUIRED) and not _is_gvk(p["value"]):
                self.problem(f"a {p['type']} property needs group, version and kind", csv.file, _label(csv.obj))
                continue
            props.append(p)
        return props

    def entry(self, csv: _Manifest) -> ChannelEntry:
        spec = csv.obj["spec"]
        label = _label(csv.obj)
        replaces = spec.get("replaces") or None
        if replaces is not None and not isinstance(replaces, str):
            self.problem("spec.replaces must be a string", csv.file, label)
            replaces = None
        skips = spec.get("skips") or []
        if not isinstance(skips, list) or not all(isinstance(s, str) and s for s in skips):
            self.problem("spec.skips must be a list of bundle names", csv.file, label)
            skips = []
        skip_range = _get(csv.obj, "metadata", "annotations", SKIP_RANGE_ANNOTATION) or None
        if skip_range is not None and not isinstance(skip_range, str):
            self.problem(f"annotation {SKIP_RANGE_ANNOTATION} must be a string", csv.file, label)
            skip_range = None
        return ChannelEntry(str(csv.name), replaces, tuple(skips), skip_range)

    def package_info(self, csv: _Manifest) -> dict[str, Any]:
        info: dict[str, Any] = {}
        description = _get(csv.obj, "spec", "description")
        if isinstance(description, str) and description:
            info["description"] = description
        icons = _get(csv.obj, "spec", "icon")
        if isinstance(icons, list) and icons and isinstance(icons[0], Mapping):
            icon = {k: icons[0][k] for k in ("base64data", "mediatype") if isinstance(icons[0].get(k), str)}
            if icon:
                info["icon"] = icon
        return info

    def related_images(self, csv: _Manifest, image: str | None) -> list[dict[str, Any]]:
        label = _label(csv.obj)
        out: list[dict[str, Any]] = []
        raw = _get(csv.obj, "spec", "relatedImages") or []
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
    if _get(csv, "spec", "install", "strategy") != "deployment":
        return
    for dep in _get(csv, "spec", "install", "spec", "deployments") or []:
        pod = _get(dep, "spec", "template", "spec")
        for key in ("containers", "initContainers"):
            for container in _get(pod, key) or []:
                ref = _get(container, "image")
                if isinstance(ref, str) and ref:
                    yield ref


def _csv_metadata(csv: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, path, always in _CSV_METADATA_FIELDS:
        value = _get(csv, *path)
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
    return [p for (t, _), p in ordered if t not in _INLINE] + [p for (t, _), p in ordered if t in _INLINE]


# --------------------------------------------------------------------------- public API


def read_bundle_dir(path: str | os.PathLike[str], *, image: str | None = None) -> BundleContents:
    """Read a ``registry+v1`` bundle directory.

    Args:
        path: the bundle directory (``manifests/`` and ``metadata/``).
        image: the image reference to record in the blob. ``None`` (a bundle known only
            as a directory): no image, every manifest inline as ``olm.bundle.object``.
            Set: ``image`` is recorded and the CSV's metadata is inline as
            ``olm.csv.metadata`` instead (opm's choice for bundle images).

    Returns:
        :class:`~olmkit.types.BundleContents`: ``blob`` (the ``olm.bundle`` blob with the
        derived properties and related images), ``manifests`` (CSV, CRDs and other objects
        as plain JSON data, in file-name order, several documents of one file in file
        order) with ``manifest_files``, the package, version, channels, default channel,
        upgrade edges (``entry``: replaces, skips, ``olm.skipRange``) and the package's
        description and icon.

    Raises:
        BundleError: the directory, ``manifests/``, ``metadata/`` or
            ``metadata/annotations.yaml`` is missing, a file cannot be read, or holds
            malformed YAML/JSON or a document that is not an object (exit code 2).
        InvalidBundleError: the bundle breaks the format's rules; ``problems`` lists
            every one, each naming its file and object (exit code 1).
    """
    return _Reader(Path(path)).read(image)


@hookimpl
def olmkit_bundle_formats() -> Iterator[BundleFormat]:
    """The bundle directory format of OLM's bundle images."""
    yield BundleFormat(
        name=MEDIA_TYPE,
        accepts=is_bundle_dir,
        read=read_bundle_dir,
        description="bundle directory: manifests/ (one CSV, its CRDs, optional objects) and metadata/annotations.yaml",
    )
