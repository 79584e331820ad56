"""olmkit-image-policy end to end: InstallPlans refused with reasons, apply refused, switched off."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import olmkit_image_policy as policy_plugin
import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "catalog"
DIGEST = "sha256:" + "ab" * 32


def policy(cluster, allowed: str, require_digest: str = "false") -> None:
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": policy_plugin.CONFIG_MAP, "namespace": policy_plugin.NAMESPACE},
            "data": {"allowedRegistries": allowed, "requireDigest": require_digest},
        }
    )


@pytest.fixture
def cluster(olmkit_register, embedded_cluster):
    """An embedded cluster with this plugin, the examples catalog and a group in ``operators``."""
    olmkit_register(policy_plugin, "image-policy")
    embedded_cluster.catalog_source("examples", EXAMPLES)
    embedded_cluster.operator_group()
    return embedded_cluster


def test_unapproved_registry_fails_the_install_plan_and_the_subscription_says_why(cluster):
    """The bundle's image comes from example.invalid, the policy allows registry.example.com only:
    the InstallPlan fails with InstallCheckFailed naming the image and the rule, the Subscription
    reports InstallPlanFailed with the same reason, and no CSV is created."""
    policy(cluster, "registry.example.com/*\n# mirrors\nquay.io/acme/*\n")
    cluster.subscribe("storage-operator", channel="stable")

    cluster.reconcile()

    [plan] = cluster.plans()
    assert "Failed" == plan["status"]["phase"]
    installed = cluster.condition(plan, "Installed")
    assert "InstallCheckFailed" == installed["reason"]
    assert "image example.invalid/storage-operator:v0.5.0" in installed["message"]
    assert "is not from an allowed registry (registry.example.com/*, quay.io/acme/*" in installed["message"]
    assert "ClusterServiceVersion/storage-operator.v0.5.0 of bundle storage-operator.v0.5.0" in installed["message"]
    sub = cluster.get("sub", "storage-operator")
    failed = cluster.condition(sub, "InstallPlanFailed")
    assert "True" == failed["status"]
    assert "InstallCheckFailed" == failed["reason"]
    assert "example.invalid/storage-operator:v0.5.0" in failed["message"]
    assert [] == cluster.names("csv")


def test_digest_required(cluster):
    """Allowed registry but a tag, not a digest: refused for the digest rule alone."""
    policy(cluster, "example.invalid/*", require_digest="true")
    cluster.subscribe("storage-operator", channel="stable")

    cluster.reconcile()

    [plan] = cluster.plans()
    message = cluster.condition(plan, "Installed")["message"]
    assert "is not pinned by digest" in message
    assert "not from an allowed registry" not in message


def test_allowed_images_install_and_a_fixed_policy_lets_a_retry_through(cluster):
    """A refusal is not final: after the policy is fixed and the failed plan deleted, the
    operator installs."""
    policy(cluster, "registry.example.com/*")
    cluster.subscribe("storage-operator", channel="stable")
    cluster.reconcile()
    [failed] = cluster.plans()

    policy(cluster, "example.invalid/*")
    cluster.store.delete("operators.coreos.com/v1alpha1", "InstallPlan", failed["metadata"]["name"], "operators")
    cluster.reconcile()

    assert "Succeeded" == cluster.phase("storage-operator.v0.5.0")


def test_no_policy_refuses_nothing(cluster):
    """Without the ConfigMap the plugin is inert."""
    cluster.subscribe("storage-operator", channel="stable")

    cluster.reconcile()

    assert "Succeeded" == cluster.phase("storage-operator.v0.5.0")


def test_images_of_reads_containers_init_containers_and_related_images():
    """Every image a CSV names, with where it was found."""
    csv = {
        "spec": {
            "install": {
                "spec": {
                    "deployments": [
                        {
                            "name": "op",
                            "spec": {
                                "template": {
                                    "spec": {
                                        "initContainers": [{"image": "a.io/init:1"}],
                                        "containers": [{"image": f"a.io/op@{DIGEST}"}],
                                    }
                                }
                            },
                        }
                    ]
                }
            },
            "relatedImages": [{"name": "db", "image": "b.io/db:2"}],
        }
    }

    assert [
        ("a.io/init:1", "deployment op initContainers[0]"),
        (f"a.io/op@{DIGEST}", "deployment op containers[0]"),
        ("b.io/db:2", "relatedImages[0]"),
    ] == list(policy_plugin.images_of(csv))


def test_invalid_policy_is_reported_not_crashed(cluster):
    """A policy with a bad requireDigest refuses with a message naming the ConfigMap."""
    policy(cluster, "example.invalid/*", require_digest="yes")
    cluster.subscribe("storage-operator", channel="stable")

    cluster.reconcile()

    [plan] = cluster.plans()
    assert "the image policy olm/olmkit-image-policy is invalid" in cluster.condition(plan, "Installed")["message"]


def olmkit(store: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "olmkit", *args, "--store", str(store)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_apply_refuses_a_csv_and_disabling_the_plugin_lets_it_in(tmp_path):
    """Through the installed entry point: ``olmkit apply`` of a CSV with an unpinned image is
    refused (exit 2, the image named); with OLMKIT_DISABLE_PLUGINS=image-policy it is created."""
    store = tmp_path / "cluster.db"
    cm = tmp_path / "policy.yaml"
    cm.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: olmkit-image-policy, namespace: olm}\n"
        'data: {allowedRegistries: "example.invalid/*", requireDigest: "true"}\n'
    )
    assert 0 == olmkit(store, "apply", "-f", str(cm)).returncode
    csv = tmp_path / "csv.yaml"
    csv.write_text(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\n"
        "metadata: {name: op.v1.0.0, namespace: default}\n"
        "spec:\n  version: 1.0.0\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n"
        "      - name: op\n        spec:\n          template:\n            spec:\n              containers:\n"
        "              - {name: op, image: 'example.invalid/op:v1'}\n"
    )

    refused = olmkit(store, "apply", "-f", str(csv))
    assert 2 == refused.returncode
    assert "image example.invalid/op:v1 (deployment op containers[0]) is not pinned by digest" in refused.stderr
    assert "Traceback" not in refused.stderr

    allowed = olmkit(store, "apply", "-f", str(csv), env={"OLMKIT_DISABLE_PLUGINS": "image-policy"})
    assert 0 == allowed.returncode, allowed.stderr
