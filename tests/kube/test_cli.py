"""The cluster commands on an API server: --kubeconfig/--context, OLMKIT_STORE=kube[:CONTEXT],
an operator installed from a catalog by controllers running on the client side, bad input."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from olmkit.cli import main
from olmkit.kube import connect
from olmkit.store import STORE_ENV, NotFound
from tests.cli.conftest import Result

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "examples" / "catalog-v1"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(STORE_ENV, raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.kube/config of the machine's user


@pytest.fixture
def olmkit(capsys):
    """``olmkit(*args)``: the command line in this process; code, stdout, stderr."""

    def run(*args: str) -> Result:
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def manifest(tmp_path: Path, name: str, *docs: dict) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def test_apply_get_describe_delete_with_kubeconfig_and_context(serve, olmkit, tmp_path, ns) -> None:
    """The object commands work on the server the kubeconfig's context names."""
    cluster = ("--kubeconfig", str(serve.kubeconfig), "--context", "olmkit")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hello", "namespace": ns}, "data": {"a": "b"}}

    applied = olmkit("apply", "-f", manifest(tmp_path, "cm.yaml", cm), *cluster)
    got = olmkit("get", "configmap", "hello", "-n", ns, "-o", "json", *cluster)
    described = olmkit("describe", "configmap", "hello", "-n", ns, *cluster)
    deleted = olmkit("delete", "configmap", "hello", "-n", ns, *cluster)
    after = olmkit("get", "configmap", "hello", "-n", ns, *cluster)

    assert (0, "configmap/hello created\n") == (applied.code, applied.out)
    assert (0, {"a": "b"}) == (got.code, json.loads(got.out)["data"])
    assert 0 == described.code
    assert f"Namespace:    {ns}" in described.out
    assert 0 == deleted.code
    assert "deleted" in deleted.out
    assert 1 == after.code
    assert "not found" in after.err
    with connect(serve.kubeconfig) as kube, pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "hello", ns)


