"""olmkit-kube-version, tested as its users meet it: resolution, validation, the lifecycle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import olmkit_kube_version as kv
import pytest

from olmkit.testing import assert_installed, assert_unsatisfiable

PKG = "olm.package"


def bundle(package: str, version: str, *, supported: str | None = None, extra: list | None = None) -> dict:
    """A catalog bundle, with the plugin's property when ``supported`` is given."""
    props = [{"type": PKG, "value": {"packageName": package, "version": version}}]
    if supported is not None:
        props.append({"type": kv.PROPERTY, "value": supported})
    return {
        "schema": "olm.bundle",
        "name": f"{package}.v{version}",
        "package": package,
        "image": f"example.io/{package}:{version}",
        "properties": props + (extra or []),
    }


def channel(package: str, *versions: str) -> list[dict]:
    """A package whose stable channel holds ``versions`` in upgrade order."""
    entries = []
    for i, version in enumerate(versions):
        entry = {"name": f"{package}.v{version}"}
        if i:
            entry["replaces"] = f"{package}.v{versions[i - 1]}"
        entries.append(entry)
    return [
        {"schema": "olm.package", "name": package, "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": package, "name": "stable", "entries": entries},
    ]


@pytest.fixture
def pm(olmkit_pm, olmkit_register):
    """The built-ins plus this plugin."""
    olmkit_register(kv, "kube-version")
    return olmkit_pm


@pytest.fixture
def cluster(monkeypatch):
    """Set the cluster's Kubernetes version."""

    def set_version(version: str | None) -> None:
        if version is None:
            monkeypatch.delenv(kv.ENV, raising=False)
        else:
            monkeypatch.setenv(kv.ENV, version)

    return set_version


def operator_catalog(make_catalog):
    """``op``: 1.0.0 supports 1.25-1.28, 2.0.0 supports 1.27-1.31 (the channel head)."""
    return make_catalog(
        [
            *channel("op", "1.0.0", "2.0.0"),
            bundle("op", "1.0.0", supported=">=1.25.0 <1.29.0"),
            bundle("op", "2.0.0", supported=">=1.27.0 <1.32.0"),
        ]
    )


def test_head_is_installed_when_the_cluster_is_in_its_range(pm, cluster, make_catalog, resolve):
    """The channel head supports the cluster: it is installed, and nothing else."""
    cluster("1.30.2")

    outcome = resolve(["op"], [operator_catalog(make_catalog)])

    assert_installed(outcome, "op.v2.0.0")


def test_head_outside_the_range_is_passed_over_for_the_next_entry(pm, cluster, make_catalog, resolve):
    """On a 1.26 cluster the head (>=1.27) is never chosen: as for any unsatisfiable head, the
    resolver takes the next entry of the channel, 1.0.0, which supports 1.26."""
    cluster("v1.26.0")

    outcome = resolve(["op"], [operator_catalog(make_catalog)])

    assert_installed(outcome, "op.v1.0.0")


def test_no_entry_in_range_is_unsatisfiable_and_names_the_plugin(pm, cluster, make_catalog, resolve):
    """On 1.35 no entry fits: unsatisfiable, and the explanation names the plugin's requirement,
    every bundle's range and the cluster's version."""
    cluster("1.35")

    outcome = resolve(["op"], [operator_catalog(make_catalog)])

    assert_unsatisfiable(
        outcome,
        "op.v2.0.0 requires an operator that runs on Kubernetes >=1.27.0 <1.32.0 "
        "(the cluster runs 1.35.0; kube-version plugin)",
        "op.v1.0.0 requires an operator that runs on Kubernetes >=1.25.0 <1.29.0",
    )


def test_starting_csv_in_range_installs_the_older_bundle(pm, cluster, make_catalog, resolve):
    """A subscription starting at 1.0.0 on a 1.26 cluster gets 1.0.0, which supports it."""
    from olmkit.resolver import SubscriptionRef

    cluster("1.26")
    catalog = operator_catalog(make_catalog)
    sub = SubscriptionRef(
        name="op",
        package="op",
        channel="stable",
        source=catalog.name,
        source_namespace="operators",
        starting_csv="op.v1.0.0",
    )

    outcome = resolve([sub], [catalog])

    assert_installed(outcome, "op.v1.0.0")


