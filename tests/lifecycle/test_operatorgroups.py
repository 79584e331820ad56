"""OperatorGroups: target namespaces, membership and install modes, member annotations and their
projection into Deployments, provided APIs and the intersection rules (the OperatorGroup spec)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.lifecycle.groups import OG, annotations, group, install, namespace, reason
from tests.lifecycle.harness import ALL_MODES, V1A1, B, Cluster

WIDGET = ("example.io", "v1", "Widget")
GADGET = ("example.io", "v1", "Gadget")


# --------------------------------------------------------------------------- target namespaces


@pytest.mark.kube
def test_a_global_group_selects_all_namespaces_and_annotates_its_members(make: Callable[..., Cluster]) -> None:
    """No targets, no selector: status.namespaces [""], members annotated, "" projected into the pod template."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster)
    install(cluster, "widget")

    og = cluster.get("og", "og")
    assert [""] == og["status"]["namespaces"]
    assert "2026-01-01T00:00:00Z" == og["status"]["lastUpdated"]
    csv = cluster.get("csv", "widget.v1.0.0")
    assert "Succeeded" == csv["status"]["phase"]
    expected = {"olm.operatorGroup": "og", "olm.operatorNamespace": "operators", "olm.targetNamespaces": ""}
    assert expected == {k: v for k, v in annotations(csv).items() if k in expected}
    template = cluster.get("deploy", "widget")["spec"]["template"]["metadata"]["annotations"]
    assert expected == {k: v for k, v in template.items() if k in expected}


def test_target_namespaces_are_sorted_into_the_status_and_the_annotation(make: Callable[..., Cluster]) -> None:
    """spec.targetNamespaces: status.namespaces sorted, olm.targetNamespaces comma-joined, in the Deployment too."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster, targetNamespaces=["team-b", "operators", "team-a"])
    install(cluster, "widget")

    assert ["operators", "team-a", "team-b"] == cluster.get("og", "og")["status"]["namespaces"]
    csv = cluster.get("csv", "widget.v1.0.0")
    assert "operators,team-a,team-b" == annotations(csv)["olm.targetNamespaces"]
    template = cluster.get("deploy", "widget")["spec"]["template"]["metadata"]["annotations"]
    assert "operators,team-a,team-b" == template["olm.targetNamespaces"]


@pytest.mark.kube
def test_a_selector_follows_namespace_labels(make: Callable[..., Cluster]) -> None:
    """spec.selector: matching Namespaces; labelling, unlabelling and deleting namespaces update the status."""
    cluster = make()
    for name in ("prod-a", "prod-b", "dev"):
        namespace(cluster, name, **({"cool.io/prod": "true"} if name.startswith("prod") else {}))
    group(cluster, selector={"matchLabels": {"cool.io/prod": "true"}})
    cluster.reconcile()
    assert ["prod-a", "prod-b"] == cluster.get("og", "og")["status"]["namespaces"]
    first = cluster.get("og", "og")["status"]["lastUpdated"]

    cluster.clock.advance(60)
    namespace(cluster, "dev", **{"cool.io/prod": "true"})
    namespace(cluster, "prod-a")
    cluster.reconcile()
    og = cluster.get("og", "og")
    assert ["dev", "prod-b"] == og["status"]["namespaces"]
    assert first != og["status"]["lastUpdated"]

    cluster.store.delete("v1", "Namespace", "prod-b")
    cluster.reconcile()
    assert ["dev"] == cluster.get("og", "og")["status"]["namespaces"]


def test_target_namespaces_win_over_a_selector(make: Callable[..., Cluster]) -> None:
    """With both set, spec.selector is ignored (and the object is accepted)."""
    cluster = make()
    namespace(cluster, "prod-a", **{"cool.io/prod": "true"})
    group(cluster, targetNamespaces=["operators"], selector={"matchLabels": {"cool.io/prod": "true"}})
    cluster.reconcile()

    assert ["operators"] == cluster.get("og", "og")["status"]["namespaces"]


# --------------------------------------------------------------------------- install modes


@pytest.mark.parametrize(
    ("modes", "targets", "message"),
    [
        (
            ("OwnNamespace",),
            [],
            "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces",
        ),
        (
            ("AllNamespaces",),
            ["operators"],
            "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace",
        ),
        (
            ("OwnNamespace",),
            ["team-a"],
            "SingleNamespace InstallModeType not supported, cannot configure to watch one namespace",
        ),
        (
            ("SingleNamespace",),
            ["team-a", "team-b"],
            "MultiNamespace InstallModeType not supported, cannot configure to watch 2 namespaces",
        ),
        (
            ("MultiNamespace",),
            ["operators", "team-a"],
            "OwnNamespace InstallModeType not supported, cannot configure to watch own namespace",
        ),
    ],
    ids=["all", "own", "single", "multi", "multi-with-own"],
)
def test_install_modes_that_do_not_support_the_targets_fail_the_csv(
    make: Callable[..., Cluster], modes: tuple[str, ...], targets: list[str], message: str
) -> None:
    """Each InstallModeType gates its target selection: Failed UnsupportedOperatorGroup with upstream's message."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=modes))
    group(cluster, **({"targetNamespaces": targets} if targets else {}))
    install(cluster, "widget")

    assert ("Failed", "UnsupportedOperatorGroup", message) == reason(cluster, "widget.v1.0.0")
    assert not cluster.exists("deploy", "widget")


