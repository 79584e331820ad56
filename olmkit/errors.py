"""The exception hierarchy of olmkit.

Everything olmkit raises on purpose derives from :class:`OlmkitError`. Exceptions
carry structured fields and build their message from them, so that a command line
front end can print one clear line and a program can inspect the fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

__all__ = [
    "BundleError",
    "CatalogError",
    "InputError",
    "InvalidBundleError",
    "OlmkitError",
    "OlmkitWarning",
    "PluginConflictError",
    "PluginError",
    "ResolutionError",
    "UsageError",
]


class OlmkitWarning(UserWarning):
    """Base class of the warnings olmkit issues; the command line prints each as one line.

    .. versionadded:: 0.1
    """


def _lines(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@attrs.define(auto_exc=True, eq=False)
class OlmkitError(Exception):
    """Base class of every error olmkit raises on purpose.

    ``exit_code`` is what the command line exits with when the error reaches it.
    """

    message: str = ""
    exit_code: int = attrs.field(default=2, kw_only=True)

    def __str__(self) -> str:
        return self.message


@attrs.define(auto_exc=True, eq=False)
class UsageError(OlmkitError):
    """The user asked for something that cannot be done as asked (bad flag, unknown name)."""


@attrs.define(auto_exc=True, eq=False)
class InputError(OlmkitError):
    """An input file or object is unreadable or malformed.

    Args:
        message: what is wrong.
        path: the file it came from, when known.
        line: the line in that file, when known.
        obj: the object (``kind/name``, blob name, ...) it concerns, when known.
    """

    path: str | None = attrs.field(default=None, kw_only=True)
    line: int | None = attrs.field(default=None, kw_only=True)
    obj: str | None = attrs.field(default=None, kw_only=True)

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line}" if self.line else "")
        parts = [p for p in (where, self.obj) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


@attrs.define(auto_exc=True, eq=False)
class BundleError(InputError):
    """A bundle cannot be read: a missing or unreadable file, malformed YAML or JSON.

    Exit code 2, like every unreadable input. ``path`` names the file (or the bundle
    directory), ``obj`` the object when known.

    .. versionadded:: 0.1
    """


@attrs.define(auto_exc=True, eq=False)
class InvalidBundleError(BundleError):
    """A bundle can be read but breaks its format's rules (no channel, two CSVs ...).

    Exit code 1, like an invalid catalog. ``problems`` lists every rule the bundle
    breaks, each a complete sentence naming its file and object; the message shows them all.

    Args:
        message: a summary (``bundle DIR is invalid``).
        problems: one line per broken rule.

    .. versionadded:: 0.1
    """

    problems: Sequence[str] = attrs.field(default=(), kw_only=True, converter=_lines)
    exit_code: int = attrs.field(default=1, kw_only=True)

    def __str__(self) -> str:
        head = super().__str__()
        if not self.problems:
            return head
        return head + ":\n  " + "\n  ".join(self.problems)


@attrs.define(auto_exc=True, eq=False)
class PluginError(OlmkitError):
    """A plugin failed to load or broke its contract.

    Args:
        message: what went wrong.
        plugin: the plugin's name.
    """

    plugin: str = attrs.field(default="", kw_only=True)

    def __str__(self) -> str:
        return f"plugin {self.plugin!r}: {self.message}" if self.plugin else self.message


@attrs.define(auto_exc=True, eq=False)
class PluginConflictError(PluginError):
    """Two plugins registered the same name for one extension point.

    Args:
        kind: the extension point (``property type``, ``catalog source type`` ...).
        name: the name both claim.
        plugins: the plugins that claim it, first registrant first.
    """

    kind: str = attrs.field(default="", kw_only=True)
    name: str = attrs.field(default="", kw_only=True)
    plugins: Sequence[str] = attrs.field(default=(), kw_only=True)

    def __str__(self) -> str:
        who = " and ".join(repr(p) for p in self.plugins)
        short = ",".join(p.rsplit(".", 1)[-1] for p in self.plugins[1:]) or "NAME"
        return (
            f"{self.kind} {self.name!r} is registered by both {who}; "
            f"switch one off, e.g. OLMKIT_DISABLE_PLUGINS={short}"
        )


@attrs.define(auto_exc=True, eq=False)
class CatalogError(OlmkitError):
    """A catalog could not be loaded or is invalid."""


@attrs.define(auto_exc=True, eq=False)
class ResolutionError(OlmkitError):
    """Resolution could not produce an answer (exit code 1 on the command line)."""

    exit_code: int = attrs.field(default=1, kw_only=True)
