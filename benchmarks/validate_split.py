"""How a forked ``catalog validate`` splits its checks: each half's start, wall and CPU time.

Loads the catalog cold (no cache), then runs ``validate_catalog(..., jobs=2)`` (the parent checks
the first part of the packages, a forked child the rest) and prints, for each process, how many
packages it checked, when it started after the load, and the wall and CPU time of its part; then the
whole call's wall time. Run it with two installs, interleaved, to compare the balance::

    for i in 1 2 3; do
        /path/to/main/.venv/bin/python benchmarks/validate_split.py W/catalog
        .venv/bin/python benchmarks/validate_split.py W/catalog
    done
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

from olmkit import get_plugin_manager
from olmkit.catalog import load_catalog_result
from olmkit.catalog import validate as validate_module


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("catalog")
    args = ap.parse_args()
    registry = get_plugin_manager(entrypoints=False).registry
    result = load_catalog_result(args.catalog, registry, cache=False)
    parent = os.getpid()
    loaded = time.monotonic()
    original = validate_module._validate
    with tempfile.TemporaryFile("w+") as marks:

        def timed(catalog: Any, registry: Any, names: list[str], state: Any) -> Any:
            start, cpu = time.monotonic(), time.process_time()
            out = original(catalog, registry, names, state)
            who = "parent" if os.getpid() == parent else "child"
            marks.write(
                f"{who}: {len(names)} packages, start {start - loaded:.3f} s, "
                f"wall {time.monotonic() - start:.3f} s, cpu {time.process_time() - cpu:.3f} s\n"
            )
            marks.flush()
            return out

        validate_module._validate = timed  # type: ignore[assignment]
        problems = validate_module.validate_catalog(result.catalog, registry, result.problems, jobs=2)
        total = time.monotonic() - loaded
        marks.seek(0)
        print(marks.read(), end="")
    print(f"validate_catalog: {total:.3f} s wall, {len(problems)} problems")


if __name__ == "__main__":
    main()