@pytest.mark.parametrize(
    ("modes", "targets"),
    [
        (("OwnNamespace",), ["operators"]),
        (("SingleNamespace",), ["team-a"]),
        (("MultiNamespace", "OwnNamespace"), ["operators", "team-a"]),
        (("AllNamespaces",), []),
    ],
    ids=["own", "single", "multi", "all"],
)
def test_install_modes_that_support_the_targets_install(
    make: Callable[..., Cluster], modes: tuple[str, ...], targets: list[str]
) -> None:
    """A supported selection installs."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=modes))
    group(cluster, **({"targetNamespaces": targets} if targets else {}))
    install(cluster, "widget")

    assert "Succeeded" == cluster.phase("widget.v1.0.0")


def test_an_unsupported_group_recovers_when_its_targets_change(make: Callable[..., Cluster]) -> None:
    """UnsupportedOperatorGroup is not terminal: retargeting the group sends the CSV to Pending, then it installs
    and the Deployment watches the new targets."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=("OwnNamespace",)))
    group(cluster)
    install(cluster, "widget")
    assert "UnsupportedOperatorGroup" == reason(cluster, "widget.v1.0.0")[1]

    group(cluster, targetNamespaces=["operators"])
    cluster.reconcile()

    csv = cluster.get("csv", "widget.v1.0.0")
    assert "Succeeded" == csv["status"]["phase"]
    phases = [(c["phase"], c["reason"]) for c in csv["status"]["conditions"]]
    assert ("Failed", "UnsupportedOperatorGroup") in phases
    assert ("Pending", "RequirementsUnknown") == phases[phases.index(("Failed", "UnsupportedOperatorGroup")) + 1]
    template = cluster.get("deploy", "widget")["spec"]["template"]["metadata"]["annotations"]
    assert "operators" == template["olm.targetNamespaces"]


@pytest.mark.kube
def test_retargeting_a_running_operator_reinstalls_its_deployment(make: Callable[..., Cluster]) -> None:
    """A Succeeded member whose group changes targets goes through NeedsReinstall; the pod template follows."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster, targetNamespaces=["operators"])
    install(cluster, "widget")
    assert "Succeeded" == cluster.phase("widget.v1.0.0")

    group(cluster, targetNamespaces=["operators", "team-a"])
    cluster.reconcile()

    csv = cluster.get("csv", "widget.v1.0.0")
    assert "Succeeded" == csv["status"]["phase"]
    assert ("Pending", "NeedsReinstall") in [(c["phase"], c["reason"]) for c in csv["status"]["conditions"]]
    assert "operators,team-a" == annotations(csv)["olm.targetNamespaces"]
    template = cluster.get("deploy", "widget")["spec"]["template"]["metadata"]["annotations"]
    assert "operators,team-a" == template["olm.targetNamespaces"]


def test_a_second_group_fails_the_csv_until_it_is_removed(make: Callable[..., Cluster]) -> None:
    """TooManyOperatorGroups, then Pending and Succeeded again once the second group is deleted."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster)
    install(cluster, "widget")
    group(cluster, name="second")
    cluster.reconcile()
    assert (
        "Failed",
        "TooManyOperatorGroups",
        "csv created in namespace with multiple operatorgroups, can't pick one automatically",
    ) == reason(cluster, "widget.v1.0.0")

    cluster.store.delete(OG, "OperatorGroup", "second", "operators")
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0")


