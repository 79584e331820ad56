"""The kernel: hook specs, registry, plugin loading rules."""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from olmkit import hookimpl
from olmkit.errors import PluginConflictError, PluginError
from olmkit.manager import BUILTIN_PLUGINS, PluginLoadWarning, get_plugin_manager
from olmkit.types import ConstraintEvaluator, PropertyType


class TierPlugin:
    @hookimpl
    def olmkit_property_types(self):
        yield PropertyType(name="example.io/tier", parse=str)


class OtherTierPlugin:
    @hookimpl
    def olmkit_property_types(self):
        yield PropertyType(name="example.io/tier", parse=int)


def make_distribution(root: Path, dist: str, module: str, source: str, ep_name: str) -> None:
    """Write an installed distribution (dist-info + module) that declares an olmkit entry point."""
    info = root / f"{dist.replace('-', '_')}-1.2.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[olmkit]\n{ep_name} = {module}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A throwaway site directory on sys.path for fake installed distributions."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("olmkit_fake_")]:
        del sys.modules[name]


def test_registration_collects_records_into_registry(olmkit_bare_pm):
    """A plugin's records appear in the registry under their names, owned by the plugin."""
    olmkit_bare_pm.register(TierPlugin(), "tier")

    registry = olmkit_bare_pm.registry

    assert "example.io/tier" in registry.property_types
    assert "tier" == registry.owners[("property type", "example.io/tier")]


def test_duplicate_registration_names_both_plugins(olmkit_bare_pm):
    """Two plugins claiming one name: looking that name up is an error naming both and the way out."""
    olmkit_bare_pm.register(TierPlugin(), "first-plugin")
    olmkit_bare_pm.register(OtherTierPlugin(), "second-plugin")
    registry = olmkit_bare_pm.registry

    with pytest.raises(PluginConflictError) as info:
        _ = registry.property_types["example.io/tier"]

    assert "'first-plugin'" in str(info.value)
    assert "'second-plugin'" in str(info.value)
    assert "OLMKIT_DISABLE_PLUGINS=second-plugin" in str(info.value)
    assert ("first-plugin", "second-plugin") == tuple(info.value.plugins)
    with pytest.raises(PluginConflictError):
        registry.check()


def test_duplicate_registration_breaks_only_that_name(olmkit_pm, olmkit_register):
    """A contested name is left out of the registry; every other name still works."""
    olmkit_register(TierPlugin(), "first-plugin")
    olmkit_register(OtherTierPlugin(), "second-plugin")
    registry = olmkit_pm.registry

    assert "olm.package" in registry.property_types
    assert "example.io/tier" not in list(registry.property_types)
    assert [("property type", "example.io/tier")] == list(registry.conflicts)
    with pytest.raises(PluginConflictError):
        _ = registry.property_types.get("example.io/tier")


def test_wrong_record_type_is_a_plugin_error(olmkit_bare_pm):
    """A registration hook yielding the wrong record type names the plugin."""

    class Wrong:
        @hookimpl
        def olmkit_constraint_evaluators(self):
            yield PropertyType(name="x")

    olmkit_bare_pm.register(Wrong(), "wrong")

    with pytest.raises(PluginError, match=r"'wrong'.*expected ConstraintEvaluator"):
        _ = olmkit_bare_pm.registry


def test_registry_is_refreshed_after_registration(olmkit_bare_pm):
    """Registering a plugin after the registry was read makes its names visible."""
    before = dict(olmkit_bare_pm.registry.constraint_evaluators)

    class Tier:
        @hookimpl
        def olmkit_constraint_evaluators(self):
            yield ConstraintEvaluator(key="tier", build=lambda value, ctx: None)

    olmkit_bare_pm.register(Tier(), "tier-key")

    assert "tier" not in before
    assert "tier" in olmkit_bare_pm.registry.constraint_evaluators


def test_entry_point_plugin_is_loaded_listed_and_used(site):
    """A third-party plugin from the olmkit entry-point group is registered and listed."""
    make_distribution(
        site,
        "olmkit-fake-tier",
        "olmkit_fake_tier",
        """
        from olmkit import hookimpl
        from olmkit.types import PropertyType

        @hookimpl
        def olmkit_property_types():
            yield PropertyType(name="example.io/fake-tier", parse=str, description="service tier")
        """,
        "fake-tier",
    )

    pm = get_plugin_manager()
    info = {i.name: i for i in pm.plugin_info()}["fake-tier"]

    assert "distribution" == info.origin
    assert "olmkit-fake-tier" == info.distribution
    assert "1.2.3" == info.version
    assert ("olmkit_property_types",) == info.hooks
    assert {"property type": ["example.io/fake-tier"]} == info.registers
    assert "service tier" == pm.registry.property_types["example.io/fake-tier"].description


