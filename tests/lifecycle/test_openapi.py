"""The structural-schema validator: every keyword, Kubernetes-style messages, and properties."""

from __future__ import annotations

import datetime
import string
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit.lifecycle.openapi import INTERNAL, INVALID, REQUIRED, SchemaError, validate

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def texts(value: Any, schema: dict[str, Any], path: str = "", **kwargs: Any) -> list[str]:
    return [str(e) for e in validate(value, schema, path, **kwargs)]


# -- types ---------------------------------------------------------------------------------


def test_type_error_reads_like_kubernetes():
    """A wrong type is an Invalid value naming the path, the value and the expected type."""
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}},
    }

    actual = texts({"spec": {"replicas": "x"}}, schema)

    assert ['spec.replicas: Invalid value: "x": spec.replicas in body must be of type integer'] == actual


def test_root_errors_are_printed_as_root():
    """An error on the validated value itself is printed at <root>, described as the body."""
    assert ['<root>: Invalid value: "x": body must be of type object'] == texts("x", {"type": "object"})


def test_type_error_carries_structured_fields():
    """Errors carry path, reason, value and detail, not only a message."""
    expected = [SchemaError("spec.n", INVALID, True, "spec.n in body must be of type integer")]

    assert expected == validate(True, {"type": "integer"}, "spec.n")


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        ("object", {"a": 1}, [1]),
        ("array", [1, "a"], {"a": 1}),
        ("string", "s", 1),
        ("integer", 3, 3.5),
        ("number", 3.5, "3.5"),
        ("boolean", False, 0),
    ],
)
def test_each_type_accepts_its_values_and_rejects_others(kind, good, bad):
    """Each of the six types accepts a value of its own and rejects one of another type."""
    assert [] == validate(good, {"type": kind})
    assert [f"<root>: Invalid value: {_json(bad)}: body must be of type {kind}"] == texts(bad, {"type": kind})


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def test_json_number_rules():
    """Booleans are not numbers; a number without fraction is an integer; integers are numbers."""
    assert 1 == len(validate(True, {"type": "integer"}))
    assert 1 == len(validate(True, {"type": "number"}))
    assert [] == validate(2.0, {"type": "integer"})
    assert [] == validate(2, {"type": "number"})


def test_null_needs_nullable():
    """null is a type error unless the schema is nullable."""
    assert ["spec.x: Invalid value: null: spec.x in body must be of type string"] == texts(
        None, {"type": "string"}, "spec.x"
    )
    assert [] == validate(None, {"type": "string", "nullable": True})


# -- objects ---------------------------------------------------------------------------------

DEPLOYISH = {
    "type": "object",
    "required": ["image"],
    "properties": {
        "image": {"type": "string"},
        "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
    },
}


def test_required_field_missing():
    """A missing required field is a Required value at the field's path."""
    assert ["spec.image: Required value"] == texts({}, DEPLOYISH, "spec")


def test_nested_paths_use_dots_and_indexes():
    """Errors deep in objects and arrays carry the whole path, arrays as [index]."""
    value = {"image": "a", "ports": [{"port": 1}, {"port": "http"}]}

    assert ['spec.ports[1].port: Invalid value: "http": spec.ports[1].port in body must be of type integer'] == texts(
        value, DEPLOYISH, "spec"
    )


def test_additional_properties_schema_checks_map_values():
    """additionalProperties as a schema validates every undeclared key's value."""
    schema = {"type": "object", "additionalProperties": {"type": "string"}}

    assert ["labels.b: Invalid value: 2: labels.b in body must be of type string"] == texts(
        {"a": "x", "b": 2}, schema, "labels"
    )


def test_additional_properties_false_forbids_undeclared_keys():
    """additionalProperties: false is an explicit ban, reported even without report_unknown."""
    schema = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}

    assert ["x.b: Forbidden: x.b in body is a forbidden property"] == texts({"a": 1, "b": 2}, schema, "x")


def test_min_and_max_properties():
    """minProperties and maxProperties bound the number of keys."""
    schema = {"type": "object", "minProperties": 2, "maxProperties": 3}

    assert ['m: Invalid value: {"a":1}: m in body should have at least 2 properties'] == texts({"a": 1}, schema, "m")
    assert ["m: Too many: 4: must have at most 3 properties"] == texts(dict.fromkeys("abcd", 1), schema, "m")


# -- unknown fields --------------------------------------------------------------------------

CR_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}
CR = {
    "apiVersion": "example.com/v1",
    "kind": "Thing",
    "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "labels": {"x": "y"}},
    "spec": {"size": 1, "colour": "red", "extra": {"anything": {"goes": True}}},
}


