"""Property-based tests: every answer on random catalogs satisfies all constraints and invariants."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver.casefile import run_case

PACKAGES = ["a", "b", "c", "d", "e"]
APIS = ["X", "Y", "Z"]


@st.composite
def cases(draw):
    packages = {}
    bundle_props: dict[str, list] = {}
    for pkg in PACKAGES:
        n = draw(st.integers(1, 3))
        names = [f"{pkg}.v{i + 1}.0.0" for i in range(n)]
        entries = [f"{names[i]} replaces {names[i - 1]}" if i else names[i] for i in range(n)]
        bundles = {}
        for name in names:
            props = [f"gvk g/v1/{api}" for api in draw(st.lists(st.sampled_from(APIS), max_size=2, unique=True))]
            props += [f"needs-gvk g/v1/{api}" for api in draw(st.lists(st.sampled_from(APIS), max_size=1))]
            if draw(st.booleans()) and pkg != "e":
                dep = draw(st.sampled_from([p for p in PACKAGES if p != pkg]))
                props.append(f"needs-package {dep} >=1.0.0")
            if draw(st.integers(0, 9)) == 0:
                props.append("deprecated")
            bundles[name] = props
            bundle_props[name] = props
        packages[pkg] = {"channels": {"stable": list(reversed(entries))}, "bundles": bundles}
    subs = draw(st.lists(st.sampled_from(PACKAGES), min_size=1, max_size=3, unique=True))
    return {"catalogs": {"cat": {"packages": packages}}, "subscriptions": [{"package": p} for p in subs]}, bundle_props


def package_of(bundle: str) -> str:
    return bundle.split(".v", 1)[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=cases())
def test_answers_satisfy_constraints_and_invariants(olmkit_pm, data):
    """An ok answer installs every subscription's package once, no deprecated bundle, one provider per API,
    and every requirement of every installed bundle is met inside the answer."""
    case, props = data
    with tempfile.TemporaryDirectory() as tmp:
        resolution = run_case(case, Path(tmp), olmkit_pm)

    assert resolution.status in ("ok", "unsatisfiable")
    if resolution.status != "ok":
        assert resolution.message.startswith("constraints not satisfiable: ")
        assert resolution.explanation
        return
    chosen = [s.bundle for s in resolution.steps]
    packages = [package_of(b) for b in chosen]
    assert len(set(packages)) == len(packages)
    assert {s["package"] for s in case["subscriptions"]} <= set(packages)
    provided: dict[str, list[str]] = {}
    for b in chosen:
        assert "deprecated" not in props[b]
        for p in props[b]:
            if p.startswith("gvk "):
                provided.setdefault(p.split()[1], []).append(b)
    assert all(len(v) == 1 for v in provided.values())
    for b in chosen:
        for p in props[b]:
            if p.startswith("needs-gvk "):
                assert p.split()[1] in provided
            if p.startswith("needs-package "):
                assert p.split()[1] in packages


def test_pure_and_native_encoders_agree_on_the_examples(tmp_path):
    """The same request gives the same answer with OLMKIT_PURE_PYTHON=1 (pure twin) and without."""
    import subprocess
    import sys

    examples = Path(__file__).resolve().parents[2] / "examples" / "catalog"
    argv = [
        sys.executable,
        "-m",
        "olmkit",
        "resolve",
        "--catalog",
        str(examples),
        "--no-cache",
        "-o",
        "json",
        "--subscribe",
        "backup-operator",
        "--subscribe",
        "legacy-monitor",
        "--subscribe",
        "storage-operator",
    ]
    outs = []
    for pure in ("", "1"):
        env = (
            {**os.environ, "OLMKIT_PURE_PYTHON": pure}
            if pure
            else {k: v for k, v in os.environ.items() if k != "OLMKIT_PURE_PYTHON"}
        )
        outs.append(subprocess.run(argv, capture_output=True, text=True, env=env, check=False).stdout)

    assert outs[0] == outs[1]
    assert '"status": "ok"' in outs[0]
