"""The requirements plugin: required-property types, constraint keys, CEL, size limit."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit import hookimpl
from olmkit.model import Property
from olmkit.plugins import requirements
from olmkit.resolver._views import BundleView
from olmkit.types import ConstraintEvaluator
from resolver.casefile import run_case, step_text


def view(registry, props, name="b.v1.0.0", package="b", version="1.0.0"):
    return BundleView(name, package, version, tuple(Property(p["type"], p["value"]) for p in props), registry)


def test_predicate_texts_are_upstreams(olmkit_pm):
    """gvk, package, all, any and not print upstream's predicate texts."""
    ctx_registry = olmkit_pm.registry
    from olmkit.resolver._build import _Context

    ctx = _Context(ctx_registry, "a.v1")
    pred = ctx.build_constraint(
        {
            "all": {
                "constraints": [
                    {"gvk": {"group": "g", "version": "v1", "kind": "K"}},
                    {"any": {"constraints": [{"package": {"packageName": "p", "versionRange": ">=1.0.0"}}]}},
                    {
                        "not": {
                            "constraints": [
                                {"gvk": {"group": "g", "version": "v1", "kind": "A"}},
                                {"gvk": {"group": "g", "version": "v1", "kind": "B"}},
                            ]
                        }
                    },
                ]
            }
        }
    )

    assert (
        "providing an API with group: g, version: v1, kind: K and with package: p and with version in range: "
        ">=1.0.0 and providing an API with group: g, version: v1, kind: A and not providing an API with group: g, "
        "version: v1, kind: B"
    ) == str(pred)


def test_oversized_constraint_is_rejected(olmkit_pm):
    """An olm.constraint over 131072 raw bytes is an error naming the limit."""
    parse = olmkit_pm.registry.property_types["olm.constraint"].parse
    big = {"failureMessage": "x" * 131072, "gvk": {"group": "g", "version": "v1", "kind": "K"}}

    with pytest.raises(ValueError, match="greater than max constraint size 131072 bytes"):
        parse(big)


def test_cel_is_evaluated_once_per_rule_and_property_set(olmkit_pm):
    """Two bundles with identical properties cost one CEL evaluation; a different set costs another."""
    registry = olmkit_pm.registry
    rule = requirements.CelRule('properties.exists(p, p.type == "unique-test-marker" && true)')
    before = requirements._CEL_STATS["evaluated"]
    props = [{"type": "unique-test-marker", "value": 1}]

    results = [rule.matches(view(registry, props, name=f"b{i}")) for i in range(5)]
    results.append(rule.matches(view(registry, [{"type": "other", "value": 1}])))

    assert [True] * 5 + [False] == results
    assert 2 == requirements._CEL_STATS["evaluated"] - before


def test_cel_has_type_fast_path_agrees_with_the_interpreter(olmkit_pm):
    """The common rule properties.exists(p, p.type == "T") gives the interpreter's answer without running it."""
    rule = requirements.CelRule('properties.exists(q, q.type == "certified")')
    sets = [[{"type": "certified", "value": True}], [{"type": "other", "value": {"a": 1}}], []]
    views = [view(olmkit_pm.registry, props) for props in sets]

    assert "certified" == rule.has_type
    assert [rule._evaluate(v.properties) for v in views] == [rule.matches(v) for v in views]
    assert [True, False, False] == [rule.matches(v) for v in views]


def test_cel_semver_compare(olmkit_pm):
    """semver_compare(a, b) gives -1/0/1 on tolerant versions."""
    rule = requirements.CelRule('semver_compare("v1.2", "1.10.0") == -1 && semver_compare("2.0.0", "2.0.0") == 0')

    assert rule.matches(view(olmkit_pm.registry, []))


def _fresh_cel(monkeypatch, cache):
    """Forget cel-python's parser and compiled programs, with the olmkit cache at ``cache``."""
    from celpy import celparser

    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(cache))
    monkeypatch.setattr(celparser.CELParser, "CEL_PARSER", None)
    monkeypatch.setattr(requirements, "_PROGRAMS", {})
    monkeypatch.setattr(requirements, "_CEL_RESULTS", {})
    return celparser.CELParser


def test_cel_parser_is_stored_and_read_back(olmkit_pm, monkeypatch, tmp_path, capfd):
    """The first CEL compile stores cel-python's analysed grammar; a new process (here: a forgotten
    parser) loads it instead of rebuilding, and the rules give the same answers."""
    rule = 'properties.exists(p, p.type == "tier" && p.value == "gold") && semver_compare("1.2.0", "1.10.0") < 0'
    gold, silver = ([{"type": "tier", "value": v}] for v in ("gold", "silver"))
    parser_class = _fresh_cel(monkeypatch, tmp_path)

    first = [requirements.CelRule(rule).matches(view(olmkit_pm.registry, p)) for p in (gold, silver)]
    stored = list((tmp_path / "cel").iterdir())
    built = parser_class.CEL_PARSER
    mtime = stored[0].stat().st_mtime_ns
    _fresh_cel(monkeypatch, tmp_path)
    again = [requirements.CelRule(rule).matches(view(olmkit_pm.registry, p)) for p in (gold, silver)]

    assert [True, False] == first == again
    assert [stored[0].name.startswith("parser-"), ".lark"] == [True, stored[0].suffix]
    assert 1 == len(stored)
    assert parser_class.CEL_PARSER is not None
    assert parser_class.CEL_PARSER is not built
    assert mtime == stored[0].stat().st_mtime_ns  # read, not written again
    assert ("", "") == capfd.readouterr()


