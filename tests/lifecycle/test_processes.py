"""Real processes on one SQLite store: two controllers at once, and a crash in the middle of an InstallPlan."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from olmkit.store import SqliteStore
from tests.lifecycle.harness import V1A1, seed_store

ROOT = Path(__file__).resolve().parents[2]


def _seed(path: Path) -> None:
    seed_store(path, "postgres-operator")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}


def _assert_installed(path: Path) -> None:
    with SqliteStore(str(path)) as store:
        plans = list(store.list(V1A1, "InstallPlan", "operators"))
        assert 1 == len(plans), [p["metadata"]["name"] for p in plans]
        assert "Complete" == plans[0]["status"]["phase"]
        steps = plans[0]["status"]["plan"]
        assert all(s["status"] in ("Created", "Present") for s in steps)
        csvs = {
            c["metadata"]["name"]: c["status"]["phase"] for c in store.list(V1A1, "ClusterServiceVersion", "operators")
        }
        assert {"postgres-operator.v2.3.0": "Succeeded", "cert-manager-lite.v1.2.0": "Succeeded"} == csvs
        subs = {s["metadata"]["name"]: s["status"].get("state") for s in store.list(V1A1, "Subscription", "operators")}
        assert {"postgres-operator": "AtLatestKnown", "cert-manager-lite-stable-examples-olm": "AtLatestKnown"} == subs
        assert 2 == len(list(store.list("apps/v1", "Deployment", "operators")))


@pytest.mark.slow
def test_two_processes_reconcile_one_store(tmp_path: Path) -> None:
    """Two `olmkit reconcile` processes at once make one InstallPlan and lose no update."""
    path = tmp_path / "cluster.db"
    _seed(path)
    command = [
        sys.executable,
        "-m",
        "olmkit",
        "reconcile",
        "--until-stable",
        "--store",
        str(path),
        "--timeout",
        "120",
        "-v",
    ]
    procs = [
        subprocess.Popen(command, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=180)[0] for p in procs]

    assert [0, 0] == [p.returncode for p in procs], outputs
    _assert_installed(path)
    assert any("installplan" in out and "Complete" in out for out in outputs)


CRASHER = textwrap.dedent(
    """
    import os, signal, sys
    from olmkit import hookimpl
    from olmkit.lifecycle import build_manager
    from olmkit.manager import get_plugin_manager
    from olmkit.store import SqliteStore

    class Crash:
        @hookimpl
        def olmkit_install_plan_step(self, plan, step, status):
            if step["resource"]["kind"] == "ClusterServiceVersion":
                os.kill(os.getpid(), signal.SIGKILL)  # killed half-way through the plan, after its CRDs

    pm = get_plugin_manager()
    pm.register(Crash(), "crash")
    store = SqliteStore(sys.argv[1])
    build_manager(store, pm).run_until_stable(timeout=60)
    """
)


@pytest.mark.slow
def test_crash_in_the_middle_of_an_install_plan_is_completed_by_the_next_run(tmp_path: Path) -> None:
    """A process killed half-way through a plan (after its CRDs) leaves a store the next `olmkit reconcile` finishes."""
    path = tmp_path / "cluster.db"
    _seed(path)
    script = tmp_path / "crash.py"
    script.write_text(CRASHER)

    crashed = subprocess.run(
        [sys.executable, str(script), str(path)], env=_env(tmp_path), capture_output=True, timeout=120
    )

    assert -9 == crashed.returncode, crashed.stderr
    with SqliteStore(str(path)) as store:
        (plan,) = store.list(V1A1, "InstallPlan", "operators")
        done = [(s["resource"]["kind"], s["status"]) for s in plan["status"]["plan"] if s["status"] != "Unknown"]
        assert "Installing" == plan["status"]["phase"]
        assert [("CustomResourceDefinition", "Created")] * 3 == done  # the CRD steps were recorded, nothing else

    done = subprocess.run(
        [sys.executable, "-m", "olmkit", "reconcile", "--until-stable", "--store", str(path)],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert 0 == done.returncode, done.stdout + done.stderr
    _assert_installed(path)


@pytest.mark.slow
def test_run_keeps_reconciling_until_terminated(tmp_path: Path) -> None:
    """`olmkit run` installs what is subscribed while it runs, picks up new subscriptions, and stops on SIGTERM."""
    import signal
    import time

    path = tmp_path / "cluster.db"
    _seed(path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "olmkit", "run", "--store", str(path), "--metrics-address", "127.0.0.1:0"],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def phase_of(name: str) -> str | None:
            with SqliteStore(str(path)) as store:
                for csv in store.list(V1A1, "ClusterServiceVersion", "operators"):
                    if csv["metadata"]["name"] == name:
                        return str((csv.get("status") or {}).get("phase"))
            return None

        def wait_for(name: str) -> None:
            deadline = time.monotonic() + 60
            while phase_of(name) != "Succeeded":
                assert time.monotonic() < deadline, f"{name} did not succeed"
                time.sleep(0.2)

        wait_for("postgres-operator.v2.3.0")
        with SqliteStore(str(path)) as store:
            store.create(
                {
                    "apiVersion": V1A1,
                    "kind": "Subscription",
                    "metadata": {"name": "storage-operator", "namespace": "operators"},
                    "spec": {"name": "storage-operator", "source": "examples", "sourceNamespace": "olm"},
                }
            )
        wait_for("storage-operator.v0.5.0")
    finally:
        proc.send_signal(signal.SIGTERM)
        output = proc.communicate(timeout=30)[0]

    assert 0 == proc.returncode, output
    assert "stopped after" in output
