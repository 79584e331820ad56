"""``bench resolve --solver`` on the hard-problem generator: what ran, and the same answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from olmkit._solver import backend_names
from olmkit.cli import main

GEN_HARD = Path(__file__).resolve().parents[2] / "benchmarks" / "gen_hard.py"
BACKENDS = [b for b in ("native", "cryptominisat", "pure") if b in backend_names()]


def generate(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "w"
    subprocess.run([sys.executable, str(GEN_HARD), *args, str(out)], check=True, capture_output=True)
    return out


def bench(capsys, workload: Path, backend: str) -> dict:
    code = main(["bench", "resolve", "--workload", str(workload), "--solver", backend, "--repeat", "1", "-o", "json"])
    assert 0 == code
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("unsat", [False, True])
def test_hard_problems_same_answer_on_every_backend(tmp_path, capsys, unsat):
    """A small hard workload (pigeonhole gadgets, diamonds, failing chain heads; with
    --unsat a pigeonhole core) resolves to the same answer on every backend; the JSON
    says which backend and implementation ran and how hard the solver worked."""
    workload = generate(tmp_path, "--packages", "80", "--holes", "5", "--core-holes", "5", *(["--unsat"] * unsat))

    runs = {b: bench(capsys, workload, b) for b in BACKENDS}

    assert 1 == len({r["answer_sha256"] for r in runs.values()})
    assert {"unsatisfiable" if unsat else "ok"} == {r["status"] for r in runs.values()}
    for backend, r in runs.items():
        solver = r["solver"]
        assert backend == solver["backend"]
        assert solver["implementation"] in ("native C", "pure Python")
        assert solver["variables"] > 0
        assert solver["clauses"] > 0
        assert solver["backend_calls"] > 0, "search matters: the SAT solver is asked"
        assert solver["conflicts"] > 0
    assert 0 == runs["cryptominisat"]["solver"]["propagations"]
    assert runs["pure"]["solver"]["propagations"] > 0
    if unsat:
        counters = runs["cryptominisat"]["warm"]["counters"]
        # the pigeonhole's minimal core: 6 packages' Mandatory and Dependency, 5 APIs' uniqueness
        assert 17 == counters["sat_core_minimal"] <= counters["sat_core_initial"]
        assert "explain_shrink" in runs["cryptominisat"]["warm"]["timings"]


def test_bench_unknown_solver_is_a_usage_error(tmp_path, capsys):
    """An unknown --solver is one line naming the backends, before any work."""
    code = main(["bench", "resolve", "--workload", str(tmp_path), "--solver", "nope"])

    assert 2 == code
    assert "--solver: unknown SAT backend 'nope' (available: cryptominisat" in capsys.readouterr().err
