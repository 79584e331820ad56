"""Requirement forms: what the built-in requirement builders build, described as data.

The column compiler reads a plain requirement value through its type's form (see
:class:`olmkit.types.FieldsForm`) instead of parsing it and building a predicate object.
A form is a promise about its builder; these tests hold the built-in forms to it on
random values (a value read plainly builds, without the bundle's name, a predicate with
the reading's lookups, and two readings have equal keys exactly when their predicates are
equal), and check that catalogs compile alike whether their predicates are read or built.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit.plugins.requirements import _CEL_RESERVED, _HAS_TYPE, HAS_TYPE_PATTERN, _certainly_valid
from olmkit.resolver._compile_columns import _Forms, _NotPlain, compile_columns
from olmkit.resolver._views import Context, predicate_lookups
from resolver.test_compile_columns import compare, one_catalog

CONTRIB = Path(__file__).resolve().parents[2] / "plugins_contrib"


class _Numbers:
    """What the forms ask of the compiler's encoder, with no catalog: numbers for sets and types."""

    def __init__(self) -> None:
        self.sets: dict[Any, int] = {}
        self.type_id: dict[str, int] = {}

    def set_of(self, lookup: Any) -> int:
        return self.sets.setdefault(lookup, len(self.sets))

    def range_of_text(self, type_name: str, text: str) -> list[int]:
        from olmkit.catalog.semver import parse_range

        parse_range(text)
        return [0]

    def identity(self, type_name: str) -> tuple[dict[str, int], list[Any]]:
        return {}, []

    def has_type(self, type_name: str) -> int:
        return self.type_id.setdefault(type_name, len(self.type_id))


_names = st.sampled_from(["a", "b", "", "g.example.com", "v1", "K"])
_ranges = st.sampled_from([">=1.0.0", "<2.0.0 || 3.x", "1.x", "bad range", "", ">=0.0.0"])
_rules = st.sampled_from(
    [
        'properties.exists(p, p.type == "certified")',
        ' properties.exists( q ,q.type=="olm.label") ',
        'properties.exists(in, in.type == "x")',
        'properties.exists(p, p.type == "a\\"b")',
        "properties.size() > 2",
        'properties.exists(p, p.type == "certified") && true',
    ]
)
_other = st.one_of(st.none(), st.integers(0, 2), st.just([]), st.just({}))


def _object(fields: dict[str, Any]) -> Any:
    return st.fixed_dictionaries({}, optional=fields)


_gvk = _object({"group": _names | _other, "version": _names | _other, "kind": _names | _other, "extra": _names})
_package = _object({"packageName": _names | _other, "versionRange": _ranges | _other, "extra": _names})
_label = _object({"label": _names | _other, "extra": _names})
_cel = _object({"rule": _rules | _other, "extra": _names})


def _constraint(children: Any) -> Any:
    keyed = st.one_of(
        st.builds(lambda v: {"gvk": v}, _gvk),
        st.builds(lambda v: {"package": v}, _package),
        st.builds(lambda v: {"cel": v}, _cel),
        st.builds(lambda k, v: {k: {"constraints": v}}, st.sampled_from(["all", "any", "not"]), children),
        st.builds(lambda v: {"tier": v}, _names),  # a key no evaluator registers
    )
    return st.builds(
        lambda value, message, extra: {**value, **message, **extra},
        keyed,
        st.sampled_from([{}, {"failureMessage": "why"}, {"failureMessage": 3}]),
        st.sampled_from([{}, {}, {}, {"package": {"packageName": "a", "versionRange": "1.x"}}]),
    )


_constraints = st.recursive(
    _constraint(st.just([])),
    lambda inner: _constraint(st.lists(inner, min_size=0, max_size=3)),
    max_leaves=6,
)

_TYPES = {
    "olm.gvk.required": _gvk,
    "olm.package.required": _package,
    "olm.label.required": _label,
    "olm.constraint": _constraints,
}


def _built(registry: Any, type_name: str, value: Any) -> tuple[Any, bool] | None:
    """The predicate the type's callables build (and whether they read the bundle's name), ``None``: none."""
    pt = registry.property_types[type_name]
    context = Context(registry, "bundle")
    try:
        return pt.requirement(pt.parse(value), context), context.used_bundle
    except ValueError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(st.sampled_from(sorted(_TYPES)).flatmap(lambda t: st.tuples(st.just(t), _TYPES[t])), max_size=6))
