"""Label selectors: the string form (``a=b,c!=d,e in (x,y),f notin (z),g,!h``) and the API form.

The API form is a ``metav1.LabelSelector`` mapping: ``{"matchLabels": {...}, "matchExpressions":
[{"key": k, "operator": "In"|"NotIn"|"Exists"|"DoesNotExist", "values": [...]}]}``. Both parse to
one :class:`LabelSelector`, a frozen conjunction of requirements. An empty selector matches
everything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from olmkit.store.errors import Invalid

__all__ = ["LabelSelector", "Requirement", "parse_selector"]

OPERATORS = ("=", "!=", "in", "notin", "exists", "!")
_API_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s=!(),]+)")


def _values(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


@attrs.frozen
class Requirement:
    """One requirement on a label: ``key <op> values``; op is one of ``OPERATORS``."""

    key: str
    op: str
    values: frozenset[str] = attrs.field(default=frozenset(), converter=_values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement."""
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as in Kubernetes
        return not present or labels[self.key] not in self.values

    def __str__(self) -> str:
        vals = sorted(self.values)
        if self.op == "exists":
            return self.key
        if self.op == "!":
            return "!" + self.key
        if self.op in ("=", "!="):
            return f"{self.key}{self.op}{vals[0]}"
        return f"{self.key} {self.op} ({','.join(vals)})"


@attrs.frozen
class LabelSelector:
    """A conjunction of label requirements."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` is selected."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)

    def __str__(self) -> str:
        return ",".join(map(str, self.requirements))


def _check(key: str, values: frozenset[str], text: str) -> None:
    if not _KEY.match(key) or len(key.rpartition("/")[2]) > 63:
        raise Invalid(f"invalid label key {key!r} in selector {text!r}", field="labelSelector")
    for v in values:
        if not _VALUE.match(v) or len(v) > 63:
            raise Invalid(f"invalid label value {v!r} in selector {text!r}", field="labelSelector")


def _parse_string(text: str) -> LabelSelector:
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != re.sub(r"\s+", "", text):
        raise Invalid(f"cannot parse selector {text!r}", field="labelSelector")
    reqs: list[Requirement] = []
    i = 0

    def bad(why: str) -> Invalid:
        return Invalid(f"cannot parse selector {text!r}: {why}", field="labelSelector")

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens) or tokens[i + 1] in (*OPERATORS, "(", ")", ",", "==", "!"):
                raise bad("'!' must be followed by a label key")
            reqs.append(Requirement(tokens[i + 1], "!"))
            i += 2
        elif tok in ("=", "==", "!=", "(", ")", ","):
            raise bad(f"unexpected {tok!r}")
        else:
            key = tok
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ","
            if nxt in ("=", "==", "!="):
                if i + 2 >= len(tokens) or tokens[i + 2] in ("(", ")", ",", "=", "==", "!=", "!"):
                    # an empty value is allowed: "a=" selects a="" (as in Kubernetes)
                    value, i = "", i + 2
                else:
                    value, i = tokens[i + 2], i + 3
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", {value}))
            elif nxt in ("in", "notin"):
                if i + 2 >= len(tokens) or tokens[i + 2] != "(":
                    raise bad(f"{nxt!r} needs a parenthesized list of values")
                j, values = i + 3, []
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        values.append(tokens[j])
                    j += 1
                if j >= len(tokens):
                    raise bad("missing ')'")
                if not values:
                    raise bad(f"{nxt!r} needs at least one value")
                reqs.append(Requirement(key, nxt, values))
                i = j + 1
            else:
                reqs.append(Requirement(key, "exists"))
                i += 1
        if i < len(tokens):
            if tokens[i] != ",":
                raise bad(f"expected ',' before {tokens[i]!r}")
            i += 1
            if i >= len(tokens):
                raise bad("trailing ','")
    for r in reqs:
        _check(r.key, r.values, text)
    return LabelSelector(tuple(reqs))


def _parse_api(raw: Mapping[str, Any]) -> LabelSelector:
    reqs: list[Requirement] = []
    unknown = set(raw) - {"matchLabels", "matchExpressions"}
    if unknown:
        raise Invalid(f"unknown field(s) {sorted(unknown)}", field="labelSelector")
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise Invalid("matchLabels must be a mapping", field="labelSelector.matchLabels")
    for k, v in match_labels.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise Invalid(f"matchLabels {k!r}: keys and values must be strings", field="labelSelector.matchLabels")
        reqs.append(Requirement(k, "=", {v}))
    for n, expr in enumerate(raw.get("matchExpressions") or []):
        field = f"labelSelector.matchExpressions[{n}]"
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str):
            raise Invalid("needs a string 'key'", field=field)
        op = _API_OPERATORS.get(expr.get("operator", ""))
        if op is None:
            raise Invalid(f"operator must be one of {sorted(_API_OPERATORS)}", field=field + ".operator")
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise Invalid("values must be a list of strings", field=field + ".values")
        if op in ("in", "notin") and not values:
            raise Invalid(f"operator {expr['operator']} needs values", field=field + ".values")
        if op in ("exists", "!") and values:
            raise Invalid(f"operator {expr['operator']} takes no values", field=field + ".values")
        reqs.append(Requirement(expr["key"], op, values))
    for r in reqs:
        _check(r.key, r.values, str(dict(raw)))
    return LabelSelector(tuple(reqs))


def parse_selector(selector: str | Mapping[str, Any] | LabelSelector | None) -> LabelSelector:
    """Parse a label selector in string or API form.

    Args:
        selector: ``"app=x,tier in (a,b),!legacy"``, a ``metav1.LabelSelector`` mapping, an already
            parsed selector, or ``None`` (matches everything).

    Returns:
        The parsed selector.

    Raises:
        Invalid: the selector is malformed (``field`` is ``labelSelector``).
    """
    if selector is None:
        return LabelSelector()
    if isinstance(selector, LabelSelector):
        return selector
    if isinstance(selector, str):
        return _parse_string(selector) if selector.strip() else LabelSelector()
    if isinstance(selector, Mapping):
        return _parse_api(selector)
    raise Invalid(f"a label selector is a string or a mapping, not {type(selector).__name__}", field="labelSelector")
