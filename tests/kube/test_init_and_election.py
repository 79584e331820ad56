"""`olmkit cluster init --kubeconfig` and `olmkit run --leader-elect --kubeconfig` against an
`olmkit serve --no-controllers` started by the test: the CRDs and namespaces go through the kube
backend (twice: the second run changes nothing), and of two `olmkit run` processes one leads
through a Lease on the server; kill -9 it and the other takes over and installs what was
subscribed after the kill."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from olmkit.cli import main
from olmkit.kube import connect
from olmkit.store import STORE_ENV, NotFound
from tests.apiserver.conftest import ServeProcess
from tests.lifecycle.test_leader_election import TIMINGS
from tests.lifecycle.test_run_service import Service

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "examples" / "catalog-v1"
OLMKIT = [sys.executable, "-m", "olmkit"]
V1A1 = "operators.coreos.com/v1alpha1"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    environment.pop(STORE_ENV, None)
    environment.pop("KUBECONFIG", None)
    return environment


@pytest.fixture(scope="module")
def initialised(serve: ServeProcess) -> dict[str, str]:
    """`olmkit cluster init --kubeconfig` run twice (once for the module's server), in this process; the outputs."""
    outputs = {}
    for run in ("first", "second"):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert 0 == main(["cluster", "init", "--kubeconfig", str(serve.kubeconfig)]), run
        outputs[run] = printed.getvalue()
    return outputs


def test_cluster_init_through_the_kube_backend_is_idempotent(serve: ServeProcess, initialised: dict[str, str]) -> None:
    """Created once through the API server; the second run finds the server's copies up to date."""
    with connect(serve.kubeconfig) as kube:
        crds = [c["metadata"]["name"] for c in kube.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")]
        namespaces = {n["metadata"]["name"] for n in kube.list("v1", "Namespace")}
        groups = {g["metadata"]["name"] for g in kube.list("operators.coreos.com/v1", "OperatorGroup")}

    assert 12 == initialised["first"].count(" created\n")
    assert initialised["second"].endswith("nothing to do: the cluster already has everything OLM needs\n")
    assert 8 == sum(name.endswith(".operators.coreos.com") for name in crds)
    assert {"olm", "operators"} <= namespaces
    assert {"global-operators", "olm-operators"} <= groups


def _leading(service: Service) -> dict[str, Any]:
    return service.wait_for_line(lambda rec: rec.get("role") == "leader")


@pytest.mark.slow
def test_two_runs_on_the_server_one_leads_and_the_other_takes_over(
    serve: ServeProcess, initialised: dict[str, str], tmp_path: Path, env: dict[str, str]
) -> None:
    """Two `olmkit run --kubeconfig --leader-elect`: one leads (the Lease on the server names it);
    kill -9 it, the other leads within the lease duration and installs a Subscription made after the kill.
    The simulated API server and kubelet are not among the controllers (the server's own do their work)."""
    cluster = ["--kubeconfig", str(serve.kubeconfig)]
    catalog, ns = f"c-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    with connect(serve.kubeconfig) as kube:
        kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        kube.create(
            {
                "apiVersion": V1A1,
                "kind": "CatalogSource",
                "metadata": {"name": catalog, "namespace": "olm"},
                "spec": {"sourceType": "file", "path": str(CATALOG)},
            }
        )
    args = ("--metrics-address", "127.0.0.1:0", *cluster, *TIMINGS)
    # Service passes --store: `kube` with --kubeconfig names the same cluster
    first = Service(Path("kube"), env, *args)
    second: Service | None = None
    try:
        leader = _leading(first)
        second = Service(Path("kube"), env, *args)
        standby = second.wait_for_line(lambda rec: rec.get("role") == "standby")
        assert leader["holder"] == standby["holder"]

        first.proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        first.proc.wait(timeout=10)
        subprocess.run(
            [*OLMKIT, "install", "cert-manager-lite", "-n", ns, "--catalog", catalog, "--catalog-namespace", "olm",
             *cluster],
            env=env, check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        takeover = _leading(second)
        took = time.monotonic() - killed

        phase = None
        with connect(serve.kubeconfig) as kube:
            deadline = time.monotonic() + 90
            while phase != "Succeeded" and time.monotonic() < deadline:
                try:
                    csv = kube.get(V1A1, "ClusterServiceVersion", "cert-manager-lite.v1.0.0", ns)
                    phase = (csv.get("status") or {}).get("phase")
                except NotFound:
                    pass
                time.sleep(0.2)
            lease = kube.get("coordination.k8s.io/v1", "Lease", "olmkit-run", "olm")["spec"]
            kube.delete(V1A1, "CatalogSource", catalog, "olm")

        assert "Succeeded" == phase, "".join(second.raw)
        assert took < 2.0 + 2 * 0.5 * 1.2 + 1.0, took
        assert takeover["holder"] == lease["holderIdentity"] != leader["holder"]
        running = first.wait_for_line(lambda rec: "controllers" in rec)["controllers"]
        assert "subscription" in running
        assert [] == [c for c in running if c.startswith("simulated")]  # a cluster has its own
        assert lease["leaseTransitions"] >= 1
        code, _ = second.stop(signal.SIGTERM)
        assert 0 == code, "".join(second.raw)
        print(f"takeover through the kube backend after kill -9: {took:.2f}s")
    finally:
        first.close()
        if second is not None:
            second.close()
