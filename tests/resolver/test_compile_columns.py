"""The graph compiled from a catalog's columns is the general compiler's, byte for byte.

:mod:`olmkit.resolver._compile_columns` compiles from :class:`~olmkit.catalog.BundleColumns`
(per distinct property, with the classes laid out by :func:`olmkit._solver.lay_out`, C or
its pure twin); :func:`~olmkit.resolver._compile.compile_general` is the definition. On every
case file, random catalogs and the example catalog both give the same stored bytes and the
same predicates; where the columns hold what only the general compiler reproduces (a
property that does not parse, a requirement that does not build or reads the bundle's
name), the fast path gives up and the general compiler runs.
"""

from __future__ import annotations

import tempfile
from array import array
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from olmkit.catalog import load_catalog
from olmkit.errors import OlmkitError
from olmkit.resolver._compile import compile_general, graph_candidates
from olmkit.resolver._compile_columns import compile_columns, compile_graph
from olmkit.resolver._graph import CatalogGraph
from resolver.casefile import case_manifests, case_request
from resolver.test_graph import CASES, cases

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "catalog"


def compare(catalog: Any, registry: Any) -> bool:
    """Assert that the fast path, where it does not give up, compiles the general compiler's graph.

    Returns whether it took the catalog.
    """
    expected = compile_general(catalog, registry)
    columns = catalog.columns()
    fast = compile_columns(catalog, columns, registry) if columns is not None else None
    if fast is None:
        return False
    assert expected.dumps() == fast.dumps()
    assert expected.pred_source == fast.pred_source
    assert expected.pred_raw == fast.pred_raw
    # predicates read through their forms are made when asked, as for a graph read from disk
    made = [fast.predicate(p, registry) for p in range(fast.n_preds)]
    assert expected._preds == made
    assert [str(p) for p in expected._preds] == [str(p) for p in made]
    assert [type(p) for p in expected._preds] == [type(p) for p in made]
    if fast._pred_index is not None:
        assert expected._pred_index == fast._pred_index
    else:  # the predicates are found by their requirements, and every one answers alike
        for predicate in expected._preds:
            assert graph_candidates(fast, predicate, registry, catalog) == graph_candidates(
                expected, predicate, registry, catalog
            )
    assert [type(e) for e in expected.errors] == [type(e) for e in fast.errors]
    # what the graph holds compactly (made when first read) is the same, whichever is read first
    late = compile_columns(catalog, columns, registry)
    assert late is not None
    deferred = {"off_chain", "pred_source", "pred_raw"} - set(vars(late))
    assert "off_chain" in deferred
    assert made == [late.predicate(p, registry) for p in range(late.n_preds)]
    assert ("pred_source" in deferred) == ("pred_source" not in vars(late))  # one list's source needs not all
    assert expected.off_chain == late.off_chain
    assert expected.pred_raw == late.pred_raw
    assert expected.pred_source == late.pred_source
    assert expected.dumps() == late.dumps()
    return True


def one_catalog_case(packages: dict[str, Any]) -> dict[str, Any]:
    """A case whose one catalog, "cat", holds ``packages``, with a subscription to package a."""
    return {"catalogs": {"cat": {"packages": packages}}, "subscriptions": [{"package": "a", "source": "cat"}]}


def one_catalog(packages: dict[str, Any], tmp_path: Path, olmkit_pm: Any) -> Any:
    """The loaded catalog of :func:`one_catalog_case`."""
    (catalog,) = request_catalogs(case_request(one_catalog_case(packages), tmp_path, olmkit_pm))
    return catalog


def request_catalogs(request: Any) -> list[Any]:
    out = []
    for source in request.sources:
        try:
            out.append(source.source.load())
        except OlmkitError:
            continue  # a catalog that does not load compiles nothing
    return out


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_files_compile_alike(path, olmkit_pm, tmp_path, implementation):
    """Every case file's catalogs: the fast path's graph is the general compiler's (C and pure lay-out)."""
    case = yaml.safe_load(path.read_text())
    request = case_request(case, tmp_path, olmkit_pm)

    for catalog in request_catalogs(request):
        compare(catalog, olmkit_pm.registry)