def test_cel_parser_file_damaged_is_rebuilt_quietly(olmkit_pm, monkeypatch, tmp_path, capfd):
    """A damaged stored parser is replaced without a word, and compile errors still name the problem."""
    _fresh_cel(monkeypatch, tmp_path)
    requirements._compile("1 == 1")
    stored = next((tmp_path / "cel").iterdir())
    stored.write_bytes(b"not a parser")
    _fresh_cel(monkeypatch, tmp_path)

    ok = requirements.CelRule("properties.exists(p, p.value == 1)").matches(view(olmkit_pm.registry, []))
    with pytest.raises(ValueError, match="Syntax error: mismatched input '<EOF>'"):
        requirements._compile("properties.exists(p,")

    assert ok is False
    assert stored.read_bytes() != b"not a parser"
    assert ("", "") == capfd.readouterr()


def test_hook_olmkit_constraint_evaluators_custom_key(olmkit_pm, olmkit_register, tmp_path):
    """A constraint key registered by a plugin works inside olm.constraint exactly like a built-in one."""

    class Flavour:
        lookup = None

        def __init__(self, want):
            self.want = want

        def matches(self, candidate):
            return any(v == self.want for v in candidate.values("example.io/flavour"))

        def __str__(self):
            return f"with flavour: {self.want}"

    class Plugin:
        @hookimpl
        def olmkit_constraint_evaluators(self):
            yield ConstraintEvaluator(key="flavour", build=lambda value, ctx: Flavour(value))

    olmkit_register(Plugin(), "flavour")
    case = yaml.safe_load("""
catalogs:
  cat:
    packages:
      a:
        channels: {stable: [a.v1.0.0]}
        bundles:
          a.v1.0.0:
            - {type: olm.constraint, value: {failureMessage: m, any: {constraints: [{flavour: mint}]}}}
      b:
        channels: {stable: [b.v1.0.0]}
        bundles: {b.v1.0.0: [{type: example.io/flavour, value: lemon}]}
      c:
        channels: {stable: [c.v1.0.0]}
        bundles: {c.v1.0.0: [{type: example.io/flavour, value: mint}]}
subscriptions: [{package: a}]
""")

    resolution = run_case(case, tmp_path, olmkit_pm)

    assert ["cat/operators/stable/a.v1.0.0", "cat/operators/stable/c.v1.0.0"] == [
        step_text(s) for s in resolution.steps
    ]


def test_unannotated_csv_properties_derived_from_apis():
    """A CSV without the annotation: owned APIs become olm.gvk, required ones olm.gvk.required."""
    csv = {
        "spec": {
            "version": "1.0.0",
            "customresourcedefinitions": {
                "owned": [{"name": "widgets.example.io", "version": "v1", "kind": "Widget"}],
                "required": [{"name": "gadgets.example.io", "version": "v1", "kind": "Gadget"}],
            },
        }
    }

    props = requirements.csv_properties(csv, "widgets")

    assert [
        {"type": "olm.gvk", "value": {"group": "example.io", "version": "v1", "kind": "Widget"}},
        {"type": "olm.gvk.required", "value": {"group": "example.io", "version": "v1", "kind": "Gadget"}},
        {"type": "olm.package", "value": {"packageName": "widgets", "version": "1.0.0"}},
    ] == props


def test_hook_olmkit_resolve_is_wrappable(olmkit_pm, olmkit_register, tmp_path):
    """The kernel resolver answers olmkit_resolve; a wrapper sees the Resolution it returns."""
    seen = []

    class Timer:
        @hookimpl(wrapper=True)
        def olmkit_resolve(self, request):
            result = yield
            seen.append((request.namespace, result.status))
            return result

    olmkit_register(Timer(), "timer")
    case = {
        "catalogs": {"cat": {"packages": {"a": {"channels": {"stable": ["a.v1.0.0"]}, "bundles": {"a.v1.0.0": []}}}}},
        "subscriptions": [{"package": "a"}],
    }

    resolution = run_case(case, tmp_path, olmkit_pm)

    assert [("operators", "ok")] == seen
    assert "ok" == resolution.status


