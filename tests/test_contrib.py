"""The contributed plugins in plugins_contrib/ work through the public hooks only."""

from __future__ import annotations

import importlib
from pathlib import Path

import attrs
import pytest

from olmkit import hookimpl

CONTRIB = Path(__file__).resolve().parents[1] / "plugins_contrib"


@pytest.fixture
def contrib(monkeypatch):
    """Import a contributed plugin module from its source tree."""

    def load(dist: str, module: str):
        monkeypatch.syspath_prepend(str(CONTRIB / dist / "src"))
        return importlib.import_module(module)

    return load


@attrs.frozen
class View:
    """A minimal PropertyView: a candidate carrying parsed tier values."""

    tiers: tuple[str, ...]
    package: str = "p"
    version: str | None = "1.0.0"
    properties: tuple[object, ...] = ()

    def values(self, type_name: str) -> tuple[str, ...]:
        return self.tiers if type_name == "example.io/tier" else ()


def test_tier_plugin_registers_property_and_constraint_key(contrib, olmkit_pm, olmkit_register):
    """olmkit-tier adds a property type and a constraint key to the registry."""
    tier = contrib("olmkit-tier", "olmkit_tier")
    olmkit_register(tier, "tier")

    registry = olmkit_pm.registry

    assert "example.io/tier" in registry.property_types
    assert "tier" in registry.constraint_evaluators
    assert "tier" == registry.owners[("constraint key", "tier")]


def test_tier_constraint_matches_by_rank(contrib, olmkit_pm, olmkit_register):
    """A 'tier' constraint matches candidates whose tier is at least the minimum."""
    tier = contrib("olmkit-tier", "olmkit_tier")
    olmkit_register(tier, "tier")
    build = olmkit_pm.registry.constraint_evaluators["tier"].build

    predicate = build({"atLeast": "silver"}, None)

    assert "with tier at least: silver" == str(predicate)
    assert [False, True, True] == [predicate.matches(View((t,))) for t in ("bronze", "silver", "gold")]
    assert not predicate.matches(View(()))


def test_tier_rejects_malformed_values(contrib, olmkit_pm, olmkit_register):
    """An unknown tier or a malformed constraint is a ValueError with a clear message."""
    tier = contrib("olmkit-tier", "olmkit_tier")
    olmkit_register(tier, "tier")
    registry = olmkit_pm.registry

    with pytest.raises(ValueError, match="tier must be one of bronze, silver, gold, not 'platinum'"):
        registry.property_types["example.io/tier"].parse("platinum")
    with pytest.raises(ValueError, match="atLeast"):
        registry.constraint_evaluators["tier"].build({"min": "gold"}, None)


def test_timing_plugin_wraps_resolution(contrib, olmkit_bare_pm):
    """olmkit-resolve-timing wraps whatever implements olmkit_resolve and records the time."""
    timing = contrib("olmkit-resolve-timing", "olmkit_resolve_timing")
    timing.TIMINGS.clear()

    class Resolver:
        @hookimpl
        def olmkit_resolve(self, request):
            return ("resolved", request.namespace)

    @attrs.frozen
    class Request:
        namespace: str

    olmkit_bare_pm.register(Resolver(), "fake-resolver")
    olmkit_bare_pm.register(timing, "resolve-timing")

    result = olmkit_bare_pm.hook.olmkit_resolve(request=Request("operators"))

    assert ("resolved", "operators") == result
    assert ["operators"] == [ns for ns, _ in timing.TIMINGS]
    assert timing.TIMINGS[0][1] >= 0


def _contrib_distributions() -> list[tuple[str, str]]:
    """Every contributed distribution and its entry-point name, from its pyproject.toml."""
    import tomllib

    found = []
    for pyproject in sorted(CONTRIB.glob("olmkit-*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        [name] = project["entry-points"]["olmkit"]
        found.append((project["name"], name))
    return found


@pytest.mark.parametrize(("distribution", "name"), _contrib_distributions())
def test_each_contributed_plugin_is_installed_listed_and_can_be_switched_off(distribution, name):
    """``make test`` installs every contributed distribution: ``plugins list`` shows it with its
    distribution and version, and OLMKIT_DISABLE_PLUGINS takes it out again."""
    import json
    import os
    import subprocess
    import sys

    def listed(env: dict) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "olmkit", "plugins", "list", "-o", "json"],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            check=True,
        ).stdout
        return {p["name"]: p for p in json.loads(out)}

    shown = listed({})[name]
    assert distribution == shown["distribution"]
    assert shown["version"]
    assert name not in listed({"OLMKIT_DISABLE_PLUGINS": name})
