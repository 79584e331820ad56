"""A plugin that raises is reported by name and never takes a controller or a command down."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from olmkit import hookimpl
from olmkit.types import AdmissionCheck, ConstraintEvaluator

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "catalog"


@attrs.frozen
class Exploding:
    """A predicate with a bug: it raises on the first candidate it is asked about."""

    lookup: Any = None

    def matches(self, candidate: Any) -> bool:
        raise RuntimeError("boom")

    def __str__(self) -> str:
        return "exploding"


class Exploder:
    """Registers the ``explode`` constraint key."""

    @hookimpl
    def olmkit_constraint_evaluators(self) -> Any:
        yield ConstraintEvaluator(key="explode", build=lambda value, context: Exploding())


def write_app_catalog(root: Path) -> Path:
    """``app``: one bundle whose dependency uses the ``explode`` key."""
    root.mkdir(parents=True)
    blobs = [
        {"schema": "olm.package", "name": "app", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "app", "name": "stable", "entries": [{"name": "app.v1.0.0"}]},
        {
            "schema": "olm.bundle",
            "name": "app.v1.0.0",
            "package": "app",
            "image": "example.invalid/app:1",
            "properties": [
                {"type": "olm.package", "value": {"packageName": "app", "version": "1.0.0"}},
                {"type": "olm.constraint", "value": {"explode": {}}},
            ],
        },
    ]
    (root / "catalog.json").write_text("".join(json.dumps(b) + "\n" for b in blobs))
    return root


def test_predicate_that_raises_fails_its_namespace_only(olmkit_register, embedded_cluster, tmp_path):
    """The namespace whose catalog holds the buggy constraint gets ResolutionFailed naming the
    plugin; another namespace installs its operator in the same run."""
    olmkit_register(Exploder(), "exploder")
    embedded_cluster.catalog_source("apps", write_app_catalog(tmp_path / "apps"), namespace="operators")
    embedded_cluster.catalog_source("examples", EXAMPLES)
    embedded_cluster.operator_group("operators")
    embedded_cluster.operator_group("other")
    embedded_cluster.subscribe("app", source="apps", source_namespace="operators")
    embedded_cluster.subscribe("storage-operator", namespace="other")

    embedded_cluster.reconcile()

    failed = embedded_cluster.condition(embedded_cluster.get("sub", "app"), "ResolutionFailed")
    assert "True" == failed["status"]
    assert "ErrorPreventedResolution" == failed["reason"]
    assert "plugin 'exploder': failed during resolution: RuntimeError('boom')" == failed["message"]
    assert "Succeeded" == embedded_cluster.phase("storage-operator.v0.5.0", namespace="other")


def test_culprit_names_the_plugin_module_and_never_the_kernel(olmkit_pm, olmkit_register):
    """The innermost plugin frame is blamed; an error raised by olmkit itself blames nobody."""
    from olmkit.catalog.semver import parse_version

    with pytest.raises(ValueError) as kernel_error:
        parse_version("not a version")
    blamed_for_kernel = olmkit_pm.culprit(kernel_error.value)
    olmkit_register(Exploder(), "exploder")  # defined here: from now on this module is a plugin's
    with pytest.raises(RuntimeError) as plugin_error:
        Exploding().matches(None)

    assert blamed_for_kernel is None
    assert "exploder" == olmkit_pm.culprit(plugin_error.value)


def refuse_everything(obj: Any, context: Any) -> Any:
    """An admission check that refuses every CSV an InstallPlan brings, saying which bundle."""
    if context.bundle is not None:
        yield f"no operators today ({context.bundle}, image {context.bundle_image})"


class Gate:
    @hookimpl
    def olmkit_admission_checks(self) -> Any:
        yield AdmissionCheck(name="gate", check=refuse_everything, kinds={"ClusterServiceVersion"})


def test_admission_checks_judge_install_plans_when_they_are_planned(olmkit_register, embedded_cluster):
    """A refused plan is Failed with InstallCheckFailed, planned once, and its Subscription
    reports InstallPlanFailed with the check's message; nothing is installed."""
    olmkit_register(Gate(), "gate")
    embedded_cluster.catalog_source("examples", EXAMPLES)
    embedded_cluster.operator_group()
    embedded_cluster.subscribe("storage-operator")

    embedded_cluster.reconcile()

    [plan] = embedded_cluster.plans()
    installed = embedded_cluster.condition(plan, "Installed")
    assert "Failed" == plan["status"]["phase"]
    assert "InstallCheckFailed" == installed["reason"]
    assert (
        "admission refused ClusterServiceVersion/storage-operator.v0.5.0 of bundle storage-operator.v0.5.0: "
        "no operators today (storage-operator.v0.5.0, image ../../bundles/storage-operator.v0.5.0)"
    ) == installed["message"]
    sub_failed = embedded_cluster.condition(embedded_cluster.get("sub", "storage-operator"), "InstallPlanFailed")
    assert installed["message"] == sub_failed["message"]
    assert [] == embedded_cluster.names("csv")