def test_without_a_cluster_version_nothing_is_filtered(pm, cluster, make_catalog, resolve):
    """No OLMKIT_KUBE_VERSION: the plugin cannot judge, the head is installed as without it."""
    cluster(None)

    outcome = resolve(["op"], [operator_catalog(make_catalog)])

    assert_installed(outcome, "op.v2.0.0")


def test_two_packages_with_the_same_range_do_not_pull_each_other_in(pm, cluster, make_catalog, resolve):
    """Bundles of other packages that declare the same range are not installed along."""
    cluster("1.30")
    catalog = make_catalog(
        [
            *channel("a", "1.0.0"),
            *channel("b", "1.0.0"),
            bundle("a", "1.0.0", supported=">=1.25.0"),
            bundle("b", "1.0.0", supported=">=1.25.0"),
        ]
    )

    outcome = resolve(["a"], [catalog])

    assert_installed(outcome, "a.v1.0.0")


GVK = {"group": "cache.example.io", "version": "v1", "kind": "Redis"}


def cache_catalog(make_catalog, constraint: dict) -> object:
    """``app`` needs a Redis provider matching ``constraint``; ``old-cache`` (only up to 1.28)
    and ``new-cache`` (1.28 and later) both provide one."""
    gvk_prop = {"type": "olm.gvk", "value": GVK}
    app = bundle("app", "1.0.0", extra=[{"type": "olm.constraint", "value": constraint}])
    return make_catalog(
        [
            *channel("app", "1.0.0"),
            *channel("old-cache", "1.0.0"),
            *channel("new-cache", "1.0.0"),
            app,
            bundle("old-cache", "1.0.0", supported="<1.28.0", extra=[gvk_prop]),
            bundle("new-cache", "1.0.0", supported=">=1.28.0", extra=[gvk_prop]),
        ]
    )


def test_constraint_key_inside_all_picks_the_provider_that_supports_the_cluster(pm, cluster, make_catalog, resolve):
    """``all`` of gvk and kubeVersion=cluster: the provider supporting 1.30 is chosen."""
    cluster("1.30")
    constraint = {"all": {"constraints": [{"gvk": GVK}, {KEY: {"supports": "cluster"}}]}}

    outcome = resolve(["app"], [cache_catalog(make_catalog, constraint)])

    assert_installed(outcome, "app.v1.0.0", "new-cache.v1.0.0")


KEY = kv.KEY


def test_constraint_key_inside_not_and_any(pm, cluster, make_catalog, resolve):
    """``not`` kubeVersion 1.30 inside ``all`` leaves only the old provider; ``any`` of two versions both."""
    cluster("1.27")
    only_old = {"all": {"constraints": [{"gvk": GVK}, {"not": {"constraints": [{KEY: {"supports": "1.30"}}]}}]}}

    outcome = resolve(["app"], [cache_catalog(make_catalog, only_old)])

    assert_installed(outcome, "app.v1.0.0", "old-cache.v1.0.0")

    either = {
        "all": {
            "constraints": [
                {"gvk": GVK},
                {"any": {"constraints": [{KEY: {"supports": "1.20"}}, {KEY: {"supports": "1.31"}}]}},
            ]
        }
    }
    assert "ok" == resolve(["app"], [cache_catalog(make_catalog, either)]).status


def test_constraint_with_no_provider_explains_with_the_key(pm, cluster, make_catalog, resolve):
    """No provider supports 1.40 and 1.10 at once: unsatisfiable, explained with the key's text."""
    cluster("1.27")
    impossible = {
        "failureMessage": "needs a cache for 1.40",
        "all": {"constraints": [{"gvk": GVK}, {KEY: {"supports": "1.40"}}, {KEY: {"supports": "1.10"}}]},
    }

    outcome = resolve(["app"], [cache_catalog(make_catalog, impossible)])

    assert_unsatisfiable(outcome, "supporting Kubernetes 1.40.0 and supporting Kubernetes 1.10.0")


