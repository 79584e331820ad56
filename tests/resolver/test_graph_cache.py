"""Resolution graphs are shared across resolutions, stored on disk, and never stale."""

from __future__ import annotations

import copy
import marshal
from pathlib import Path
from typing import Any, ClassVar

import pytest

from olmkit import hookimpl
from olmkit.resolver import resolve
from olmkit.resolver._compile_columns import compile_graph
from olmkit.resolver._graph import CatalogGraph
from olmkit.resolver._graph_cache import _GRAPHS, _GRAPHS_KEPT, clear_graphs, graph_for, graph_path
from olmkit.types import ConstraintEvaluator, PropertyType
from resolver import reference
from resolver.casefile import case_request, step_text
from resolver.test_graph import outcome

CASE: dict[str, Any] = {
    "catalogs": {
        "cat": {
            "packages": {
                "a": {"channels": {"stable": ["a.v1.0.0"]}, "bundles": {"a.v1.0.0": ["needs-gvk g/v1/B"]}},
                "b": {
                    "channels": {"stable": ["b.v1.0.0"]},
                    "bundles": {"b.v1.0.0": ["gvk g/v1/B", "needs-label tier=gold"]},
                },
                "c": {"channels": {"stable": ["c.v1.0.0"]}, "bundles": {"c.v1.0.0": ["label tier=gold"]}},
                "x": {
                    "channels": {"stable": ["x.v1.0.0"]},
                    "bundles": {"x.v1.0.0": [{"type": "olm.constraint", "value": {"nope": {}}}]},
                },
            }
        }
    },
    "subscriptions": [{"package": "a"}],
}


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty on-disk cache and no graph in memory."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(directory))
    clear_graphs()
    yield directory
    clear_graphs()


def resolve_case(case: dict[str, Any], root: Path, pm: Any) -> Any:
    return resolve(case_request(case, root, pm, cache=True))


def steps(resolution: Any) -> list[str]:
    return [step_text(s) for s in resolution.steps]


def test_graph_is_shared_then_replaced_when_the_catalog_changes(olmkit_pm, tmp_path, cache_dir):
    """Unchanged content reuses the graph; a changed catalog gets a new one and the new answer."""
    first = resolve_case(CASE, tmp_path, olmkit_pm)
    again = resolve_case(CASE, tmp_path, olmkit_pm)
    changed = copy.deepcopy(CASE)
    c = changed["catalogs"]["cat"]["packages"]["c"]
    c["channels"]["stable"] = ["c.v2.0.0 replaces c.v1.0.0", "c.v1.0.0"]
    c["bundles"]["c.v2.0.0"] = ["label tier=gold"]
    after_change = resolve_case(changed, tmp_path, olmkit_pm)
    back = resolve_case(CASE, tmp_path, olmkit_pm)

    assert {"graphs_compiled": 1} == {k: v for k, v in first.counters.items() if k.startswith("graphs")}
    assert 1 == again.counters["graphs_memory"]
    assert 1 == after_change.counters["graphs_compiled"]
    assert 1 == back.counters["graphs_memory"]
    expected = ["cat/operators/stable/a.v1.0.0", "cat/operators/stable/b.v1.0.0", "cat/operators/stable/c.v1.0.0"]
    assert expected == steps(first) == steps(again) == steps(back)
    assert [*expected[:2], "cat/operators/stable/c.v2.0.0"] == steps(after_change)


def test_graph_stored_on_disk_serves_the_next_process(olmkit_pm, tmp_path, cache_dir):
    """A graph read back from disk gives the same resolution as the compiled one."""
    compiled = resolve_case(CASE, tmp_path, olmkit_pm)
    clear_graphs()  # as in a new process
    stored = resolve_case(CASE, tmp_path, olmkit_pm)

    assert 1 == stored.counters["graphs_disk"]
    assert (compiled.status, steps(compiled)) == (stored.status, steps(stored))
    assert list((cache_dir / "resolver").glob("*.graph"))


def decoded(data: bytes) -> dict[str, Any]:
    """A stored graph as plain values (marshal's bytes vary with object sharing)."""
    state = marshal.loads(data)
    return {k: marshal.loads(v) if k in ("names", "preds") else v for k, v in state.items()}


def test_stored_graph_round_trips(olmkit_pm, tmp_path):
    """dumps() then loads() gives a graph with the same arrays, tables and errors."""
    request = case_request(CASE, tmp_path, olmkit_pm)
    graph = compile_graph(request.sources[0].source.load(), olmkit_pm.registry)
    data = graph.dumps()

    loaded = CatalogGraph.loads(data)

    assert data is not None
    assert loaded is not None
    assert decoded(data) == decoded(loaded.dumps() or b"")
    assert [str(e) for e in graph.errors] == [str(e) for e in loaded.errors]
    assert None is CatalogGraph.loads(b"not a graph")


