"""Property tests of label selectors and patches against their specifications.

* Label selectors (Kubernetes' labels documentation): ``=``/``==``/``in`` need the label with
  one of the values, ``!=``/``notin`` match objects without the label too, a bare key needs
  the label, ``!key`` its absence; requirements are ANDed; the string form and the API form
  (``matchLabels``, ``matchExpressions``) of one selector select the same objects.
* JSON merge patch (RFC 7386): a patch computed as the difference of two documents turns
  one into the other; applying a patch twice is applying it once; inputs are not changed.
* JSON patch (RFC 6902): the same result as the ``jsonpatch`` library (or both refuse), for
  patches it generates and random operation lists; a refused patch changes nothing.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olmkit.store.errors import Invalid
from olmkit.store.patches import json_patch, merge_patch
from olmkit.store.selectors import parse_selector

SETTINGS = settings(max_examples=150, deadline=None)

# --------------------------------------------------------------------------- label selectors

KEYS = ["app", "tier", "example.io/team", "k8s.io/x_y", "a"]
VALUES = ["x", "y", "web", "v1.2", "a-b_c", ""]


@st.composite
def requirements(draw: Any) -> tuple[str, str, list[str]]:
    key = draw(st.sampled_from(KEYS))
    op = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!"]))
    if op in ("=", "==", "!="):
        return key, op, [draw(st.sampled_from(VALUES))]
    if op in ("in", "notin"):
        return key, op, draw(st.lists(st.sampled_from([v for v in VALUES if v]), min_size=1, max_size=3))
    return key, op, []


def space(draw: Any) -> str:
    return draw(st.sampled_from(["", "", " ", "  "]))


def as_string(draw: Any, reqs: list[tuple[str, str, list[str]]]) -> str:
    parts = []
    for key, op, values in reqs:
        if op in ("=", "==", "!="):
            parts.append(f"{key}{space(draw)}{op}{space(draw)}{values[0]}")
        elif op in ("in", "notin"):
            inner = ("," + space(draw)).join(values)
            parts.append(f"{key} {op}{space(draw)}({space(draw)}{inner}{space(draw)})")
        elif op == "exists":
            parts.append(key)
        else:
            parts.append(f"!{space(draw)}{key}")
    return ("," + space(draw)).join(parts)


def as_api(reqs: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    """The API form; equality goes to matchLabels while a key has one, != is NotIn."""
    labels: dict[str, str] = {}
    exprs = []
    names = {"in": "In", "notin": "NotIn", "exists": "Exists", "!": "DoesNotExist", "!=": "NotIn"}
    for key, op, values in reqs:
        if op in ("=", "==") and key not in labels:
            labels[key] = values[0]
        elif op in ("=", "=="):
            exprs.append({"key": key, "operator": "In", "values": values})
        elif op in ("exists", "!"):
            exprs.append({"key": key, "operator": names[op]})
        else:
            exprs.append({"key": key, "operator": names[op], "values": values})
    return {"matchLabels": labels, "matchExpressions": exprs}


def holds(req: tuple[str, str, list[str]], labels: dict[str, str]) -> bool:
    key, op, values = req
    if op in ("=", "==", "in"):
        return key in labels and labels[key] in values
    if op in ("!=", "notin"):
        return key not in labels or labels[key] not in values
    if op == "exists":
        return key in labels
    return key not in labels


LABELS = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)


@SETTINGS
@given(reqs=st.lists(requirements(), max_size=4), objects=st.lists(LABELS, min_size=1, max_size=5), data=st.data())
def test_selectors_select_as_kubernetes_documents(reqs, objects, data):
    """Both forms select exactly the objects every requirement holds for; str() parses back to the same."""
    text = as_string(data.draw, reqs)
    expected = [all(holds(r, labels) for r in reqs) for labels in objects]
    from_string = parse_selector(text)
    from_api = parse_selector(as_api(reqs))

    assert expected == [from_string.matches(labels) for labels in objects]
    assert expected == [from_api.matches(labels) for labels in objects]
    assert from_string == parse_selector(str(from_string))


@SETTINGS
@given(
    reqs=st.lists(requirements(), min_size=1, max_size=3),
    bad=st.sampled_from(["-app", "app-", "a b", "Example.io/x", "x/", "/x", "a" * 64, "a/b/c"]),
    data=st.data(),
)
def test_a_malformed_key_anywhere_is_invalid(reqs, bad, data):
    """A key that is not a (prefixed) label name makes the whole selector invalid, in both forms."""
    at = data.draw(st.integers(0, len(reqs)))
    reqs = [*reqs[:at], (bad, "exists", []), *reqs[at:]]

    with pytest.raises(Invalid):
        parse_selector(as_string(data.draw, reqs))
    with pytest.raises(Invalid):
        parse_selector(as_api(reqs))


# --------------------------------------------------------------------------- patches

SCALARS = st.one_of(st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", ""]))
NAMES = st.sampled_from(["a", "b", "c", "x/y", "m~n"])


def documents(allow_null: bool = True) -> st.SearchStrategy[Any]:
    leaves = st.one_of(SCALARS, st.none()) if allow_null else SCALARS
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(NAMES, inner, max_size=3)),
        max_leaves=8,
    )


def objects(allow_null: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(NAMES, documents(allow_null), max_size=4)


def _no_null_members(value: Any) -> bool:
    if isinstance(value, dict):
        return all(v is not None and _no_null_members(v) for v in value.values())
    if isinstance(value, list):
        return all(_no_null_members(v) for v in value)
    return True


def diff(source: Any, target: Any) -> Any:
    """The merge patch that turns ``source`` into ``target`` (RFC 7386, section 1)."""
    if not isinstance(source, dict) or not isinstance(target, dict):
        return copy.deepcopy(target)
    patch: dict[str, Any] = {k: None for k in source if k not in target}
    for k, v in target.items():
        if k not in source or source[k] != v or type(source[k]) is not type(v):
            patch[k] = diff(source.get(k), v)
    return patch


@SETTINGS
@given(source=objects(), target=objects(allow_null=False).filter(_no_null_members))
def test_merge_patch_of_the_difference_gives_the_target(source, target):
    """Applying the difference of two documents turns the first into the second, changing neither input."""
    patch = diff(source, target)
    before = (copy.deepcopy(source), copy.deepcopy(patch))

    assert target == merge_patch(source, patch)
    assert before == (source, patch)


@SETTINGS
@given(target=documents(), patch=documents())
def test_merge_patch_is_idempotent(target, patch):
    """Applying a merge patch twice is applying it once; null members remove (RFC 7386)."""
    once = merge_patch(target, patch)

    assert once == merge_patch(once, patch)
    if isinstance(patch, dict) and isinstance(once, dict):
        assert all(key not in once for key, value in patch.items() if value is None)


def _pointers(doc: Any, prefix: str = "") -> list[str]:
    """Every location in ``doc``, and for each array a few that RFC 6901 does not allow."""
    out = [prefix]
    if isinstance(doc, list):
        out += [f"{prefix}/{bad}" for bad in ("-1", "01", "+0", " 0", "0 ", "1_0")]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _pointers(v, prefix + "/" + k.replace("~", "~0").replace("/", "~1"))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _pointers(v, f"{prefix}/{i}")
    return out


@st.composite
def operations(draw: Any, doc: Any) -> list[dict[str, Any]]:
    """Random operations on ``doc``'s paths (and some that do not exist)."""
    paths = [*_pointers(doc), "/nope", "/a/-", "/0", "/a/9"]
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]))
        op: dict[str, Any] = {"op": kind, "path": draw(st.sampled_from(paths))}
        if kind in ("add", "replace", "test"):
            op["value"] = draw(documents())
        if kind in ("move", "copy"):
            op["from"] = draw(st.sampled_from(paths))
        ops.append(op)
    return ops


