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
