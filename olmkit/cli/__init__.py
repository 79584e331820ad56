"""The ``olmkit`` command line.

Subcommands live in modules listed in :data:`COMMAND_MODULES`; each exposes
``add_commands(subparsers)``. Plugins add their own through the
``olmkit_add_commands`` hook. A command's ``func(args, pm)`` returns the exit code.

Start-up is kept short: :data:`COMMAND_HOMES` says which modules define a built-in
command, so ``olmkit get ...`` imports only the module that defines ``get``, and the
plugin manager handed to the command is loaded the first time the command touches it
(``get`` never does). An unknown command word, a top-level ``--help`` or a parse
error with the short parser falls back to the full parser with every module and the
plugins' commands.

Errors: an :class:`~olmkit.errors.OlmkitError` prints one line on stderr and exits with
its ``exit_code`` (2 for user errors); ``--debug`` (anywhere before ``--``) shows the
traceback instead.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NoReturn, TextIO

from olmkit import __version__

if TYPE_CHECKING:
    import argparse

    from olmkit.manager import PluginManager

__all__ = [
    "COMMAND_HOMES",
    "COMMAND_MODULES",
    "LazyPluginManager",
    "build_parser",
    "entry",
    "exits_after_command",
    "main",
    "version_text",
]

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
    "olmkit.cli.cluster",
    "olmkit.cli.waiting",
    "olmkit.cli.run_bundle",
    "olmkit.cli.cache",
    "olmkit.cli.completion",
)

_OPERATORS: Final = ("olmkit.cli.operators",)

#: Which modules define each built-in command (``tests/cli/test_startup.py`` checks it
#: against what the modules really add).
COMMAND_HOMES: Mapping[str, tuple[str, ...]] = {
    "plugins": ("olmkit.cli.plugins",),
    "catalog": ("olmkit.cli.catalog",),
    "resolve": ("olmkit.cli.resolve",),
    "explain": ("olmkit.cli.resolve",),
    "bench": ("olmkit.cli.resolve",),
    "apply": ("olmkit.cli.apply",),
    "get": ("olmkit.cli.get",),
    "describe": ("olmkit.cli.describe",),
    "delete": ("olmkit.cli.delete",),
    **dict.fromkeys(("install", "uninstall", "approve", "list", "list-available"), _OPERATORS),
    "reconcile": ("olmkit.cli.lifecycle",),
    "run": ("olmkit.cli.lifecycle",),
    "serve": ("olmkit.cli.serve",),
    "cluster": ("olmkit.cli.cluster",),
    "wait": ("olmkit.cli.waiting",),
    "run-bundle": ("olmkit.cli.run_bundle",),
    "cache": ("olmkit.cli.cache",),
    "completion": ("olmkit.cli.completion",),
}

_DEBUG: Final = "--debug"
_PARSER_ATTR: Final = "_olmkit_parser"


class _ShortParseFailed(Exception):
    """The short parser (one command's module, no plugins) refused the arguments."""


def _parser_class() -> type[argparse.ArgumentParser]:
    import argparse

    class Parser(argparse.ArgumentParser):
        short = False

        def parse_known_args(  # type: ignore[override]
            self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
        ) -> tuple[argparse.Namespace, list[str]]:
            """Remember the innermost (sub)command parser, so errors about leftovers point at its help."""
            parsed, extras = super().parse_known_args(args, namespace)
            if not hasattr(parsed, _PARSER_ATTR):
                setattr(parsed, _PARSER_ATTR, self)
            return parsed, extras

        def error(self, message: str) -> NoReturn:
            """Usage errors: one line naming the (sub)command's help, and exit code 2."""
            if Parser.short:
                raise _ShortParseFailed(message)
            self.exit(2, f"olmkit: error: {message} (see '{self.prog} --help')\n")

    return Parser


def version_text() -> str:
    """What ``--version`` prints: the version, then the solver's implementation and backends."""
    from olmkit._solver.backends import describe

    return f"olmkit {__version__}\n{describe()}\n"


def _version_action() -> type[argparse.Action]:
    import argparse

    class Version(argparse.Action):
        """``--version`` anywhere on the top level: :func:`version_text`, then exit 0."""

        def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kwargs.get("help"))

        def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
            sys.stdout.write(version_text())
            parser.exit()

    return Version


def build_parser(pm: object | None = None, *, modules: Sequence[str] = COMMAND_MODULES) -> argparse.ArgumentParser:
    """Build the parser: the given command modules (all by default), then plugin commands.

    Args:
        pm: a plugin manager whose ``olmkit_add_commands`` hook adds plugin commands
            (``None``: built-in commands only).
        modules: the command modules to import.
    """
    import importlib

    parser_class = _parser_class()
    parser = parser_class(prog="olmkit", description="The Operator Lifecycle Manager as a pluggable toolkit.")
    parser.add_argument("--version", action=_version_action(), help="show the version and exit")
    parser.add_argument(_DEBUG, action="store_true", help="show tracebacks for errors (also after the command)")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=parser_class)
    for name in modules:
        importlib.import_module(name).add_commands(subparsers)
    if pm is not None:
        pm.hook.olmkit_add_commands(subparsers=subparsers)  # type: ignore[attr-defined]
    return parser