def test_the_built_in_forms_keep_their_promise(olmkit_pm, items):
    """A value read plainly builds the predicate the reading describes; equal keys, equal predicates."""
    registry = olmkit_pm.registry
    forms = _Forms(registry, _Numbers())  # type: ignore[arg-type]
    seen: list[tuple[Any, Any]] = []
    for type_name, value in items:
        form = registry.property_types[type_name].form
        try:
            reading = forms.read(form, value, orjson.dumps(value))
        except _NotPlain:
            continue
        built = _built(registry, type_name, value)
        assert built is not None, (type_name, value)
        predicate, used_bundle = built
        assert not used_bundle
        lookups = reading[2] if reading[2] is not None else [reading[1]] if reading[1] is not None else None
        assert (list(predicate_lookups(predicate)) if predicate_lookups(predicate) is not None else None) == (
            list(lookups) if lookups is not None else None
        )
        assert (predicate.program is None) is False
        seen.append((reading[0], predicate))
    for key, predicate in seen:
        for other_key, other in seen:
            assert (key == other_key) == (predicate == other)


def test_a_plain_value_of_each_kind_is_read(olmkit_pm):
    """The forms read what the generated catalogs hold (else the compile would build every predicate)."""
    registry = olmkit_pm.registry
    forms = _Forms(registry, _Numbers())  # type: ignore[arg-type]
    has_type = {"cel": {"rule": 'properties.exists(p, p.type == "certified")'}}
    values = [
        ("olm.gvk.required", {"group": "g", "kind": "K", "version": "v1"}),
        ("olm.gvk.required", {"kind": "K", "version": "v1"}),
        ("olm.package.required", {"packageName": "a", "versionRange": ">=0.1.1"}),
        ("olm.label.required", {"label": "x"}),
        ("olm.constraint", {**has_type, "failureMessage": "needs certified"}),
        ("olm.constraint", {"all": {"constraints": [{"gvk": {"group": "g", "version": "v1", "kind": "K"}}, has_type]}}),
        ("olm.constraint", {"any": {"constraints": [{"package": {"packageName": "a", "versionRange": "1.x"}}]}}),
        ("olm.constraint", {"not": {"constraints": [has_type]}, "failureMessage": "m"}),
    ]
    for type_name, value in values:
        reading = forms.read(registry.property_types[type_name].form, value, orjson.dumps(value))
        predicate, _ = _built(registry, type_name, value)  # type: ignore[misc]
        assert reading[0] is not None, value
        assert predicate is not None
    # the message of a lone CEL rule is its predicate's (and so in its key); elsewhere it is not
    a = forms.read(registry.property_types["olm.constraint"].form, {**has_type, "failureMessage": "x"}, b"{}")
    b = forms.read(registry.property_types["olm.constraint"].form, {**has_type, "failureMessage": "y"}, b"{}")
    assert a[0] != b[0]
    c = forms.read(registry.property_types["olm.constraint"].form, {"not": {"constraints": [has_type]}}, b"{}")
    d = forms.read(
        registry.property_types["olm.constraint"].form,
        {"not": {"constraints": [has_type]}, "failureMessage": "y"},
        b"{}",
    )
    assert c[0] == d[0]


@settings(max_examples=300, deadline=None)
@given(
    var=st.sampled_from(["p", "q_1", "as", "in", "é", "x y", "_"]),
    space=st.sampled_from(["", " ", "\n", "\t "]),
    text=st.sampled_from(["certified", "olm.label", 'a"b', "a\\b", "a\nb", ""]),
)
def test_the_has_type_pattern_matches_only_what_the_fast_cel_path_takes(var, space, text):
    """The CEL form's pattern: a rule it matches is one CelRule answers without compiling, with the same type."""
    rule = f'{space}properties.exists({space}{var}{space},{space}{var}.type{space}=={space}"{text}"{space}){space}'
    ours = re.fullmatch(HAS_TYPE_PATTERN, rule)
    theirs = _HAS_TYPE.fullmatch(rule)
    if ours is not None:
        assert theirs is not None
        assert _certainly_valid(theirs)
        assert ours.group(2) == theirs.group(2)
    elif theirs is not None and _certainly_valid(theirs):
        raise AssertionError(f"{rule!r} is certainly valid but not matched")
    assert "as" in _CEL_RESERVED