def test_the_fast_path_takes_most_case_files(olmkit_pm, tmp_path):
    """The fast path is not a path never taken: it compiles most case files' catalogs."""
    taken = given_up = 0
    for i, path in enumerate(CASES):
        request = case_request(yaml.safe_load(path.read_text()), tmp_path / str(i), olmkit_pm)
        for catalog in request_catalogs(request):
            if compare(catalog, olmkit_pm.registry):
                taken += 1
            else:
                given_up += 1

    assert taken > 3 * given_up
    assert given_up > 0  # some cases hold malformed properties: the general compiler runs


@pytest.fixture(scope="module", autouse=True)
def _cel_environment() -> None:
    """cel-python raises the recursion limit when its first environment is made, which
    hypothesis refuses during an example: let that happen before."""
    import celpy

    celpy.Environment()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_random_catalogs_compile_alike(olmkit_pm, case):
    """Random catalogs (shared requirements, constraints, CEL, broken channels, malformed properties)."""
    with tempfile.TemporaryDirectory() as tmp:
        request = case_request(case, Path(tmp), olmkit_pm)
        for catalog in request_catalogs(request):
            compare(catalog, olmkit_pm.registry)


def test_example_catalog_compiles_alike(olmkit_pm):
    """The example catalog, fresh from its files and read from the cache."""
    registry = olmkit_pm.registry

    assert compare(load_catalog(EXAMPLES, registry, cache=False), registry)


def test_a_property_that_does_not_parse_gives_up(olmkit_pm, tmp_path):
    """A malformed property of a registered type: the general compiler's error, from compile_graph."""
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v1.0.0"]},
                "bundles": {"a.v1.0.0": [{"type": "olm.gvk", "value": {"group": "g"}}]},
            }
        },
        tmp_path,
        olmkit_pm,
    )
    registry = olmkit_pm.registry

    assert compile_columns(catalog, catalog.columns(), registry) is None
    assert compile_general(catalog, registry).dumps() == compile_graph(catalog, registry).dumps()


def test_a_requirement_reading_the_bundle_name_gives_up(olmkit_pm, olmkit_register, tmp_path):
    """A plugin's requirement built with the bundle's name is built per bundle: the general compiler's."""
    from olmkit import hookimpl
    from olmkit.types import PropertyType

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def matches(self, candidate: Any) -> bool:
            return bool(candidate.name != self.name)

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Named) and other.name == self.name

        def __hash__(self) -> int:
            return hash(self.name)

        def __str__(self) -> str:
            return f"not {self.name}"

    class Plugin:
        @hookimpl
        def olmkit_property_types(self):
            yield PropertyType(name="example.io/other", requirement=lambda value, ctx: Named(ctx.bundle))

    olmkit_register(Plugin(), "named-requirement")
    other = {"type": "example.io/other", "value": {}}
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v2.0.0 replaces a.v1.0.0", "a.v1.0.0"]},
                "bundles": {"a.v1.0.0": [other], "a.v2.0.0": [other]},
            }
        },
        tmp_path,
        olmkit_pm,
    )
    registry = olmkit_pm.registry
    expected = compile_general(catalog, registry)

    assert compile_columns(catalog, catalog.columns(), registry) is None
    assert expected.dumps() == compile_graph(catalog, registry).dumps()
    assert ["not a.v1.0.0", "not a.v2.0.0"] == [str(p) for p in expected._preds]