def test_duplicate_install_modes_fail_with_invalid_install_modes(make: Callable[..., Cluster]) -> None:
    """A mode listed twice is not a set: InvalidInstallModes."""
    modes = [{"type": "AllNamespaces", "supported": True}, {"type": "AllNamespaces", "supported": False}]
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), spec={"installModes": modes}))
    group(cluster)
    install(cluster, "widget")

    phase, why, message = reason(cluster, "widget.v1.0.0")
    assert ("Failed", "InvalidInstallModes") == (phase, why)
    assert message.startswith("InstallMode list contains duplicates, cannot make set:")


def test_hook_olmkit_csv_targets_problem(make: Callable[..., Cluster], olmkit_register: Any) -> None:
    """A plugin can refuse a group's targets for a CSV; its reason and message fail the CSV."""
    from olmkit import hookimpl

    class AtMostOne:
        @hookimpl(tryfirst=True)
        def olmkit_csv_targets_problem(self, csv: Any, targets: Sequence[str]) -> tuple[str, str] | None:
            return ("TooManyTargets", f"{len(targets)} targets") if len(targets) > 1 else None

    olmkit_register(AtMostOne(), "at-most-one")
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster, targetNamespaces=["operators", "team-a"])
    install(cluster, "widget")

    assert ("Failed", "TooManyTargets", "2 targets") == reason(cluster, "widget.v1.0.0")


# --------------------------------------------------------------------------- provided APIs


def test_the_group_annotation_is_the_sorted_union_of_its_members_apis(make: Callable[..., Cluster]) -> None:
    """olm.providedAPIs: Kind.version.group, comma-separated, sorted, from every member."""
    cluster = make(
        B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES),
        B("gadget", "1.0.0", owns=(GADGET, ("other.io", "v2", "Thing")), install_modes=ALL_MODES),
    )
    group(cluster)
    cluster.subscribe("widget", source="test")
    cluster.subscribe("gadget", source="test")
    cluster.reconcile()

    og = cluster.get("og", "og")
    assert "Gadget.v1.example.io,Thing.v2.other.io,Widget.v1.example.io" == annotations(og)["olm.providedAPIs"]


def test_apis_no_member_provides_any_more_are_pruned(make: Callable[..., Cluster]) -> None:
    """Deleting a member takes its APIs out of the group's annotation."""
    cluster = make(
        B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES),
        B("gadget", "1.0.0", owns=(GADGET,), install_modes=ALL_MODES),
    )
    group(cluster)
    cluster.subscribe("widget", source="test")
    cluster.subscribe("gadget", source="test")
    cluster.reconcile()

    cluster.store.delete(V1A1, "Subscription", "gadget", "operators")
    cluster.store.delete(V1A1, "ClusterServiceVersion", "gadget.v1.0.0", "operators")
    cluster.reconcile()

    assert "Widget.v1.example.io" == annotations(cluster.get("og", "og"))["olm.providedAPIs"]


