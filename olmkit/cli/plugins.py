"""``olmkit plugins list``: which plugins are loaded, where from, what they register."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from olmkit.cli.output import add_output_option, emit
from olmkit.manager import PluginManager

__all__ = ["add_commands"]


def add_commands(subparsers: Any) -> None:
    """Add the ``plugins`` command group."""
    group = subparsers.add_parser("plugins", help="list and inspect plugins")
    sub = group.add_subparsers(title="plugins commands", metavar="COMMAND")
    lst = sub.add_parser("list", help="list loaded plugins, their hooks and the names they register")
    add_output_option(lst)
    lst.set_defaults(func=run_list)
    group.set_defaults(func=lambda args, pm: (group.print_help(), 2)[1])


def run_list(args: argparse.Namespace, pm: PluginManager) -> int:
    """Print every plugin; third-party load failures and name conflicts are listed too."""
    data = [
        {
            "name": info.name,
            "origin": info.origin,
            "distribution": info.distribution,
            "version": info.version,
            "hooks": list(info.hooks),
            "registers": info.registers,
        }
        for info in pm.plugin_info()
    ]
    data += [{"name": name, "origin": "failed", "error": message} for name, message in pm.load_failures]
    data += [
        {"name": ", ".join(error.plugins), "origin": "conflict", "error": str(error)}
        for error in pm.registry.conflicts.values()
    ]
    data.insert(0, _solver_row())

    def registers(row: Mapping[str, Any]) -> str:
        regs = row.get("registers") or {}
        return "; ".join(f"{kind}: {', '.join(names)}" for kind, names in regs.items())

    emit(
        data,
        args.output,
        columns=[
            ("name", "name"),
            (
                "origin",
                lambda r: r["origin"] + (f" ({r['distribution']} {r['version']})" if r.get("distribution") else ""),
            ),
            ("hooks", lambda r: len(r.get("hooks", []))),
            ("registers", registers),
        ],
    )
    return 0


def _solver_row() -> dict[str, Any]:
    """The SAT layer as a row: its implementation (native C or pure Python) and backends."""
    from olmkit._solver import describe_implementation
    from olmkit._solver.backends import backend_names, default_backend

    return {
        "name": "olmkit._solver",
        "origin": "kernel",
        "distribution": None,
        "version": None,
        "hooks": [],
        "registers": {
            "solver implementation": [describe_implementation()],
            "solver backends": [f"{n} (default)" if n == default_backend() else n for n in backend_names()],
        },
    }
