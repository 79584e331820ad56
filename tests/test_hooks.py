"""Every hook: documented with an example, and used the way its documentation says."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Any

import pytest

from olmkit import hookimpl, hookspecs
from olmkit.cli import main
from olmkit.lifecycle.strategy import StrategyStatus
from olmkit.resolver.manifests import Manifest, _csv_properties
from olmkit.testing import EmbeddedCluster
from olmkit.types import CatalogSourceType, InstallStrategy, PropertyType, SolverBackend

SPECS = sorted(name for name in dir(hookspecs) if name.startswith("olmkit_"))
TESTED = {name[len("test_hook_") :] for name in globals() if name.startswith("test_hook_")}


def one_bundle(*properties: dict[str, Any]) -> list[dict[str, Any]]:
    """A catalog of package ``a`` with one bundle ``a.v1`` (channel ``s``) carrying ``properties``."""
    return [
        {"schema": "olm.package", "name": "a", "defaultChannel": "s"},
        {"schema": "olm.channel", "package": "a", "name": "s", "entries": [{"name": "a.v1"}]},
        {
            "schema": "olm.bundle",
            "package": "a",
            "name": "a.v1",
            "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}, *properties],
        },
    ]


@pytest.mark.parametrize("name", SPECS)
def test_every_hook_is_documented_with_an_example(name: str) -> None:
    """Each spec says what it receives and returns, and shows an implementation."""
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""

    assert "Example:" in doc
    assert "@hookimpl" in doc
    assert all(p in doc for p in inspect.signature(getattr(hookspecs, name)).parameters)


def test_every_hook_has_a_test() -> None:
    """A ``test_hook_<name>`` test exists for every hook (here or next to the code that calls it)."""
    found = set(TESTED)
    for path in Path(__file__).parent.rglob("test_*.py"):
        text = path.read_text()
        found |= {name for name in SPECS if f"def test_hook_{name}" in text}

    assert [] == [name for name in SPECS if name not in found and not any(f.startswith(name) for f in found)]


def test_hook_olmkit_property_types(olmkit_pm: Any, olmkit_register: Any, make_catalog: Any) -> None:
    """A registered property type parses bundle properties of its type; the catalog files bundles under its keys."""

    class Tier:
        @hookimpl
        def olmkit_property_types(self) -> list[PropertyType]:
            return [PropertyType(name="example.io/tier", parse=str.upper, index_keys=lambda v: (v,))]

    olmkit_register(Tier())
    catalog = make_catalog(one_bundle({"type": "example.io/tier", "value": "gold"}))

    bundle = catalog.bundle("a", "a.v1")
    assert ("GOLD",) == catalog.values(bundle, "example.io/tier")
    assert [bundle] == list(catalog.lookup("example.io/tier", "GOLD"))


def test_hook_olmkit_solver_backends(olmkit_pm: Any, olmkit_register: Any) -> None:
    """A registered backend is listed in the registry under its name, with its factory."""

    def factory() -> object:
        return object()

    class Backend:
        @hookimpl
        def olmkit_solver_backends(self) -> list[SolverBackend]:
            return [SolverBackend(name="brute", factory=factory)]

    olmkit_register(Backend())

    assert factory is olmkit_pm.registry.solver_backends["brute"].factory


def test_plugin_solver_backend_answers_resolution(olmkit_register: Any, make_catalog: Any, resolve: Any) -> None:
    """A plugin's SAT solver is used by name (--solver NAME): an unsatisfiable resolution
    is explained with it."""
    from olmkit._solver import backends

    created: list[object] = []

    def factory() -> object:
        solver = backends.CryptoMiniSatBackend()
        created.append(solver)
        return solver

    class Plugin:
        @hookimpl
        def olmkit_solver_backends(self) -> list[SolverBackend]:
            return [SolverBackend(name="counted", factory=factory)]

    olmkit_register(Plugin())
    catalog = make_catalog(
        one_bundle({"type": "olm.gvk.required", "value": {"group": "x.io", "version": "v1", "kind": "Missing"}})
    )
    try:
        resolution = resolve(["a"], [catalog], backend="counted")
    finally:
        backends._REGISTRY.pop("counted", None)

    assert "unsatisfiable" == resolution.status
    assert created, "the plugin's solver explained the failure"


def test_hook_olmkit_catalog_loaded(
    olmkit_register: Any, embedded_cluster: EmbeddedCluster, tmp_path: Path, monkeypatch: Any
) -> None:
    """Each time a CatalogSource is read, plugins hear which source, how long it took and whether it was cached."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[tuple[str, str, bool]] = []

    class Watcher:
        @hookimpl
        def olmkit_catalog_loaded(self, source: str, catalog: Any, seconds: float, cached: bool) -> None:
            assert seconds >= 0
            seen.append((source, catalog.name, cached))

    olmkit_register(Watcher())
    examples = Path(__file__).resolve().parents[1] / "examples" / "catalog"
    embedded_cluster.catalog_source("examples", examples, poll="1m")
    embedded_cluster.reconcile()
    embedded_cluster.clock.advance(60)
    embedded_cluster.reconcile()

    assert [("olm/examples", "examples", False), ("olm/examples", "examples", True)] == seen