def _catalog(olmkit_pm: Any, tmp_path: Any, requirements: list[Any]) -> Any:
    return one_catalog(
        {
            "a": {"channels": {"stable": ["a.v1.0.0"]}, "bundles": {"a.v1.0.0": requirements}},
            "b": {
                "channels": {"stable": ["b.v2.0.0 replaces b.v1.0.0", "b.v1.0.0"]},
                "bundles": {
                    "b.v1.0.0": ["gvk g/v1/B", "label x", {"type": "certified", "value": {}}],
                    "b.v2.0.0": ["gvk g/v1/B"],
                },
            },
        },
        tmp_path,
        olmkit_pm,
    )


HAS_TYPE = {"cel": {"rule": 'properties.exists(p, p.type == "certified")'}}
IN_RANGE = {"package": {"packageName": "b", "versionRange": ">=1.0.0 <2.0.0"}}


def test_read_requirements_compile_alike_without_predicate_objects(olmkit_pm, tmp_path):
    """Every requirement plain: the graph is the general compiler's, and no predicate object is made until asked."""
    catalog = _catalog(
        olmkit_pm,
        tmp_path,
        [
            "needs-gvk g/v1/B",
            "needs-package b >=1.0.0",
            "needs-label x",
            {"type": "olm.constraint", "value": {**HAS_TYPE, "failureMessage": "needs certified"}},
            {"type": "olm.constraint", "value": {"all": {"constraints": [IN_RANGE, HAS_TYPE]}}},
            {
                "type": "olm.constraint",
                "value": {"any": {"constraints": [IN_RANGE, {"gvk": {"version": "v1", "kind": "B", "group": "g"}}]}},
            },
            {"type": "olm.constraint", "value": {"not": {"constraints": [IN_RANGE]}, "failureMessage": "m"}},
            {"type": "olm.constraint", "value": {"gvk": {"group": "g", "version": "v1", "kind": "B"}}},  # = needs-gvk
        ],
    )
    registry = olmkit_pm.registry
    graph = compile_columns(catalog, catalog.columns(), registry)

    assert graph is not None
    assert graph.n_preds == 7  # the last constraint is needs-gvk's predicate: one list
    assert all(p is None for p in graph._preds)
    assert graph._pred_index is None
    assert compare(catalog, registry)


def test_a_value_no_form_reads_makes_every_predicate_built(olmkit_pm, tmp_path):
    """A full CEL rule (no form reads it): every predicate of the catalog is built, as before; same graph."""
    catalog = _catalog(
        olmkit_pm,
        tmp_path,
        [
            "needs-gvk g/v1/B",
            {"type": "olm.constraint", "value": {"all": {"constraints": [IN_RANGE, HAS_TYPE]}}},
            {"type": "olm.constraint", "value": {"cel": {"rule": "properties.size() > 2"}}},
        ],
    )
    registry = olmkit_pm.registry
    graph = compile_columns(catalog, catalog.columns(), registry)

    assert graph is not None
    assert graph.n_preds == 3
    assert all(p is not None for p in graph._preds)
    assert compare(catalog, registry)


def test_a_plugin_constraint_key_is_built_by_its_plugin(olmkit_pm, olmkit_register, tmp_path, monkeypatch):
    """olmkit-tier's ``tier`` key has no form: a constraint using it (even nested) is built by the plugin."""
    monkeypatch.syspath_prepend(str(CONTRIB / "olmkit-tier" / "src"))
    olmkit_register(importlib.import_module("olmkit_tier"), "tier")
    catalog = _catalog(
        olmkit_pm,
        tmp_path,
        [
            "needs-gvk g/v1/B",
            {"type": "olm.constraint", "value": {"all": {"constraints": [IN_RANGE, {"tier": {"atLeast": "gold"}}]}}},
        ],
    )
    registry = olmkit_pm.registry
    graph = compile_columns(catalog, catalog.columns(), registry)

    assert graph is not None
    assert all(p is not None for p in graph._preds)
    assert compare(catalog, registry)


