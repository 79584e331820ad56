"""Admission: the kernel's admit() and the built-in checks for OLM's kinds."""

from __future__ import annotations

import pytest

from olmkit import hookimpl
from olmkit.errors import PluginError
from olmkit.lifecycle.admission import admit
from olmkit.plugins.admission import is_go_duration
from olmkit.types import AdmissionCheck

OPS = "operators.coreos.com"


def obj(kind, spec, api_version=f"{OPS}/v1alpha1", name="x"):
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def test_valid_subscription_is_admitted(olmkit_pm):
    """A well-formed Subscription passes every check."""
    sub = obj("Subscription", {"name": "p", "source": "c", "channel": "stable", "installPlanApproval": "Manual"})

    assert [] == admit(olmkit_pm.registry, sub)


def test_subscription_problems_name_each_field(olmkit_pm):
    """Missing package and source, a bad approval and a non-string channel: one message each."""
    sub = obj("Subscription", {"installPlanApproval": "auto", "channel": 3})

    assert [
        "spec.name is required",
        "spec.source is required",
        "spec.channel must be a string, not an integer",
        "spec.installPlanApproval must be Automatic or Manual, not 'auto'",
    ] == admit(olmkit_pm.registry, sub)


def test_checks_apply_to_their_group_only(olmkit_pm):
    """A Subscription of another API group (Knative's) is not judged by OLM's rules."""
    other = obj("Subscription", {"channel": {"kind": "Channel"}}, api_version="messaging.knative.dev/v1")

    assert [] == admit(olmkit_pm.registry, other)


@pytest.mark.parametrize(
    ("kind", "api_version", "spec", "expected"),
    [
        (
            "CatalogSource",
            f"{OPS}/v1alpha1",
            {"priority": "high"},
            [
                "spec.sourceType is required",
                "spec.priority must be an integer, not a string",
            ],
        ),
        (
            "CatalogSource",
            f"{OPS}/v1alpha1",
            {"sourceType": "file", "updateStrategy": {"registryPoll": {"interval": "5 minutes"}}},
            [
                "spec.updateStrategy.registryPoll.interval must be a duration such as 30m0s, 10s or 1h, not '5 minutes'",  # noqa: E501 - one message, kept whole
            ],
        ),
        (
            "OperatorGroup",
            f"{OPS}/v1",
            {"targetNamespaces": "ns", "selector": {"matchLabels": {"a": "b"}}},
            [
                "spec.targetNamespaces must be a list of strings, not a string",
            ],
        ),
        (
            "OperatorGroup",
            f"{OPS}/v1",
            {"selector": {"matchLabels": ["a"]}},
            [
                "spec.selector.matchLabels: matchLabels must be a mapping",
            ],
        ),
        (
            "InstallPlan",
            f"{OPS}/v1alpha1",
            {"approval": "Later", "approved": "yes", "clusterServiceVersionNames": [1]},
            [
                "spec.approval must be Automatic or Manual, not 'Later'",
                "spec.approved must be true or false, not a string",
                "spec.clusterServiceVersionNames[0] must be a non-empty string, not an integer",
            ],
        ),
        (
            "OperatorCondition",
            f"{OPS}/v2",
            {"conditions": [{"type": "Upgradeable", "status": "no"}]},
            [
                "spec.conditions[0].status must be True or False or Unknown, not 'no'",
            ],
        ),
        (
            "ClusterServiceVersion",
            f"{OPS}/v1alpha1",
            {"version": "v1.0", "install": {}},
            [
                "spec.version: invalid semantic version 'v1.0': 'v1.0' is not MAJOR.MINOR.PATCH",
                "spec.install.strategy is required",
            ],
        ),
        (
            "CustomResourceDefinition",
            "apiextensions.k8s.io/v1",
            {
                "group": "example.io",
                "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": True, "storage": False}],
            },
            [
                "metadata.name must be spec.names.plural + '.' + spec.group (widgets.example.io), not 'x'",
                "spec.versions must mark exactly one version as storage: true (found 0)",
            ],
        ),
    ],
)
def test_builtin_checks(olmkit_pm, kind, api_version, spec, expected):
    """Each OLM kind's check names the fields the CRD schema would refuse."""
    assert expected == admit(olmkit_pm.registry, obj(kind, spec, api_version))


def test_go_durations():
    """Intervals are Go durations: number-unit pairs, or 0."""
    assert [True, True, True, True, False, False, False] == [
        is_go_duration(t) for t in ("30m0s", "10s", "1h30m", "0", "10", "5 minutes", 10)
    ]


def test_a_raising_check_is_a_plugin_error_naming_the_plugin(olmkit_pm, olmkit_register):
    """A check that raises becomes a PluginError naming its plugin and the object."""

    class Broken:
        @hookimpl
        def olmkit_admission_checks(self):
            yield AdmissionCheck(name="broken", check=lambda o, ctx: 1 / 0, kinds={"ConfigMap"})

    olmkit_register(Broken(), "broken-plugin")

    with pytest.raises(PluginError) as info:
        admit(olmkit_pm.registry, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})

    assert "broken-plugin" == info.value.plugin
    assert (
        "plugin 'broken-plugin': admission check 'broken' failed on ConfigMap/c: "
        "ZeroDivisionError('division by zero')" == str(info.value)
    )
