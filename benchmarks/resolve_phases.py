"""Wall and CPU time of the phases of one ``olmkit resolve`` run, unprofiled.

Runs the ``olmkit`` program (:func:`olmkit.cli.entry`: the detached cache writer, the quick
exit) in this process with a few functions wrapped to time them, and prints each phase's
wall and CPU seconds (nested phases indented under theirs) and the peak RSS on stderr
(or appends them to ``$PHASES_OUT``). A phase whose function does not exist in the tree
measured is left out (named on stderr). For comparing a change with its tree: run it with
each tree's Python, interleaved, each with a fresh cache::

    OLMKIT_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/resolve_phases.py \\
        resolve -f /tmp/olmkit-compare/P2000-B20-S50-seed1/manifests.yaml -o json >/dev/null

Byte-compile the tree first (``python -m compileall olmkit``): a module compiled from its
source at each run (``PYTHONDONTWRITEBYTECODE``) costs milliseconds of its own.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import resource
import sys
import time
from typing import Any

#: (module, function or Class.method, label); a label's indentation shows the phase it is part of
PHASES = [
    ("olmkit.cli", "_parse", "parse (argparse, command modules)"),
    ("olmkit.resolver.manifests", "load_manifests", "load_manifests"),
    ("olmkit.resolver.manifests", "build_request", "build_request (plugins)"),
    ("olmkit.resolver", "resolve", "resolve"),
    ("olmkit.resolver._build", "Problem.load_catalogs", "  load_catalogs"),
    ("olmkit.catalog._load", "_load", "    catalog load"),
    ("olmkit.catalog._files", "FileDigests.files", "      list files"),
    ("olmkit.catalog._files", "read_signed", "      read files"),
    ("olmkit.catalog._files", "file_digest", "      file digests"),
    ("olmkit.catalog._fast", "ColumnBuilder.add_file", "      add_file"),
    ("olmkit.catalog._fast", "ColumnBuilder.add_files", "      add_files (batches)"),
    ("olmkit._solver._scan", "LineScanner.scan", "        C scan"),
    ("olmkit._solver._scan", "LineScanner.scan_files", "        C scan (files in batches)"),
    ("olmkit.catalog._fast", "ColumnBuilder._add_scanned", "        scanned bundles"),
    ("olmkit.catalog._load", "_Builder.decode_lines", "        lines the scan left"),
    ("olmkit.catalog._load", "_Builder.flush", "      non-bundle blobs (flush)"),
    ("olmkit._solver._channels", "ChannelReader.read", "        C channel reader"),
    ("olmkit.catalog._load", "_Builder.add", "        _Builder.add"),
    ("olmkit.catalog._load", "_Builder.catalog_over", "      catalog_over"),
    ("olmkit.resolver._build", "graph_for", "    graph"),
    ("olmkit.resolver._compile_columns", "compile_columns", "      compile"),
    ("olmkit.catalog._catalog", "_sort_channel", "        _sort_channel"),
    ("olmkit.resolver._build", "Problem.build", "  Problem.build (with load_catalogs)"),
    ("olmkit.resolver._resolve", "solve_problem", "  solve_problem"),
    ("olmkit.resolver._resolve", "_steps", "  steps"),
    ("olmkit.cli.resolve", "dump_json", "dump_json"),
    ("olmkit.cli", "_finish_writes", "cache writes (the fork, in the parent)"),
]

WALL: dict[str, float] = {}
CPU: dict[str, float] = {}


def wrap(module_name: str, attr: str, label: str) -> None:
    """Time every call of ``module_name.attr`` under ``label``."""
    try:
        owner: Any = importlib.import_module(module_name)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        function = getattr(owner, name)
    except (ImportError, AttributeError) as exc:
        sys.stderr.write(f"not timed: {label.strip()} ({exc})\n")
        return

    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            WALL[label] = WALL.get(label, 0.0) + time.perf_counter() - wall
            CPU[label] = CPU.get(label, 0.0) + time.process_time() - cpu

    setattr(owner, name, timed)


def main() -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    from olmkit.cli import entry

    WALL["import olmkit.cli"] = time.perf_counter() - wall
    CPU["import olmkit.cli"] = time.process_time() - cpu
    for module_name, attr, label in PHASES:
        wrap(module_name, attr, label)

    def report() -> None:
        WALL["total (from the import)"] = time.perf_counter() - wall
        CPU["total (from the import)"] = time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        order = ["import olmkit.cli", *(label for _, _, label in PHASES), "total (from the import)"]
        lines = [f"{label:40s} wall {WALL[label]:7.3f}  cpu {CPU[label]:7.3f}\n" for label in order if label in WALL]
        lines.append(f"peak RSS {peak:.0f} MB\n")
        out = os.environ.get("PHASES_OUT")
        if out:
            with open(out, "a") as f:
                f.writelines(lines)
        else:
            sys.stderr.writelines(lines)

    atexit.register(report)
    sys.argv = ["olmkit", *sys.argv[1:]]
    entry()


if __name__ == "__main__":
    main()
