"""olmkit run-bundle: render, publish and install a bundle in one step, as operator-sdk run bundle."""

from __future__ import annotations

from pathlib import Path

BUNDLES = Path(__file__).resolve().parents[2] / "examples" / "bundles"
CATALOG = Path(__file__).resolve().parents[2] / "examples" / "catalog"


def test_run_bundle_installs_a_bundle_directory(olmkit, store):
    """A bundle directory: ConfigMap + CatalogSource + OperatorGroup + Subscription, and the CSV Succeeded."""
    result = olmkit("run-bundle", str(BUNDLES / "cert-manager-lite.v1.2.0"), "-n", "dev")

    assert 0 == result.code, result.err
    assert [
        "configmap/cert-manager-lite-run-bundle created",
        "catalogsource.operators.coreos.com/cert-manager-lite-catalog created",
        "operatorgroup.operators.coreos.com/dev created",
        "subscription.operators.coreos.com/cert-manager-lite created",
        "subscription.operators.coreos.com/cert-manager-lite installed: csv cert-manager-lite.v1.2.0: Succeeded",
    ] == result.out.splitlines()
    sub = store.get("operators.coreos.com/v1alpha1", "Subscription", "cert-manager-lite", "dev")
    assert ("cert-manager-lite-catalog", "dev", "cert-manager-lite.v1.2.0") == (
        sub["spec"]["source"],
        sub["spec"]["sourceNamespace"],
        sub["spec"]["startingCSV"],
    )
    csv = store.get("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "cert-manager-lite.v1.2.0", "dev")
    assert "Succeeded" == csv["status"]["phase"]


def test_run_bundle_takes_a_catalog_and_its_package(olmkit):
    """A file-based catalog with several packages: --package picks one, installed from its default channel head."""
    ambiguous = olmkit("run-bundle", str(CATALOG), "-n", "dev")
    result = olmkit("run-bundle", str(CATALOG), "--package", "cert-manager-lite", "-n", "dev")

    assert 2 == ambiguous.code
    assert "choose one with --package" in ambiguous.err
    assert 0 == result.code, result.err
    assert "subscription.operators.coreos.com/cert-manager-lite installed: csv " in result.out


def test_run_bundle_reports_an_unmet_dependency(olmkit):
    """postgres-operator alone needs cert-manager's API, which its one-bundle catalog lacks: exit 1, the reason."""
    result = olmkit("run-bundle", str(BUNDLES / "postgres-operator.v2.1.0"), "-n", "dev", "--timeout", "60s")

    assert 1 == result.code
    assert "subscription.operators.coreos.com/postgres-operator failed: ConstraintsNotSatisfiable" in result.err


def test_run_bundle_twice_and_a_missing_path_are_usage_errors(olmkit):
    """Running it again for an installed package, or on a missing path: exit 2 saying what to do."""
    olmkit("run-bundle", str(BUNDLES / "cert-manager-lite.v1.2.0"), "-n", "dev")

    again = olmkit("run-bundle", str(BUNDLES / "cert-manager-lite.v1.2.0"), "-n", "dev")
    missing = olmkit("run-bundle", str(BUNDLES / "nope"), "-n", "dev")

    assert 2 == again.code
    assert "olmkit uninstall cert-manager-lite -n dev first" in again.err
    assert (2, f"olmkit: error: {BUNDLES / 'nope'}: no such file or directory\n") == (missing.code, missing.err)