def test_a_plugin_type_takes_the_fast_path(olmkit_pm, olmkit_register, tmp_path):
    """A plugin's own property types (keys, prohibitions, requirements) compile alike on the fast path."""
    from olmkit import hookimpl
    from olmkit.types import PropertyType, Uniqueness

    class Tier:
        def __init__(self, tier: str) -> None:
            self.tier = tier

        @property
        def lookup(self) -> tuple[str, str]:
            return ("example.io/tier", self.tier)

        def matches(self, candidate: Any) -> bool:
            return self.tier in candidate.values("example.io/tier")

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Tier) and other.tier == self.tier

        def __hash__(self) -> int:
            return hash(self.tier)

        def __str__(self) -> str:
            return f"tier {self.tier}"

    class Plugin:
        @hookimpl
        def olmkit_property_types(self):
            yield PropertyType(
                name="example.io/tier",
                parse=str,
                index_keys=lambda v: (v,),
                uniqueness=lambda v: Uniqueness(key=f"tier {v}", mandatory_text="one {key}", members_text="{ids}"),
            )
            yield PropertyType(name="example.io/needs-tier", parse=str, requirement=lambda v, ctx: Tier(v))
            yield PropertyType(name="example.io/frozen", prohibits="bundle {id} is frozen")

    olmkit_register(Plugin(), "tier-types")
    tier = "example.io/tier"
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v2.0.0 replaces a.v1.0.0", "a.v1.0.0"]},
                "bundles": {
                    "a.v1.0.0": [{"type": tier, "value": "gold"}, {"type": "example.io/frozen", "value": 1}],
                    "a.v2.0.0": [
                        {"type": "example.io/needs-tier", "value": "silver"},
                        "gvk g/v1/A",
                        {"type": tier, "value": "gold"},
                        "gvk g/v1/B",
                        {"type": tier, "value": "silver"},
                        {"type": "example.io/frozen", "value": 2},
                    ],
                },
            },
            "b": {
                "channels": {"stable": ["b.v1.0.0"]},
                "bundles": {
                    "b.v1.0.0": [
                        {"type": tier, "value": "silver"},
                        {"type": "example.io/needs-tier", "value": "gold"},
                    ]
                },
            },
        },
        tmp_path,
        olmkit_pm,
    )
    registry = olmkit_pm.registry

    assert compare(catalog, registry)
    graph = compile_columns(catalog, catalog.columns(), registry)
    assert graph is not None
    # a.v2.0.0's keys type by type, in order of each type's first property (the types interleave)
    names = [graph.keys[k] for k in graph.ukeys[graph.ukey_start[1] : graph.ukey_start[2]]]
    assert ["a", "A (g/v1)", "B (g/v1)", "tier gold", "tier silver"] == names


def test_a_fast_graph_read_back_answers_alike(olmkit_pm, tmp_path):
    """A fast-path graph stored and read back rebuilds its predicates and gathers further lists as the general one."""
    registry = olmkit_pm.registry
    catalog = load_catalog(EXAMPLES, registry, cache=False)
    fast = compile_columns(catalog, catalog.columns(), registry)
    assert fast is not None
    data = fast.dumps()
    assert data is not None
    read = CatalogGraph.loads(data)
    assert read is not None
    general = compile_general(catalog, registry)

    for p in range(general.n_preds):
        assert general._preds[p] == read.predicate(p, registry)
    for p in range(general.n_preds):
        predicate = general._preds[p]
        expected = graph_candidates(general, predicate, registry, catalog)
        assert expected == graph_candidates(read, predicate, registry, catalog)
        assert expected == graph_candidates(fast, predicate, registry, catalog)


def test_catalog_written_to_files_compiles_alike_from_its_cache(olmkit_pm):
    """A catalog read back from the catalog cache (no parsed values handed over) compiles alike."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OLMKIT_CACHE_DIR", str(Path(tmp) / "cache"))
        registry = olmkit_pm.registry
        load_catalog(EXAMPLES, registry)  # writes the cache
        cached = load_catalog(EXAMPLES, registry)

        assert compare(cached, registry)


def test_graphs_of_case_manifests_from_disk(olmkit_pm, tmp_path):
    """The whole path (compile_graph as resolutions call it) on a case's catalog directories."""
    case = yaml.safe_load(CASES[0].read_text())
    case_manifests(case, tmp_path)
    for directory in sorted(p for p in tmp_path.iterdir() if p.is_dir()):
        catalog = load_catalog(directory, olmkit_pm.registry, name="cat", cache=False)
        registry = olmkit_pm.registry

        assert compile_general(catalog, registry).dumps() == compile_graph(catalog, registry).dumps()