def test_unknown_fields_are_pruned_not_errors():
    """By default a field the schema does not declare is not an error (the API server prunes it)."""
    assert [] == validate(CR, CR_SCHEMA)


def test_report_unknown_names_undeclared_fields_only():
    """report_unknown reports undeclared fields, except the implicit apiVersion/kind/metadata,
    anything under metadata, and anything under x-kubernetes-preserve-unknown-fields."""
    assert ["spec.colour: Forbidden: field not declared in schema"] == texts(CR, CR_SCHEMA, report_unknown=True)


def test_implicit_root_fields_only_at_the_root():
    """Below the root, a field named kind is an ordinary unknown field."""
    assert ["spec.kind: Forbidden: field not declared in schema"] == texts(
        {"size": 1, "kind": "x"}, CR_SCHEMA["properties"]["spec"], "spec", report_unknown=True
    )


def test_declared_root_metadata_is_validated():
    """A schema's constraints on metadata apply, but unknown metadata fields are never reported."""
    schema = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "properties": {"name": {"maxLength": 3}}}},
    }

    assert ["metadata.name: Too long: may not be longer than 3"] == texts(
        {"metadata": {"name": "long", "uid": "u"}}, schema, report_unknown=True
    )


# -- enum, numbers, strings, arrays -----------------------------------------------------------


def test_enum_lists_supported_values():
    """A value outside enum is an Unsupported value listing the supported ones."""
    assert ['mode: Unsupported value: "c": supported values: "a", "b"'] == texts("c", {"enum": ["a", "b"]}, "mode")


def test_enum_compares_json_values():
    """enum compares JSON values: 1.0 matches 1, true does not, objects ignore key order."""
    assert [] == validate(1.0, {"enum": [1]})
    assert 1 == len(validate(True, {"enum": [1]}))
    assert [] == validate({"b": 2, "a": 1}, {"enum": [{"a": 1, "b": 2}]})


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"minimum": 2}, 1, "n in body should be greater than or equal to 2"),
        ({"minimum": 2, "exclusiveMinimum": True}, 2, "n in body should be greater than 2"),
        ({"maximum": 2}, 3, "n in body should be less than or equal to 2"),
        ({"maximum": 2, "exclusiveMaximum": True}, 2, "n in body should be less than 2"),
        ({"multipleOf": 3}, 7, "n in body should be a multiple of 3"),
        ({"multipleOf": 0.5}, 1.25, "n in body should be a multiple of 0.5"),
        ({"type": "integer", "format": "int32"}, 2**31, "n in body must be of type int32"),
        ({"type": "integer", "format": "int64"}, -(2**63) - 1, "n in body must be of type int64"),
    ],
)
def test_number_bounds(schema, value, expected):
    """Numeric bounds, exclusive bounds, multipleOf and the int32/int64 formats."""
    assert [f"n: Invalid value: {value}: {expected}"] == texts(value, schema, "n")


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"minimum": 2}, 2),
        ({"maximum": 2}, 2.0),
        ({"multipleOf": 0.1}, 0.3),
        ({"type": "integer", "format": "int32"}, 2**31 - 1),
        ({"type": "integer", "format": "int64"}, -(2**63)),
    ],
)
def test_number_bounds_inclusive_edges(schema, value):
    """Inclusive bounds and format ranges accept their edges; float multiples tolerate rounding."""
    assert [] == validate(value, schema)


def test_string_length_counts_code_points():
    """minLength and maxLength count characters (runes), not bytes."""
    assert [] == validate("ééé", {"maxLength": 3, "minLength": 3})
    assert ["s: Too long: may not be longer than 2"] == texts("ééé", {"maxLength": 2}, "s")
    assert ['s: Invalid value: "é": s in body should be at least 2 chars long'] == texts("é", {"minLength": 2}, "s")


def test_pattern_is_a_search():
    """pattern matches anywhere unless anchored, as in JSON Schema."""
    assert [] == validate("xabcx", {"pattern": "abc"})
    assert ["s: Invalid value: \"xabcx\": s in body should match '^abc$'"] == texts("xabcx", {"pattern": "^abc$"}, "s")


@pytest.mark.parametrize(
    ("pattern", "value", "valid"),
    [
        ("^abc$", "abc\n", False),
        ("^[$]+$", "$$", True),
        ("^[]$]+$", "]$", True),
        ("^[^]$]+$", "ab", True),
        ("^a\\$$", "a$", True),
        ("^[0-9]+$", "\u0663", False),
        ("^\\d+$", "\u0663", False),
    ],
)
def test_pattern_follows_re2(pattern, value, valid):
    """$ matches only at the very end (not before a final newline) and classes are ASCII, as in RE2."""
    assert valid == (validate(value, {"pattern": pattern}) == [])


