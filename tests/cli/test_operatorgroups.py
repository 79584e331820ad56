"""OperatorGroups on the command line: ``install --watch-all``, ``get og -o yaml``, ``describe og``."""

from __future__ import annotations

import yaml

V1A1 = "operators.coreos.com/v1alpha1"


def test_a_global_install_is_shown_by_get_and_describe(olmkit, examples, write, store):
    """install --watch-all, reconcile: the group's status and annotations in get -o yaml, its members in
    describe, the operator's copy in another namespace."""
    namespaces = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("ops", "team")]
    assert 0 == olmkit("apply", "-f", write("ns.yaml", *namespaces)).code
    assert 0 == olmkit("install", "storage-operator", "-n", "ops", "--watch-all").code
    assert 0 == olmkit("reconcile", "--until-stable", "--timeout", "120").code

    group = yaml.safe_load(olmkit("get", "og", "ops", "-n", "ops", "-o", "yaml").out)
    assert [""] == group["status"]["namespaces"]
    assert "lastUpdated" in group["status"]
    csv = store.list(V1A1, "ClusterServiceVersion", "ops").items[0]
    assert "Succeeded" == csv["status"]["phase"]
    provided = group["metadata"]["annotations"]["olm.providedAPIs"]
    owned = csv["spec"]["customresourcedefinitions"]["owned"]
    assert ",".join(sorted(f"{d['kind']}.{d['version']}.{d['name'].partition('.')[2]}" for d in owned)) == provided
    copy = store.get(V1A1, "ClusterServiceVersion", csv["metadata"]["name"], "team")
    assert "Copied" == copy["status"]["reason"]

    lines = olmkit("describe", "og", "ops", "-n", "ops").out.splitlines()
    at = lines.index("Members:")
    assert ["NAME", "PHASE", "REASON"] == lines[at + 1].split()
    assert [csv["metadata"]["name"], "Succeeded", "InstallSucceeded"] == lines[at + 2].split()
    assert any(f"olm.providedAPIs: {provided}" in line for line in lines)


def test_describe_a_group_without_members(olmkit, write):
    """A group with no CSVs: Members <none>."""
    group = {
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": "g", "namespace": "x"},
    }
    olmkit("apply", "-f", write("og.yaml", group))

    assert "Members:      <none>" in olmkit("describe", "og", "g", "-n", "x").out.splitlines()


def test_an_unknown_upgrade_strategy_is_refused(olmkit, write):
    """spec.upgradeStrategy.name is Default or TechPreviewUnsafeFailForward: anything else is exit 2."""
    group = {
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": "g", "namespace": "x"},
        "spec": {"upgradeStrategy": {"name": "Fast"}},
    }
    path = write("og.yaml", group)

    result = olmkit("apply", "-f", path)

    assert 2 == result.code
    expected = "spec.upgradeStrategy.name must be Default or TechPreviewUnsafeFailForward, not 'Fast'"
    assert expected in result.err
    group["spec"]["upgradeStrategy"]["name"] = "TechPreviewUnsafeFailForward"
    assert 0 == olmkit("apply", "-f", write("og.yaml", group)).code
