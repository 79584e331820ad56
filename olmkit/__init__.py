"""olmkit: the Operator Lifecycle Manager as a small pluggable kernel plus built-in plugins.

The public API a plugin author needs is re-exported here: the ``hookimpl`` marker,
the registration record types (see :mod:`olmkit.types`) and :func:`get_plugin_manager`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["PROJECT_NAME", "__version__", "get_plugin_manager", "hookimpl", "hookspec"]

__version__ = "0.1.0"

PROJECT_NAME = "olmkit"

if TYPE_CHECKING:
    import pluggy

    from olmkit.manager import PluginManager

    hookspec: pluggy.HookspecMarker
    hookimpl: pluggy.HookimplMarker


def __getattr__(name: str) -> Any:
    """``hookspec`` and ``hookimpl``, made on first use: ``olmkit --version`` need not import pluggy."""
    if name in ("hookspec", "hookimpl"):
        import pluggy

        markers = {"hookspec": pluggy.HookspecMarker(PROJECT_NAME), "hookimpl": pluggy.HookimplMarker(PROJECT_NAME)}
        globals().update(markers)
        return markers[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_plugin_manager(**kwargs: Any) -> PluginManager:
    """Return a plugin manager with the built-in and installed plugins (see :mod:`olmkit.manager`)."""
    from olmkit.manager import get_plugin_manager as _get

    return _get(**kwargs)
