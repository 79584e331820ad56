"""``make bench-compare`` (benchmarks/compare.py): the table's figures, ratios and verdicts, and a run
without libsolv, which says so and still measures olmkit."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.shared import SHARED

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def compare() -> Any:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("compare")
    finally:
        sys.path.remove(str(BENCHMARKS))


def run(wall: float, peak: float = 100.0, **extra: Any) -> dict[str, Any]:
    return {"wall": wall, "cpu": wall, "peak_mb": peak, "code": 0, "load": 1.0, **extra}


def test_rows_give_medians_ratios_and_the_issues_verdicts(compare):
    """Medians of interleaved runs; olmkit / libsolv for resolution, validate / the in-process parse time."""
    results = {
        2000: {
            "resolve cold": [run(2.0, 250, after=0.3), run(1.0, 260, after=0.2), run(3.0, 255, after=0.4)],
            "resolve warm": [run(0.5), run(0.6), run(0.7)],
            "libsolv": [run(1.0, 50), run(0.9, 52), run(1.1, 51)],
            "validate cold": [run(0.9, 150), run(1.1, 150), run(1.0, 150)],
            "orjson parse": [
                run(0.5, 20, parse_seconds=0.2),
                run(0.6, 20, parse_seconds=0.25),
                run(0.5, 20, parse_seconds=0.18),
            ],
        },
        10000: {
            "resolve cold": [run(4.0, 590)],
            "resolve warm": [run(1.6, 500)],
            "libsolv": [run(10.0, 188)],
            "validate cold": [run(3.0, 450)],
            "orjson parse": [run(1.5, 30, parse_seconds=0.9)],
        },
    }

    rows = {(r["packages"], r["case"]): r for r in compare.summary(results)}

    cold = rows[2000, "resolve cold"]
    assert (2.0, 1.0, 3.0, 255) == (
        cold["wall"]["median"],
        cold["wall"]["min"],
        cold["wall"]["max"],
        cold["peak_mb"]["median"],
    )
    assert (2.0, False) == (cold["ratio"], cold["met"])  # the target: no slower than libsolv
    assert pytest.approx(0.6) == rows[2000, "resolve warm"]["ratio"]
    assert rows[2000, "resolve warm"]["met"] is None  # the issue sets no target there
    validate = rows[2000, "validate cold"]
    assert ("orjson parse", 0.2, 5.0, True) == (
        validate["reference"],
        validate["reference_wall"]["median"],
        validate["ratio"],
        validate["met"],
    )
    assert rows[10000, "resolve cold"]["met"] is True  # 4 s, 590 MB: within 5 s and 600 MB
    assert rows[10000, "resolve warm"]["met"] is False  # 1.6 s for 1.5 s
    assert rows[10000, "validate cold"]["met"] is False  # 3 s, but 450 MB for 400 MB
    text = compare.table(list(rows.values()))
    row = "| `resolve`, P=2000 (40k bundles), cold | 2.00 s (1.00-3.00) | 2.00 s | 255 MB | 0.30 s | libsolv "
    assert row + "| 1.00 s (0.90-1.10) | 1.00 s | 51 MB | 2.00 | <= 1x the reference | **no** |" in text
    assert (
        "| `catalog validate`, P=10000 (200k bundles), cold | 3.00 s | 3.00 s | 450 MB | 0.00 s | orjson parse "
        "| 0.90 s | 1.50 s |" in text
    )


def test_met_needs_the_reference_for_a_ratio_target(compare):
    assert compare.met({"ratio": 1.0}, 0.5, 10, None) is None
    assert compare.met(None, 0.5, 10, 0.1) is None
    assert compare.met({"seconds": 1.0, "mb": 100}, 1.0, 100, None) is True
    assert compare.met({"seconds": 1.0, "mb": 100}, 1.0, 101, None) is False


def test_without_libsolv_the_run_says_so_and_measures_olmkit(compare, tmp_path, capsys, monkeypatch):
    """No python3-solv: a line on stderr says how to install it; every olmkit row is measured, without a ratio."""
    generator = SHARED / "bench" / "gen_catalog.py"
    if not generator.is_file():
        pytest.fail(f"the shared workload generator is missing: {generator}")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setattr(compare, "RESULTS", out)

    code = compare.main(
        [
            *("--packages", "20", "30", "--repeat", "1", "--work", str(tmp_path / "work")),
            *("--system-python", str(tmp_path / "no-python"), "--plot", ""),
        ]
    )

    captured = capsys.readouterr()
    assert 0 == code
    assert "libsolv skipped:" in captured.err
    assert "apt-get install python3-solv" in captured.err
    assert "dnf install python3-solv" in captured.err
    raw = json.loads((out / "compare.json").read_text())
    rows = {(r["packages"], r["case"]): r for r in raw["rows"]}
    assert {(p, c) for p in (20, 30) for c in ("resolve cold", "resolve warm", "validate cold")} == set(rows)
    assert all(
        rows[p, "resolve cold"]["ratio"] is None and rows[p, "resolve cold"]["wall"]["median"] > 0 for p in (20, 30)
    )
    assert all(rows[p, "validate cold"]["ratio"] > 1 for p in (20, 30))  # validating costs more than parsing
    assert [] == raw["runs"]["20"]["libsolv"]
    assert all(0 == r["code"] for r in raw["runs"]["20"]["resolve warm"])
    table = (out / "compare.md").read_text()
    assert "libsolv: not run (" in table
    assert "| `resolve`, P=20 (400 bundles), cold |" in table
    assert "| libsolv | - | - | - | - |" in table
    assert table == captured.out


def test_one_size_leaves_the_scaling_sets_table_alone(compare, tmp_path, capsys, monkeypatch):
    """A run of one size writes compare-PN.md and .json, not compare.md (nor a plot)."""
    monkeypatch.setattr(compare, "RESULTS", tmp_path)
    (tmp_path / "compare.md").write_text("the scaling set")

    args = ["--packages", "20", "--repeat", "1", "--work", str(tmp_path / "work")]
    assert 0 == compare.main([*args, "--system-python", str(tmp_path / "no-python")])

    assert "the scaling set" == (tmp_path / "compare.md").read_text()
    assert capsys.readouterr().out == (tmp_path / "compare-P20.md").read_text()
    assert {"compare.md", "compare-P20.md", "compare-P20.json", "work"} == {p.name for p in tmp_path.iterdir()}


def bench_against_libsolv(capsys) -> tuple[dict[str, Any], str]:
    from olmkit.cli import main

    args = ["bench", "resolve", "-P", "30", "-B", "3", "-S", "4", "--repeat", "2", "--against", "libsolv", "-o", "json"]
    assert 0 == main(args)
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_bench_resolve_against_libsolv_without_it_says_how_to_install_it(capsys, monkeypatch, tmp_path):
    """No python3-solv: olmkit's figures as always, and libsolv's place says why it did not run."""
    from olmkit.cli import resolve as resolve_cli

    monkeypatch.setattr(resolve_cli, "SYSTEM_PYTHON", str(tmp_path / "no-python"))

    data, err = bench_against_libsolv(capsys)

    assert "ok" == data["status"]
    assert data["first"]["timings"]["total"] > 0
    assert "apt-get install python3-solv" in data["libsolv"]["error"]
    assert data["ratio"] is None
    assert "olmkit: libsolv not run: " in err


def test_bench_resolve_against_libsolv_gives_the_ratio(capsys):
    """With python3-solv: libsolv's load, solve and memory on the same workload, and olmkit / libsolv."""
    from olmkit.cli.resolve import libsolv_missing

    missing = libsolv_missing()
    if missing:
        pytest.skip(missing)

    data, _ = bench_against_libsolv(capsys)

    ref = data["libsolv"]
    assert "ok" == ref["status"]
    assert ref["solvables"] > 30  # every bundle of the 30 packages
    first = data["catalog_load_seconds"] + data["first"]["timings"]["total"]
    ratio = data["ratio"]
    assert pytest.approx(first / (ref["load_seconds"] + ref["solve_seconds"]), rel=0.01, abs=0.01) == ratio["first"]
    if ref["solve_seconds"]:
        assert (
            pytest.approx(data["warm"]["timings"]["total"] / ref["solve_seconds"], rel=0.01, abs=0.01) == ratio["warm"]
        )
    else:  # too quick to measure (a tenth of a millisecond): no ratio
        assert ratio["warm"] is None