def test_invalid_pattern_is_an_internal_error_not_a_crash():
    """A pattern that does not compile gives an Internal error at the field."""
    errors = validate("a", {"pattern": "("}, "s")

    assert [("s", INTERNAL)] == [(e.path, e.reason) for e in errors]
    assert str(errors[0]).startswith("s: Internal error: the schema's pattern '(' is invalid")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2024-02-29T12:30:00Z", True),
        ("2024-02-29t12:30:00.123456+05:30", True),
        ("2016-12-31T23:59:60Z", True),
        ("2023-02-29T12:30:00Z", False),
        ("2024-01-01T24:00:00Z", False),
        ("2024-01-01T12:00:00", False),
        ("2024-01-01", False),
        ("2024-01-01T12:00:00+25:00", False),
    ],
)
def test_date_time_format(value, valid):
    """format: date-time accepts RFC 3339 timestamps (leap second included) and nothing else."""
    expected = [] if valid else [f'at: Invalid value: "{value}": at in body must be of type date-time']

    assert expected == texts(value, {"type": "string", "format": "date-time"}, "at")


def test_unknown_formats_are_ignored():
    """Formats Kubernetes does not check are not checked."""
    assert [] == validate("not-an-email", {"type": "string", "format": "email"})


def test_array_bounds_and_uniqueness():
    """minItems, maxItems and uniqueItems; duplicates compare as JSON values, at the later index."""
    assert ["a: Too many: 3: must have at most 2 items"] == texts([1, 2, 3], {"maxItems": 2}, "a")
    assert ["a: Invalid value: [1]: a in body should have at least 2 items"] == texts([1], {"minItems": 2}, "a")
    assert ["a[2]: Duplicate value: 1.0", 'a[4]: Duplicate value: {"a":1,"b":2}'] == texts(
        [1, True, 1.0, {"a": 1, "b": 2}, {"b": 2, "a": 1}], {"uniqueItems": True}, "a"
    )


def test_tuple_items_validate_positionally():
    """A list of item schemas (tuple form) validates each position against its schema."""
    assert ["t[1]: Invalid value: 2: t[1] in body must be of type string"] == texts(
        [1, 2], {"items": [{"type": "integer"}, {"type": "string"}]}, "t"
    )


# -- combinators ------------------------------------------------------------------------------


def test_all_of_reports_each_branch_error():
    """allOf reports the errors of every branch the value breaks."""
    schema = {"allOf": [{"minLength": 2}, {"pattern": "^[0-9]+$"}]}

    assert [
        's: Invalid value: "x": s in body should be at least 2 chars long',
        "s: Invalid value: \"x\": s in body should match '^[0-9]+$'",
    ] == texts("x", schema, "s")


def test_any_of_needs_one_branch():
    """anyOf is satisfied by any one branch, and otherwise is one error."""
    schema = {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}

    assert [] == validate({"b": 1}, schema)
    assert ["o: Invalid value: {}: o in body must validate at least one schema (anyOf)"] == texts({}, schema, "o")


def test_one_of_needs_exactly_one_branch():
    """oneOf fails when no branch or more than one branch matches."""
    schema = {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    expected = "o in body must validate one and only one schema (oneOf)"

    assert [] == validate({"a": 1}, schema)
    assert [expected] == [e.detail for e in validate({"a": 1, "b": 2}, schema, "o")]
    assert [expected] == [e.detail for e in validate({}, schema, "o")]


def test_not_rejects_what_the_branch_accepts():
    """not fails exactly when its schema matches."""
    schema = {"not": {"required": ["legacy"]}}

    assert [] == validate({"new": 1}, schema)
    assert ['o: Invalid value: {"legacy":1}: o in body must not validate the schema (not)'] == texts(
        {"legacy": 1}, schema, "o"
    )


# -- Kubernetes extensions --------------------------------------------------------------------

INT_OR_STRING = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}


@pytest.mark.parametrize(("value", "valid"), [(8080, True), ("http", True), (1.5, False), (True, False), (None, False)])
def test_int_or_string(value, valid):
    """x-kubernetes-int-or-string accepts integers and strings only."""
    expected = [] if valid else [f"port: Invalid value: {_json(value)}: port in body must be of type integer or string"]

    assert expected == texts(value, INT_OR_STRING, "port")


