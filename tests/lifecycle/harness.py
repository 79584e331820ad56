"""A small cluster for lifecycle tests: an SQLite store, the controllers, a fake clock.

Catalogs for tests are written as FBC with inline bundle manifests (``olm.bundle.object``),
built from a compact description by :func:`bundle` and :func:`write_catalog`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson

from olmkit.lifecycle import FakeClock, LifecycleOptions, Reporter, RunOutcome, build_manager
from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION
from olmkit.lifecycle.kinds import resolve_kind
from olmkit.store import NotFound, SqliteStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
V1A1 = "operators.coreos.com/v1alpha1"


class Recorder(Reporter):
    """Keeps every event and error message."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.errors: list[str] = []

    def on_event(self, message: str) -> None:
        self.events.append(message)

    def on_error(self, key: Any, error: BaseException, attempt: int, retry_in: float) -> None:
        self.errors.append(f"{key}: {error}")


class Cluster:
    """An embedded cluster driven deterministically."""

    def __init__(self, path: Path, pm: Any, *, kubelet: bool = True, install_timeout: float = 300.0) -> None:
        self.store = SqliteStore(str(path))
        self.pm = pm
        self.clock = FakeClock()
        self.reporter = Recorder()
        self.manager = build_manager(
            self.store,
            pm,
            options=LifecycleOptions(install_timeout=install_timeout, simulate_kubelet=kubelet),
            clock=self.clock,
            reporter=self.reporter,
        )

    # -- writing ------------------------------------------------------------------------

    def apply(self, *objs: Mapping[str, Any]) -> None:
        """Create each object, or replace the spec of an existing one."""
        for obj in objs:
            kind = resolve_kind(obj["kind"])
            meta = obj["metadata"]
            try:
                current = self.store.get(obj["apiVersion"], kind.kind, meta["name"], meta.get("namespace"))
            except NotFound:
                self.store.create(dict(obj))
                continue
            self.store.update({**current, **{k: v for k, v in obj.items() if k not in ("metadata", "status")}})

    def catalog_source(
        self, name: str, path: Path, *, namespace: str = "olm", priority: int = 0, poll: str = ""
    ) -> None:
        spec: dict[str, Any] = {"sourceType": "file", "path": str(path), "priority": priority}
        if poll:
            spec["updateStrategy"] = {"registryPoll": {"interval": poll}}
        self.apply(
            {
                "apiVersion": V1A1,
                "kind": "CatalogSource",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": {MANIFEST_DIR_ANNOTATION: str(path.parent)},
                },
                "spec": spec,
            }
        )

    def operator_group(self, namespace: str = "operators", name: str = "og") -> None:
        self.apply(
            {
                "apiVersion": "operators.coreos.com/v1",
                "kind": "OperatorGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {},
            }
        )

    def subscribe(
        self,
        package: str,
        *,
        channel: str = "",
        source: str = "examples",
        namespace: str = "operators",
        approval: str = "",
        starting_csv: str = "",
        source_namespace: str = "olm",
    ) -> None:
        spec = {"name": package, "source": source, "sourceNamespace": source_namespace}
        if channel:
            spec["channel"] = channel
        if approval:
            spec["installPlanApproval"] = approval
        if starting_csv:
            spec["startingCSV"] = starting_csv
        self.apply(
            {
                "apiVersion": V1A1,
                "kind": "Subscription",
                "metadata": {"name": package, "namespace": namespace},
                "spec": spec,
            }
        )

    def approve(self, plan: str, namespace: str = "operators") -> None:
        """Approve an InstallPlan, as ``olmkit approve`` does."""
        obj = self.get("ip", plan, namespace)
        obj["spec"]["approved"] = True
        self.store.update(obj)

    # -- running ------------------------------------------------------------------------

    def reconcile(self, timeout: float = 3600.0) -> RunOutcome:
        """Run the controllers until stable (on the fake clock)."""
        return self.manager.run_until_stable(timeout=timeout)

    # -- reading ------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = "operators") -> dict[str, Any]:
        k = resolve_kind(kind, self.store)
        return self.store.get(k.api_version, k.kind, name, namespace)

    def exists(self, kind: str, name: str, namespace: str | None = "operators") -> bool:
        try:
            self.get(kind, name, namespace)
        except NotFound:
            return False
        return True

    def names(self, kind: str, namespace: str | None = "operators") -> list[str]:
        k = resolve_kind(kind, self.store)
        return [o["metadata"]["name"] for o in self.store.list(k.api_version, k.kind, namespace)]

    def phase(self, csv: str, namespace: str = "operators") -> str:
        return str((self.get("csv", csv, namespace).get("status") or {}).get("phase"))

    def plans(self, namespace: str = "operators") -> list[dict[str, Any]]:
        plans = list(self.store.list(V1A1, "InstallPlan", namespace))
        return sorted(plans, key=lambda p: int(p["spec"].get("generation") or 0))

    def condition(self, obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == type_:
                return dict(cond)
        return None

    def close(self) -> None:
        self.store.close()


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
