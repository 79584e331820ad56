"""Validation of values against Kubernetes structural OpenAPI v3 schemas (the schemas of CRDs).

:func:`validate` checks a value (a custom resource, or any part of one) against the
``openAPIV3Schema`` of a CustomResourceDefinition version and returns every violation as a
:class:`SchemaError`, whose text follows Kubernetes' field errors::

    spec.replicas: Invalid value: "x": spec.replicas in body must be of type integer

Supported: ``type`` (object, array, string, integer, number, boolean), ``properties``,
``required``, ``additionalProperties`` (a boolean or a schema), ``minProperties`` /
``maxProperties``, ``items``, ``enum``, ``nullable``, ``minimum`` / ``maximum`` /
``exclusiveMinimum`` / ``exclusiveMaximum`` (the OpenAPI 3.0 booleans), ``multipleOf``,
``minLength`` / ``maxLength`` (in code points, as Kubernetes counts runes), ``pattern`` (a
search, not anchored; Python's ``re`` with ASCII ``\\d``/``\\w``/``\\s`` and a ``$`` that
matches only at the end, as the API server's RE2), ``minItems`` /
``maxItems``, ``uniqueItems``, ``format`` (``int32``, ``int64``, ``date-time``; other formats
are not checked, as Kubernetes ignores formats it does not know), ``allOf`` / ``anyOf`` /
``oneOf`` / ``not``, ``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-int-or-string``
and ``x-kubernetes-embedded-resource``.

Values follow JSON: ``True`` is a boolean and never an integer, ``2.0`` is an integer (a JSON
number with no fraction, as the API server's validator accepts it), and ``enum`` and
``uniqueItems`` compare JSON values (``1 == 1.0``, ``1 != True``).

Unknown fields (not declared by ``properties``, outside any ``additionalProperties`` and
``x-kubernetes-preserve-unknown-fields``) are **not** errors by default. For a structural
schema the API server prunes them when an object is written instead of rejecting it, and
upstream OLM's check of existing custom resources ("are they still valid under the new
CRD?") uses the same validator, which ignores them. So a new schema that drops a field does
not make the objects that carry it invalid: the field would be pruned on their next write.
``report_unknown=True`` reports them instead (``Forbidden: field not declared in schema``),
as strict server-side field validation does; at the root and in an embedded resource,
``apiVersion``, ``kind`` and ``metadata`` are always declared, and nothing under their
``metadata`` is reported (the API server validates object metadata on its own).
``additionalProperties: false`` is an explicit ban and always reported.

A broken schema (an invalid ``pattern``) gives an ``Internal error`` at the field it applies
to rather than an exception, so that one bad CRD cannot crash a controller.

.. versionadded:: 0.1
"""

from __future__ import annotations

import datetime
import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

__all__ = [
    "DUPLICATE",
    "FORBIDDEN",
    "INTERNAL",
    "INVALID",
    "REQUIRED",
    "TOO_LONG",
    "TOO_MANY",
    "UNSUPPORTED",
    "SchemaError",
    "validate",
]

# Kubernetes' field.ErrorType texts.
INVALID: Final = "Invalid value"
REQUIRED: Final = "Required value"
UNSUPPORTED: Final = "Unsupported value"
FORBIDDEN: Final = "Forbidden"
TOO_LONG: Final = "Too long"
TOO_MANY: Final = "Too many"
DUPLICATE: Final = "Duplicate value"
INTERNAL: Final = "Internal error"

_SHOWS_VALUE: Final = frozenset({INVALID, UNSUPPORTED, TOO_MANY, DUPLICATE})
_SHOW_LIMIT: Final = 80
_ROOT_FIELDS: Final = frozenset({"apiVersion", "kind", "metadata"})
_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)
_DATE_TIME: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))\Z", re.ASCII
)


def _show(value: Any) -> str:
    """A value as Kubernetes prints it in a field error (JSON, long values shortened)."""
    if value is None:
        return "null"
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        text = repr(value)
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 3] + "..."