def test_int_or_string_constraints_apply_per_type():
    """String constraints apply to the string form only, numeric ones to the integer form."""
    schema = {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+%$", "maximum": 100}

    assert [] == validate(100, schema)
    assert [] == validate("50%", schema)
    assert 1 == len(validate("50", schema))
    assert 1 == len(validate(101, schema))


EMBEDDED = {
    "type": "object",
    "x-kubernetes-embedded-resource": True,
    "x-kubernetes-preserve-unknown-fields": True,
}


def test_embedded_resource_needs_api_version_and_kind():
    """An embedded resource must carry a non-empty apiVersion and kind."""
    assert [
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.template.kind: Required value: must not be empty",
    ] == texts({"kind": "", "spec": {}}, EMBEDDED, "spec.template")


def test_embedded_resource_metadata_must_be_an_object():
    """An embedded resource's metadata, when present, is an object; its fields are implicit."""
    good = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}}
    schema = {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}}

    assert [] == validate(good, schema, "t", report_unknown=True)
    assert ['t.metadata: Invalid value: "x": t.metadata in body must be of type object'] == texts(
        {**good, "metadata": "x"}, schema, "t"
    )


def test_long_values_are_shortened_in_messages():
    """A long offending value is cut to 80 characters in the message, kept whole in the field."""
    value = "x" * 200
    [error] = validate(value, {"type": "integer"}, "n")

    assert value == error.value
    assert f'n: Invalid value: "{"x" * 76}...: n in body must be of type integer' == str(error)


# -- properties -------------------------------------------------------------------------------

NAMES = st.text(string.ascii_lowercase, min_size=1, max_size=6)


@st.composite
def leaf_schemas(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["integer", "number", "string", "boolean", "enum", "pattern", "date", "ios"]))
    if kind == "integer":
        low = draw(st.integers(-1000, 1000))
        schema: dict[str, Any] = {"type": "integer", "minimum": low, "maximum": low + draw(st.integers(2, 1000))}
        if draw(st.booleans()):
            schema.update(exclusiveMinimum=True, exclusiveMaximum=True)
        return schema
    if kind == "number":
        return {"type": "number", "minimum": -1.5, "maximum": draw(st.floats(0, 1e6))}
    if kind == "string":
        low = draw(st.integers(0, 5))
        return {"type": "string", "minLength": low, "maxLength": low + draw(st.integers(0, 10))}
    if kind == "enum":
        return {"type": "string", "enum": draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))}
    if kind == "pattern":
        return {"type": "string", "pattern": draw(st.sampled_from(["^[a-z][a-z0-9-]*$", "^v[0-9]+$", "[0-9]"]))}
    if kind == "date":
        return {"type": "string", "format": "date-time"}
    if kind == "ios":
        return {"x-kubernetes-int-or-string": True}
    return {"type": "boolean"}


def _object_schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(NAMES, children, max_size=4))
        required = draw(st.lists(st.sampled_from(sorted(properties)), unique=True)) if properties else []
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return schema

    return build()


def _array_schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda items, low, extra, unique: {
            "type": "array",
            "items": items,
            "minItems": min(low, 1) if unique else low,
            "maxItems": low + extra,
            **({"uniqueItems": True} if unique else {}),
        },
        children,
        st.integers(0, 2),
        st.integers(0, 3),
        st.booleans(),
    )


def _map_schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda values: {"type": "object", "additionalProperties": values}, children)


