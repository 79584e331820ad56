"""Catalogs for lifecycle tests, and the clusters they run on.

A :class:`Cluster` (:class:`olmkit.testing.EmbeddedCluster`) runs every controller on an
embedded store (SQLite or memory); a :class:`ServedCluster` runs OLM's controllers over the
kube store against an ``olmkit serve --no-controllers`` (:mod:`tests.lifecycle.served`),
whose simulated API server and kubelet do what a cluster does. Both have one interface, so
a test body runs on every backend (the ``make_cluster`` fixture picks).

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

from olmkit.lifecycle import RunOutcome
from olmkit.store import Store
from olmkit.testing import EmbeddedCluster as Cluster
from tests.lifecycle.served import ServeProcess, stop_later

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: every install mode (``B(install_modes=ALL_MODES)`` supports them all)
ALL_MODES = ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")
V1A1 = "operators.coreos.com/v1alpha1"

__all__ = [
    "EXAMPLES",
    "V1A1",
    "B",
    "Cluster",
    "ServedCluster",
    "bundle_blob",
    "crd",
    "csv_manifest",
    "manifests",
    "seed_store",
    "store_args",
    "write_catalog",
]


#: the simulated API server and kubelet: the served side runs them, never the client (as on a real cluster)
SIMULATED_PREFIX = "simulated-"


def kube_store(kubeconfig: Path) -> Store:
    """The kube store on the cluster a kubeconfig names."""
    from olmkit.kube import connect

    return connect(kubeconfig)


class ServedCluster(Cluster):
    """OLM's controllers in this process over the kube store, against ``olmkit serve --no-controllers``.

    The clock is still the controllers' fake clock: install timeouts, retries and catalog polls
    are decided on the client, so ``clock.advance`` and the waits of ``reconcile()`` work as on
    the embedded store. The server's clock only stamps ``creationTimestamp`` and
    ``deletionTimestamp``, which no controller compares with its own. What the fake clock cannot
    jump is the served side's own work (CRDs established, Deployments available, in real time),
    so the manager lets the server settle before each jump, as it does on any store with an
    API server behind it (``ControllerManager.settled``): when anything was written since the
    server was last seen quiet, it waits until a pause of ``runtime.QUIET`` seconds passes
    with no new change on the server (its resourceVersion) and no event for the controllers.
    A server that stays busy longer than that under load costs only an extra jump (an install
    waits for 5 s of fake time per step and times out only after many).
    """

    #: the longest one reconcile() may take in real time, whatever its fake-clock timeout
    WALL_LIMIT = 120.0

    def __init__(self, served: ServeProcess, pm: Any, **options: Any) -> None:
        options.pop("kubelet", None)  # the served side's kubelet, chosen when it was started
        super().__init__(None, pm, store=kube_store(served.kubeconfig), **options)
        self.served = served
        simulated = [name for name in self.manager.controllers if name.startswith(SIMULATED_PREFIX)]
        assert not simulated, f"the simulated cluster runs on the served side only, not here: {simulated}"

    def reconcile(self, timeout: float = 3600.0) -> RunOutcome:
        """Run the controllers until stable (the served side settles before every fake-clock jump)."""
        return self.manager.run_until_stable(timeout=timeout, wall_timeout=min(timeout, self.WALL_LIMIT))

    def close(self) -> None:
        super().close()
        stop_later(self.served)  # its pool waits for it at the end of the module


def store_args(cluster: Cluster) -> list[str]:
    """The command-line options that reach the cluster's store (an SQLite path, or the served API)."""
    if isinstance(cluster, ServedCluster):
        return ["--kubeconfig", str(cluster.served.kubeconfig)]
    path = getattr(cluster.store, "path", None)
    assert path is not None, "the command line cannot reach an in-process memory store"
    return ["--store", str(path)]


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
