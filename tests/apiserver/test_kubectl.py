"""The README's demo story through the real kubectl alone, against ``olmkit serve`` on a fresh store."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.apiserver.conftest import ROOT, ServeProcess, start_serve

pytestmark = pytest.mark.slow

CATALOG = ROOT / "examples" / "catalog-v1"


def _configmap(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "demo"},
        "data": {"a": "1"},
    }


def _manifests(tmp: Path) -> Path:
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}},
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": "examples", "namespace": "olm"},
            "spec": {
                "displayName": "olmkit examples",
                "publisher": "olmkit",
                "sourceType": "file",
                "path": str(CATALOG),
            },
        },
        {
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {"name": "demo", "namespace": "demo"},
        },
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription",
            "metadata": {"name": "postgres-operator", "namespace": "demo"},
            "spec": {"name": "postgres-operator", "channel": "stable", "source": "examples", "sourceNamespace": "olm"},
        },
    ]
    path = tmp / "demo.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _until_exists(server: ServeProcess, ref: str, namespace: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while server.kubectl("get", ref, "-n", namespace, check=False).returncode != 0:
        assert time.monotonic() < deadline, f"{ref} never appeared"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServeProcess, Path]]:
    """``olmkit serve`` with the controllers, the demo manifests applied once."""
    tmp = tmp_path_factory.mktemp("serve")
    server = start_serve(tmp / "cluster")
    try:
        yield server, _manifests(tmp)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def installed(served: tuple[ServeProcess, Path]) -> ServeProcess:
    """The demo applied (twice) and the CSV Succeeded."""
    server, manifests = served
    first = server.kubectl("apply", "-f", str(manifests))
    second = server.kubectl("apply", "-f", str(manifests))
    server.notes.update(first=first.stdout, second=second.stdout, manifests=manifests)
    _until_exists(server, "csv/postgres-operator.v2.1.0", "demo")
    server.kubectl(
        "wait", "--for=jsonpath={.status.phase}=Succeeded", "csv/postgres-operator.v2.1.0", "-n", "demo",
        "--timeout=90s",
        timeout=120,
    )  # fmt: skip
    return server


def test_apply_creates_then_the_second_apply_changes_nothing(installed: ServeProcess) -> None:
    """kubectl apply creates every object; the same file again is a no-op for each of them."""
    first, second = installed.notes["first"], installed.notes["second"]

    assert "subscription.operators.coreos.com/postgres-operator created" in first
    assert "catalogsource.operators.coreos.com/examples created" in first
    assert "namespace/demo created" in first
    assert [line.rsplit(" ", 1)[1] for line in second.splitlines()] == ["unchanged"] * 4


def test_get_prints_olm_printer_columns(installed: ServeProcess) -> None:
    """kubectl get csv,sub,ip shows the columns OLM's CRDs declare, computed by the server."""
    out = installed.kubectl("get", "csv,sub,ip", "-n", "demo").stdout
    lines = out.splitlines()

    assert lines[0].split() == ["NAME", "DISPLAY", "VERSION", "REPLACES", "PHASE"]
    csv_row = next(line for line in lines if "postgres-operator.v2.1.0" in line)
    assert csv_row.split()[-1] == "Succeeded"
    assert "Postgres Operator" in csv_row
    assert any(line.split() == ["NAME", "PACKAGE", "SOURCE", "CHANNEL"] for line in lines)
    sub_row = next(line for line in lines if line.startswith("subscription.operators.coreos.com/postgres-operator"))
    assert sub_row.split()[1:] == ["postgres-operator", "examples", "stable"]
    assert any(line.split() == ["NAME", "CSV", "APPROVAL", "APPROVED"] for line in lines)
    ip_row = next(line for line in lines if line.startswith("installplan.operators.coreos.com/"))
    assert ip_row.split()[2:] == ["Automatic", "true"]