def test_stored_graph_keeps_entries_off_the_chain(olmkit_pm, tmp_path, cache_dir):
    """A skipped entry a startingCSV names is still there in a graph read back from disk."""
    case = {
        "catalogs": {
            "cat": {
                "packages": {
                    "a": {
                        "channels": {"stable": ["a.v2.0.0 skips a.v1.0.0", "a.v1.0.0"]},
                        "bundles": {"a.v1.0.0": [], "a.v2.0.0": []},
                    }
                }
            }
        },
        "subscriptions": [{"package": "a", "channel": "stable", "startingCSV": "a.v1.0.0"}],
    }
    first = resolve_case(case, tmp_path, olmkit_pm)
    clear_graphs()  # the next resolution reads the stored graph

    second = resolve_case(case, tmp_path, olmkit_pm)

    assert ["cat/operators/stable/a.v1.0.0"] == steps(first) == steps(second)
    assert 1 == second.counters["graphs_disk"]


@pytest.mark.parametrize("damage", [b"\x00garbage", b""], ids=["garbage", "empty"])
def test_damaged_stored_graph_is_compiled_again(olmkit_pm, tmp_path, cache_dir, damage):
    """An unreadable (or empty) graph file is ignored: the graph is compiled and the answer is right."""
    resolve_case(CASE, tmp_path, olmkit_pm)
    paths = list((cache_dir / "resolver").glob("*.graph"))
    assert paths
    for path in paths:
        path.write_bytes(damage)
    clear_graphs()

    resolution = resolve_case(CASE, tmp_path, olmkit_pm)

    assert 1 == resolution.counters["graphs_compiled"]
    assert 3 == len(resolution.steps)


def test_broken_bundle_fails_only_when_reached(olmkit_pm, tmp_path, cache_dir):
    """A bundle whose constraint cannot be built fails a resolution only if it is reachable."""
    unrelated = resolve_case(CASE, tmp_path, olmkit_pm)
    reaching = copy.deepcopy(CASE)
    reaching["subscriptions"] = [{"package": "x"}]
    request = case_request(reaching, tmp_path, olmkit_pm, cache=True)

    failed = resolve(request)

    assert "ok" == unrelated.status
    assert ("error", reference.resolve(request).message) == (failed.status, failed.message)
    assert 'json: unknown field "nope"' in failed.message


def test_resolutions_share_one_catalog_snapshot_per_content(olmkit_pm, tmp_path, cache_dir):
    """Steps of resolutions against unchanged content read one catalog object, not one each."""
    first = resolve_case(CASE, tmp_path, olmkit_pm)
    second = resolve_case(CASE, tmp_path, olmkit_pm)

    assert first.steps[0].content is second.steps[0].content
    assert first.steps[0].content == case_request(CASE, tmp_path, olmkit_pm).sources[0].source.load().bundle(
        "a", "a.v1.0.0"
    )


def test_graphs_kept_in_memory_are_bounded(olmkit_pm, tmp_path, cache_dir):
    """Only the most recently used graphs stay in memory."""
    for i in range(_GRAPHS_KEPT + 3):
        case = copy.deepcopy(CASE)
        case["catalogs"]["cat"]["packages"]["a"]["bundles"]["a.v1.0.0"].append(f"label n{i}")
        resolve_case(case, tmp_path / str(i), olmkit_pm)

    assert _GRAPHS_KEPT == len(_GRAPHS)


def test_graphs_kept_in_memory_are_bounded_by_their_size(olmkit_pm, tmp_path, cache_dir, monkeypatch):
    """Graphs are dropped, oldest first, once their entries exceed the bound; the newest one always stays."""
    monkeypatch.setattr("olmkit.resolver._graph_cache._ENTRIES_KEPT", 1)
    clear_graphs()
    for i in range(3):
        case = copy.deepcopy(CASE)
        case["catalogs"]["cat"]["packages"]["a"]["bundles"]["a.v1.0.0"].append(f"label n{i}")
        resolve_case(case, tmp_path / str(i), olmkit_pm)

    assert 1 == len(_GRAPHS)
    (catalog, _, graph) = next(iter(_GRAPHS.values()))
    assert len(graph.entry_class) > 1  # bigger than the bound, kept because it is the newest
    assert {"label": "n2"} in [p.value for p in catalog.bundle("a", "a.v1.0.0").properties]