API = st.sampled_from(["A", "B", "C"]).map(lambda k: {"group": "g", "version": "v1", "kind": k})
LABEL = st.sampled_from(["x", "y"])
EXACT_CONSTRAINT = st.recursive(
    st.one_of(API.map(lambda gvk: {"gvk": gvk})),
    lambda inner: st.lists(inner, min_size=1, max_size=3).map(lambda cs: {"any": {"constraints": cs}}),
    max_leaves=4,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    provided=st.lists(API, max_size=3),
    labels=st.lists(LABEL, max_size=2),
    constraint=EXACT_CONSTRAINT,
    label=LABEL,
)
def test_exact_predicates_match_what_the_index_files_under_their_lookups(
    olmkit_pm, provided, labels, constraint, label
):
    """gvk, label and any-of-exact predicates declare exact: matches() is membership under their lookups."""
    from olmkit.resolver._views import Context, predicate_lookups

    registry = olmkit_pm.registry
    props = [{"type": "olm.gvk", "value": v} for v in provided] + [
        {"type": "olm.label", "value": {"label": x}} for x in labels
    ]
    candidate = view(registry, props)
    filed = {
        (t, key)
        for t in ("olm.gvk", "olm.label")
        for value in candidate.values(t)
        for key in registry.property_types[t].index_keys(value)
    }
    context = Context(registry, "a.v1")
    predicates = [context.build_constraint(constraint), requirements.build_label({"label": label})]

    for predicate in predicates:
        assert predicate.exact is True
        lookups = predicate_lookups(predicate)
        assert lookups is not None
        assert predicate.matches(candidate) == any(lk in filed for lk in lookups)


def test_inexact_predicates_do_not_claim_exactness(olmkit_pm):
    """package ranges, all, not and CEL rules are not answered by the index alone."""
    from olmkit.resolver._views import Context

    context = Context(olmkit_pm.registry, "a.v1")
    gvk = {"gvk": {"group": "g", "version": "v1", "kind": "A"}}
    constraints = [
        {"package": {"packageName": "p", "versionRange": ">=1.0.0"}},
        {"all": {"constraints": [gvk]}},
        {"not": {"constraints": [gvk]}},
        {"any": {"constraints": [gvk, {"package": {"packageName": "p", "versionRange": ">=1.0.0"}}]}},
        {"cel": {"rule": 'properties.exists(p, p.type == "x")'}},
    ]

    assert [False] * len(constraints) == [getattr(context.build_constraint(c), "exact", False) for c in constraints]


IDENTITY = st.one_of(
    st.fixed_dictionaries(
        {"packageName": st.sampled_from(["p", "q"])},
        optional={"version": st.sampled_from(["1.0.0", "2.1.0", "v1.5", "0.9.0-rc.1", "banana", ""])},
    ),
    st.just("malformed"),  # does not parse: matches raises, so must select
)
CANDIDATE = st.tuples(st.lists(IDENTITY, max_size=2), st.booleans(), st.lists(API, max_size=1)).map(
    lambda t: (
        [{"type": "olm.package", "value": v} for v in t[0]]
        + ([{"type": "certified", "value": True}] if t[1] else [])
        + [{"type": "olm.gvk", "value": v} for v in t[2]]
    )
)
RANGED = st.builds(
    lambda pkg, rng: {"package": {"packageName": pkg, "versionRange": rng}},
    st.sampled_from(["p", "q"]),
    st.sampled_from([">=1.0.0", "<2.0.0", "1.0.0 || >=2.0.0", ">=0.0.0", "!=1.5.0"]),
)
HAS_TYPE = {"cel": {"rule": 'properties.exists(p, p.type == "certified")'}}
KIND_A = 'properties.exists(p, p.type == "olm.gvk" && p.value.kind == "A")'
SELECTING = st.one_of(
    RANGED,
    st.just(HAS_TYPE),
    st.lists(
        st.one_of(
            RANGED,
            API.map(lambda gvk: {"gvk": gvk}),
            st.just(HAS_TYPE),
            # not a has-type rule: its select gives up, all-of asks it candidate by candidate
            st.just({"cel": {"rule": KIND_A}}),
        ),
        min_size=1,
        max_size=3,
    ).map(lambda cs: {"all": {"constraints": cs}}),
)


@pytest.fixture
def kind_a_compiled():
    """The CEL rule compiled before hypothesis runs (building cel-python's parser raises the recursion limit)."""
    requirements._compile(KIND_A)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(candidates=st.lists(CANDIDATE, max_size=4), constraints=st.lists(SELECTING, min_size=1, max_size=3))
def test_select_is_matches_for_each_candidate(olmkit_pm, kind_a_compiled, candidates, constraints):
    """Package ranges, has-type rules and all-of answer a batch as matches() answers each candidate, or raise.

    The predicates share the batch (as a lookup's predicates do), so what one read the next reuses.
    """
    from olmkit.resolver._views import CandidateBatch, Context

    registry = olmkit_pm.registry
    views = [view(registry, props, name=f"b.v{i}") for i, props in enumerate(candidates)]
    batch = CandidateBatch(views)
    context = Context(registry, "a.v1")

    for constraint in constraints:
        predicate = context.build_constraint(constraint)
        try:
            expected: object = [bool(predicate.matches(v)) for v in views]
        except ValueError:
            expected = ValueError
        try:
            got: object = [bool(x) for x in predicate.select(batch)]
        except ValueError:
            got = ValueError
        if expected is ValueError:
            assert got is ValueError
        else:
            # select may also give up (raise) where matches would not: the resolver then asks matches
            assert got in (expected, ValueError)
            if not any("malformed" == p["value"] for props in candidates for p in props):
                assert expected == got
