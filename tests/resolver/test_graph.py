"""The graph-based resolver gives the reference builder's solver input, answers and texts.

``resolver.reference`` is the straightforward builder the resolution graphs replaced (one
object per variable, candidates gathered per resolution). Every case file and random
catalogs (several catalogs, priorities, installed CSVs, upgrades, constraints, broken and
deprecated bundles, bundles sharing names) must give byte-identical solver arrays and the
same resolution, on the C path and on the pure twin.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit._solver._problem import flatten
from olmkit.errors import OlmkitError
from olmkit.resolver import resolve
from olmkit.resolver._build import Problem
from resolver import reference
from resolver.casefile import case_request

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))
ARRAYS = ("nodes", "args", "top", "top_owner", "top_index", "vdep_start", "vdep")


def outcome(resolution: Any) -> tuple[Any, ...]:
    steps = [
        (s.bundle, s.package, s.version, s.channel, s.catalog, s.catalog_namespace, s.replaces, s.subscription)
        for s in resolution.steps
    ]
    props = [(s.image, s.properties, s.content) for s in resolution.steps]
    explanation = [node.to_json() for node in resolution.explanation]
    return resolution.status, resolution.message, resolution.reason, steps, props, explanation


def assert_same_as_reference(request: Any) -> None:
    """Solver input, answer, message and explanation equal the reference builder's."""
    try:
        expected_vars = reference.Problem(request).build()
        expected_error = None
    except OlmkitError as exc:
        expected_vars, expected_error = None, str(exc)
    try:
        problem = Problem(request).build()
        error = None
    except OlmkitError as exc:
        problem, error = None, str(exc)

    assert expected_error == error
    if expected_vars is not None:
        assert problem is not None
        flat = flatten(expected_vars)
        assert flat.n_vars == problem.n_vars
        for name in ARRAYS:
            assert getattr(flat, name).tobytes() == getattr(problem, name).tobytes(), name
        assert (flat.anchor_start, flat.n_anchors) == (problem.anchor_start, problem.n_anchors)
        assert [v.id for v in expected_vars] == [v.id for v in problem.variables]
        assert list(expected_vars) == list(problem.variables)
    assert outcome(reference.resolve(request)) == outcome(resolve(request))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_files_match_the_reference(path, olmkit_pm, tmp_path, implementation):
    """Every case file gives the reference builder's solver input and resolution."""
    case = yaml.safe_load(path.read_text())

    assert_same_as_reference(case_request(case, tmp_path, olmkit_pm))


def test_requirements_that_read_alike_are_each_explained_by_their_own_candidates(olmkit_pm, tmp_path, implementation):
    """A required gvk and a ``not`` of it print the same text (upstream's ``not`` text has no "not" before its
    first child) but have different candidates: the explanation describes the one the conflict holds (the
    gvk nothing provides), not the other because it reads alike."""
    not_z = {
        "type": "olm.constraint",
        "value": {"not": {"constraints": [{"gvk": {"group": "g", "version": "v1", "kind": "Z"}}]}},
    }
    packages = {
        "a": {
            "default": "stable",
            "channels": {"stable": ["a.v1.0.0"]},
            "bundles": {"a.v1.0.0": ["needs-gvk g/v1/Z", not_z]},
        },
        "b": {"default": "stable", "channels": {"stable": ["b.v1.0.0"]}, "bundles": {"b.v1.0.0": []}},
    }
    case = {
        "catalogs": {"cat": {"namespace": "operators", "priority": 0, "packages": packages}},
        "subscriptions": [{"package": "a", "source": "cat", "sourceNamespace": "operators"}],
    }
    request = case_request(case, tmp_path, olmkit_pm)

    assert_same_as_reference(request)
    trees = {node.text: node for node in resolve(request).explanation}
    [requirement] = trees["bundle cat/operators/stable/a.v1.0.0"].children
    assert (
        "bundle a.v1.0.0 requires an operator providing an API with group: g, version: v1, kind: Z" == requirement.text
    )
    assert [
        "no bundle in the visible catalogs or installed CSVs matches",
        "would satisfy it: a bundle providing an API with group: g, version: v1, kind: Z in a visible catalog",
    ] == [child.text for child in requirement.children]


