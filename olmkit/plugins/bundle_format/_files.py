"""Reading a bundle directory's files and checking the format's rules on them.

:class:`BundleFiles` decodes ``metadata/`` and ``manifests/``, checks the annotations,
channels, manifests, the one CSV and its version, and collects every broken rule as a
problem naming its file and object (unreadable input raises at once).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from olmkit.catalog.semver import parse_version
from olmkit.errors import BundleError
from olmkit.plugins.bundle_format._vocabulary import (
    CHANNELS_KEY,
    CSV_KIND,
    DEFAULT_CHANNEL_KEY,
    MANIFESTS_KEY,
    MEDIA_TYPE,
    MEDIATYPE_KEY,
    METADATA_KEY,
    METADATA_SUFFIXES,
    PACKAGE_KEY,
    SUPPORTED_KINDS,
)
from olmkit.serde import decode_json_stream, decode_yaml_stream

__all__ = ["BundleFiles", "Manifest", "get_path", "obj_label", "plain_json"]


def plain_json(value: Any) -> Any:
    """YAML data as JSON data: string keys, dates as text."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))


def obj_label(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{obj.get('kind')}/{name}" if name else str(obj.get("kind"))


def get_path(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


class Manifest:
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
        return get_path(self.obj, "metadata", "name")


class BundleFiles:
    """One bundle directory's files, collecting every broken rule before the caller raises."""

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

    def unreadable(self, message: str, file: Path) -> BundleError:
        return BundleError(message, path=str(file))

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
        for suffix in METADATA_SUFFIXES:
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

    def manifests(self) -> list[Manifest]:
        out: list[Manifest] = []
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
                manifest = Manifest(doc, file, line)
                label = obj_label(doc)
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

    def csv(self, manifests: list[Manifest]) -> Manifest | None:
        csvs = [m for m in manifests if m.kind == CSV_KIND]
        if len(csvs) > 1:
            where = ", ".join(f"{obj_label(m.obj)} in {self.rel(m.file)}" for m in csvs)
            self.problem(f"a bundle has exactly one {CSV_KIND}, found {len(csvs)}: {where}", self.root / "manifests")
            return None
        if not csvs:
            if manifests:
                self.problem(f"a bundle has exactly one {CSV_KIND}, found none", self.root / "manifests")
            return None
        csv = csvs[0]
        if not isinstance(csv.obj.get("spec"), Mapping):
            self.problem("spec is required", csv.file, obj_label(csv.obj))
            return None
        return csv

    def version(self, csv: Manifest) -> str | None:
        raw = get_path(csv.obj, "spec", "version")
        label = obj_label(csv.obj)
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