def test_built_in_predicates_are_selected_in_c(olmkit_pm, tmp_path, monkeypatch, implementation):
    """Every built-in predicate with a program (gvk, package ranges, label, has-type CEL, all / any / not)
    is evaluated by olmkit._solver.select, not asked; a full CEL rule is asked. Same graph as the general compiler."""
    import olmkit._solver

    programs: list[int] = []
    real = olmkit._solver.select

    def counting(prog_start: Any, *args: Any) -> Any:
        programs.append(len(prog_start) - 1)
        return real(prog_start, *args)

    monkeypatch.setattr(olmkit._solver, "select", counting)
    has_type = {"cel": {"rule": 'properties.exists(p, p.type == "olm.label")'}}
    full_cel = {"cel": {"rule": "properties.size() > 2"}}
    in_range = {"package": {"packageName": "b", "versionRange": ">=1.0.0 <2.0.0 || 3.x"}}
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v1.0.0"]},
                "bundles": {
                    "a.v1.0.0": [
                        "needs-gvk g/v1/B",
                        "needs-package b >=1.0.0",
                        "needs-label x",
                        {"type": "olm.constraint", "value": has_type},
                        {"type": "olm.constraint", "value": {"all": {"constraints": [in_range, has_type]}}},
                        {"type": "olm.constraint", "value": {"not": {"constraints": [in_range]}}},
                        {"type": "olm.constraint", "value": {"any": {"constraints": [in_range, full_cel]}}},
                        {"type": "olm.constraint", "value": full_cel},
                    ]
                },
            },
            "b": {
                "channels": {"stable": ["b.v3.1.0 replaces b.v1.5.0", "b.v1.5.0 replaces b.v0.9.0", "b.v0.9.0"]},
                "bundles": {"b.v0.9.0": ["gvk g/v1/B"], "b.v1.5.0": ["label x"], "b.v3.1.0": ["label x"]},
            },
        },
        tmp_path,
        olmkit_pm,
    )

    assert compare(catalog, olmkit_pm.registry)
    assert [6, 6] == programs  # of 8 lists: the two with a full CEL rule are asked (compare compiles twice)


def test_a_broken_channel_gathers_the_general_way(olmkit_pm, tmp_path, monkeypatch):
    """A broken channel's error may be a list's answer: every list is then gathered as the general compiler does."""
    import olmkit._solver

    calls: list[Any] = []
    monkeypatch.setattr(olmkit._solver, "select", lambda *args: calls.append(args))
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v1.0.0"]},
                "bundles": {"a.v1.0.0": ["needs-gvk g/v1/B"]},
            },
            "b": {
                "channels": {"stable": ["b.v2.0.0", "b.v1.0.0"]},  # two heads
                "bundles": {"b.v1.0.0": ["gvk g/v1/B"], "b.v2.0.0": ["gvk g/v1/B"]},
            },
        },
        tmp_path,
        olmkit_pm,
    )

    assert compare(catalog, olmkit_pm.registry)
    assert [] == calls


