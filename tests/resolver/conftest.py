"""Fixtures of the resolver tests: ``implementation`` runs a test on the C path and on the pure twin."""

from __future__ import annotations

from solver.conftest import implementation

__all__ = ["implementation"]