@pytest.mark.kube
def test_intersecting_groups_providing_the_same_api_conflict_until_one_goes(make: Callable[..., Cluster]) -> None:
    """Two global groups, one API: the later CSV fails InterOperatorGroupOwnerConflict; deleting the first
    operator lets it install."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster)
    group(cluster, ns="other")
    install(cluster, "widget")
    install(cluster, "widget", ns="other")

    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    assert ("Failed", "InterOperatorGroupOwnerConflict", "intersecting operatorgroups provide the same apis") == reason(
        cluster, "widget.v1.0.0", "other"
    )
    assert not cluster.exists("deploy", "widget", "other")
    assert "" == annotations(cluster.get("og", "og", "other")).get("olm.providedAPIs", "")

    cluster.store.delete(V1A1, "Subscription", "widget", "operators")
    cluster.store.delete(V1A1, "ClusterServiceVersion", "widget.v1.0.0", "operators")
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0", "other")
    assert "Widget.v1.example.io" == annotations(cluster.get("og", "og", "other"))["olm.providedAPIs"]
    assert "" == annotations(cluster.get("og", "og"))["olm.providedAPIs"]


def test_groups_whose_namespaces_do_not_intersect_may_provide_the_same_api(make: Callable[..., Cluster]) -> None:
    """Own-namespace groups in two namespaces: both install; narrowing a global group resolves a conflict."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster)
    group(cluster, ns="other", targetNamespaces=["other"])
    install(cluster, "widget")
    install(cluster, "widget", ns="other")
    assert "InterOperatorGroupOwnerConflict" == reason(cluster, "widget.v1.0.0", "other")[1]

    group(cluster, targetNamespaces=["operators"])
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    assert "Succeeded" == cluster.phase("widget.v1.0.0", "other")