@attrs.frozen
class SchemaError:
    """One violation of a schema, at a field path.

    Args:
        path: the field, Kubernetes style: ``spec.replicas``, ``spec.ports[0].name``; ``""``
            is the validated value itself (printed ``<root>``).
        reason: Kubernetes' error type: :data:`INVALID`, :data:`REQUIRED`, :data:`UNSUPPORTED`,
            :data:`FORBIDDEN`, :data:`TOO_LONG`, :data:`TOO_MANY`, :data:`DUPLICATE` or
            :data:`INTERNAL`.
        value: the offending value (shown for ``Invalid value``, ``Unsupported value``,
            ``Too many`` (the count) and ``Duplicate value``).
        detail: what is wrong.

    ``str()`` is Kubernetes' text: ``spec.replicas: Invalid value: "x": spec.replicas in body
    must be of type integer``.

    .. versionadded:: 0.1
    """

    path: str
    reason: str
    value: Any = attrs.field(default=None, hash=False)
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.path or '<root>'}: {self.reason}"
        if self.reason in _SHOWS_VALUE:
            text += f": {_show(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text


def validate(
    value: Any, schema: Mapping[str, Any], path: str = "", *, report_unknown: bool = False
) -> list[SchemaError]:
    """Every violation of ``schema`` by ``value``, in document order; ``[]`` when it is valid.

    Args:
        value: a JSON-like value (dicts, lists, str, int, float, bool, ``None``).
        schema: a structural ``openAPIV3Schema``.
        path: the field path of ``value``, prefixed to every error path. At ``""`` the value
            is a resource: ``apiVersion``, ``kind`` and ``metadata`` are implicitly declared.
        report_unknown: report fields the schema does not declare (see the module docstring)
            instead of ignoring them as the API server's pruning does.

    Returns:
        The errors; an empty list when the value is valid.

    Example:
        >>> [str(e) for e in validate({"replicas": "x"}, {"properties": {"replicas": {"type": "integer"}}}, "spec")]
        ['spec.replicas: Invalid value: "x": spec.replicas in body must be of type integer']

    .. versionadded:: 0.1
    """
    errors: list[SchemaError] = []
    _Validator(report_unknown, errors).check(value, schema, path, root=path == "")
    return errors


def _where(path: str) -> str:
    return f"{path} in body" if path else "body"


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPE_CHECKS: Final[dict[str, Callable[[Any], bool]]] = {
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list | tuple),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
}


def _number(schema: Mapping[str, Any], key: str) -> float | None:
    """A numeric keyword's value, ``None`` when absent or not a number."""
    found = schema.get(key)
    if isinstance(found, bool) or not isinstance(found, int | float):
        return None
    return found


def _count(schema: Mapping[str, Any], key: str) -> int | None:
    """A count keyword's value (``maxLength`` ...), ``None`` when absent or not an integer."""
    found: Any = schema.get(key)
    return int(found) if _is_integer(found) else None


def _canon(value: Any) -> Any:
    """A hashable key under which two values are equal exactly when they are equal JSON values."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if _is_number(value):
        return ("num", int(value)) if _is_integer(value) else ("num", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, Mapping):
        return ("obj", frozenset((str(k), _canon(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("arr", tuple(_canon(v) for v in value))
    return ("other", repr(value))


def _end_anchored(pattern: str) -> str:
    """``pattern`` with each ``$`` outside a character class made to match only at the very end.

    In Python ``$`` also matches before a final newline; in ECMA-262 and RE2 it does not.
    """
    out: list[str] = []
    class_body = -1  # index where the current character class's members start, -1 outside one
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if class_body >= 0:
            if char == "]" and index > class_body:  # a ] first in the class is a member
                class_body = -1
        elif char == "[":
            class_body = index + (2 if pattern.startswith("^", index + 1) else 1)
            out.append(pattern[index:class_body])
            index = class_body
            continue
        elif char == "$":
            char = r"\Z"
        out.append(char)
        index += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern (ASCII classes and strict ``$``, as RE2), or why it does not compile."""
    try:
        return re.compile(_end_anchored(pattern), re.ASCII)
    except re.error as exc:
        return str(exc)


def _valid_date_time(text: str) -> bool:
    match = _DATE_TIME.match(text)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    try:
        datetime.datetime(year, month, day, hour, minute, min(second, 59))
    except ValueError:
        return False
    if second > 60:  # 60 is a leap second, which RFC 3339 allows
        return False
    offset_h, offset_m = match.group(9), match.group(10)
    return offset_h is None or (int(offset_h) <= 23 and int(offset_m) <= 59)