def test_hook_olmkit_csv_properties(olmkit_pm: Any, olmkit_register: Any) -> None:
    """An installed CSV without the properties annotation gets its properties from the first plugin that answers."""
    csv = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "metadata": {"name": "a.v1"}}

    built_in = _csv_properties(Manifest(csv, "x"), "a", olmkit_pm)
    assert [("olm.package", {"packageName": "a", "version": ""})] == [(p.type, p.value) for p in built_in]

    class Labels:
        @hookimpl(tryfirst=True)
        def olmkit_csv_properties(self, csv: Any, package: str | None) -> list[dict[str, Any]]:
            return [{"type": "example.io/tier", "value": "gold"}]

    olmkit_register(Labels())
    props = _csv_properties(Manifest(csv, "x"), "a", olmkit_pm)

    assert [("example.io/tier", "gold")] == [(p.type, p.value) for p in props]


def test_hook_olmkit_add_commands(olmkit_pm: Any, olmkit_register: Any, capsys: Any, monkeypatch: Any) -> None:
    """A plugin's subcommand runs like a built-in one."""

    class Hello:
        @hookimpl
        def olmkit_add_commands(self, subparsers: Any) -> None:
            p = subparsers.add_parser("hello", help="say hello")
            p.add_argument("who")
            p.set_defaults(func=lambda args, pm: print(f"hello {args.who}") or 0)

    olmkit_register(Hello())
    monkeypatch.setattr("olmkit.manager.get_plugin_manager", lambda **kw: olmkit_pm)

    assert 0 == main(["hello", "world"])
    assert "hello world\n" == capsys.readouterr().out
    assert isinstance(argparse.ArgumentParser, type)


class _NoopInstaller:
    """An install strategy that installs nothing and is healthy at once."""

    installed: list[str] = []

    def __init__(self, context: Any) -> None:
        self.context = context

    def plan_objects(self, csv: Any) -> list[dict[str, Any]]:
        return []

    def requirements(self, csv: Any) -> list[dict[str, Any]]:
        return []

    def install(self, csv: Any) -> None:
        self.installed.append(csv["metadata"]["name"])

    def check(self, csv: Any) -> StrategyStatus:
        return StrategyStatus(healthy=True)


def test_hook_olmkit_install_strategies(olmkit_register: Any, embedded_cluster: EmbeddedCluster) -> None:
    """A CSV naming a plugin's strategy is installed by it and reaches Succeeded."""

    class Noop:
        @hookimpl
        def olmkit_install_strategies(self) -> list[InstallStrategy]:
            return [InstallStrategy(name="noop", installer=_NoopInstaller)]

    olmkit_register(Noop())
    cluster = embedded_cluster
    cluster.operator_group()
    cluster.apply(
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "a.v1", "namespace": "operators"},
            "spec": {"version": "1.0.0", "install": {"strategy": "noop", "spec": {}}},
        }
    )
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("a.v1")
    assert ["a.v1"] == _NoopInstaller.installed


def test_hook_olmkit_catalog_source_types(
    olmkit_register: Any, embedded_cluster: EmbeddedCluster, make_catalog: Any
) -> None:
    """A CatalogSource of a plugin's source type is loaded through it and reported READY."""
    catalog = make_catalog(
        [
            {"schema": "olm.package", "name": "a", "defaultChannel": "s"},
            {"schema": "olm.channel", "package": "a", "name": "s", "entries": [{"name": "a.v1"}]},
            {
                "schema": "olm.bundle",
                "package": "a",
                "name": "a.v1",
                "properties": [{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}],
            },
        ]
    )

    class InMemory:
        name = "memory"

        @classmethod
        def open(cls, spec: Any, context: Any) -> InMemory:
            return cls()

        def load(self) -> Any:
            return catalog

        def health(self) -> Any:
            from olmkit.catalog.sources import READY, SourceHealth

            return SourceHealth(READY)

    class Plugin:
        @hookimpl
        def olmkit_catalog_source_types(self) -> list[CatalogSourceType]:
            return [CatalogSourceType(name="memory", open=InMemory.open)]

    olmkit_register(Plugin())
    cluster = embedded_cluster
    cluster.apply(
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": "mem", "namespace": "olm"},
            "spec": {"sourceType": "memory"},
        }
    )
    cluster.reconcile()

    status = cluster.get("catsrc", "mem", "olm")["status"]
    assert "READY" == status["connectionState"]["lastObservedState"]
    assert status["catalogDigest"]