def reference(doc: Any, ops: list[dict[str, Any]]) -> Any:
    try:
        return ("ok", jsonpatch.apply_patch(doc, ops))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        return ("refused", None)


def ours(doc: Any, ops: list[dict[str, Any]]) -> Any:
    try:
        return ("ok", json_patch(doc, ops))
    except Invalid:
        return ("refused", None)


@SETTINGS
@given(source=objects(), target=objects())
def test_json_patch_applies_generated_patches(source, target):
    """A patch the jsonpatch library generates between two documents turns one into the other."""
    patch = jsonpatch.make_patch(source, target).patch

    assert target == json_patch(source, patch)


@SETTINGS
@given(data=st.data(), doc=objects())
def test_json_patch_agrees_with_the_jsonpatch_library(data, doc):
    """Random operations give jsonpatch's result, or are refused where it refuses; the input stays."""
    ops = data.draw(operations(doc))
    before = copy.deepcopy(doc)

    assert reference(doc, ops) == ours(doc, ops)
    assert before == doc


# regressions found by the properties above


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "remove", "path": ""}],
        [{"op": "remove", "path": "/a/-1"}],
        [{"op": "replace", "path": "/a/01", "value": 0}],
        [{"op": "add", "path": "/a/ 1", "value": 0}],
        [{"op": "test", "path": "/a/1_0", "value": 0}],
        [{"op": "copy", "from": "/a/+0", "path": "/b"}],
        [{"op": "move", "from": "/a", "path": "/a/0"}],
        [{"op": "move", "from": "", "path": "/b"}],
    ],
)
def test_json_patch_refuses_what_the_rfcs_refuse(ops):
    """Removing the whole document, array indices RFC 6901 does not allow (-1, 01, " 1", 1_0,
    +0), moving a value into its own child: Invalid, not a traceback or a silent change."""
    doc = {"a": [1, 2, 3], "b": {}}

    with pytest.raises(Invalid):
        json_patch(doc, ops)
    assert {"a": [1, 2, 3], "b": {}} == doc


@pytest.mark.parametrize("location", ["", "/a", "/a/1"])
def test_json_patch_moving_a_value_onto_itself_changes_nothing(location):
    """A move whose from and path are equal (even the whole document) leaves the document as it was."""
    doc = {"a": [1, 2, 3], "b": {}}

    assert doc == json_patch(doc, [{"op": "move", "from": location, "path": location}])
    with pytest.raises(Invalid):
        json_patch(doc, [{"op": "move", "from": "/missing", "path": "/missing"}])
