"""Differential test: the resolution graphs in every form they are used give the reference's answers.

``tests/resolver/test_graph.py`` compares freshly compiled graphs with the reference builder
(``tests/resolver/reference.py``). A graph is also read back from disk by the next process
and kept in memory for the next resolution; on random catalogs, each of the three must give
the reference's resolution (steps, messages, explanations).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from resolver import reference
from resolver.casefile import case_request
from resolver.test_graph import cases, outcome

from olmkit.resolver import clear_graphs, resolve


@pytest.fixture(scope="module", autouse=True)
def _cel_environment() -> None:
    """cel-python raises the recursion limit when its first environment is made, which
    hypothesis refuses during an example: let that happen before."""
    import celpy

    celpy.Environment()


@settings(
    max_examples=40,
    deadline=None,
    # the plugin manager fixture holds no state between examples
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
def test_compiled_stored_and_kept_graphs_match_the_reference(olmkit_pm, case):
    """Compiled, read back from disk (a new process) and kept in memory: the reference's resolution."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OLMKIT_CACHE_DIR", str(Path(tmp) / "cache"))
        request = case_request(case, Path(tmp), olmkit_pm, cache=True)
        expected = outcome(reference.resolve(request))
        clear_graphs()
        try:
            compiled = resolve(request)
            clear_graphs()  # as in a new process: the graphs come from disk
            stored = resolve(request)
            kept = resolve(request)
        finally:
            clear_graphs()

    assert expected == outcome(compiled)
    assert expected == outcome(stored)
    assert expected == outcome(kept)
    n = compiled.counters.get("graphs_compiled", 0)
    if n:  # a resolution that fails before reaching the catalogs uses no graph
        assert n == stored.counters.get("graphs_disk", 0) + stored.counters.get("graphs_compiled", 0)
        assert n == kept.counters.get("graphs_memory", 0)
