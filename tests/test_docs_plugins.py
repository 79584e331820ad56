"""docs/plugins.md is kept true: its imports are the public API, and its examples run."""

from __future__ import annotations

import ast
import re
import types
from pathlib import Path

from olmkit.testing import assert_installed

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"

#: the public surface the guide promises; changing it is a decision, made here and in the guide
PUBLIC = {
    "olmkit": {"PROJECT_NAME", "__version__", "get_plugin_manager", "hookimpl", "hookspec"},
    "olmkit.types": {
        "AdmissionCheck",
        "BundleContents",
        "BundleFormat",
        "CandidateBatch",
        "CatalogSourceType",
        "CatalogTemplate",
        "ConstraintEvaluator",
        "InstallStrategy",
        "PackageIdentity",
        "Predicate",
        "PropertyType",
        "PropertyView",
        "RequirementContext",
        "SolverBackend",
        "TemplateContext",
        "Uniqueness",
    },
    "olmkit.errors": {"CatalogError", "InputError", "OlmkitError", "PluginError", "UsageError"},
    "olmkit.catalog": {"Catalog", "build_catalog", "load_catalog", "load_catalog_result"},
    "olmkit.catalog.semver": {"Range", "Version", "parse_range", "parse_version"},
    "olmkit.catalog.sources": {"CONNECTING", "READY", "TRANSIENT_FAILURE", "SourceContext", "SourceHealth"},
    "olmkit.lifecycle.admission": {"AdmissionContext", "AdmissionRefused"},
    "olmkit.resolver": {"Resolution", "ResolutionRequest", "Step", "SubscriptionRef"},
    "olmkit.store": {"AlreadyExists", "Conflict", "NotFound", "Object", "Store"},
    "olmkit.testing": {"EmbeddedCluster", "assert_installed", "assert_unsatisfiable"},
}


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


def public_block() -> str:
    [block] = [b for b in python_blocks() if "from olmkit.store import" in b]
    return block


def test_the_public_imports_run_and_are_exactly_the_promised_surface():
    """The guide's public-API block imports, and names exactly :data:`PUBLIC`, each listed in
    its module's ``__all__``."""
    block = public_block()
    namespace: dict = {}
    exec(compile(block, str(GUIDE), "exec"), namespace)

    shown: dict[str, set[str]] = {}
    for node in ast.parse(block).body:
        assert isinstance(node, ast.ImportFrom)
        shown.setdefault(node.module, set()).update(alias.name for alias in node.names)
    assert PUBLIC == shown
    for module, names in PUBLIC.items():
        exported = set(__import__(module, fromlist=["__all__"]).__all__)
        assert names <= exported, (module, names - exported)


def test_every_olmkit_import_in_the_guide_is_public():
    """No example imports anything the public block does not list."""
    for block in python_blocks():
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("olmkit"):
                assert {a.name for a in node.names} <= PUBLIC.get(node.module, set()), node.module


def plugin_from_guide(*fragments: str) -> types.ModuleType:
    """A module made of the guide's example blocks that contain all ``fragments``."""
    module = types.ModuleType("guide_example")
    for block in python_blocks():
        if all(f in block for f in fragments):
            exec(compile(block, str(GUIDE), "exec"), module.__dict__)
            return module
    raise AssertionError(f"no example with {fragments}")


def test_the_examples_work_together(olmkit_pm, olmkit_register, make_catalog, resolve, capsys):
    """The five-minute property type, the tier constraint key and the timing wrapper of the
    guide, registered as written: a dependency on a gold provider picks the gold one, and the
    wrapper reports the resolution."""
    olmkit_register(plugin_from_guide("def olmkit_property_types"), "tier-property")
    olmkit_register(plugin_from_guide("class TierAtLeast"), "tier-key")
    olmkit_register(plugin_from_guide("@hookimpl(wrapper=True)"), "timing")
    gvk = {"group": "db.example.io", "version": "v1", "kind": "Database"}

    def bundle(package, tier=None, constraint=None):
        props = [{"type": "olm.package", "value": {"packageName": package, "version": "1.0.0"}}]
        if tier:
            props += [{"type": "example.io/tier", "value": tier}, {"type": "olm.gvk", "value": gvk}]
        if constraint:
            props.append({"type": "olm.constraint", "value": constraint})
        return [
            {"schema": "olm.package", "name": package, "defaultChannel": "stable"},
            {"schema": "olm.channel", "package": package, "name": "stable", "entries": [{"name": f"{package}.v1"}]},
            {"schema": "olm.bundle", "name": f"{package}.v1", "package": package, "properties": props},
        ]

    needs_gold = {"all": {"constraints": [{"gvk": gvk}, {"tier": {"atLeast": "gold"}}]}}
    catalog = make_catalog(
        bundle("app", constraint=needs_gold) + bundle("bronze-db", tier="bronze") + bundle("gold-db", tier="gold")
    )

    outcome = resolve(["app"], [catalog])

    assert_installed(outcome, "app.v1", "gold-db.v1")
    assert "operators: ok in " in capsys.readouterr().out