def test_sources_requirements_and_off_chain_entries_are_made_when_read(olmkit_pm, tmp_path):
    """The compiled graph holds them compactly: made on first read, equal to the general compiler's."""
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v2.0.0 replaces a.v1.0.0 skips a.v0.9.0", "a.v1.0.0", "a.v0.9.0"]},
                "bundles": {
                    "a.v2.0.0": ["needs-gvk g/v1/B", "needs-package b >=1.0.0"],
                    "a.v1.0.0": ["needs-package b >=1.0.0"],
                    "a.v0.9.0": [],
                },
            },
            "b": {"channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": ["gvk g/v1/B"]}},
        },
        tmp_path,
        olmkit_pm,
    )
    registry = olmkit_pm.registry
    general = compile_general(catalog, registry)
    fast = compile_columns(catalog, catalog.columns(), registry)
    assert fast is not None
    held = vars(fast)
    assert not {"off_chain", "pred_source", "pred_raw"} & set(held)

    assert [str(fast.predicate(p, registry)) for p in range(fast.n_preds)] == [str(p) for p in general._preds]
    assert "pred_source" not in held  # one list's source is read from the compact form
    assert fast.off_chain == general.off_chain == {("a", "stable", "a.v0.9.0"): 3}  # after the chains
    assert "pred_raw" not in held
    assert fast.pred_raw == general.pred_raw
    assert len(fast.pred_raw) == 2
    assert fast.pred_source == general.pred_source
    assert fast.dumps() == general.dumps()


def test_compile_graph_takes_the_columns_the_loader_filled(olmkit_pm, tmp_path, monkeypatch, implementation):
    """A catalog read into columns is compiled from them with the C part (its index gives rows); with the
    pure twins, and for a catalog without columns, the general compiler runs."""
    import olmkit.resolver._compile_columns as module

    case = yaml.safe_load(CASES[0].read_text())
    case_manifests(case, tmp_path)
    (directory,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    registry = olmkit_pm.registry
    catalog = load_catalog(directory, registry, name="cat", cache=False)
    assert catalog.columns(build=False) is not None
    expected = compile_general(catalog, registry).dumps()
    general: list[Any] = []
    real = module.compile_general
    monkeypatch.setattr(module, "compile_general", lambda *args: general.append(args) or real(*args))

    assert expected == compile_graph(catalog, registry).dumps()
    assert (implementation == "pure") == bool(general)
    no_columns = load_catalog(EXAMPLES, registry, cache=False)
    assert no_columns.columns(build=False) is None
    compile_graph(no_columns, registry)
    assert (implementation == "pure") + 1 == len(general)


def test_a_program_the_compiler_does_not_know_is_asked(olmkit_pm, olmkit_register, tmp_path):
    """A plugin predicate whose program holds an unknown node or an unhashable key is asked, as without one."""
    from olmkit import hookimpl
    from olmkit.types import PropertyType

    class Odd:
        def __init__(self, kind: str) -> None:
            self.kind = kind

        @property
        def program(self) -> tuple[Any, ...]:
            if self.kind == "unknown":
                return ("all", ("lookup", ("olm.gvk", ("g", "v1", "A"))), ("later", 1))
            return ("lookup", ["not", "hashable"])

        def matches(self, candidate: Any) -> bool:
            return bool(candidate.name.startswith("b"))

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Odd) and other.kind == self.kind

        def __hash__(self) -> int:
            return hash(self.kind)

        def __str__(self) -> str:
            return f"odd {self.kind}"

    class Plugin:
        @hookimpl
        def olmkit_property_types(self):
            yield PropertyType(name="example.io/odd", parse=str, requirement=lambda value, ctx: Odd(value))

    olmkit_register(Plugin(), "odd-programs")
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v1.0.0"]},
                "bundles": {
                    "a.v1.0.0": [
                        {"type": "example.io/odd", "value": "unknown"},
                        {"type": "example.io/odd", "value": "unhashable"},
                    ]
                },
            },
            "b": {"channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": ["gvk g/v1/A"]}},
        },
        tmp_path,
        olmkit_pm,
    )
    registry = olmkit_pm.registry

    assert compare(catalog, registry)
    graph = compile_columns(catalog, catalog.columns(), registry)
    assert graph is not None
    b = graph.channel_first[("b", "stable")]
    assert [[b], [b]] == [list(graph.pred_items[graph.pred_start[p] : graph.pred_start[p + 1]]) for p in range(2)]


