"""Pick the implementation of the hot path: the C accelerator or its pure-Python twin.

``_speedups`` (built from ``encode.c``) is used when it imports; otherwise, or when the
environment sets ``OLMKIT_PURE_PYTHON=1``, the twin in :mod:`olmkit._solver._pure` is.
Both expose ``encode``, ``encode_counter`` and ``Searcher`` with identical behaviour.
"""

from __future__ import annotations

import os
from types import ModuleType

from olmkit._solver import _pure

__all__ = [
    "IMPLEMENTATION",
    "available",
    "current",
    "describe",
    "get",
    "module",
    "set_implementation",
    "warn_if_not_built",
]


def _load_native() -> ModuleType | None:
    try:
        from olmkit._solver import _native
    except ImportError:
        return None
    return _native


_NATIVE = _load_native()
_FORCE_PURE = os.environ.get("OLMKIT_PURE_PYTHON", "") not in ("", "0")

impl: ModuleType = _NATIVE if (_NATIVE is not None and not _FORCE_PURE) else _pure

#: ``"native"`` when the C accelerator is in use, ``"pure"`` otherwise.
IMPLEMENTATION: str = "native" if impl is _NATIVE else "pure"


#: Set to a non-empty value other than ``0`` to silence :func:`warn_if_not_built`.
QUIET_ENV = "OLMKIT_QUIET_PURE"
_warned = False


def warn_if_not_built() -> None:
    """Say once per process, on stderr, that the C part is missing and the twin runs.

    Only when the C part could not be imported (not when ``OLMKIT_PURE_PYTHON`` asks for the
    twin), and not when ``$OLMKIT_QUIET_PURE`` is set.
    """
    global _warned
    if _warned or _NATIVE is not None or os.environ.get(QUIET_ENV, "") not in ("", "0"):
        return
    _warned = True
    import sys

    sys.stderr.write(
        "olmkit: warning: the solver's C part is not built, resolving with the pure-Python twin"
        " (same answers, much slower); reinstall with a C compiler to build it, or set"
        f" {QUIET_ENV}=1 to silence this\n"
    )


def current() -> str:
    """``"native"`` or ``"pure"``: the implementation in use now (:func:`set_implementation` changes it)."""
    return IMPLEMENTATION


def describe() -> str:
    """The implementation in use, for people: ``native C`` or ``pure Python`` (and why)."""
    if impl is _NATIVE:
        return "native C"
    if _NATIVE is None:
        return "pure Python (the C part is not built)"
    return "pure Python (OLMKIT_PURE_PYTHON)" if _FORCE_PURE else "pure Python"


def available() -> tuple[str, ...]:
    """Names of the implementations that can be used in this process."""
    return ("native", "pure") if _NATIVE is not None else ("pure",)


def get() -> ModuleType:
    """The implementation module in use."""
    return impl


def module(name: str) -> ModuleType:
    """The implementation module ``"native"`` or ``"pure"``, whichever is in use.

    Raises:
        ImportError: ``"native"`` and the C part is not built.
    """
    if name == "pure":
        return _pure
    if _NATIVE is None:
        raise ImportError("olmkit._solver._speedups is not built")
    return _NATIVE


def set_implementation(name: str) -> str:
    """Switch to ``"native"`` or ``"pure"`` (for tests and benchmarks); return the old name."""
    global impl, IMPLEMENTATION
    old = IMPLEMENTATION
    if name == "native":
        if _NATIVE is None:
            raise ImportError("olmkit._solver._speedups is not built")
        impl = _NATIVE
    elif name == "pure":
        impl = _pure
    else:
        raise ValueError(f"unknown implementation {name!r}")
    IMPLEMENTATION = name
    return old