# --------------------------------------------------------------------------- random catalogs

PACKAGES = ["a", "b", "c", "d", "e"]
APIS = ["X", "Y", "Z"]
RULES = [
    'properties.exists(p, p.type == "olm.label")',
    'properties.exists(p, p.type == "olm.gvk" && p.value.kind == "X")',
    "properties.size() > 2",
    "properties.size()",  # not bool: a hard error when reached, recorded in the graph
]


def rare(draw: Any, n: int) -> bool:
    """True about once in ``n`` (hypothesis favours the ends of ranges, so not at an end)."""
    return bool(draw(st.integers(0, n - 1)) == n // 2)


def requirement(draw: Any, pkg: str) -> Any:
    others = [p for p in PACKAGES if p != pkg]
    gvk = st.sampled_from(APIS).map(lambda k: {"gvk": {"group": "g", "version": "v1", "kind": k}})
    package = st.tuples(st.sampled_from(others), st.sampled_from([">=1.0.0", "<2.0.0", "1.0.0", ">=2.0.0"])).map(
        lambda t: {"package": {"packageName": t[0], "versionRange": t[1]}}
    )
    leaf = st.one_of(gvk, package)
    kind = draw(st.integers(0, 39))
    if rare(draw, 30):
        kind = 39
    elif kind == 39:
        kind = 0
    if kind < 3 or 9 < kind < 39:
        return f"needs-gvk g/v1/{draw(st.sampled_from(APIS))}"
    if kind < 5:
        return f"needs-package {draw(st.sampled_from(others))} {draw(st.sampled_from(['>=1.0.0', '<3.0.0', '2.0.0']))}"
    if kind == 5:
        return "needs-label x"
    if kind == 6:
        combinator = draw(st.sampled_from(["all", "any", "not"]))
        children = draw(st.lists(leaf, min_size=1, max_size=2))
        return {"type": "olm.constraint", "value": {combinator: {"constraints": children}}}
    if kind == 7:
        rule = draw(st.sampled_from(RULES))
        return {"type": "olm.constraint", "value": {"failureMessage": "need it", "cel": {"rule": rule}}}
    if kind in (8, 9):
        return {"type": "olm.constraint", "value": draw(leaf)}
    # rarely broken: a bad range, an unknown constraint key, a malformed API
    return draw(
        st.sampled_from(
            [
                {"type": "olm.package.required", "value": {"packageName": "a", "versionRange": "not a range"}},
                {"type": "olm.constraint", "value": {"nope": {}}},
                {"type": "olm.gvk.required", "value": {"group": "g", "version": "v1"}},
            ]
        )
    )


@st.composite
def cases(draw):
    catalogs = {}
    names = draw(st.lists(st.sampled_from(["cat", "alt", "zzz"]), min_size=1, max_size=2, unique=True))
    shared = rare(draw, 10)  # packages d and e name their bundles alike
    bundles_of: dict[str, list[tuple[str, str]]] = {}
    for cat in names:
        packages = {}
        for pkg in draw(st.lists(st.sampled_from(PACKAGES), min_size=2, max_size=5, unique=True)):
            n = draw(st.integers(1, 3))
            stem = "d" if shared and pkg == "e" else pkg
            bundles = [f"{stem}.v{i + 1}.0.0" for i in range(n)]
            entries = [f"{bundles[i]} replaces {bundles[i - 1]}" if i else bundles[i] for i in range(n)]
            if n == 3 and draw(st.booleans()):
                entries[2] += f" skips {bundles[1]}"
            if draw(st.integers(0, 3)) == 0:
                entries[-1] += " range >=1.0.0 <9.0.0"
            channels = {"stable": list(reversed(entries))}
            if n > 1 and draw(st.booleans()):
                channels["fast"] = list(reversed(entries[: draw(st.integers(1, n))]))
            props = {}
            for name in bundles:
                apis = draw(st.lists(st.sampled_from(APIS), max_size=1 + (pkg == "a"), unique=True))
                p: list[Any] = [f"gvk g/v1/{api}" for api in apis]
                if draw(st.booleans()):
                    p.append("label x")
                p += [requirement(draw, pkg) for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2])))]
                if rare(draw, 15):
                    p.append("deprecated")
                if rare(draw, 60):
                    p.append({"type": "olm.gvk", "value": {"group": "g"}})  # malformed
                if rare(draw, 12):
                    # a second identity: an odd version, another package's, or malformed
                    odd = [{"packageName": pkg, "version": "v9"}, {"packageName": "b", "version": "2.0.0"}, "x"]
                    p.append({"type": "olm.package", "value": draw(st.sampled_from(odd))})
                props[name] = p
                bundles_of.setdefault(pkg, []).append((cat, name))
            packages[pkg] = {
                "default": draw(st.sampled_from(sorted(channels))),
                "channels": channels,
                "bundles": props,
            }
        catalogs[cat] = {
            "namespace": "elsewhere" if rare(draw, 10) else draw(st.sampled_from(["operators", "olm"])),
            "priority": draw(st.integers(0, 1)),
            "packages": packages,
        }
    installed = []
    subscriptions = []
    present = sorted(bundles_of)
    for pkg in draw(st.lists(st.sampled_from(present), min_size=1, max_size=3, unique=True)):
        having = [c for c in names if pkg in catalogs[c]["packages"]] or names
        source = "missing" if rare(draw, 15) else draw(st.sampled_from(having))
        sub: dict[str, Any] = {"package": pkg, "source": source}
        sub["sourceNamespace"] = catalogs.get(sub["source"], {}).get("namespace", "operators")
        if draw(st.integers(0, 3)) == 1:
            sub["channel"] = "gone" if rare(draw, 8) else draw(st.sampled_from(["stable", "fast"]))
        found = bundles_of.get(pkg, [])
        if found and draw(st.integers(0, 2)) == 0:
            _, bundle = draw(st.sampled_from(found))
            sub["installed"] = bundle
        elif found and draw(st.integers(0, 4)) == 0:
            sub["startingCSV"] = draw(st.sampled_from(found))[1]
        subscriptions.append(sub)
    for pkg in draw(st.lists(st.sampled_from(PACKAGES), max_size=2, unique=True)):
        found = bundles_of.get(pkg, [])
        if not found:
            continue
        cat, bundle = draw(st.sampled_from(found))
        if any(i["name"] == bundle for i in installed):
            continue
        props = catalogs[cat]["packages"][pkg]["bundles"][bundle]
        installed.append({"name": bundle, "package": pkg, "properties": props})
    for sub in subscriptions:
        if "installed" in sub and not any(i["name"] == sub["installed"] for i in installed):
            cat, _ = next(f for f in bundles_of[sub["package"]] if f[1] == sub["installed"])
            props = catalogs[cat]["packages"][sub["package"]]["bundles"][sub["installed"]]
            installed.append({"name": sub["installed"], "package": sub["package"], "properties": props})
    if rare(draw, 6):
        installed.append({"name": "freestanding.v1.0.0", "raw": True})
    return {"catalogs": catalogs, "subscriptions": subscriptions, "installed": installed}


@settings(
    max_examples=120,
    deadline=None,
    # the fixtures (plugin manager, implementation) hold no state between examples
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases())
def test_random_catalogs_match_the_reference(olmkit_pm, implementation, case):
    """Random catalogs, subscriptions and installed CSVs give the reference's input and answer."""
    with tempfile.TemporaryDirectory() as tmp:
        assert_same_as_reference(case_request(case, Path(tmp), olmkit_pm))