class _Validator:
    """One validation run: the unknown-field policy and the errors found so far."""

    def __init__(self, report_unknown: bool, errors: list[SchemaError]) -> None:
        self.report_unknown = report_unknown
        self.errors = errors

    def error(self, path: str, reason: str, value: Any = None, detail: str = "") -> None:
        self.errors.append(SchemaError(path, reason, value, detail))

    def matches(self, value: Any, schema: Mapping[str, Any], path: str) -> bool:
        """Whether ``value`` satisfies a subschema (of allOf/anyOf/oneOf/not), unknowns aside."""
        probe = _Validator(False, [])
        probe.check(value, schema, path, root=False)
        return not probe.errors

    def check(self, value: Any, schema: Mapping[str, Any], path: str, *, root: bool) -> None:
        if not isinstance(schema, Mapping):
            return
        if value is None and schema.get("nullable") is True:
            return
        if not self.check_type(value, schema, path):
            return
        enum = schema.get("enum")
        if isinstance(enum, Sequence) and not isinstance(enum, str):
            allowed = {_canon(v) for v in enum}
            if _canon(value) not in allowed:
                supported = ", ".join(_show(v) for v in enum)
                self.error(path, UNSUPPORTED, value, f"supported values: {supported}")
        if _is_number(value):
            self.check_number(value, schema, path)
        elif isinstance(value, str):
            self.check_string(value, schema, path)
        elif isinstance(value, list | tuple):
            self.check_array(value, schema, path)
        elif isinstance(value, Mapping):
            self.check_object(value, schema, path, root=root)
        self.check_combinators(value, schema, path)

    def check_type(self, value: Any, schema: Mapping[str, Any], path: str) -> bool:
        declared = schema.get("type")
        if schema.get("x-kubernetes-int-or-string") is True:
            if _is_integer(value) or isinstance(value, str):
                return True
            self.error(path, INVALID, value, f"{_where(path)} must be of type integer or string")
            return False
        if isinstance(declared, str) and declared in _TYPE_CHECKS:
            if _TYPE_CHECKS[declared](value):
                return True
            self.error(path, INVALID, value, f"{_where(path)} must be of type {declared}")
            return False
        return True

    def check_number(self, value: float, schema: Mapping[str, Any], path: str) -> None:
        minimum, maximum = _number(schema, "minimum"), _number(schema, "maximum")
        if minimum is not None:
            if schema.get("exclusiveMinimum") is True and not value > minimum:
                self.error(path, INVALID, value, f"{_where(path)} should be greater than {_show(minimum)}")
            elif not value >= minimum:
                self.error(path, INVALID, value, f"{_where(path)} should be greater than or equal to {_show(minimum)}")
        if maximum is not None:
            if schema.get("exclusiveMaximum") is True and not value < maximum:
                self.error(path, INVALID, value, f"{_where(path)} should be less than {_show(maximum)}")
            elif not value <= maximum:
                self.error(path, INVALID, value, f"{_where(path)} should be less than or equal to {_show(maximum)}")
        factor = _number(schema, "multipleOf")
        if factor is not None and factor > 0:
            if _is_integer(value) and _is_integer(factor):
                multiple = int(value) % int(factor) == 0
            else:
                quotient = value / factor
                multiple = math.isclose(quotient, round(quotient), rel_tol=1e-9, abs_tol=1e-9)
            if not multiple:
                self.error(path, INVALID, value, f"{_where(path)} should be a multiple of {_show(factor)}")
        fmt = schema.get("format")
        if fmt in ("int32", "int64") and _is_integer(value):
            low, high = _INT32 if fmt == "int32" else _INT64
            if not low <= int(value) <= high:
                self.error(path, INVALID, value, f"{_where(path)} must be of type {fmt}")

    def check_string(self, value: str, schema: Mapping[str, Any], path: str) -> None:
        min_length, max_length = _count(schema, "minLength"), _count(schema, "maxLength")
        if max_length is not None and len(value) > max_length:
            self.error(path, TOO_LONG, value, f"may not be longer than {max_length}")
        if min_length is not None and len(value) < min_length:
            self.error(path, INVALID, value, f"{_where(path)} should be at least {min_length} chars long")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            compiled = _regex(pattern)
            if isinstance(compiled, str):
                self.error(path, INTERNAL, detail=f"the schema's pattern {pattern!r} is invalid: {compiled}")
            elif compiled.search(value) is None:
                self.error(path, INVALID, value, f"{_where(path)} should match '{pattern}'")
        if schema.get("format") == "date-time" and not _valid_date_time(value):
            self.error(path, INVALID, value, f"{_where(path)} must be of type date-time")

    def check_array(self, value: Sequence[Any], schema: Mapping[str, Any], path: str) -> None:
        min_items, max_items = _count(schema, "minItems"), _count(schema, "maxItems")
        if max_items is not None and len(value) > max_items:
            self.error(path, TOO_MANY, len(value), f"must have at most {max_items} items")
        if min_items is not None and len(value) < min_items:
            self.error(path, INVALID, value, f"{_where(path)} should have at least {min_items} items")
        if schema.get("uniqueItems") is True:
            seen: set[Any] = set()
            for index, item in enumerate(value):
                key = _canon(item)
                if key in seen:
                    self.error(f"{path}[{index}]", DUPLICATE, item)
                seen.add(key)
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                self.check(item, items, f"{path}[{index}]", root=False)
        elif isinstance(items, Sequence):  # tuple form: not structural, but cheap to honour
            for index, (item, item_schema) in enumerate(zip(value, items, strict=False)):
                self.check(item, item_schema, f"{path}[{index}]", root=False)

    def check_object(self, value: Mapping[str, Any], schema: Mapping[str, Any], path: str, *, root: bool) -> None:
        required = schema.get("required")
        if isinstance(required, Sequence) and not isinstance(required, str):
            for name in required:
                if isinstance(name, str) and name not in value:
                    self.error(_child(path, name), REQUIRED)
        min_props, max_props = _count(schema, "minProperties"), _count(schema, "maxProperties")
        if max_props is not None and len(value) > max_props:
            self.error(path, TOO_MANY, len(value), f"must have at most {max_props} properties")
        if min_props is not None and len(value) < min_props:
            self.error(path, INVALID, value, f"{_where(path)} should have at least {min_props} properties")
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        if embedded:
            self.check_embedded(value, path)
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        implicit = _ROOT_FIELDS if root or embedded else frozenset()
        for key, item in value.items():
            child = _child(path, str(key))
            if key in properties:
                if key == "metadata" and (root or embedded):
                    _Validator(False, self.errors).check(item, properties[key], child, root=False)
                else:
                    self.check(item, properties[key], child, root=False)
            elif isinstance(additional, Mapping):
                self.check(item, additional, child, root=False)
            elif additional is False:
                self.error(child, FORBIDDEN, detail=f"{_where(child)} is a forbidden property")
            elif self.report_unknown and additional is not True and not preserve and key not in implicit:
                self.error(child, FORBIDDEN, detail="field not declared in schema")

    def check_embedded(self, value: Mapping[str, Any], path: str) -> None:
        """An embedded resource carries a non-empty apiVersion and kind, and object metadata."""
        for field in ("apiVersion", "kind"):
            found = value.get(field)
            if found is None or found == "":
                self.error(_child(path, field), REQUIRED, detail="must not be empty")
            elif not isinstance(found, str):
                where = _where(_child(path, field))
                self.error(_child(path, field), INVALID, found, f"{where} must be of type string")
        metadata = value.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            where = _where(_child(path, "metadata"))
            self.error(_child(path, "metadata"), INVALID, metadata, f"{where} must be of type object")

    def check_combinators(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        all_of = schema.get("allOf")
        if isinstance(all_of, Sequence):
            for sub in all_of:
                if isinstance(sub, Mapping):
                    # Report the branch's own errors: more useful than "must validate all".
                    _Validator(False, self.errors).check(value, sub, path, root=False)
        any_of = schema.get("anyOf")
        if (
            isinstance(any_of, Sequence)
            and any_of
            and not any(self.matches(value, sub, path) for sub in any_of if isinstance(sub, Mapping))
        ):
            self.error(path, INVALID, value, f"{_where(path)} must validate at least one schema (anyOf)")
        one_of = schema.get("oneOf")
        if isinstance(one_of, Sequence) and one_of:
            matched = sum(self.matches(value, sub, path) for sub in one_of if isinstance(sub, Mapping))
            if matched != 1:
                self.error(path, INVALID, value, f"{_where(path)} must validate one and only one schema (oneOf)")
        negated = schema.get("not")
        if isinstance(negated, Mapping) and self.matches(value, negated, path):
            self.error(path, INVALID, value, f"{_where(path)} must not validate the schema (not)")
