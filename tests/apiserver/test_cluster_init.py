"""`olmkit cluster init` against `olmkit serve`, checked with the real kubectl: the generated CRDs are
accepted by `kubectl apply`, and once stored they give OLM's short names, printer columns and strict
validation."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.apiserver.conftest import OLMKIT, ServeProcess, start_serve

CSV = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "ClusterServiceVersion",
    "metadata": {"name": "widget-operator.v1.0.0", "namespace": "operators"},
    "spec": {
        "displayName": "Widget Operator",
        "version": "1.0.0",
        "replaces": "widget-operator.v0.9.0",
        "install": {"strategy": "deployment", "spec": {"deployments": []}},
        "installModes": [{"type": "AllNamespaces", "supported": True}],
    },
}
SUBSCRIPTION = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "Subscription",
    "metadata": {"name": "widget-operator", "namespace": "operators"},
    "spec": {"name": "widget-operator", "source": "widgets", "sourceNamespace": "olm", "channel": "stable"},
}


def _dry_run_yaml(tmp_path: Path) -> str:
    done = subprocess.run(
        [*OLMKIT, "cluster", "init", "--dry-run", "-o", "yaml", "--store", str(tmp_path / "unused.db")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


@pytest.fixture(scope="module")
def initialised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """`olmkit serve --no-controllers`, then `olmkit cluster init` on its store (twice: notes keep both outputs)."""
    tmp = tmp_path_factory.mktemp("init")
    server = start_serve(tmp / "cluster", "--no-controllers")
    try:
        server.notes["yaml"] = _dry_run_yaml(tmp)
        server.notes["client"] = server.kubectl("apply", "--dry-run=client", "-f", "-", stdin=server.notes["yaml"])
        server.notes["server"] = server.kubectl("apply", "--dry-run=server", "-f", "-", stdin=server.notes["yaml"])
        db = str(server.directory / "cluster.db")
        for run in ("first", "second"):
            done = subprocess.run([*OLMKIT, "cluster", "init", "--store", db], capture_output=True, text=True)
            server.notes[run] = done
        yield server
    finally:
        server.stop()


def test_kubectl_apply_accepts_the_dry_run_yaml(initialised: ServeProcess) -> None:
    """`olmkit cluster init --dry-run -o yaml | kubectl apply --dry-run=client|server -f -` takes every object."""
    objects = list(yaml.safe_load_all(initialised.notes["yaml"]))
    client = initialised.notes["client"].stdout.splitlines()
    server = initialised.notes["server"].stdout.splitlines()

    assert 12 == len(objects)
    assert len(objects) == len(client) == len(server)
    crd = "customresourcedefinition.apiextensions.k8s.io/clusterserviceversions.operators.coreos.com"
    assert f"{crd} created (dry run)" in client
    assert f"{crd} created (server dry run)" in server


def test_init_is_idempotent_through_the_server(initialised: ServeProcess) -> None:
    """The first run creates, the second changes nothing; kubectl lists the eight CRDs."""
    first, second = initialised.notes["first"], initialised.notes["second"]
    crds = initialised.kubectl("get", "crd", "-o", "name").stdout.split()

    assert 0 == first.returncode, first.stderr
    assert 12 == first.stdout.count(" created\n")
    assert 0 == second.returncode, second.stderr
    assert "nothing to do" in second.stdout
    assert 8 == sum(name.endswith(".operators.coreos.com") for name in crds)


def test_short_names_and_printer_columns_come_from_the_stored_crds(initialised: ServeProcess) -> None:
    """`kubectl get csv` / `sub` by short name print upstream's columns, as the stored CRDs declare them."""
    initialised.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([CSV, SUBSCRIPTION]))

    csv = initialised.kubectl("get", "csv", "-n", "operators").stdout.splitlines()
    sub = initialised.kubectl("get", "sub", "-n", "operators").stdout.splitlines()
    resources = initialised.kubectl("api-resources", "--api-group=operators.coreos.com", "--no-headers").stdout
    columns = initialised.kubectl(
        "get", "crd", "subscriptions.operators.coreos.com",
        "-o", "jsonpath={.spec.versions[0].additionalPrinterColumns[*].name}",
    ).stdout  # fmt: skip

    assert ["NAME", "DISPLAY", "VERSION", "REPLACES", "PHASE"] == csv[0].split()
    assert ["widget-operator.v1.0.0", "Widget", "Operator", "1.0.0", "widget-operator.v0.9.0"] == csv[1].split()
    assert ["NAME", "PACKAGE", "SOURCE", "CHANNEL"] == sub[0].split()
    assert ["widget-operator", "widget-operator", "widgets", "stable"] == sub[1].split()
    assert "Package Source Channel" == columns
    lines = {line.split()[0]: line.split() for line in resources.splitlines()}
    assert "csv,csvs" == lines["clusterserviceversions"][1]
    assert "catsrc" == lines["catalogsources"][1]
    assert "og" == lines["operatorgroups"][1]


def test_a_field_the_schema_does_not_declare_is_refused_by_name(initialised: ServeProcess) -> None:
    """kubectl's strict validation refuses `spec.chanel`, naming the field, as the CRD schema does."""
    bad = {**SUBSCRIPTION, "metadata": {"name": "typo", "namespace": "operators"}}
    bad["spec"] = {**SUBSCRIPTION["spec"], "chanel": "stable"}

    done = initialised.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(bad), check=False)

    assert 0 != done.returncode
    assert "spec.chanel" in done.stderr
    assert "NotFound" in initialised.kubectl("get", "sub", "typo", "-n", "operators", check=False).stderr


def test_explain_reads_the_generated_schema(initialised: ServeProcess) -> None:
    """`kubectl explain subscription.spec` shows the descriptions of olmkit's schema."""
    explained = initialised.kubectl("explain", "subscription.spec").stdout

    assert "The name of the package to subscribe to." in explained
    assert "installPlanApproval" in explained


KINDS_AND_VERSIONS = (("Subscription", "v1alpha1"), ("ClusterServiceVersion", "v1alpha1"), ("OperatorGroup", "v1"))


def test_serve_describes_olms_kinds_with_the_crds_schema_and_columns_with_or_without_them() -> None:
    """One source: `olmkit serve`'s OpenAPI and table columns for OLM's kinds are the generated CRDs',
    whether the kinds are served built in or from the stored CRDs `cluster init` wrote."""
    from olmkit.apiserver.openapi import v3_document
    from olmkit.apiserver.resources import Catalog
    from olmkit.lifecycle.olmcrds import olm_crds, openapi_schema, printer_columns

    for catalog in (Catalog.build([]), Catalog.build(olm_crds())):
        for kind, version in (
            ("Subscription", "v1alpha1"),
            ("ClusterServiceVersion", "v1alpha1"),
            ("OperatorGroup", "v1"),
        ):
            document = v3_document(catalog, "operators.coreos.com", version)
            served = document["components"]["schemas"][f"com.coreos.operators.{version}.{kind}"]
            generated = openapi_schema("operators.coreos.com", kind)
            assert generated is not None
            resource = catalog.by_kind[("operators.coreos.com", version, kind)]

            assert generated["properties"]["spec"] == served["properties"]["spec"]
            assert generated["properties"]["status"] == served["properties"]["status"]
            # no columns declared: kubectl's NAME and AGE
            wanted = [c["jsonPath"] for c in printer_columns(kind)] or [".metadata.creationTimestamp"]
            assert wanted == [c.json_path for c in resource.columns]