class LazyPluginManager:
    """Stands in for the plugin manager until a command first uses it, then loads it.

    Every attribute is the real manager's, so commands (and plugin commands) see no
    difference; a command that never touches ``pm`` never pays for loading plugins.
    """

    def __init__(self, factory: Callable[[], PluginManager] | None = None) -> None:
        self._factory = factory
        self._pm: PluginManager | None = None

    @property
    def loaded(self) -> bool:
        """Whether the real manager has been loaded."""
        return self._pm is not None

    def load(self) -> PluginManager:
        """The real plugin manager (loaded on first call)."""
        if self._pm is None:
            if self._factory is not None:
                self._pm = self._factory()
            else:
                from olmkit import manager  # looked up at call time, so tests can patch it

                self._pm = manager.get_plugin_manager()
        return self._pm

    def __getattr__(self, name: str) -> Any:
        return getattr(self.load(), name)


def _command_word(argv: Sequence[str]) -> str | None:
    """The first argument that is not an option: the command (``None`` for none)."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _without_debug(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--debug`` (accepted anywhere before ``--``), and whether it was there."""
    out: list[str] = []
    debug = False
    for index, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[index:])
            break
        if arg == _DEBUG:
            debug = True
        else:
            out.append(arg)
    return out, debug


def _parse(argv: list[str], pm: LazyPluginManager) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """Parse with only the command's own module when it is a built-in, else with everything."""
    word = _command_word(argv)
    homes = COMMAND_HOMES.get(word) if word is not None else None
    if homes is not None:
        parser = build_parser(None, modules=homes)
        parser_class: Any = type(parser)
        parser_class.short = True
        try:
            return parser, _parse_all(parser, argv)
        except _ShortParseFailed:
            pass  # a plugin may extend this command: the full parser says what is wrong
        finally:
            parser_class.short = False
    parser = build_parser(pm.load())
    return parser, _parse_all(parser, argv)


def _parse_all(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parse_args``, but leftover arguments are reported by the subcommand that was given them."""
    args, extras = parser.parse_known_args(argv)
    innermost = vars(args).pop(_PARSER_ATTR, parser)
    if extras:
        innermost.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


_DEFAULT_SHOWWARNING: Final = warnings.showwarning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """olmkit's own warnings (a plugin that failed to load ...) as one line, without a source line."""
    from olmkit.errors import OlmkitWarning

    if issubclass(category, OlmkitWarning):
        sys.stderr.write(f"olmkit: warning: {message}\n")
    else:
        _DEFAULT_SHOWWARNING(message, category, filename, lineno, file, line)


_exits_after_command = False


def exits_after_command() -> bool:
    """Whether the process leaves as soon as the command returns (the ``olmkit`` program).

    A one-shot command may then skip work whose only use is a long life: collecting
    the garbage of a large heap, for one.
    """
    return _exits_after_command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Cache writes the command deferred (see :func:`olmkit.catalog.defer_writes`) are done
    before it returns.
    """
    try:
        return _main(argv)
    finally:
        _finish_writes(detach=False)


def entry() -> NoReturn:
    """The ``olmkit`` program: :func:`main`, then a quick exit.

    The code attrs generates for olmkit's classes is read from (and written to) a cache
    beside the byte code (:mod:`olmkit._attrs_code`). Cache writes the command deferred are
    left to a forked child, and the process leaves
    without freeing its heap object by object (after loading a large catalog, that alone
    takes over half a second), once the exit handlers have run and the output is flushed.
    With other threads still running, the ordinary exit.
    """
    global _exits_after_command
    _exits_after_command = True
    try:
        code = _main(None)
    except BaseException:
        _finish_writes(detach=False)
        raise
    _finish_writes(detach=True)
    attrs_code = sys.modules.get("olmkit._attrs_code")
    if attrs_code is not None:
        attrs_code.save()
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can be said
            stream.flush()
    os._exit(code)


def _finish_writes(*, detach: bool) -> None:
    catalog = sys.modules.get("olmkit.catalog")  # a command that never loaded it deferred nothing
    if catalog is not None and catalog.deferring():
        catalog.finish_writes(detach=detach, directory=catalog.cache_dir())


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # the fast path of the commonest probe: no parser
        sys.stdout.write(version_text())
        return 0
    if _exits_after_command:  # the program: the methods attrs generates are compiled once for all runs
        from olmkit import _attrs_code

        _attrs_code.install()
    argv, debug = _without_debug(argv)
    debug = debug or bool(os.environ.get("OLMKIT_DEBUG"))
    from olmkit.errors import OlmkitError

    pm = LazyPluginManager()
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        try:
            parser, args = _parse(argv, pm)
        except SystemExit as exc:  # a usage error (printed already), --help or --version: return its code
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        if debug:
            args.debug = True
        func = getattr(args, "func", None)
        if func is None:  # no command: the help of every command, plugins' too
            (parser if pm.loaded else build_parser(pm.load())).print_help(sys.stderr)
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
        plugin = pm.culprit(exc) if pm.loaded else None
        if plugin is not None:
            sys.stderr.write(f"olmkit: error: plugin {plugin!r} failed: {exc!r} (run with --debug for the traceback)\n")
        else:
            sys.stderr.write(f"olmkit: internal error: {exc!r} (run with --debug for the traceback)\n")
        return 70
    finally:
        warnings.showwarning = previous
