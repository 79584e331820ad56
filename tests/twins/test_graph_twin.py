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

from olmkit.errors import OlmkitError
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_graph_from_a_fresh_catalog_is_the_graph_from_its_cache(olmkit_pm, case):
    """A catalog fresh from its files hands the compiler what its loader parsed (each bundle's
    identity); one read from the cache has parsed nothing. Both compile to the same bytes."""
    from resolver.casefile import case_manifests

    from olmkit.catalog import load_catalog
    from olmkit.resolver._compile_columns import compile_graph

    registry = olmkit_pm.registry
    parse = {n: pt.parse for n, pt in registry.property_types.items()}
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OLMKIT_CACHE_DIR", str(Path(tmp) / "cache"))
        case_manifests(case, Path(tmp))
        for directory in sorted(p for p in Path(tmp).iterdir() if p.name != "cache"):
            try:
                fresh = load_catalog(directory, registry, name="cat")  # and writes the cache
            except OlmkitError:
                continue  # a catalog that does not load compiles nothing
            cached = load_catalog(directory, registry, name="cat")

            assert {} == cached.parsed_so_far(parse)
            assert compile_graph(fresh, registry).dumps() == compile_graph(cached, registry).dumps()


def test_a_catalog_parsing_differently_hands_over_nothing(olmkit_pm, tmp_path):
    """What the loader parsed is handed over only for the same parse functions."""
    from olmkit.catalog import load_catalog

    registry = olmkit_pm.registry
    parse = {n: pt.parse for n, pt in registry.property_types.items()}
    examples = Path(__file__).resolve().parent.parent.parent / "examples" / "catalog"
    fresh = load_catalog(examples, registry, cache=False)

    known = fresh.parsed_so_far(parse)
    identities = [
        p for per in fresh.bundles.values() for b in per.values() for p in b.properties if p.type == "olm.package"
    ]
    assert identities
    assert all(known[id(p)] == parse["olm.package"](p.value) for p in identities)  # each bundle's identity
    assert {} == fresh.parsed_so_far({**parse, "olm.package": lambda value: value})
