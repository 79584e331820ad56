"""Data-driven resolver cases: every file in cases/ gives upstream OLM's answer."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from resolver.casefile import run_case, step_text

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path, olmkit_pm, tmp_path):
    """The resolution of the case's catalogs and manifests is the expected one (status, steps, message)."""
    case = yaml.safe_load(path.read_text())
    expect = case["expect"]

    resolution = run_case(case, tmp_path, olmkit_pm)

    assert (expect["status"], expect.get("message", resolution.message)) == (resolution.status, resolution.message)
    if "messageContains" in expect:
        assert expect["messageContains"] in (resolution.message or "")
    if "steps" in expect:
        assert expect["steps"] == [step_text(s) for s in resolution.steps]


def test_there_are_cases():
    """The case directory is not empty (a glob typo would silently test nothing)."""
    assert len(CASES) >= 20


def test_repeated_resolutions_on_one_catalog_do_not_share_stale_matches(olmkit_pm, tmp_path):
    """Resolving different requirements against the same (cached) catalog gives each its own answer."""
    from olmkit.resolver.manifests import build_request
    from resolver.casefile import case_manifests

    case = yaml.safe_load((Path(__file__).parent / "cases" / "dependency-transitive-and-label.yaml").read_text())
    manifests = case_manifests(case, tmp_path)
    answers = []
    for package in ("a", "b", "d", "a"):
        objs = [m for m in manifests if m.kind != "Subscription"]
        sub = {
            "kind": "Subscription",
            "metadata": {"name": package, "namespace": "operators"},
            "spec": {"name": package, "source": "cat", "sourceNamespace": "operators"},
        }
        request = build_request([*objs, type(manifests[0])(sub, "x")], pm=olmkit_pm, namespace="operators")
        answers.append([s.bundle for s in olmkit_pm.hook.olmkit_resolve(request=request).steps])

    assert [
        ["a.v1.0.0", "b.v1.0.0", "c.v1.0.0"],
        ["b.v1.0.0", "c.v1.0.0"],
        ["d.v1.0.0"],
        ["a.v1.0.0", "b.v1.0.0", "c.v1.0.0"],
    ] == answers


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_same_on_every_backend(path, olmkit_pm, tmp_path):
    """Every solver backend gives the case the same resolution, explanation included, byte for byte."""
    import attrs
    import orjson

    from olmkit._solver import backend_names
    from resolver.casefile import case_request

    request = case_request(yaml.safe_load(path.read_text()), tmp_path, olmkit_pm)
    outcomes = {}
    for backend in ("native", "cryptominisat", "pure"):
        if backend in backend_names():
            resolution = olmkit_pm.hook.olmkit_resolve(request=attrs.evolve(request, backend=backend))
            outcomes[backend] = orjson.dumps(resolution.to_json(explain=True))

    assert 1 == len(set(outcomes.values())), sorted(outcomes)