def test_get_all_namespaces_and_output_yaml(installed: ServeProcess) -> None:
    """-A lists across namespaces; -o yaml gives the stored object with its status."""
    listing = installed.kubectl("get", "csv", "-A").stdout
    obj = yaml.safe_load(installed.kubectl("get", "sub", "postgres-operator", "-n", "demo", "-o", "yaml").stdout)

    assert listing.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert "cert-manager-lite.v1.0.0" in listing
    assert "Subscription" == obj["kind"]
    assert "postgres-operator.v2.1.0" == obj["status"]["installedCSV"]
    assert obj["metadata"]["resourceVersion"].isdigit()


def test_describe_shows_the_object_and_its_status(installed: ServeProcess) -> None:
    """kubectl describe prints metadata, spec and status of an OLM object."""
    out = installed.kubectl("describe", "csv", "postgres-operator.v2.1.0", "-n", "demo").stdout

    assert "Name:         postgres-operator.v2.1.0" in out
    assert "Kind:         ClusterServiceVersion" in out
    assert "Phase:" in out
    assert "Succeeded" in out


def test_get_watch_prints_changes(installed: ServeProcess) -> None:
    """kubectl get -w prints the current rows, then a row per change as it happens."""
    watcher = subprocess.Popen(
        [installed.kubectl_bin, "--kubeconfig", str(installed.kubeconfig), "get", "cm", "-n", "demo", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        installed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_configmap("watched")))
        installed.kubectl("label", "configmap", "watched", "-n", "demo", "seen=yes")
        time.sleep(1.5)
    finally:
        watcher.terminate()
        out, err = watcher.communicate(timeout=10)

    rows = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert rows.count("watched") >= 2, out + err
    assert ["NAME", "DATA", "AGE"] == out.splitlines()[0].split()


def test_manual_installplan_is_approved_with_kubectl_patch(installed: ServeProcess, tmp_path: Path) -> None:
    """A Manual subscription waits; kubectl patch --type merge approves its InstallPlan; the CSV installs."""
    manifest = tmp_path / "manual.yaml"
    manifest.write_text(
        yaml.safe_dump_all(
            [
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "manual"}},
                {
                    "apiVersion": "operators.coreos.com/v1",
                    "kind": "OperatorGroup",
                    "metadata": {"name": "og", "namespace": "manual"},
                },
                {
                    "apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "Subscription",
                    "metadata": {"name": "cert-manager-lite", "namespace": "manual"},
                    "spec": {"name": "cert-manager-lite", "channel": "stable", "source": "examples",
                             "sourceNamespace": "olm", "installPlanApproval": "Manual"},
                },
            ]
        )
    )  # fmt: skip
    installed.kubectl("apply", "-f", str(manifest))
    name = ""
    for _ in range(60):
        name = installed.kubectl(
            "get", "ip", "-n", "manual", "-o", "jsonpath={.items[0].metadata.name}", check=False
        ).stdout
        if name:
            break
        time.sleep(0.5)
    assert name, "no InstallPlan was made"
    assert "false" == installed.kubectl("get", "ip", name, "-n", "manual", "-o", "jsonpath={.spec.approved}").stdout

    patched = installed.kubectl(
        "patch", "ip", name, "-n", "manual", "--type", "merge", "-p", '{"spec":{"approved":true}}'
    )
    _until_exists(installed, "csv/cert-manager-lite.v1.0.0", "manual")  # kubectl wait fails at once on NotFound
    installed.kubectl(
        "wait", "--for=jsonpath={.status.phase}=Succeeded", "csv/cert-manager-lite.v1.0.0", "-n", "manual",
        "--timeout=60s", timeout=90,
    )  # fmt: skip

    assert f"installplan.operators.coreos.com/{name} patched" == patched.stdout.strip()


def test_strategic_merge_patch_is_refused_for_custom_resources(installed: ServeProcess) -> None:
    """As on a cluster, OLM's kinds take merge and JSON patches; kubectl's default strategic patch is refused."""
    done = installed.kubectl(
        "patch", "sub", "postgres-operator", "-n", "demo", "-p", '{"spec":{"channel":"x"}}', check=False
    )

    assert 0 != done.returncode
    assert "application/merge-patch+json" in done.stderr


