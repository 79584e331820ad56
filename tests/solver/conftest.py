"""Fixtures of the solver tests: run against both implementations of the hot path.

``implementation`` is parametrized over the C accelerator and the pure-Python twin (only
the twin when the accelerator is not built or ``OLMKIT_PURE_PYTHON=1`` is set).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from olmkit._solver import _encode


def implementations() -> list[str]:
    if os.environ.get("OLMKIT_PURE_PYTHON", "") not in ("", "0"):
        return ["pure"]
    return list(_encode.available())


@pytest.fixture(params=implementations())
def implementation(request: pytest.FixtureRequest) -> Iterator[str]:
    old = _encode.set_implementation(request.param)
    try:
        yield request.param
    finally:
        _encode.set_implementation(old)