def test_olmkit_store_kube_reads_kubeconfig_like_kubectl(serve, olmkit, monkeypatch, ns) -> None:
    """OLMKIT_STORE=kube:CONTEXT (and kube: the current context) with $KUBECONFIG; --store kube and
    --context alone too; $KUBECONFIG may list several files."""
    with connect(serve.kubeconfig) as kube:
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "env", "namespace": ns}})
    monkeypatch.setenv("KUBECONFIG", str(serve.kubeconfig))

    monkeypatch.setenv(STORE_ENV, "kube:olmkit")
    named = olmkit("get", "cm", "-n", ns, "-o", "name")
    monkeypatch.setenv(STORE_ENV, "kube")
    current = olmkit("get", "cm", "-n", ns, "-o", "name")
    monkeypatch.delenv(STORE_ENV)
    flag = olmkit("get", "cm", "-n", ns, "-o", "name", "--store", "kube")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(serve.kubeconfig.parent / "absent"), str(serve.kubeconfig)]))
    merged = olmkit("get", "cm", "-n", ns, "-o", "name", "--context", "olmkit")  # files merged as kubectl does

    assert [(0, "configmap/env\n")] * 4 == [(r.code, r.out) for r in (named, current, flag, merged)]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_bad_cluster_input_is_one_line_and_exit_2(serve, olmkit, tmp_path, monkeypatch) -> None:
    """A missing or malformed kubeconfig, an unknown context, an unreachable server, a file store
    and a cluster at once: one line naming the file/context/server, exit 2, no traceback."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("clusters: [\n")
    dead = tmp_path / "dead.yaml"
    config = yaml.safe_load(serve.kubeconfig.read_text())
    port = _closed_port()
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    dead.write_text(yaml.safe_dump(config))
    cases = {
        "missing": (["--kubeconfig", str(tmp_path / "nope.yaml")], f"no kubeconfig at {tmp_path / 'nope.yaml'}"),
        "malformed": (["--kubeconfig", str(broken)], f"kubeconfig {broken}: cannot"),
        "context": (["--kubeconfig", str(serve.kubeconfig), "--context", "prod"], "has no context 'prod'"),
        "unreachable": (["--kubeconfig", str(dead)], f"cannot reach the API server at https://127.0.0.1:{port}"),
        "both": (["--kubeconfig", str(serve.kubeconfig), "--store", str(tmp_path / "x.db")], "give one of them"),
    }

    for what, (args, expected) in cases.items():
        done = olmkit("get", "cm", *args)

        assert 2 == done.code, what
        assert 1 == len(done.err.strip().splitlines()), (what, done.err)
        assert expected in done.err, (what, done.err)
        assert "Traceback" not in done.err
    unreachable = olmkit("get", "cm", "--kubeconfig", str(dead))
    assert f"kubeconfig {dead}, context olmkit" in unreachable.err

    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    from_env = olmkit("list", "--store", "kube:olmkit")
    assert 2 == from_env.code
    assert f"no kubeconfig at {tmp_path / 'absent'}" in from_env.err
    monkeypatch.setenv(STORE_ENV, "kube")
    served = olmkit("serve", "--address", "127.0.0.1:0")
    assert 2 == served.code
    assert "names a store on a Kubernetes API server" in served.err


def _catalog_source(tmp_path: Path, name: str) -> str:
    return manifest(
        tmp_path,
        "catalogsource.yaml",
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": "olm"},
            "spec": {"sourceType": "file", "path": str(CATALOG), "displayName": "examples"},
        },
    )


def test_reconcile_installs_an_operator_from_a_catalog_on_the_server(serve, olmkit, tmp_path, ns) -> None:
    """OLM's controllers on the client side (olmkit reconcile --kubeconfig) against olmkit serve
    --no-controllers (the server runs only its simulated API server and kubelet): a Subscription
    with manual approval waits, is approved, installs; list, describe and uninstall follow."""
    cluster = ("--kubeconfig", str(serve.kubeconfig))
    catalog = f"c-{uuid.uuid4().hex[:8]}"

    assert 0 == olmkit("apply", "-f", _catalog_source(tmp_path, catalog), *cluster).code
    available = olmkit("list-available", "-n", ns, *cluster)
    installed = olmkit(
        "install", "postgres-operator", "-n", ns, "--channel", "stable", "--approval", "Manual",
        "--catalog", catalog, "--catalog-namespace", "olm", *cluster,
    )  # fmt: skip
    waiting = olmkit("reconcile", "--until-stable", "--timeout", "60", "-q", *cluster)
    plan = olmkit("get", "installplan", "-n", ns, "-o", "name", *cluster).out.strip()
    approved = olmkit("approve", plan, "-n", ns, *cluster)
    done = olmkit("reconcile", "--until-stable", "--timeout", "60", "-q", *cluster)
    listed = olmkit("list", "-n", ns, "-o", "json", *cluster)
    described = olmkit("describe", "csv", "postgres-operator.v2.1.0", "-n", ns, *cluster)

    assert 0 == available.code
    assert "postgres-operator" in available.out
    assert 0 == installed.code
    assert 0 == waiting.code
    assert "waits for approval" in waiting.out
    assert 0 == approved.code
    assert 0 == done.code, done.out + done.err
    phases = {row["package"]: row["phase"] for row in json.loads(listed.out)}
    assert {"postgres-operator": "Succeeded", "cert-manager-lite": "Succeeded"} == phases
    assert "Succeeded" in described.out

    removed = olmkit("uninstall", "postgres-operator", "-n", ns, *cluster)
    olmkit("reconcile", "--until-stable", "--timeout", "60", "-q", *cluster)
    with connect(serve.kubeconfig) as kube:
        assert 0 == removed.code
        with pytest.raises(NotFound):
            kube.get("operators.coreos.com/v1alpha1", "ClusterServiceVersion", "postgres-operator.v2.1.0", ns)
        deployments = [d["metadata"]["name"] for d in kube.list("apps/v1", "Deployment", ns)]
        assert "postgres-operator" not in deployments
        assert "cert-manager-lite" in " ".join(deployments)
        kube.delete("operators.coreos.com/v1alpha1", "CatalogSource", catalog, "olm")


def test_run_installs_on_the_server_and_stops_on_sigterm(serve, tmp_path, ns) -> None:
    """olmkit run --kubeconfig: the controllers follow the server's watches (no polling requests)
    and install what is subscribed; SIGTERM ends it with exit 0."""
    catalog = f"c-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop(STORE_ENV, None)
    cluster = ["--kubeconfig", str(serve.kubeconfig)]
    olmkit = [sys.executable, "-m", "olmkit"]
    subprocess.run([*olmkit, "apply", "-f", _catalog_source(tmp_path, catalog), *cluster], env=env, check=True)
    run = subprocess.Popen(
        [*olmkit, "run", "--metrics-address", "0", "-q", *cluster],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        subprocess.run(
            [*olmkit, "install", "cert-manager-lite", "-n", ns, "--catalog", catalog, "--catalog-namespace", "olm",
             *cluster],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        phase = None
        with connect(serve.kubeconfig) as kube:
            deadline = time.monotonic() + 60
            while phase != "Succeeded" and time.monotonic() < deadline:
                try:
                    csv = kube.get(
                        "operators.coreos.com/v1alpha1", "ClusterServiceVersion", "cert-manager-lite.v1.0.0", ns
                    )
                    phase = (csv.get("status") or {}).get("phase")
                except NotFound:
                    pass
                time.sleep(0.2)
            kube.delete("operators.coreos.com/v1alpha1", "CatalogSource", catalog, "olm")
    finally:
        run.send_signal(signal.SIGTERM)
        _out, err = run.communicate(timeout=30)

    assert "Succeeded" == phase, err
    assert 0 == run.returncode, err


def test_reconcile_defers_to_the_leader_the_lease_on_the_server_names(serve, olmkit, ns, tmp_path) -> None:
    """reconcile --kubeconfig reads the election Lease through the API server: while its holder renews it,
    reconcile exits 3 naming the holder and does nothing; released, reconcile runs (to the end)."""
    from olmkit.lifecycle.lease import Lease
    from olmkit.lifecycle.runtime import RealClock

    cluster = ("--kubeconfig", str(serve.kubeconfig), "--leader-elect-resource-namespace", ns)
    with connect(serve.kubeconfig) as kube:
        lease = Lease(kube, ns, "olmkit-run", RealClock(), duration=60, holder="elsewhere/7/run")
        assert lease.acquire()
        refused = olmkit("reconcile", "-q", *cluster)
        lease.release()
        after = olmkit("reconcile", "-q", *cluster)

    assert 3 == refused.code
    assert "" == refused.out
    dead = tmp_path / "dead.yaml"
    config = yaml.safe_load(serve.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{_closed_port()}"
    dead.write_text(yaml.safe_dump(config))
    unreachable = olmkit("reconcile", "-q", "--kubeconfig", str(dead))
    assert 2 == unreachable.code  # the server's own error, not a question of leadership
    assert "olmkit: error: cannot reach the API server at https://127.0.0.1:" in unreachable.err
    assert "--force" not in unreachable.err
    assert refused.err.startswith(f"olmkit: error: lease {ns}/olmkit-run is held by elsewhere/7/run (renewed ")
    # it ran (other tests of this module's server leave Subscriptions whose catalogs they deleted: exit 1)
    assert after.out.startswith("stable after "), after.out + after.err
    assert "" == after.err


def test_a_forbidden_cluster_wide_list_stops_reconcile_and_run_saying_what_they_need(
    serve, olmkit, monkeypatch
) -> None:
    """RBAC that allows only some namespaces: the informers' cluster-wide list is forbidden (403, injected in
    the answer: olmkit serve has no RBAC) and reconcile stops at once with one line naming the kind and the
    server's message and what the controllers need, exit 2, no traceback; so does run."""
    from olmkit.kube import transport

    message = (
        'clusterserviceversions.operators.coreos.com is forbidden: User "dev" cannot list resource '
        '"clusterserviceversions" in API group "operators.coreos.com" at the cluster scope'
    )
    forbidden = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403, "message": message}
    request = transport.Transport.request

    def answer(self, method, path, ref, **kwargs):
        if method == "GET" and path.endswith("/clusterserviceversions") and "/namespaces/" not in path:
            raise transport.error_from_status(403, forbidden, ref)
        return request(self, method, path, ref, **kwargs)

    monkeypatch.setattr(transport.Transport, "request", answer)
    reconciled = olmkit("reconcile", "-q", "--force", "--kubeconfig", str(serve.kubeconfig))
    ran = olmkit("run", "-q", "--metrics-address", "0", "--kubeconfig", str(serve.kubeconfig))

    expected = (
        f"olmkit: error: ClusterServiceVersion: {message} (the controllers list and watch every kind they follow "
        "in every namespace: the credentials need list and watch on it at cluster scope)\n"
    )
    assert (2, expected) == (reconciled.code, reconciled.err)
    assert (2, expected) == (ran.code, ran.err)
