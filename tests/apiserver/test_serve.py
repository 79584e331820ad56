"""``olmkit serve`` as a command: options, credentials kept across restarts, a clean stop."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.apiserver.conftest import GADGET_CRD, ServeProcess, start_serve

pytestmark = pytest.mark.slow

SUB = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "Subscription",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"name": "p", "source": "nowhere", "sourceNamespace": "olm"},
}


def _eventually(check: object, server: ServeProcess, *args: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        out = server.kubectl(*args, check=False).stdout
        if out == check or time.monotonic() > deadline:
            return out
        time.sleep(0.3)


def test_no_controllers_keeps_the_simulated_cluster_only(tmp_path: Path) -> None:
    """--no-controllers: CRDs are still established (simulated API server), Subscriptions are left alone."""
    out = tmp_path / "elsewhere" / "config"
    server = start_serve(tmp_path / "store", "--no-controllers", "--kubeconfig-out", str(out))
    try:
        server.kubeconfig = out
        server.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([GADGET_CRD, SUB]))
        established = _eventually(
            "True", server, "get", "crd", "gadgets.example.io", "-o",
            "jsonpath={.status.conditions[?(@.type=='Established')].status}",
        )  # fmt: skip
        time.sleep(1.0)
        status = server.kubectl("get", "sub", "p", "-n", "default", "-o", "jsonpath={.status}").stdout
    finally:
        server.stop()

    assert "True" == established
    assert "" == status
    assert not (tmp_path / "store" / "kubeconfig").exists()


def test_credentials_are_made_once_and_a_stop_is_clean(tmp_path: Path) -> None:
    """A second start reuses the CA and token; SIGTERM stops the server with exit code 0."""
    first = start_serve(tmp_path / "store")
    first.kubectl("get", "ns")
    ca, token = (tmp_path / "store" / "pki" / "ca.crt").read_bytes(), first.http.credentials.token
    first.stop()
    second = start_serve(tmp_path / "store")
    try:
        listed = second.kubectl("get", "ns", "-o", "name")
    finally:
        second.stop()

    assert 0 == first.process.returncode == second.process.returncode
    assert ca == (tmp_path / "store" / "pki" / "ca.crt").read_bytes()
    assert token == second.http.credentials.token
    assert "" == listed.stdout


def test_a_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    """A second server on a taken port says so and exits 2, without a traceback."""
    first = start_serve(tmp_path / "one")
    try:
        port = first.url.rsplit(":", 1)[1]
        done = subprocess.run(
            [sys.executable, "-m", "olmkit", "serve", "--store", str(tmp_path / "two" / "c.db"),
             "--address", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    finally:
        first.stop()

    assert 2 == done.returncode
    assert done.stderr.startswith(f"olmkit: error: cannot listen on 127.0.0.1:{port}: ")
    assert "Traceback" not in done.stderr


def test_bad_address_is_a_usage_error(tmp_path: Path) -> None:
    """--address that is not HOST:PORT: one line on stderr, exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "olmkit", "serve", "--store", str(tmp_path / "c.db"), "--address", "nowhere"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert 2 == done.returncode
    assert "olmkit: error: --address 'nowhere' is not HOST:PORT (for example 127.0.0.1:6443)\n" == done.stderr