@pytest.mark.parametrize("key", ["subscription:a", "cat/operators/stable/b.v1.0.0"])
def test_a_uniqueness_key_that_is_another_variables_identifier(olmkit_pm, olmkit_register, tmp_path, key):
    """A rule whose key is a subscription's or a catalog entry's identifier shares it: the resolution fails
    saying so."""
    from olmkit import hookimpl
    from olmkit.resolver import resolve
    from olmkit.types import PropertyType, Uniqueness

    class Plugin:
        @hookimpl
        def olmkit_property_types(self):
            yield PropertyType(
                name="example.io/claim",
                parse=str,
                uniqueness=lambda v: Uniqueness(key=v, mandatory_text="one {key}", members_text="{ids}"),
            )

    olmkit_register(Plugin(), "claims")
    case = one_catalog_case(
        {
            "a": {  # two bundles make a rule: at most one of them
                "channels": {"stable": ["a.v2.0.0 replaces a.v1.0.0", "a.v1.0.0"]},
                "bundles": {
                    "a.v1.0.0": [{"type": "example.io/claim", "value": key}],
                    "a.v2.0.0": [{"type": "example.io/claim", "value": key}, "needs-package b >=1.0.0"],
                },
            },
            "b": {"channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": []}},
        }
    )

    resolution = resolve(case_request(case, tmp_path, olmkit_pm))

    assert ("error", f'duplicate identifier "{key}" in input') == (resolution.status, resolution.message)


def test_a_deferred_attribute_is_made_once_for_every_thread():
    """Graphs are shared between threads: the first read makes every attribute its maker sets, once."""
    import threading
    import time

    g = CatalogGraph()
    calls: list[int] = []

    def make(graph: CatalogGraph) -> None:
        calls.append(1)
        time.sleep(0.05)  # long enough for the other readers to arrive meanwhile
        graph.off_chain = {("a", "stable", "a.v1"): 3}
        graph.pred_raw = {("olm.gvk.required", b"{}"): 0}

    g.defer(make, "off_chain", "pred_raw")
    assert "off_chain" not in vars(g)
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(g.off_chain)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert [1] == calls
    assert 4 == len(seen)
    assert all(s is seen[0] for s in seen)
    assert {("olm.gvk.required", b"{}"): 0} == g.pred_raw  # made with it, not made again
    assert [1] == calls
    with pytest.raises(AttributeError):
        _ = g.not_an_attribute


def test_a_channel_entry_without_a_bundle_leaves_the_catalogs_columns_alone(olmkit_pm, tmp_path):
    """The graph shares the columns' names, versions and images until an entry naming no bundle adds a class."""
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v2.0.0 replaces a.v1.0.0", "a.v1.0.0"]},
                "bundles": {"a.v1.0.0": []},  # a.v2.0.0 is listed, not defined
            },
            "b": {"channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": []}},
        },
        tmp_path,
        olmkit_pm,
    )
    columns = catalog.columns()
    names, versions, images = list(columns.bundle_name), list(columns.bundle_version), list(columns.bundle_image)
    fast = compile_columns(catalog, columns, olmkit_pm.registry)
    assert fast is not None

    assert (names, versions, images) == (columns.bundle_name, columns.bundle_version, columns.bundle_image)
    assert [*names, "a.v2.0.0"] == fast.class_name
    assert [*versions, None] == fast.class_version
    assert compare(catalog, olmkit_pm.registry)


def test_the_graph_shares_the_columns_when_every_entry_has_a_bundle(olmkit_pm):
    """No copy of the class columns (a list per column at P=10000 is 1.6 MB) when no class is added."""
    registry = olmkit_pm.registry
    catalog = load_catalog(EXAMPLES, registry, cache=False)
    columns = catalog.columns()
    fast = compile_columns(catalog, columns, registry)
    assert fast is not None

    assert fast.class_name is columns.bundle_name
    assert fast.class_image is columns.bundle_image