def test_strategic_merge_patch_on_built_in_kinds(installed: ServeProcess) -> None:
    """A built-in kind takes kubectl's strategic merge patch (containers merge by name)."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]},
            },
        },
    }
    installed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(deployment))
    installed.kubectl("patch", "deploy", "web", "-n", "demo", "-p",
                      '{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"b:2"}]}}}}')  # fmt: skip
    images = installed.kubectl(
        "get", "deploy", "web", "-n", "demo", "-o", "jsonpath={.spec.template.spec.containers[*].image}"
    ).stdout

    assert "a:1 b:2" == images


def test_typed_create_commands_send_protobuf(installed: ServeProcess) -> None:
    """kubectl create namespace/configmap/secret/serviceaccount send protobuf bodies; they are decoded."""
    installed.kubectl("create", "namespace", "typed")
    installed.kubectl("create", "configmap", "c1", "-n", "typed", "--from-literal=a=1", "--from-literal=b=2")
    installed.kubectl("create", "secret", "generic", "s1", "-n", "typed", "--from-literal=pw=x")
    installed.kubectl("create", "serviceaccount", "bot", "-n", "typed")
    refused = installed.kubectl("create", "deployment", "web", "--image=nginx", "-n", "typed", check=False)

    assert "Active" == installed.kubectl("get", "ns", "typed", "-o", "jsonpath={.status.phase}").stdout
    assert '{"a":"1","b":"2"}' == installed.kubectl("get", "cm", "c1", "-n", "typed", "-o", "jsonpath={.data}").stdout
    assert "eA==" == installed.kubectl("get", "secret", "s1", "-n", "typed", "-o", "jsonpath={.data.pw}").stdout
    assert "bot" == installed.kubectl("get", "sa", "bot", "-n", "typed", "-o", "jsonpath={.metadata.name}").stdout
    assert 1 == refused.returncode
    assert "protobuf bodies of Deployment (apps/v1) are not supported" in refused.stderr


def test_diff_and_server_dry_run_change_nothing(installed: ServeProcess, tmp_path: Path) -> None:
    """kubectl diff and apply --dry-run=server show the change the server would make, and write nothing."""
    changed = tmp_path / "changed.yaml"
    changed.write_text(installed.notes["manifests"].read_text().replace("channel: stable", "channel: beta"))
    diff = installed.kubectl("diff", "-f", str(changed), check=False)
    dry = installed.kubectl("apply", "--dry-run=server", "-f", str(changed))
    channel = installed.kubectl("get", "sub", "postgres-operator", "-n", "demo", "-o", "jsonpath={.spec.channel}")

    assert 1 == diff.returncode  # kubectl diff: 1 means "there are differences"
    assert "-  channel: stable\n+  channel: beta" in diff.stdout
    assert "subscription.operators.coreos.com/postgres-operator configured (server dry run)" in dry.stdout
    assert "stable" == channel.stdout


def test_not_found_message(installed: ServeProcess) -> None:
    """A missing object: kubectl prints the API's NotFound status and exits 1."""
    done = installed.kubectl("get", "csv", "nope", "-n", "demo", check=False)

    assert 1 == done.returncode
    assert (
        'Error from server (NotFound): clusterserviceversions.operators.coreos.com "nope" not found'
        == done.stderr.strip()
    )


def test_conflict_message(installed: ServeProcess) -> None:
    """A write with a stale resourceVersion: kubectl prints the API's Conflict status."""
    done = installed.kubectl(
        "patch", "sub", "postgres-operator", "-n", "demo", "--type", "merge",
        "-p", '{"metadata":{"resourceVersion":"1"},"spec":{"channel":"other"}}', check=False,
    )  # fmt: skip

    assert 1 == done.returncode
    assert done.stderr.startswith(
        "Error from server (Conflict): Operation cannot be fulfilled on "
        'subscriptions.operators.coreos.com "postgres-operator"'
    )


