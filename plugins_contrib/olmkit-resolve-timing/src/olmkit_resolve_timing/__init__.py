"""olmkit-resolve-timing: record how long each resolution takes.

A hook wrapper around ``olmkit_resolve``: it runs around whatever resolves the namespace
(the kernel's resolver) without knowing how. ``TIMINGS`` keeps ``(namespace, seconds)``
pairs; set ``OLMKIT_RESOLVE_TIMING=1`` to also print them on stderr.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Generator
from typing import Any

from olmkit import hookimpl

__all__ = ["TIMINGS"]

TIMINGS: list[tuple[str, float]] = []


@hookimpl(wrapper=True)
def olmkit_resolve(request: Any) -> Generator[None, Any, Any]:
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        seconds = time.perf_counter() - start
        namespace = str(getattr(request, "namespace", "?"))
        TIMINGS.append((namespace, seconds))
        if os.environ.get("OLMKIT_RESOLVE_TIMING"):
            sys.stderr.write(f"resolved {namespace} in {seconds * 1000:.1f} ms\n")