def test_constraints_spelled_with_unsorted_keys_find_their_lists(olmkit_pm, tmp_path):
    """A requirement's key in pred_raw is its sorted JSON, whether its text was sorted (kept) or not (written again)."""
    in_range = {"package": {"packageName": "b", "versionRange": ">=1.0.0"}}
    unsorted = {"failureMessage": "m", "all": {"constraints": [in_range]}}
    is_sorted = {"any": {"constraints": [in_range]}, "failureMessage": "n"}
    catalog = one_catalog(
        {
            "a": {
                "channels": {"stable": ["a.v1.0.0"]},
                "bundles": {
                    "a.v1.0.0": [
                        {"type": "olm.constraint", "value": unsorted},
                        {"type": "olm.constraint", "value": is_sorted},
                    ]
                },
            },
            "b": {"channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": []}},
        },
        tmp_path,
        olmkit_pm,
    )
    registry = olmkit_pm.registry
    child = b'{"constraints":[{"package":{"packageName":"b","versionRange":">=1.0.0"}}]}'
    assert b'{"failureMessage":"m","all":' + child + b"}" in catalog.columns().dist_json  # read as written

    assert compare(catalog, registry)
    fast = compile_columns(catalog, catalog.columns(), registry)
    assert fast is not None
    assert {
        ("olm.constraint", b'{"all":' + child + b',"failureMessage":"m"}'),
        ("olm.constraint", b'{"any":' + child + b',"failureMessage":"n"}'),
    } == set(fast.pred_raw)


def test_a_compiled_graph_is_freed_without_the_cyclic_gc(olmkit_pm):
    """Resolution runs with the cyclic GC off: what a graph defers does not hold the graph (no cycle)."""
    import gc
    import weakref

    registry = olmkit_pm.registry
    catalog = load_catalog(EXAMPLES, registry, cache=False)
    for compile_one in (
        lambda: compile_columns(catalog, catalog.columns(), registry),
        lambda: compile_general(catalog, registry),
    ):
        was = gc.isenabled()
        gc.disable()
        try:
            graph = compile_one()
            assert graph is not None
            assert "off_chain" not in vars(graph)  # deferred, not made
            ref = weakref.ref(graph)
            del graph
            assert ref() is None
        finally:
            if was:
                gc.enable()