def test_broken_entry_point_plugin_is_skipped_with_a_warning(site):
    """A plugin that fails to import is reported and skipped; olmkit still works."""
    make_distribution(site, "olmkit-fake-broken", "olmkit_fake_broken", "raise RuntimeError('boom')\n", "broken")

    expected = r"'broken' \(distribution olmkit-fake-broken 1.2.3, olmkit_fake_broken\).*RuntimeError: boom"
    with pytest.warns(PluginLoadWarning, match=expected):
        pm = get_plugin_manager()

    assert not pm.has_plugin("broken")
    assert ["broken"] == [name for name, _ in pm.load_failures]
    assert pm.registry is not None


def test_disable_env_switches_plugins_off(site, monkeypatch):
    """OLMKIT_DISABLE_PLUGINS names plugins that are not loaded."""
    make_distribution(site, "olmkit-fake-off", "olmkit_fake_off", "raise RuntimeError('never imported')\n", "off")
    monkeypatch.setenv("OLMKIT_DISABLE_PLUGINS", "off, properties")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pm = get_plugin_manager()

    assert not pm.has_plugin("off")
    assert not pm.has_plugin("olmkit.plugins.properties")
    assert [] == pm.load_failures


def test_misspelt_disabled_name_is_warned_about(monkeypatch):
    """A name in OLMKIT_DISABLE_PLUGINS that is no plugin is warned about, with the close one."""
    monkeypatch.setenv("OLMKIT_DISABLE_PLUGINS", "proprties")

    with pytest.warns(PluginLoadWarning, match=r"'proprties', which is no plugin \(did you mean 'properties'\?\)"):
        pm = get_plugin_manager()

    assert pm.has_plugin("olmkit.plugins.properties")


def test_builtins_are_registered_by_module_name(olmkit_pm):
    """Every built-in module is registered under its module name with origin built-in."""
    infos = {i.name: i for i in olmkit_pm.plugin_info()}

    for name in BUILTIN_PLUGINS:
        assert "built-in" == infos[name].origin


def test_bare_manager_has_no_builtins(olmkit_bare_pm):
    """With no built-ins, nothing is registered: the kernel names no OLM concept."""
    registry = olmkit_bare_pm.registry

    assert {} == dict(registry.property_types)
    assert {} == dict(registry.constraint_evaluators)
    assert {} == dict(registry.catalog_source_types)


def test_throwaway_registration_fixture(olmkit_pm, olmkit_register):
    """olmkit_register adds a plugin whose records the registry sees."""
    olmkit_register(TierPlugin(), "tier-for-one-test")

    assert "example.io/tier" in olmkit_pm.registry.property_types


def test_hook_recorder_records_calls(olmkit_pm, hook_recorder):
    """hook_recorder sees hook calls with their keyword arguments."""
    olmkit_pm.hook.olmkit_csv_phase_changed(
        csv={"metadata": {"name": "a"}}, old_phase=None, new_phase="Pending", reason="x"
    )

    (call,) = hook_recorder.calls_of("olmkit_csv_phase_changed")
    assert "Pending" == call.kwargs["new_phase"]


def test_kernel_never_names_olm_concepts():
    """No kernel module (everything outside olmkit/plugins) spells an OLM concept."""
    root = Path(__file__).resolve().parents[1] / "olmkit"
    forbidden = ("olm.gvk", "olm.package", "olm.constraint", "OwnNamespace", "AllNamespaces", '"deployment"')
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[0] in ("plugins",) or path.name == "testing.py":
            continue
        text = path.read_text()
        offenders += [f"{rel}: {word}" for word in forbidden if word in text]

    assert [] == offenders


def test_cli_prints_a_broken_plugin_as_one_line(site, capsys):
    """On the command line a plugin that fails to import is one line: name, distribution, error."""
    from olmkit.cli import main

    make_distribution(site, "olmkit-fake-broken", "olmkit_fake_broken", "import not_a_module_at_all\n", "broken")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code = main(["plugins", "list", "-o", "json"])

    err = capsys.readouterr().err
    assert 0 == code
    assert [
        "olmkit: warning: plugin 'broken' (distribution olmkit-fake-broken 1.2.3, olmkit_fake_broken) failed to "
        "import and is skipped: ModuleNotFoundError: No module named 'not_a_module_at_all' "
        "(OLMKIT_DISABLE_PLUGINS=broken silences this)"
    ] == err.splitlines()


def test_plugins_list_shows_a_name_conflict(olmkit_pm, olmkit_register, monkeypatch, capsys):
    """plugins list still works with two plugins claiming one name, and lists the conflict."""
    import orjson

    from olmkit.cli import main

    olmkit_register(TierPlugin(), "first-plugin")
    olmkit_register(OtherTierPlugin(), "second-plugin")
    monkeypatch.setattr("olmkit.manager.get_plugin_manager", lambda **kw: olmkit_pm)

    assert 0 == main(["plugins", "list", "-o", "json"])

    rows = orjson.loads(capsys.readouterr().out)
    conflicts = [r for r in rows if r["origin"] == "conflict"]
    assert ["first-plugin, second-plugin"] == [r["name"] for r in conflicts]
    assert "OLMKIT_DISABLE_PLUGINS=second-plugin" in conflicts[0]["error"]
