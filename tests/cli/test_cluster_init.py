"""`olmkit cluster init` on the command line: what it prints, idempotence, the dry-run outputs."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from olmkit.cli import main
from olmkit.lifecycle.clusterinit import init_objects


def test_init_twice_the_second_run_changes_nothing(olmkit, store) -> None:
    """First run: a kubectl-like line per object created; second run: all unchanged, says so, exit 0."""
    first = olmkit("cluster", "init")
    second = olmkit("cluster", "init")

    assert 0 == first.code, first.err
    assert "customresourcedefinition.apiextensions.k8s.io/subscriptions.operators.coreos.com created" in first.out
    assert "namespace/olm created" in first.out
    assert "operatorgroup.operators.coreos.com/global-operators created" in first.out
    assert 0 == second.code, second.err
    assert len(init_objects()) == second.out.count(" unchanged\n")
    assert second.out.endswith("nothing to do: the cluster already has everything OLM needs\n")
    assert 8 == len(store.list("apiextensions.k8s.io/v1", "CustomResourceDefinition"))


def test_init_then_get_by_short_name(olmkit) -> None:
    """After init the CRDs are listed by `get crd`, and `get og -A` shows upstream's two groups."""
    assert 0 == olmkit("cluster", "init").code

    crds = olmkit("get", "crd", "-o", "name")
    groups = olmkit("get", "og", "-A", "-o", "json")

    assert "customresourcedefinition.apiextensions.k8s.io/operatorgroups.operators.coreos.com" in crds.out
    assert {("operators", "global-operators"), ("olm", "olm-operators")} == {
        (g["metadata"]["namespace"], g["metadata"]["name"]) for g in json.loads(groups.out)["items"]
    }


def test_dry_run_yaml_prints_every_object_and_opens_no_store(tmp_path: Path, capsys) -> None:
    """`--dry-run -o yaml` is a YAML stream of exactly what init installs; no store file appears."""
    where = tmp_path / "none" / "cluster.db"

    code = main(["cluster", "init", "--dry-run", "-o", "yaml", "--store", str(where)])
    out = capsys.readouterr().out

    assert 0 == code
    assert init_objects() == list(yaml.safe_load_all(out))
    assert not where.parent.exists()


def test_dry_run_json_is_a_list(tmp_path: Path, capsys) -> None:
    """`--dry-run -o json`: a v1 List of the objects (kubectl apply -f - takes it)."""
    code = main(["cluster", "init", "--dry-run", "-o", "json", "--global-namespace", "olm-system"])
    printed = json.loads(capsys.readouterr().out)

    assert 0 == code
    assert ("v1", "List") == (printed["apiVersion"], printed["kind"])
    assert init_objects("olm-system") == printed["items"]
    assert "olm-system" in [o["metadata"]["name"] for o in printed["items"] if o["kind"] == "Namespace"]


def test_dry_run_text_reports_and_writes_nothing(olmkit, db) -> None:
    """`--dry-run` alone: what would be created, marked (dry run); no store is created."""
    result = olmkit("cluster", "init", "--dry-run")

    assert 0 == result.code
    assert "namespace/operators created (dry run)" in result.out
    assert not Path(db).exists()


def test_output_without_dry_run_is_a_usage_error(olmkit, db) -> None:
    """-o yaml only prints: without --dry-run it is refused (exit 2), nothing written."""
    result = olmkit("cluster", "init", "-o", "yaml")

    assert 2 == result.code
    assert "--dry-run" in result.err
    assert not Path(db).exists()


def test_bad_options_are_usage_errors(olmkit, db) -> None:
    """One namespace for both roles, or a timeout that is not positive: exit 2, one line, nothing written."""
    same = olmkit("cluster", "init", "--global-namespace", "operators")
    timeout = olmkit("cluster", "init", "--timeout", "0")
    bad_name = olmkit("cluster", "init", "--operators-namespace", "Not_A_Namespace")

    assert (2, 2, 2) == (same.code, timeout.code, bad_name.code)
    assert "--global-namespace and --operators-namespace must differ" in same.err
    assert "--timeout must be positive" in timeout.err
    assert "not a valid namespace name" in bad_name.err
    assert all(1 == len(r.err.strip().splitlines()) for r in (same, timeout, bad_name))
    assert not Path(db).exists()


def test_leader_election_timings_that_cannot_work_are_refused(olmkit) -> None:
    """`run --leader-elect` with a renew deadline not below the lease duration: exit 2 before anything runs."""
    result = olmkit(
        "run", "--leader-elect", "--leader-elect-lease-duration", "5s", "--leader-elect-renew-deadline", "5s",
        "--metrics-address", "0",
    )  # fmt: skip

    assert 2 == result.code
    assert "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline" in result.err