def _versions_catalog(tmp_path: Path, registry: Any) -> Any:
    """A catalog of two packages with several versions each, loaded into columns with ``registry``."""
    case = one_catalog_case(
        {
            "a": {
                "channels": {"stable": ["a.v3.0.0 replaces a.v2.0.0", "a.v2.0.0 replaces a.v1.0.0", "a.v1.0.0"]},
                "bundles": {
                    "a.v1.0.0": [],
                    "a.v2.0.0": ["needs-package b >=1.0.0"],
                    "a.v3.0.0": ["needs-package b >=2.0.0"],
                },
            },
            "b": {
                "channels": {"stable": ["b.v2.0.0 replaces b.v1.0.0", "b.v1.0.0"]},
                "bundles": {"b.v1.0.0": [], "b.v2.0.0": []},
            },
        }
    )
    case_manifests(case, tmp_path)
    (directory,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    catalog = load_catalog(directory, registry, name="cat", cache=False)
    assert catalog.columns(build=False) is not None
    return catalog


def test_identities_are_read_from_the_columns(olmkit_pm, tmp_path, monkeypatch):
    """olm.package declares unique_by_key: its rule is asked once per package, and the compile makes no
    PackageIdentity for the identities the loader read through their fields."""
    import olmkit.plugins.properties as properties

    registry = olmkit_pm.registry
    catalog = _versions_catalog(tmp_path, registry)
    parse = {n: pt.parse for n, pt in registry.property_types.items()}
    columns = catalog.columns()
    identities = [d for d, t in enumerate(columns.dist_type) if t == "olm.package"]
    assert len(identities) == 5
    asked: list[str] = []
    real = properties._package_rule
    monkeypatch.setattr(properties, "_package_rule", lambda package: asked.append(package) or real(package))

    graph = compile_columns(catalog, columns, registry)

    assert graph is not None
    assert ["a", "b"] == asked
    assert not set(identities) & set(catalog.parsed_distinct(parse, identities=False))  # none made
    assert set(identities) <= set(catalog.parsed_distinct(parse))  # made when asked for
    assert ["a", "b"] == sorted(graph.keys)
    assert compare(catalog, registry)


def test_an_identity_rule_that_reads_the_version_is_asked_for_each_identity(olmkit_pm, tmp_path):
    """Without unique_by_key an identity type's uniqueness is asked of every parsed identity (here it reads
    the version): the graph is the general compiler's."""
    import attrs

    from olmkit.types import Uniqueness

    base = olmkit_pm.registry
    package_type = base.property_types["olm.package"]
    assert package_type.fields is not None
    assert package_type.fields.unique_by_key

    def per_version(value: Any) -> Uniqueness:
        return Uniqueness(key=f"{value.package}@{value.version}", mandatory_text="one {key}", members_text="{ids}")

    changed = attrs.evolve(
        package_type,
        uniqueness=per_version,
        fields=attrs.evolve(package_type.fields, unique_by_key=False),
    )
    registry = attrs.evolve(base, property_types={**base.property_types, "olm.package": changed})
    catalog = _versions_catalog(tmp_path, registry)

    graph = compile_columns(catalog, catalog.columns(), registry)

    assert graph is not None
    assert {"a@1.0.0", "a@2.0.0", "a@3.0.0", "b@1.0.0", "b@2.0.0"} <= set(graph.keys)
    assert compare(catalog, registry)


def test_identities_read_as_numbers_or_as_strings_compile_alike(olmkit_pm, tmp_path, monkeypatch):
    """LazyBundles.identity_numbers gives the identities' packages and versions as identities() does; with an
    identity the loader parsed (not plain: an extra field) it gives none, and the compile reads identities()."""
    import olmkit.plugins.properties as properties
    from olmkit._solver import implementation

    registry = olmkit_pm.registry
    plain = _versions_catalog(tmp_path / "plain", registry)
    columns = plain.columns()
    ds = array("i", [d for d, t in enumerate(columns.dist_type) if t == "olm.package"])
    numbers = plain.bundles.identity_numbers(ds)
    if implementation() == "native":  # the C scan reads plain identities through their fields (pure: parsed)
        assert numbers is not None
    if numbers is not None:
        lists, keys, at, versions = numbers
        assert plain.bundles.identities(ds) == ([keys[n] for n in lists], [versions[v] for v in at])

    (tmp_path / "odd").mkdir()
    _versions_catalog(tmp_path / "odd", registry)
    (directory,) = [p for p in (tmp_path / "odd").iterdir() if p.is_dir()]
    path = directory / "catalog.json"
    text = path.read_bytes()
    plain_b = b'{"packageName":"b","version":"2.0.0"}'
    assert plain_b in text
    path.write_bytes(text.replace(plain_b, b'{"packageName":"b","version":"2.0.0","note":"x"}'))
    odd = load_catalog(directory, registry, name="cat", cache=False)
    columns = odd.columns(build=False)
    assert columns is not None
    ds = array("i", [d for d, t in enumerate(columns.dist_type) if t == "olm.package"])
    assert odd.bundles.identity_numbers(ds) is None
    assert odd.bundles.identities(ds) is not None
    asked: list[str] = []
    real = properties._package_rule
    monkeypatch.setattr(properties, "_package_rule", lambda package: asked.append(package) or real(package))

    assert compile_columns(odd, columns, registry) is not None
    assert ["a", "b"] == asked  # still once per package
    assert compare(odd, registry)