def test_a_static_group_refuses_apis_it_does_not_list(make: Callable[..., Cluster]) -> None:
    """staticProvidedAPIs: the annotation is never changed; a CSV providing more fails
    CannotModifyStaticOperatorGroupProvidedAPIs until the annotation lists its APIs."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    cluster.apply(
        {
            "apiVersion": OG,
            "kind": "OperatorGroup",
            "metadata": {
                "name": "og",
                "namespace": "operators",
                "annotations": {"olm.providedAPIs": "Prometheus.v1.monitoring.coreos.com"},
            },
            "spec": {"staticProvidedAPIs": True},
        }
    )
    install(cluster, "widget")

    assert (
        "Failed",
        "CannotModifyStaticOperatorGroupProvidedAPIs",
        "static provided api operatorgroup cannot be modified by these apis",
    ) == reason(cluster, "widget.v1.0.0")
    og = cluster.get("og", "og")
    assert "Prometheus.v1.monitoring.coreos.com" == annotations(og)["olm.providedAPIs"]

    og["metadata"]["annotations"]["olm.providedAPIs"] = "Prometheus.v1.monitoring.coreos.com,Widget.v1.example.io"
    cluster.store.update(og)
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    expected = "Prometheus.v1.monitoring.coreos.com,Widget.v1.example.io"
    assert expected == annotations(cluster.get("og", "og"))["olm.providedAPIs"]


# --------------------------------------------------------------------------- InstallPlan checks


@pytest.mark.parametrize(
    ("break_group", "message"),
    [
        (
            lambda c: group(c, name="second"),
            "more than one operator group(s) are managing this namespace count=2",
        ),
        (
            lambda c: c.store.delete(OG, "OperatorGroup", "og", "operators"),
            "no operator group found that is managing this namespace",
        ),
        (
            lambda c: group(c, serviceAccountName="installer"),
            "please make sure the service account exists. sa=installer operatorgroup=operators/og",
        ),
    ],
    ids=["two-groups", "no-group", "missing-service-account"],
)
def test_an_install_plan_waits_for_a_usable_operator_group(
    make: Callable[..., Cluster], break_group: Callable[[Cluster], None], message: str
) -> None:
    """An approved plan in a namespace without exactly one group (or without the group's service account)
    creates no CSV: it stays Installing with Installed=False InstallCheckFailed, and installs once fixed."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster)
    cluster.subscribe("widget", source="test", approval="Manual")
    cluster.reconcile()
    (plan,) = cluster.plans()
    break_group(cluster)
    cluster.reconcile()

    cluster.approve(plan["metadata"]["name"])
    cluster.reconcile()

    plan = cluster.get("ip", plan["metadata"]["name"])
    assert "Installing" == plan["status"]["phase"]
    installed = cluster.condition(plan, "Installed")
    assert ("False", "InstallCheckFailed", message) == (installed["status"], installed["reason"], installed["message"])
    assert not cluster.exists("csv", "widget.v1.0.0")

    if cluster.exists("og", "second"):
        cluster.store.delete(OG, "OperatorGroup", "second", "operators")
    elif not cluster.exists("og", "og"):
        group(cluster)
    else:
        cluster.apply(
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": "operators"}}
        )
    cluster.reconcile()

    assert "Complete" == cluster.get("ip", plan["metadata"]["name"])["status"]["phase"]
    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    if cluster.exists("sa", "installer"):
        ref = cluster.get("og", "og")["status"]["serviceAccountRef"]
        uid = cluster.get("sa", "installer")["metadata"]["uid"]
        expected = {"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "operators", "name": "installer"}
        assert {**expected, "uid": uid} == ref


def test_a_running_operator_that_comes_to_conflict_loses_its_deployment(make: Callable[..., Cluster]) -> None:
    """Widening a group onto another group's API: the member fails InterOperatorGroupOwnerConflict and its
    Deployment is removed; narrowing the group again reinstalls it."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    group(cluster, targetNamespaces=["operators"])
    group(cluster, ns="other", targetNamespaces=["other"])
    install(cluster, "widget")
    install(cluster, "widget", ns="other")
    assert cluster.exists("deploy", "widget", "other")

    group(cluster, ns="other")  # now global: it reaches operators, whose group provides Widget
    cluster.reconcile()

    assert "InterOperatorGroupOwnerConflict" == reason(cluster, "widget.v1.0.0", "other")[1]
    assert not cluster.exists("deploy", "widget", "other")
    assert "Succeeded" == cluster.phase("widget.v1.0.0")

    group(cluster, ns="other", targetNamespaces=["other"])
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0", "other")
    assert cluster.exists("deploy", "widget", "other")


def test_a_member_waits_for_its_group_to_know_its_targets(make: Callable[..., Cluster]) -> None:
    """Before the group's status names its targets, the CSV phase machine leaves a member CSV alone."""
    from tests.lifecycle.harness import csv_manifest

    cluster = make()
    group(cluster)
    manifest = csv_manifest(B("widget", "1.0.0", install_modes=ALL_MODES))
    cluster.apply({**manifest, "metadata": {"name": "widget.v1.0.0", "namespace": "operators"}})
    csvs = cluster.manager.controllers["clusterserviceversion"]

    for _ in range(3):
        csvs.reconcile("operators", "widget.v1.0.0")

    csv = cluster.get("csv", "widget.v1.0.0")
    assert {"olm.operatorGroup": "og", "olm.operatorNamespace": "operators"} == annotations(csv)
    assert "phase" not in (csv.get("status") or {})

    cluster.reconcile()

    assert "" == annotations(cluster.get("csv", "widget.v1.0.0"))["olm.targetNamespaces"]
    assert "Pending" == cluster.phase("widget.v1.0.0")  # its service account is missing: no InstallPlan made it


def test_a_selector_that_matches_nothing_fails_the_csv_until_a_namespace_matches(make: Callable[..., Cluster]) -> None:
    """status.namespaces [] (not [""]: all): the InstallPlan waits, a member fails NoTargetNamespaces with
    upstream's message; labelling a namespace back in lets it run again."""
    cluster = make(B("widget", "1.0.0", owns=(WIDGET,), install_modes=ALL_MODES))
    namespace(cluster, "operators", team="x")
    group(cluster, selector={"matchLabels": {"team": "x"}})
    install(cluster, "widget")
    assert "Succeeded" == cluster.phase("widget.v1.0.0")

    namespace(cluster, "operators")
    cluster.reconcile()

    assert [] == cluster.get("og", "og")["status"]["namespaces"]
    expected = ("Failed", "NoTargetNamespaces", "no targetNamespaces are matched operatorgroups namespace selection")
    assert expected == reason(cluster, "widget.v1.0.0")

    namespace(cluster, "operators", team="x")
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("widget.v1.0.0")
    assert "operators" == annotations(cluster.get("csv", "widget.v1.0.0"))["olm.targetNamespaces"]