def test_server_side_apply_creates_updates_and_reports_conflicts(installed: ServeProcess) -> None:
    """kubectl apply --server-side creates, updates, and refuses to take another manager's field."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": "demo"}, "data": {"k": "1"}}
    created = installed.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(cm))
    cm["data"]["k"] = "2"
    updated = installed.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(cm))
    cm["data"]["k"] = "3"
    conflict = installed.kubectl(
        "apply", "--server-side", "--field-manager", "other", "-f", "-", stdin=yaml.safe_dump(cm), check=False
    )
    forced = installed.kubectl(
        "apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(cm)
    )
    value = installed.kubectl("get", "cm", "ssa", "-n", "demo", "-o", "jsonpath={.data.k}").stdout

    assert "configmap/ssa serverside-applied" == created.stdout.strip()
    assert "configmap/ssa serverside-applied" == updated.stdout.strip()
    assert 1 == conflict.returncode
    assert 'conflict with "kubectl"' in conflict.stderr
    assert ".data.k" in conflict.stderr
    assert "serverside-applied" in forced.stdout
    assert "3" == value


def test_server_side_apply_conflicts_with_fields_other_writes_set(installed: ServeProcess) -> None:
    """Fields set by a client-side apply belong to kubectl-client-side-apply: a server-side apply
    that changes them conflicts with that manager, as on a cluster."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csa", "namespace": "demo"}, "data": {"k": "1"}}
    installed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(cm))
    cm["data"]["k"] = "2"
    conflict = installed.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(cm), check=False)
    managers = installed.kubectl(
        "get", "cm", "csa", "-n", "demo", "-o", "jsonpath={.metadata.managedFields[*].manager}"
    ).stdout

    assert 1 == conflict.returncode
    assert 'conflict with "kubectl-client-side-apply"' in conflict.stderr
    assert "kubectl-client-side-apply" == managers


def test_a_stored_crd_is_served_at_once(installed: ServeProcess) -> None:
    """kubectl apply of a CRD makes its kind usable right away, with its printer columns."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                    "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                }
            ],
        },
    }
    widget = {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "demo"},
        "spec": {"size": 3},
    }
    installed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(crd))
    installed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(widget))
    out = installed.kubectl("get", "wd", "-n", "demo").stdout
    explained = installed.kubectl("explain", "widgets").stdout

    assert ["NAME", "SIZE"] == out.splitlines()[0].split()
    assert ["w1", "3"] == out.splitlines()[1].split()
    assert "KIND:       Widget" in explained
    assert "GROUP:      example.io" in explained


def test_api_resources_and_explain(installed: ServeProcess) -> None:
    """Discovery lists OLM's kinds with short names; explain reads the served OpenAPI."""
    resources = installed.kubectl("api-resources", "--api-group", "operators.coreos.com").stdout
    explained = installed.kubectl("explain", "subscription.spec").stdout

    row = next(line for line in resources.splitlines() if line.startswith("clusterserviceversions"))
    assert row.split() == [
        "clusterserviceversions",
        "csv,csvs",
        "operators.coreos.com/v1alpha1",
        "true",
        "ClusterServiceVersion",
    ]
    assert "KIND:       Subscription" in explained
    assert "installPlanApproval" in explained
    assert "sourceNamespace" in explained


def test_discovery_is_aggregated(installed: ServeProcess, tmp_path: Path) -> None:
    """kubectl reads every group's resources from the aggregated discovery documents: two requests."""
    done = installed.kubectl("api-resources", "-v=6", "--cache-dir", str(tmp_path))
    requests = [line.split("GET ", 1)[1].split("?")[0] for line in done.stderr.splitlines() if "GET https" in line]

    assert [f"{installed.url}/api", f"{installed.url}/apis"] == requests
    assert "subscriptions" in done.stdout


def test_delete(installed: ServeProcess) -> None:
    """kubectl delete removes the object and waits until it is gone."""
    installed.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(_configmap("doomed")))
    done = installed.kubectl("delete", "configmap", "doomed", "-n", "demo")
    after = installed.kubectl("get", "configmap", "doomed", "-n", "demo", check=False)

    assert 'configmap "doomed" deleted' == done.stdout.strip()
    assert "NotFound" in after.stderr


def test_no_credentials_get_401(installed: ServeProcess) -> None:
    """Requests without a client certificate or the bearer token are refused."""
    status, body = installed.http.json("GET", "/api/v1/namespaces", token=None)
    wrong, _ = installed.http.json("GET", "/api/v1/namespaces", token="not-the-token")

    assert 401 == status == wrong
    assert "Unauthorized" == body["reason"]
