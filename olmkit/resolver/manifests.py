"""Building a :class:`ResolutionRequest` from Kubernetes manifest files.

Files hold YAML (or JSON) documents, several per file, and ``kind: List`` objects.
Read: CatalogSource, OperatorGroup, Subscription, ClusterServiceVersion, ConfigMap
(for ``configmap`` catalog sources); other kinds are ignored. An invalid object is an
:class:`~olmkit.errors.InputError` naming the file and the object.

Installed CSVs take their properties from the ``operatorframework.io/properties``
annotation (``{"properties": [...]}``); without it, a plugin implementing
``olmkit_csv_properties(csv, package)`` derives them (the built-in one from owned and
required APIs), with the package inferred from the subscriptions whose
``status.installedCSV`` names the CSV.

.. versionadded:: 0.1
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs
import orjson
import yaml

from olmkit.errors import InputError
from olmkit.model import Property
from olmkit.resolver.request import InstalledCSV, ResolutionRequest, SourceRef, SubscriptionRef

__all__ = ["EXCLUDE_GLOBAL_ANNOTATION", "PROPERTIES_ANNOTATION", "Manifest", "build_request", "load_manifests"]

PROPERTIES_ANNOTATION: Final = "operatorframework.io/properties"
EXCLUDE_GLOBAL_ANNOTATION: Final = "olm.operatorframework.io/exclude-global-namespace-resolution"
STDIN: Final = "<stdin>"  # the file name of objects read from standard input (``-f -``)
KINDS: Final = ("CatalogSource", "OperatorGroup", "Subscription", "ClusterServiceVersion", "ConfigMap")

# libyaml's loader when PyYAML has it (several times faster), else the pure-Python one
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@attrs.frozen
class Manifest:
    """One object and the file it came from."""

    obj: Mapping[str, Any]
    path: str

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind"))

    @property
    def name(self) -> str:
        return str((self.obj.get("metadata") or {}).get("name") or "")

    def namespace(self, default: str) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or default)

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"


def _flatten(doc: Any, path: str) -> Iterable[Mapping[str, Any]]:
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        raise InputError(f"a manifest must be an object, not {type(doc).__name__}", path=path)
    kind = doc.get("kind")
    if kind == "List" or (isinstance(kind, str) and kind.endswith("List") and "items" in doc):
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise InputError("items of a List must be a list", path=path)
        for item in items:
            yield from _flatten(item, path)
        return
    yield doc


def load_manifests(paths: Sequence[str | Path]) -> list[Manifest]:
    """Read every object of the given files; ``-`` reads standard input (named ``<stdin>``).

    Raises:
        InputError: a file is missing or malformed, or an object lacks kind or metadata.name.
    """
    out = []
    for raw_path in paths:
        path = str(raw_path)
        try:
            if path == "-":
                path = STDIN
                text = sys.stdin.read()
            else:
                text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", path=path) from None
        try:
            docs = list(yaml.load_all(text, Loader=_LOADER))
        except yaml.YAMLError:
            docs = None
        if docs is None:
            try:  # the pure-Python loader again, for its messages (the ones olmkit always gave)
                docs = list(yaml.safe_load_all(text))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                line = mark.line + 1 if mark is not None else None
                problem = getattr(exc, "problem", None) or exc
                raise InputError(f"invalid YAML: {problem}", path=path, line=line) from None
        for doc in docs:
            for obj in _flatten(doc, path):
                m = Manifest(obj, path)
                if "kind" not in obj:
                    raise InputError("object has no kind", path=path)
                if not isinstance(obj["kind"], str) or not obj["kind"]:
                    raise InputError("an object's kind must be a non-empty string", path=path)
                if not isinstance(obj.get("metadata"), Mapping) or not m.name:
                    raise InputError("metadata.name is required", path=path, obj=m.kind)
                out.append(m)
    return out


def _priority(m: Manifest) -> int:
    value = (m.obj.get("spec") or {}).get("priority", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("spec.priority must be an integer", path=m.path, obj=m.label)
    return value


def _csv_properties(m: Manifest, package: str | None, pm: Any) -> tuple[Property, ...]:
    annotations = (m.obj.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(PROPERTIES_ANNOTATION) if isinstance(annotations, Mapping) else None
    if raw is not None:
        try:
            data = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
            props = data["properties"]
            if not isinstance(props, list) or not all(isinstance(p, Mapping) and "type" in p for p in props):
                raise TypeError("properties must be a list of {type, value}")
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputError(
                f'annotation {PROPERTIES_ANNOTATION} is not valid {{"properties": [...]}} JSON: {exc}',
                path=m.path,
                obj=m.label,
            ) from None
        return tuple(Property(str(p["type"]), p.get("value")) for p in props)
    hook = getattr(pm.hook, "olmkit_csv_properties", None) if pm is not None else None
    if hook is None:
        return ()
    for result in hook(csv=m.obj, package=package):
        if result is not None:
            return tuple(Property(str(p["type"]), p.get("value")) for p in result)
    return ()


def build_request(
    manifests: Sequence[Manifest],
    *,
    pm: Any,
    namespace: str | None = None,
    global_namespace: str = "olm",
    cache: bool = True,
    backend: str | None = None,
) -> ResolutionRequest:
    """Build the request for ``namespace`` (default: the first Subscription's namespace).

    Raises:
        InputError: an object is invalid (named with its file).
    """
    from olmkit.catalog.sources import open_source

    registry = pm.registry
    if namespace is None:
        subs = [m for m in manifests if m.kind == "Subscription"]
        namespace = subs[0].namespace("default") if subs else "default"
    ns = namespace

    def objects(kind: str, obj_ns: str, name: str) -> Mapping[str, Any] | None:
        for m in manifests:
            if m.kind == kind and m.name == name and m.namespace(ns) == obj_ns:
                return m.obj
        return None

    subscriptions = []
    for m in manifests:
        if m.kind != "Subscription" or m.namespace(ns) != ns:
            continue
        try:
            subscriptions.append(SubscriptionRef.from_manifest(m.obj, ns))
        except ValueError as exc:
            raise InputError(str(exc), path=m.path, obj=m.label) from None

    installed = []
    for m in manifests:
        if m.kind != "ClusterServiceVersion" or m.namespace(ns) != ns:
            continue
        status = m.obj.get("status") or {}
        if isinstance(status, Mapping) and status.get("reason") == "Copied":
            continue
        spec = m.obj.get("spec") or {}
        if not isinstance(spec, Mapping):
            raise InputError("spec must be an object", path=m.path, obj=m.label)
        packages = {s.package for s in subscriptions if s.installed_csv == m.name}
        package = next(iter(packages)) if len(packages) == 1 else None
        version = spec.get("version")
        installed.append(
            InstalledCSV(
                name=m.name,
                version=str(version) if version is not None else None,
                properties=_csv_properties(m, package, pm),
                replaces=spec.get("replaces"),
                phase=status.get("phase") if isinstance(status, Mapping) else None,
            )
        )

    groups = [m for m in manifests if m.kind == "OperatorGroup" and m.namespace(ns) == ns]
    exclude = False
    for g in groups:
        annotations = (g.obj.get("metadata") or {}).get("annotations") or {}
        if isinstance(annotations, Mapping) and str(annotations.get(EXCLUDE_GLOBAL_ANNOTATION)) == "true":
            exclude = True

    sources = []
    for m in manifests:
        if m.kind != "CatalogSource":
            continue
        src_ns = m.namespace(ns)
        opened = open_source(
            m.obj.get("spec") or {},
            registry=registry,
            name=m.name,
            namespace=src_ns,
            base_dir=Path(m.path).resolve().parent,
            objects=objects,
            cache=cache,
        )
        sources.append(SourceRef(m.name, src_ns, opened, _priority(m)))

    return ResolutionRequest(
        namespace=ns,
        registry=registry,
        subscriptions=subscriptions,
        installed=installed,
        sources=sources,
        operator_groups=len(groups),
        global_namespace=global_namespace,
        exclude_global=exclude,
        backend=backend,
    )