def test_requirement_texts_read_without_decoding_compile_alike(olmkit_pm, tmp_path):
    """Plain sorted JSON texts are read without decoding, other spellings decoded: one graph, one pred_raw."""
    gvk = "olm.gvk.required"
    package = "olm.package.required"
    catalog = _catalog(
        olmkit_pm,
        tmp_path,
        [
            {"type": gvk, "value": {"group": "g", "kind": "B", "version": "v1"}},  # sorted: read from the text
            {"type": gvk, "value": {"version": "v1", "kind": "B", "group": "g"}},  # same predicate, other text
            {"type": gvk, "value": {"kind": "B", "version": "v1"}},  # no group: decoded
            {"type": gvk, "value": {"group": "", "kind": "B", "version": "v1"}},
            {"type": gvk, "value": {"group": "g\u00e9", "kind": 'B"x', "version": "v1"}},  # an escape: decoded
            {"type": package, "value": {"packageName": "b", "versionRange": ">=1.0.0"}},
            {"type": package, "value": {"versionRange": ">=1.0.0", "packageName": "b"}},
            {"type": package, "value": {"packageName": "b\u00e9", "versionRange": "1.x"}},
            {"type": "olm.label.required", "value": {"label": "x"}},
        ],
    )
    registry = olmkit_pm.registry
    graph = compile_columns(catalog, catalog.columns(), registry)

    assert graph is not None
    assert all(p is None for p in graph._preds)  # every one read, none built
    assert compare(catalog, registry)  # the same lists, sources and pred_raw as the general compiler


def test_a_plugin_form_that_does_not_read_leaves_its_values_to_the_builder(olmkit_pm, olmkit_register, tmp_path):
    """A plugin's form whose pattern does not compile: nothing is read, the plugin's builder builds."""
    from olmkit import hookimpl
    from olmkit.plugins.requirements import build_cel
    from olmkit.types import PatternForm, PropertyType

    class Plugin:
        @hookimpl
        def olmkit_property_types(self):
            yield PropertyType(
                name="example.io/needs-type",
                parse=lambda v: v,
                requirement=lambda v, ctx: build_cel(v, ctx),
                form=PatternForm(tag="cel", field="rule", pattern="(unclosed", group=1),  # type: ignore[arg-type]
            )

    olmkit_register(Plugin(), "needs-type")
    catalog = _catalog(
        olmkit_pm,
        tmp_path,
        ["needs-gvk g/v1/B", {"type": "example.io/needs-type", "value": HAS_TYPE["cel"]}],
    )
    registry = olmkit_pm.registry
    graph = compile_columns(catalog, catalog.columns(), registry)

    assert graph is not None
    assert all(p is not None for p in graph._preds)
    assert compare(catalog, registry)


def test_values_the_builders_refuse_are_not_plain(olmkit_pm):
    """Values a builder refuses, or whose predicate no form describes, are not read (nor extra keys)."""
    registry = olmkit_pm.registry
    forms = _Forms(registry, _Numbers())  # type: ignore[arg-type]
    refused = [
        ("olm.gvk.required", {"version": "a", "extra": "a", "kind": "a"}),
        ("olm.gvk.required", {"group": None, "version": "v1", "kind": "K"}),
        ("olm.gvk.required", {"group": "g", "version": "", "kind": "K"}),
        ("olm.package.required", {"packageName": "a"}),
        ("olm.package.required", {"packageName": "a", "versionRange": "not a range"}),
        ("olm.label.required", {"label": "x", "other": 1}),
        ("olm.constraint", {"gvk": {"group": "g", "version": "v1", "kind": "K"}, "failureMessage": 3}),
        ("olm.constraint", {"all": {"constraints": []}}),
        ("olm.constraint", {"cel": {"rule": "properties.size() > 2"}}),
    ]
    for type_name, value in refused:
        built = _built(registry, type_name, value)
        try:
            forms.read(registry.property_types[type_name].form, value, orjson.dumps(value))
        except _NotPlain:
            continue
        raise AssertionError(f"{value} read, built: {built}")