@pytest.mark.parametrize("gnu_time", [True, False], ids=["GNU time", "without it"])
def test_measure_gives_the_commands_own_figures(compare, monkeypatch, tmp_path, gnu_time):
    """Wall, CPU and peak RSS of one command (by GNU time, or from this process's children without it)."""
    if not gnu_time:
        monkeypatch.setattr(compare, "GNU_TIME", str(tmp_path / "no-time"))
    elif not Path(compare.GNU_TIME).is_file():
        pytest.skip(f"{compare.GNU_TIME} is not installed")
    program = "import sys; data = bytearray(64 * 2**20); data[::4096] = b'1' * len(data[::4096]); sys.exit(3)"

    run = compare.measure([sys.executable, "-c", program])

    assert 3 == run["code"]
    assert run["wall"] > 0
    assert 0 < run["cpu"] < 60
    assert run["peak_mb"] >= 64  # the bytearray, touched page by page


def test_measure_waits_for_what_the_command_left_running_and_not_for_other_children(compare, monkeypatch):
    """A command's detached child is waited for (``after``); a child this process already had (a
    server a test started) is not, so measuring never hangs on it."""
    if not compare.adopt_orphans():
        pytest.skip("not Linux: no child subreaper")
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        monkeypatch.setattr(compare, "ADOPTING", True)
        # the child lets go of the output pipes, as olmkit's detached cache writer does
        program = (
            "import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    null = os.open(os.devnull, os.O_RDWR)\n"
            "    for fd in (0, 1, 2):\n"
            "        os.dup2(null, fd)\n"
            "    time.sleep(0.5)\n"
            "    os._exit(0)\n"
            "sys.exit(0)"
        )
        measured: list[dict[str, Any]] = []
        worker = threading.Thread(target=lambda: measured.append(compare.measure([sys.executable, "-c", program])))
        worker.start()
        worker.join(timeout=30)

        assert not worker.is_alive(), "measure() waited for a child the command did not leave"
        assert measured[0]["after"] >= 0.3  # the detached child's half second, waited for
        assert server.poll() is None
    finally:
        compare.adopt_orphans(on=False)
        server.kill()
        server.wait()
