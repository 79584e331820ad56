"""Waiting honestly: install --wait, olmkit wait, and reconcile --until-stable with failed subscriptions."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import catalog_source

V1A1 = "operators.coreos.com/v1alpha1"


@pytest.fixture
def needy(tmp_path, write, olmkit):
    """CatalogSource olm/needy: package needy, whose only bundle requires an API nothing provides."""
    root = tmp_path / "needy"
    root.mkdir()
    blobs = [
        {"schema": "olm.package", "name": "needy", "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": "needy", "name": "stable", "entries": [{"name": "needy.v1.0.0"}]},
        {
            "schema": "olm.bundle",
            "name": "needy.v1.0.0",
            "package": "needy",
            "image": "example.invalid/needy:v1",
            "properties": [
                {"type": "olm.package", "value": {"packageName": "needy", "version": "1.0.0"}},
                {"type": "olm.gvk.required", "value": {"group": "nothing.example.io", "kind": "Gone", "version": "v1"}},
            ],
        },
    ]
    (root / "catalog.json").write_text("\n".join(json.dumps(b) for b in blobs))
    assert 0 == olmkit("apply", "-f", write("needy.yaml", catalog_source("needy", "olm", str(root)))).code


def test_install_wait_reports_success(olmkit, examples):
    """install --wait runs the controllers until the CSV Succeeded, then says so (exit 0)."""
    result = olmkit("install", "postgres-operator", "-n", "demo", "--wait", "--timeout", "60s")

    assert 0 == result.code, result.err
    assert result.out.splitlines()[-1].startswith("subscription.operators.coreos.com/postgres-operator installed: csv ")


def test_install_wait_reports_the_failure_reason(olmkit, needy):
    """install --wait on an unsatisfiable package: exit 1 and the ResolutionFailed reason on stderr."""
    result = olmkit("install", "needy", "-n", "demo", "--wait", "--timeout", "60s")

    assert 1 == result.code
    assert result.err.startswith(
        "olmkit: error: subscription.operators.coreos.com/needy failed: ConstraintsNotSatisfiable: "
    )


def test_install_wait_for_manual_approval_says_what_to_do(olmkit, examples):
    """A Manual install waits for approval: exit 1 and the approve command to run."""
    result = olmkit("install", "postgres-operator", "-n", "demo", "--approval", "Manual", "--wait", "--timeout", "60s")

    assert 1 == result.code
    assert "waits for approval (olmkit approve installplan/install-" in result.err


def test_reconcile_until_stable_is_not_ok_with_failed_subscriptions(olmkit, needy):
    """Stable with every subscription failed: reconcile says which and exits 1."""
    olmkit("install", "needy", "-n", "demo")

    result = olmkit("reconcile", "--until-stable", "-q")

    assert 1 == result.code
    assert "but 1 of 1 subscription(s) failed:" in result.out
    assert "  subscription demo/needy: ConstraintsNotSatisfiable: " in result.out


def test_wait_for_condition_and_jsonpath(olmkit, examples):
    """wait --for=condition and --for=jsonpath on objects the controllers already settled."""
    olmkit("install", "postgres-operator", "-n", "demo", "--wait")

    csv = olmkit("get", "csv", "-n", "demo", "-o", "name").out.split()[0]
    by_path = olmkit("wait", csv, "-n", "demo", "--for=jsonpath={.status.phase}=Succeeded")
    by_condition = olmkit("wait", "sub", "--all", "-n", "demo", "--for=condition=CatalogSourcesUnhealthy=False")

    assert (0, f"{csv} condition met\n") == (by_path.code, by_path.out)
    assert 0 == by_condition.code
    assert "subscription.operators.coreos.com/postgres-operator condition met" in by_condition.out


def test_wait_times_out_with_kubectls_message(olmkit, examples):
    """A condition never met: exit 1 after --timeout with kubectl's line."""
    olmkit("install", "postgres-operator", "-n", "demo")
    start = time.monotonic()

    result = olmkit("wait", "sub/postgres-operator", "-n", "demo", "--for=condition=Ready", "--timeout", "0.5s")

    assert 1 == result.code
    assert (
        "error: timed out waiting for the condition on subscriptions.operators.coreos.com/postgres-operator\n"
        == result.err
    )
    assert time.monotonic() - start < 5


def test_wait_sees_changes_made_by_another_writer(olmkit, examples, meanwhile):
    """wait watches the store: a change written meanwhile (here by a thread) ends the wait."""
    olmkit("install", "postgres-operator", "-n", "demo")

    with meanwhile(lambda s: s.delete(V1A1, "Subscription", "postgres-operator", "demo"), delay=0.4):
        result = olmkit("wait", "sub", "postgres-operator", "-n", "demo", "--for=delete", "--timeout", "10s")

    assert (0, "subscription.operators.coreos.com/postgres-operator condition met\n") == (result.code, result.out)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sub", "x"], "wait needs --for="),
        (["sub", "x", "--for=ready"], "expected condition=TYPE[=VALUE]"),
        (["sub", "--for=delete"], "wait needs objects: NAME..., KIND/NAME, --all or -l SELECTOR"),
        (["sub", "x", "--for=delete", "--timeout", "soon"], "'soon' is not a duration"),
    ],
)
def test_wait_usage_errors(olmkit, examples, argv, message):
    """Missing or malformed --for, no objects, a bad timeout: exit 2 with the reason."""
    result = olmkit("wait", *argv)

    assert 2 == result.code
    assert message in result.err


def test_install_wait_that_runs_out_of_time_says_where_it_stands(olmkit, examples):
    """--timeout shorter than the install: exit 1, 'not installed after', and the Subscription's standing."""
    result = olmkit("install", "postgres-operator", "-n", "demo", "--wait", "--timeout", "1ms")

    assert 1 == result.code
    assert (
        "olmkit: error: subscription.operators.coreos.com/postgres-operator not installed after 0.001s: " in result.err
    )


def test_wait_for_create_sees_an_object_appear(olmkit, examples, meanwhile):
    """--for=create waits for an object that is not there yet."""
    late = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "demo"}}

    with meanwhile(lambda s: s.create(late), delay=0.4):
        result = olmkit("wait", "cm/late", "-n", "demo", "--for=create", "--timeout", "10s")

    assert (0, "configmap/late condition met\n") == (result.code, result.out)
