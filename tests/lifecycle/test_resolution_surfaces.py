"""One resolution problem, four places that show it: the Subscription's ResolutionFailed
condition, ``olmkit resolve``, ``olmkit explain`` and ``olmkit catalog validate`` agree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from olmkit.cli import main
from tests.lifecycle.harness import B, Cluster, write_catalog

GVK = ("example.io", "v1", "Widget")
CONVERT = "bundle widget.v1.0.0: property olm.constraint: convert olm.constraint to resolver predicate: "
BROKEN_RULES = {
    "does not compile": ("properties.exists(p, p.type == )", "ERROR: <input>:1:32: Syntax error: mismatched input ')'"),
    "is not of type bool": ("properties.size()", "cel expressions must have type Bool"),
}


def _cel(rule: str) -> dict[str, Any]:
    return {"type": "olm.constraint", "value": {"failureMessage": "needs it", "cel": {"rule": rule}}}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("problem", list(BROKEN_RULES))
def test_broken_cel_rule_is_the_same_hard_error_everywhere(
    problem: str, tmp_path: Path, make_cluster: Callable[..., Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    """A CEL rule that does not compile or is not bool: ErrorPreventedResolution, exit 1, an error in validate."""
    rule, detail = BROKEN_RULES[problem]
    catalog = write_catalog(tmp_path / "catalog", [B("widget", "1.0.0", owns=(GVK,), properties=(_cel(rule),))])
    cluster = make_cluster()
    cluster.catalog_source("test", catalog)
    cluster.operator_group()
    cluster.subscribe("widget", source="test")

    cluster.reconcile()
    resolved = _cli(capsys, "resolve", "--catalog", str(catalog), "--subscribe", "widget")
    as_json = _cli(capsys, "resolve", "--catalog", str(catalog), "--subscribe", "widget", "-o", "json")
    explained = _cli(capsys, "explain", "--catalog", str(catalog), "--subscribe", "widget")
    validated = _cli(capsys, "catalog", "validate", "--no-cache", str(catalog))

    failed = cluster.condition(cluster.get("sub", "widget"), "ResolutionFailed")
    assert failed is not None
    assert ("True", "ErrorPreventedResolution", CONVERT + detail) == (
        failed["status"],
        failed["reason"],
        failed["message"],
    )
    assert (1, f"error: {CONVERT + detail}\n") == resolved[:2]
    assert (1, f"error: {CONVERT + detail}\n") == explained[:2]
    assert ("error", "ErrorPreventedResolution", CONVERT + detail) == tuple(
        orjson.loads(as_json[1])[k] for k in ("status", "reason", "message")
    )
    assert 1 == validated[0]
    assert "widget.json:3: package widget olm.bundle widget.v1.0.0 field properties[" in validated[1] + validated[2]
    assert "convert olm.constraint to resolver predicate: " + detail in validated[1] + validated[2]
    assert [] == cluster.plans()


def test_starting_csv_skipped_by_a_newer_entry_installs_everywhere(
    tmp_path: Path, make_cluster: Callable[..., Cluster], capsys: pytest.CaptureFixture[str]
) -> None:
    """startingCSV naming a bundle the head skips: installed first (then upgraded one hop), as upstream."""
    bundles = [B("widget", "1.0.0", owns=(GVK,)), B("widget", "2.0.0", owns=(GVK,), skips=("widget.v1.0.0",))]
    catalog = write_catalog(tmp_path / "catalog", bundles)
    cluster = make_cluster()
    cluster.catalog_source("test", catalog)
    cluster.operator_group()
    cluster.subscribe("widget", source="test", channel="stable", starting_csv="widget.v1.0.0")
    manifest = tmp_path / "sub.yaml"
    manifest.write_text(
        f"""
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {{name: test, namespace: operators}}
spec: {{sourceType: file, path: {catalog}}}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {{name: og, namespace: operators}}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {{name: widget, namespace: operators}}
spec: {{name: widget, source: test, sourceNamespace: operators, channel: stable, startingCSV: widget.v1.0.0}}
"""
    )

    cluster.reconcile()
    resolved = _cli(capsys, "resolve", "-f", str(manifest), "-n", "operators", "-o", "json")

    plans = [
        [s["resource"]["name"] for s in p["status"]["plan"] if s["resource"]["kind"] == "ClusterServiceVersion"]
        for p in cluster.plans()
    ]
    assert [["widget.v1.0.0"], ["widget.v2.0.0"]] == plans
    assert cluster.condition(cluster.get("sub", "widget"), "ResolutionFailed") is None
    assert 0 == resolved[0]
    assert '"bundle": "widget.v1.0.0"' in resolved[1]
