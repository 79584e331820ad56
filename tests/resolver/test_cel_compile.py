"""CEL rules that upstream's compile step refuses are hard errors, whatever they look like.

Random rules: ones that do not parse, ones whose type is not bool (int, string, list, map,
dyn ...), and arbitrary text. Each is resolved for real (a catalog on disk, a subscription);
a refused rule always fails the whole resolution with upstream's text naming the bundle,
and nothing ever escapes as an exception.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import celpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit.plugins._cel_check import CelTypeError, rule_type, type_name
from olmkit.resolver import ERROR_PREVENTED_RESOLUTION, resolve
from resolver.casefile import case_request

# cel-python raises the recursion limit when an environment is made; hypothesis objects to a
# limit changed during a test, so it is raised once here, before any test runs
ENV = celpy.Environment()
PREFIX = "bundle a.v1.0.0: property olm.constraint: convert olm.constraint to resolver predicate: "
SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

BOOL_ATOMS = [
    'properties.exists(p, p.type == "olm.gvk")',
    "true",
    "properties.size() > 1",
    "has(properties[0].value.x)",
    'semver_compare("1.0.0", "2.0.0") < 0',
    'properties.all(p, p.type.startsWith("olm."))',
    "1 in [1, 2]",
]
INT_ATOMS = ["properties.size()", "1", "size(properties)", "-3", "semver_compare('1.0.0', '1.0.0')"]
OTHER_ATOMS = [
    '"x"',
    "3u",
    "1.5",
    "b'x'",
    "null",
    "properties[0].value",
    "properties[1]",
    "[1, 2]",
    "properties.map(p, p.type)",
    "properties.filter(p, true)",
    '{"a": true}',
    "properties",
]


def _bool_rule(draw: Any, depth: int = 0) -> list[str]:
    """A valid rule of type bool, as tokens."""
    kind = draw(st.integers(0, 3 if depth < 3 else 0))
    if kind == 0:
        return [draw(st.sampled_from(BOOL_ATOMS))]
    if kind == 1:
        return ["!", "(", *_bool_rule(draw, depth + 1), ")"]
    if kind == 2:
        return [*_int_expr(draw, depth + 1), draw(st.sampled_from(["<", "==", ">=", "!="])), "2"]
    op = draw(st.sampled_from(["&&", "||"]))
    return ["(", *_bool_rule(draw, depth + 1), op, *_bool_rule(draw, depth + 1), ")"]


def _int_expr(draw: Any, depth: int = 0) -> list[str]:
    if depth >= 3 or draw(st.booleans()):
        return [draw(st.sampled_from(INT_ATOMS))]
    op = draw(st.sampled_from(["+", "-", "*"]))
    return ["(", *_int_expr(draw, depth + 1), op, *_int_expr(draw, depth + 1), ")"]


@st.composite
def not_bool_rules(draw: Any) -> str:
    """A rule that parses and names only declared things, but whose type is not bool."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        tokens = _int_expr(draw)
    elif kind == 1:
        tokens = [draw(st.sampled_from(OTHER_ATOMS))]
    elif kind == 2:
        tokens = ["(", *_bool_rule(draw), ")", "?", *_int_expr(draw), ":", *_int_expr(draw)]
    else:
        tokens = ["(", draw(st.sampled_from(OTHER_ATOMS)), ")"]
    return " ".join(tokens)


@st.composite
def broken_rules(draw: Any) -> str:
    """A valid bool rule broken so that it cannot parse."""
    tokens = _bool_rule(draw)
    how = draw(st.integers(0, 3))
    if how == 0:
        tokens.insert(draw(st.integers(0, len(tokens))), "@")
    elif how == 1:
        tokens.append(draw(st.sampled_from(["&&", "||", "==", "+", "(", ".", "?", "!"])))
    elif how == 2:
        tokens.insert(draw(st.integers(0, len(tokens))), draw(st.sampled_from([")", "]", ",", "=", "#"])))
    else:
        tokens.insert(0, "(")
    return " ".join(tokens)


def _case(rule: str, where: str) -> dict[str, Any]:
    constraint: dict[str, Any] = {"cel": {"rule": rule}}
    if where != "top":
        constraint = {where: {"constraints": [{"gvk": {"group": "g", "version": "v1", "kind": "B"}}, constraint]}}
    constraint["failureMessage"] = "random"
    return {
        "catalogs": {
            "cat": {
                "packages": {
                    "a": {
                        "channels": {"stable": ["a.v1.0.0"]},
                        "bundles": {"a.v1.0.0": [{"type": "olm.constraint", "value": constraint}]},
                    },
                    "b": {"channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": ["gvk g/v1/B"]}},
                }
            }
        },
        "subscriptions": [{"package": "a"}],
    }


def _resolve(rule: str, where: str, pm: Any) -> Any:
    with tempfile.TemporaryDirectory() as tmp:
        return resolve(case_request(_case(rule, where), Path(tmp), pm))