def test_graph_depends_on_the_plugins(olmkit_pm, olmkit_register, tmp_path, cache_dir):
    """Another set of constraint keys is another graph (a plugin can change what matches)."""
    catalog = case_request(CASE, tmp_path, olmkit_pm, cache=True).sources[0].source.load()
    before = graph_path(catalog.digest, olmkit_pm.registry, catalog.name)

    class Tier:
        @hookimpl
        def olmkit_constraint_evaluators(self):
            yield ConstraintEvaluator(key="tier", build=lambda value, ctx: None)

    olmkit_register(Tier())
    after = graph_path(catalog.digest, olmkit_pm.registry, catalog.name)
    graph, origin, _ = graph_for(catalog, olmkit_pm.registry)

    assert before != after
    assert "compiled" == origin
    assert graph.n_entries == 4


# --------------------------------------------------------------------------- exact lookups


class TierIs:
    """Matches bundles carrying the tier ``tier``; exact: the index under it answers."""

    exact = True
    asked: list[str] = []

    def __init__(self, tier: str) -> None:
        self.tier = tier
        self.lookup = ("example.io/tier", tier)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TierIs) and other.tier == self.tier

    def __hash__(self) -> int:
        return hash(self.tier)

    def matches(self, candidate: Any) -> bool:
        TierIs.asked.append(candidate.name)
        return self.tier in candidate.values("example.io/tier")

    def __str__(self) -> str:
        return f"with tier {self.tier}"


class TierPlugin:
    @hookimpl
    def olmkit_property_types(self):
        def parse(value: Any) -> str:
            if not isinstance(value, str):
                raise ValueError("a tier is a string")
            return value

        yield PropertyType(name="example.io/tier", parse=parse, index_keys=lambda v: (v,))
        yield PropertyType(name="example.io/tier.required", parse=parse, requirement=lambda v, ctx: TierIs(v))


def tier_case(db_tiers: list[Any]) -> dict[str, Any]:
    tier = [{"type": "example.io/tier", "value": t} for t in db_tiers]
    return {
        "catalogs": {
            "cat": {
                "packages": {
                    "app": {
                        "channels": {"stable": ["app.v1.0.0"]},
                        "bundles": {"app.v1.0.0": [{"type": "example.io/tier.required", "value": "gold"}]},
                    },
                    "db": {"channels": {"stable": ["db.v1.0.0"]}, "bundles": {"db.v1.0.0": tier}},
                    "kv": {
                        "channels": {"stable": ["kv.v1.0.0"]},
                        "bundles": {"kv.v1.0.0": [{"type": "example.io/tier", "value": "gold"}]},
                    },
                }
            }
        },
        "subscriptions": [{"package": "app"}],
    }


def test_exact_predicate_is_answered_from_the_index(olmkit_pm, olmkit_register, tmp_path, cache_dir):
    """A predicate declaring ``exact`` gets the bundles filed under its lookup without being asked."""
    olmkit_register(TierPlugin())
    TierIs.asked.clear()
    request = case_request(tier_case(["gold"]), tmp_path, olmkit_pm, cache=True)

    resolution = resolve(request)

    assert [] == TierIs.asked
    assert ["cat/operators/stable/app.v1.0.0", "cat/operators/stable/db.v1.0.0"] == steps(resolution)
    assert outcome(reference.resolve(request)) == outcome(resolution)


def test_exact_predicate_is_asked_about_a_malformed_candidate(olmkit_pm, olmkit_register, tmp_path, cache_dir):
    """A candidate with a property that does not parse is asked, and the failure is the reference's."""
    olmkit_register(TierPlugin())
    TierIs.asked.clear()
    request = case_request(tier_case(["gold", 5]), tmp_path, olmkit_pm, cache=True)

    resolution = resolve(request)

    assert ["db.v1.0.0"] == TierIs.asked
    assert "error" == resolution.status
    assert "bundle db.v1.0.0: a tier is a string" == resolution.message
    assert outcome(reference.resolve(request)) == outcome(resolution)


# --------------------------------------------------------------------------- batched candidates


