"""The ``olmkit`` command line.

Subcommands live in modules listed in :data:`COMMAND_MODULES`; each exposes
``add_commands(subparsers)``. Plugins add their own through the
``olmkit_add_commands`` hook. A command's ``func(args, pm)`` returns the exit code.

Errors: an :class:`~olmkit.errors.OlmkitError` prints one line on stderr and exits with
its ``exit_code`` (2 for user errors); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from olmkit import __version__
from olmkit.errors import OlmkitError

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

#: Modules contributing subcommand groups, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "olmkit.cli.plugins",
    "olmkit.cli.catalog",
    "olmkit.cli.resolve",
    "olmkit.cli.apply",
    "olmkit.cli.get",
    "olmkit.cli.describe",
    "olmkit.cli.delete",
    "olmkit.cli.operators",
    "olmkit.cli.lifecycle",
    "olmkit.cli.serve",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        """Usage errors: one line and exit code 2, like every other user error."""
        self.exit(2, f"olmkit: error: {message} (see '{self.prog} --help')\n")


class _Version(argparse.Action):
    """``--version``: the version, then the solver's implementation and backends."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from olmkit._solver.backends import describe

        sys.stdout.write(f"olmkit {__version__}\n{describe()}\n")
        parser.exit()


def build_parser(pm: object | None = None) -> argparse.ArgumentParser:
    """Build the full parser: built-in command modules, then plugin commands."""
    parser = _Parser(prog="olmkit", description="The Operator Lifecycle Manager as a pluggable toolkit.")
    parser.add_argument("--version", action=_Version)
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_commands(subparsers)
    if pm is not None:
        pm.hook.olmkit_add_commands(subparsers=subparsers)  # type: ignore[attr-defined]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("OLMKIT_DEBUG"))
    pm = None
    try:
        from olmkit.manager import get_plugin_manager

        pm = get_plugin_manager()
        parser = build_parser(pm)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # a usage error (printed already), --help or --version: return its code
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            return 2
        return int(func(args, pm) or 0)
    except OlmkitError as exc:
        if debug:
            raise
        sys.stderr.write(f"olmkit: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("olmkit: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug in olmkit or a plugin: still no traceback unless --debug
        if debug:
            raise
        plugin = pm.culprit(exc) if pm is not None else None
        if plugin is not None:
            sys.stderr.write(f"olmkit: error: plugin {plugin!r} failed: {exc!r} (run with --debug for the traceback)\n")
        else:
            sys.stderr.write(f"olmkit: internal error: {exc!r} (run with --debug for the traceback)\n")
        return 70