WHERE = st.sampled_from(["top", "all", "any", "not"])


@SETTINGS
@given(rule=not_bool_rules(), where=WHERE)
def test_rule_not_of_type_bool_is_a_hard_error(olmkit_pm, rule, where):
    """A rule of any type but bool fails the resolution: ErrorPreventedResolution, upstream's text."""
    expected_type = type_name(rule_type(ENV.compile(rule)))

    resolution = _resolve(rule, where, olmkit_pm)

    assert "bool" != expected_type
    assert ("error", ERROR_PREVENTED_RESOLUTION, PREFIX + "cel expressions must have type Bool") == (
        resolution.status,
        resolution.reason,
        resolution.message,
    )


@SETTINGS
@given(rule=broken_rules(), where=WHERE)
def test_rule_that_does_not_compile_is_a_hard_error(olmkit_pm, rule, where):
    """A rule that does not parse fails the resolution with a cel-go-style syntax error naming the bundle."""
    resolution = _resolve(rule, where, olmkit_pm)

    assert ("error", ERROR_PREVENTED_RESOLUTION) == (resolution.status, resolution.reason)
    assert resolution.message.startswith(PREFIX + "ERROR: <input>:1:"), resolution.message
    assert "Syntax error: " in resolution.message


@SETTINGS
@given(rule=st.text(max_size=60), where=WHERE)
def test_any_text_as_a_rule_never_crashes(olmkit_pm, rule, where):
    """Arbitrary text resolves or fails cleanly; a refusal always carries upstream's prefix."""
    resolution = _resolve(rule, where, olmkit_pm)

    assert resolution.status in ("ok", "unsatisfiable", "error")
    if resolution.status == "error":
        assert resolution.message.startswith(PREFIX), resolution.message


@pytest.mark.parametrize("rule", BOOL_ATOMS)
def test_valid_bool_rules_are_not_refused(olmkit_pm, rule):
    """The bool atoms the generators build on compile: the refusals above come from the breakage."""
    resolution = _resolve(rule, "top", olmkit_pm)

    assert resolution.status in ("ok", "unsatisfiable")


def test_deeply_nested_rule_compiles():
    """Deep nesting (cel-go accepts it) does not exhaust Python's stack in the type check."""
    rule = "(" * 3000 + "true" + ")" * 3000

    assert "bool" == rule_type(ENV.compile(rule))


TYPED = {
    # what upstream's checker gives these rules (the environment declares properties and semver_compare)
    'properties.exists(p, p.type == "olm.gvk" && p.value.kind == "X")': "bool",
    'properties.exists(p, p.type == "olm.package" && semver_compare(p.value.version, "1.0.0") >= 0)': "bool",
    "properties.all(p, has(p.value.x))": "bool",
    "properties.exists_one(p, p.type in ['a', 'b'])": "bool",
    "properties.filter(p, p.type == 'a').size() == 1": "bool",
    "size(properties.map(p, p.type)) > 0": "bool",
    "properties.size() > 2 ? true : false": "bool",
    "type(properties) == list": "bool",
    "!(properties[0].value.enabled == true)": "bool",
    "properties.size()": "int",
    "properties[0]": "map(string, dyn)",
    "properties[0].value": "dyn",
    "properties.map(p, p.type)": "list(dyn)",
    "{'a': 1}": "map(string, int)",
    "'a' + 'b'": "string",
    "1.5 * 2.0": "double",
    "timestamp('2020-01-01T00:00:00Z').getFullYear()": "int",
}
REFUSED = {
    "semver_compares(1, 2) == 0": "undeclared reference to 'semver_compares' (in container '')",
    "props.size() > 0": "undeclared reference to 'props' (in container '')",
    "properties.exists(p, p.value.x.lowerAscii() == 'a')": "undeclared reference to 'lowerAscii' (in container '')",
    "1 || true": "found no matching overload for '_||_' applied to '(int, bool)'",
    "'a' + 1 == 'a1'": "found no matching overload for '_+_' applied to '(string, int)'",
    "has(properties[0])": "invalid argument to has() macro",
    "properties.size().x == 1": "type 'int' does not support field selection",
}


@pytest.mark.parametrize("rule", list(TYPED))
def test_rule_types_are_upstream_s(rule):
    """The checker gives a rule the type upstream's checker gives it (only bool passes)."""
    assert TYPED[rule] == type_name(rule_type(ENV.compile(rule)))


@pytest.mark.parametrize("rule", list(REFUSED))
def test_rules_upstream_refuses_are_refused_with_its_words(rule):
    """Undeclared names, missing overloads and bad has() arguments: cel-go's texts, with the position."""
    with pytest.raises(CelTypeError, match=r"^ERROR: <input>:1:\d+: ") as caught:
        rule_type(ENV.compile(rule))

    assert str(caught.value).endswith(REFUSED[rule])