class TierAtLeast:
    """Matches bundles with a tier of at least ``rank`` (not exact); counts what it is asked.

    ``select`` is set per test: absent (a third-party predicate without it), answering, or
    failing in one of the ways the resolver must survive.
    """

    asked: ClassVar[list[str]] = []
    selected: ClassVar[int] = 0
    reads: ClassVar[int] = 0
    mode: ClassVar[str] = "none"

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.lookup = ("example.io/tier", "ranked")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TierAtLeast) and other.rank == self.rank

    def __hash__(self) -> int:
        return hash(self.rank)

    def matches(self, candidate: Any) -> bool:
        TierAtLeast.asked.append(candidate.name)
        return any(t >= self.rank for t in candidate.values("example.io/tier"))

    def __getattr__(self, name: str) -> Any:
        # ``select`` exists only in the modes that have one
        if name == "select" and TierAtLeast.mode != "none":
            return self._select
        raise AttributeError(name)

    def _select(self, batch: Any) -> list[bool]:
        TierAtLeast.selected += 1
        tiers = batch.shared(_read_tiers)
        if TierAtLeast.mode == "raises":
            raise ValueError("cannot tell")
        if TierAtLeast.mode == "short":
            return []
        return [any(t >= self.rank for t in found) for found in tiers]

    def __str__(self) -> str:
        return f"with a tier of at least {self.rank}"


def _read_tiers(candidates: Any) -> list[tuple[int, ...]]:
    TierAtLeast.reads += 1
    return [c.values("example.io/tier") for c in candidates]


class RankPlugin:
    @hookimpl
    def olmkit_property_types(self):
        def parse(value: Any) -> int:
            if not isinstance(value, int):
                raise ValueError("a tier is a number")
            return value

        yield PropertyType(name="example.io/tier", parse=parse, index_keys=lambda v: ("ranked",))
        yield PropertyType(name="example.io/tier.atleast", parse=parse, requirement=lambda v, ctx: TierAtLeast(v))


def rank_case(db_tiers: list[Any]) -> dict[str, Any]:
    def needs(rank: int) -> list[Any]:
        return [{"type": "example.io/tier.atleast", "value": rank}]

    def tier(t: Any) -> list[Any]:
        return [{"type": "example.io/tier", "value": t}]

    return {
        "catalogs": {
            "cat": {
                "packages": {
                    "app": {"channels": {"stable": ["app.v1.0.0"]}, "bundles": {"app.v1.0.0": needs(2)}},
                    "web": {"channels": {"stable": ["web.v1.0.0"]}, "bundles": {"web.v1.0.0": needs(3)}},
                    "db": {
                        "channels": {"stable": ["db.v2.0.0 replaces db.v1.0.0", "db.v1.0.0"]},
                        "bundles": {"db.v1.0.0": tier(1), "db.v2.0.0": [t for x in db_tiers for t in tier(x)]},
                    },
                    "kv": {"channels": {"stable": ["kv.v1.0.0"]}, "bundles": {"kv.v1.0.0": tier(3)}},
                }
            }
        },
        "subscriptions": [{"package": "app"}, {"package": "web"}],
    }


@pytest.fixture
def ranked(olmkit_pm, olmkit_register):
    olmkit_register(RankPlugin())
    TierAtLeast.asked.clear()
    TierAtLeast.selected = TierAtLeast.reads = 0
    yield
    TierAtLeast.mode = "none"


@pytest.mark.parametrize("mode", ["none", "answers", "raises", "short"])
def test_predicate_select_answers_for_its_lookup_or_matches_is_asked(olmkit_pm, ranked, tmp_path, cache_dir, mode):
    """A predicate's ``select`` answers for all its candidates (what it reads shared by every
    predicate of the lookup); without one, or when it fails, each candidate is asked, with
    the same graph and answer."""
    TierAtLeast.mode = mode
    request = case_request(rank_case([3]), tmp_path, olmkit_pm, cache=True)

    resolution = resolve(request)
    seen = (len(TierAtLeast.asked), TierAtLeast.selected, TierAtLeast.reads)

    assert outcome(reference.resolve(request)) == outcome(resolution)
    assert "ok" == resolution.status
    # two predicates, three candidates each; asked one by one unless select answers
    expected = {"none": (6, 0, 0), "answers": (0, 2, 1), "raises": (6, 2, 1), "short": (6, 2, 1)}[mode]
    assert expected == seen


@pytest.mark.parametrize("mode", ["none", "answers"])
def test_predicate_select_failing_on_a_candidate_gives_the_reference_error(
    olmkit_pm, ranked, tmp_path, cache_dir, mode
):
    """A candidate whose properties do not parse fails select's shared read: matches says which, as before."""
    TierAtLeast.mode = mode
    request = case_request(rank_case([3, "gold"]), tmp_path, olmkit_pm, cache=True)

    resolution = resolve(request)
    reads = TierAtLeast.reads

    assert outcome(reference.resolve(request)) == outcome(resolution)
    assert ("error", "bundle db.v2.0.0: a tier is a number") == (resolution.status, resolution.message)
    assert (1 if mode == "answers" else 0) == reads