def test_changing_the_cluster_version_recompiles_the_graph(pm, cluster, make_catalog, resolve):
    """The plugin's settings are part of the graph's cache key: a new version is not answered
    from a graph compiled under the old one."""
    catalog = operator_catalog(make_catalog)
    cluster("1.30")
    assert_installed(resolve(["op"], [catalog]), "op.v2.0.0")

    cluster("1.26")

    assert_installed(resolve(["op"], [catalog]), "op.v1.0.0")


def test_bad_values_are_refused_with_clear_messages(pm, cluster, make_catalog, resolve):
    """A malformed constraint or cluster version is an error naming what is wrong, never a crash."""
    cluster("1.27")
    bad = {"all": {"constraints": [{"gvk": GVK}, {KEY: {"atLeast": "1.2"}}]}}
    outcome = resolve(["app"], [cache_catalog(make_catalog, bad)])
    assert "kubeVersion constraint must be" in (outcome.message or "")

    cluster("one.twenty")
    outcome = resolve(["op"], [operator_catalog(make_catalog)])
    assert "not a Kubernetes version" in (outcome.message or "")


def run_olmkit(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The installed ``olmkit`` command (this plugin found through its entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "olmkit", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def write_catalog(root: Path, blobs: list[dict]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "catalog.json").write_text("".join(json.dumps(b) + "\n" for b in blobs))
    return root


def test_catalog_validate_reports_a_bad_range_with_file_and_line(tmp_path):
    """``olmkit catalog validate`` names the file, line, bundle and the range's problem."""
    root = write_catalog(tmp_path / "cat", [*channel("op", "1.0.0"), bundle("op", "1.0.0", supported=">=one.two")])

    result = run_olmkit("catalog", "validate", str(root), "--no-cache")

    assert 1 == result.returncode, result.stderr
    output = result.stdout + result.stderr
    assert "catalog.json:3" in output
    assert "invalid Kubernetes version range" in output
    assert "op.v1.0.0" in output


def test_resolve_command_with_the_installed_plugin(tmp_path):
    """End to end through the entry point: ``olmkit resolve`` follows OLMKIT_KUBE_VERSION,
    and OLMKIT_DISABLE_PLUGINS=kube-version turns the behaviour off again."""
    root = write_catalog(
        tmp_path / "cat",
        [
            *channel("op", "1.0.0", "2.0.0"),
            bundle("op", "1.0.0", supported=">=1.25.0 <1.29.0"),
            bundle("op", "2.0.0", supported=">=1.27.0 <1.32.0"),
        ],
    )
    args = ("resolve", "--catalog", str(root), "--subscribe", "op", "-o", "json", "--no-cache")

    older = run_olmkit(*args, env={kv.ENV: "1.26"})
    assert 0 == older.returncode, older.stdout + older.stderr
    assert ["op.v1.0.0"] == [s["bundle"] for s in json.loads(older.stdout)["steps"]]

    refused = run_olmkit(*args, env={kv.ENV: "1.40"})
    assert 1 == refused.returncode, refused.stdout + refused.stderr
    assert "(the cluster runs 1.40.0; kube-version plugin)" in refused.stdout + refused.stderr

    allowed = run_olmkit(*args, env={kv.ENV: "1.40", "OLMKIT_DISABLE_PLUGINS": "kube-version"})
    assert 0 == allowed.returncode, allowed.stdout + allowed.stderr
    assert ["op.v2.0.0"] == [s["bundle"] for s in json.loads(allowed.stdout)["steps"]]


def test_plugins_list_shows_the_distribution_and_version():
    """``olmkit plugins list`` names the distribution and its version."""
    result = run_olmkit("plugins", "list", "-o", "json")

    assert 0 == result.returncode, result.stderr
    info = {p["name"]: p for p in json.loads(result.stdout)}
    assert "olmkit-kube-version" == info["kube-version"]["distribution"]
    assert "0.1.0" == info["kube-version"]["version"]
    assert [kv.KEY] == info["kube-version"]["registers"]["constraint key"]
