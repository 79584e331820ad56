"""`olmkit reconcile` on a store: events as they happen, exit 0 when stable, 1 with what is still pending."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from olmkit.cli import main
from tests.lifecycle.harness import seed_store


def _seed(path: Path) -> None:
    seed_store(path, "storage-operator")


def test_reconcile_reports_events_and_exits_0_when_stable(tmp_path: Path, capsys: Any) -> None:
    """The events of an install, then a one-line summary; exit 0."""
    store = tmp_path / "c.db"
    _seed(store)

    code = main(["reconcile", "--until-stable", "--store", str(store)])

    out = capsys.readouterr().out
    assert 0 == code
    assert "installplan operators/install-" in out
    assert "csv operators/storage-operator.v0.5.0: Succeeded (InstallSucceeded)" in out
    assert out.splitlines()[-1].startswith("stable after ")


def test_reconcile_times_out_with_pending_work_and_exit_1(tmp_path: Path, capsys: Any) -> None:
    """Without the simulated kubelet the install waits; the run ends at --timeout naming what waits."""
    store = tmp_path / "c.db"
    _seed(store)

    code = main(
        ["reconcile", "--until-stable", "--store", str(store), "--timeout", "1", "--no-simulated-kubelet", "-q"]
    )

    out = capsys.readouterr().out
    assert 1 == code
    assert "still pending:" in out
    assert 'clusterserviceversion:operators/storage-operator.v0.5.0: waiting for deployment "storage-operator"' in out


def test_reconcile_refuses_a_bad_install_timeout(tmp_path: Path, capsys: Any) -> None:
    """A non-positive --install-timeout is a usage error (exit 2, one line)."""
    code = main(["reconcile", "--store", str(tmp_path / "c.db"), "--install-timeout", "0"])

    err = capsys.readouterr().err
    assert 2 == code
    assert "olmkit: error: --install-timeout must be positive\n" == err