def _nullable(schemas: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(schemas, schemas.map(lambda s: {**s, "nullable": True}))


SCHEMAS = st.recursive(
    _nullable(leaf_schemas()),
    lambda inner: _nullable(st.one_of(_object_schema(inner), _array_schema(inner), _map_schema(inner))),
    max_leaves=12,
)


#: JSON integers as Kubernetes stores them (int64)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def _json_key(value: Any) -> bytes:
    """Equal for equal JSON values (1 and 1.0 alike, true and 1 not)."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer() and abs(v) < 2**63:
            return int(v)
        if isinstance(v, list):
            return [norm(i) for i in v]
        if isinstance(v, dict):
            return {k: norm(i) for k, i in v.items()}
        return v

    return orjson.dumps(norm(value), option=orjson.OPT_SORT_KEYS)


OFFSETS = st.sampled_from([0, 330, -180, 60 * 14]).map(lambda m: datetime.timezone(datetime.timedelta(minutes=m)))


def values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that satisfy ``schema`` (one of the generated shapes above)."""
    strategy = _values_for(schema)
    return st.one_of(st.none(), strategy) if schema.get("nullable") else strategy


def _values_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if schema.get("x-kubernetes-int-or-string"):
        return st.one_of(INT64, st.text())
    kind = schema.get("type")
    if kind == "integer":
        exclusive = 1 if schema.get("exclusiveMinimum") else 0
        return st.integers(schema["minimum"] + exclusive, schema["maximum"] - exclusive)
    if kind == "number":
        return st.floats(schema["minimum"], schema["maximum"], allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "string":
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if "pattern" in schema:
            # $ only at the very end, as the API server (and validate) read it, not Python.
            return st.from_regex(schema["pattern"].replace("$", r"\Z"))
        if schema.get("format") == "date-time":
            return st.datetimes(timezones=OFFSETS).map(lambda d: d.isoformat())
        return st.text(min_size=schema["minLength"], max_size=schema["maxLength"])
    if kind == "array":
        return st.lists(
            values_for(schema["items"]),
            min_size=schema["minItems"],
            max_size=schema["maxItems"],
            unique_by=_json_key if schema.get("uniqueItems") else None,
        )
    if "additionalProperties" in schema:
        return st.dictionaries(NAMES, values_for(schema["additionalProperties"]), max_size=3)
    required = set(schema.get("required", ()))
    properties = schema["properties"]
    return st.fixed_dictionaries(
        {k: values_for(s) for k, s in properties.items() if k in required},
        optional={k: values_for(s) for k, s in properties.items() if k not in required},
    )


@SETTINGS
@given(st.data())
def test_generated_values_fit_their_schema(data):
    """A value generated to fit a schema validates, also with unknown fields reported."""
    schema = data.draw(SCHEMAS)
    value = data.draw(values_for(schema))

    assert [] == validate(value, schema, "spec")
    assert [] == validate(value, schema, "spec", report_unknown=True)


@SETTINGS
@given(st.data())
def test_unknown_fields_are_reported_exactly_when_asked(data):
    """Extra keys on a valid object are ignored by default and reported, each once, when asked."""
    schema = data.draw(_object_schema(SCHEMAS))
    value = data.draw(values_for(schema))
    extra = data.draw(st.dictionaries(NAMES.map(str.upper), INT64, min_size=1, max_size=3))
    value = {**value, **extra}

    assert [] == validate(value, schema, "spec")
    assert sorted(f"spec.{k}" for k in extra) == sorted(
        e.path for e in validate(value, schema, "spec", report_unknown=True)
    )


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), INT64, st.floats(allow_nan=False), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=3)),
    max_leaves=8,
)


@SETTINGS
@given(SCHEMAS, JSON_VALUES)
def test_not_inverts_validity(schema, value):
    """{"not": s} accepts a value exactly when s rejects it."""
    assert (validate(value, schema) == []) == (validate(value, {"not": schema}) != [])


@SETTINGS
@given(SCHEMAS, SCHEMAS, JSON_VALUES)
def test_any_of_is_the_union(first, second, value):
    """anyOf [s, t] accepts a value exactly when s or t does."""
    either = validate(value, first) == [] or validate(value, second) == []

    assert either == (validate(value, {"anyOf": [first, second]}) == [])


@SETTINGS
@given(SCHEMAS, JSON_VALUES)
def test_all_of_one_is_the_schema(schema, value):
    """allOf [s] reports exactly what s reports."""
    assert validate(value, schema, "x") == validate(value, {"allOf": [schema]}, "x")


TYPED_VALUES = {
    "object": st.dictionaries(NAMES, INT64, max_size=2),
    "array": st.lists(INT64, max_size=2),
    "string": st.text(max_size=3),
    "integer": INT64,
    "number": st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    "boolean": st.booleans(),
}


@SETTINGS
@given(st.sampled_from(sorted(TYPED_VALUES)), st.sampled_from(sorted(TYPED_VALUES)), st.data())
def test_a_value_of_another_type_is_one_type_error(declared, actual, data):
    """A value of another JSON type gives exactly one Invalid value at its path (integers are numbers)."""
    value = data.draw(TYPED_VALUES[actual])
    type_error = SchemaError("f", INVALID, value, f"f in body must be of type {declared}")
    fits = declared == actual or (declared, actual) == ("number", "integer")

    errors = validate(value, {"type": declared, "minimum": 0, "maxLength": 0, "minItems": 5}, "f")

    if fits:
        assert type_error not in errors
    else:
        assert [type_error] == errors


def test_required_errors_come_before_property_errors():
    """Within an object, missing required fields are reported before errors in present ones."""
    schema = {"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}, "b": {}}}

    assert [REQUIRED, INVALID] == [e.reason for e in validate({"a": 1}, schema)]


def test_date_time_strategy_values_are_accepted():
    """Python's isoformat output (the shape tools emit) is a valid date-time."""
    stamp = datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.UTC).isoformat()

    assert [] == validate(stamp, {"type": "string", "format": "date-time"})
