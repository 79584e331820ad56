"""The plugin manager: built-ins by module name, third-party plugins by entry point.

* Built-in plugins are listed by module name in :data:`BUILTIN_PLUGINS`; the kernel
  never imports :mod:`olmkit.plugins` itself.
* Third-party plugins come from the ``olmkit`` entry-point group; one that fails to
  import is reported with a :class:`PluginLoadWarning` (one line: the plugin, its
  distribution and the error) and skipped.
* ``OLMKIT_DISABLE_PLUGINS=a,b`` switches plugins off (full or short name); a name there
  that is no plugin is warned about (:class:`PluginLoadWarning`), with the close one.
* ``OLMKIT_TRACE_PLUGINS=1`` writes every hook call to stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, Final

import attrs
import pluggy

from olmkit import PROJECT_NAME, _entry_points, hookspecs
from olmkit.errors import OlmkitWarning, PluginError
from olmkit.registry import Registry

__all__ = [
    "BUILTIN_PLUGINS",
    "ENTRY_POINT_GROUP",
    "KERNEL_PLUGINS",
    "PluginInfo",
    "PluginLoadWarning",
    "PluginManager",
    "get_plugin_manager",
]

ENTRY_POINT_GROUP: Final = "olmkit"

#: Parts of the kernel that implement hooks themselves (always registered).
KERNEL_PLUGINS: tuple[str, ...] = ("olmkit.resolver", "olmkit.lifecycle.controllers")

#: The built-in plugins, by module name: everything OLM means is registered here.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "olmkit.plugins.properties",
    "olmkit.plugins.sources",
    "olmkit.plugins.requirements",
    "olmkit.plugins.bundle_format",
    "olmkit.plugins.templates",
    "olmkit.plugins.deployment",
    "olmkit.plugins.install_modes",
    "olmkit.plugins.bundle_content",
    "olmkit.plugins.simulated",
    "olmkit.plugins.admission",
    "olmkit.plugins.grpc_registry",
    "olmkit.plugins.metrics",
)

#: what pluggy may take for a hook implementation (anything else in a module is passed over)
_HOOKABLE: Final = (types.FunctionType, types.MethodType, classmethod, staticmethod)
_ABSENT: Final = object()

DISABLE_ENV: Final = "OLMKIT_DISABLE_PLUGINS"
TRACE_ENV: Final = "OLMKIT_TRACE_PLUGINS"


class PluginLoadWarning(OlmkitWarning):
    """A third-party plugin could not be loaded and was skipped, or a disabled name is no plugin."""


@attrs.frozen
class PluginInfo:
    """What ``olmkit plugins list`` shows of one plugin."""

    name: str
    origin: str  # "kernel", "built-in", "distribution" or "registered"
    distribution: str | None
    version: str | None
    hooks: tuple[str, ...]
    registers: dict[str, list[str]]


@attrs.frozen
class _Origin:
    origin: str
    distribution: str | None = None
    version: str | None = None
    #: the distribution's metadata directory, read for its name and version when asked
    metadata: str | None = None

    def described(self) -> tuple[str | None, str | None]:
        """The distribution's name and version."""
        if self.metadata is None:
            return self.distribution, self.version
        return _described(_entry_points.distribution_of(self.metadata)) or (None, None)


def _described(dist: Any) -> tuple[str | None, str | None] | None:
    """A distribution's name and version (``None`` for no distribution)."""
    return (dist.metadata["Name"], dist.version) if dist else None


def _described_entry_point(ep: Any) -> tuple[str | None, str | None] | None:
    """The name and version of an :mod:`importlib.metadata` entry point's distribution."""
    return _described(ep.dist)


def _disabled() -> frozenset[str]:
    raw = os.environ.get(DISABLE_ENV, "")
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class PluginManager(pluggy.PluginManager):
    """pluggy's manager plus olmkit's loading rules and the registry."""

    def __init__(self) -> None:
        super().__init__(PROJECT_NAME)
        self.add_hookspecs(hookspecs)
        self._origins: dict[str, _Origin] = {}
        self._registry: Registry | None = None
        self.disabled: frozenset[str] = _disabled()
        self.load_failures: list[tuple[str, str]] = []
        #: every plugin name seen while loading (registered, disabled or broken)
        self.known_names: set[str] = set()
        if os.environ.get(TRACE_ENV):
            self.trace.root.setwriter(sys.stderr.write)
            self.enable_tracing()

    # -- registration ---------------------------------------------------------------

    def is_disabled(self, name: str) -> bool:
        """Whether ``OLMKIT_DISABLE_PLUGINS`` names this plugin (full or short name)."""
        return name in self.disabled or _short(name) in self.disabled

    def register(self, plugin: Any, name: str | None = None, *, origin: str = "registered") -> str | None:
        """Register a plugin object; returns its name, or ``None`` if it is disabled."""
        name = name or self.get_canonical_name(plugin)
        if self.is_disabled(name):
            return None
        registered = super().register(plugin, name)
        if registered is not None:
            self._origins.setdefault(registered, _Origin(origin))
            self._registry = None
        return registered

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's answer, but a module's plain values (classes, constants, submodules) are passed
        over at once: pluggy considers only functions, methods, classmethods and staticmethods, and
        looks at each name of a plugin module through :func:`inspect.getattr_static` (a few ms per
        command for the built-in plugins' names)."""
        if type(plugin) is types.ModuleType:
            value = plugin.__dict__.get(name, _ABSENT)
            if value is not _ABSENT and not isinstance(value, _HOOKABLE):
                return None
        return super().parse_hookimpl_opts(plugin, name)

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        """Unregister a plugin (by object or name) and drop the cached registry."""
        result = super().unregister(plugin, name)
        self._registry = None
        return result

    def load_modules(self, names: Iterable[str], *, origin: str) -> None:
        """Import and register plugin modules by name (built-in or kernel plugins).

        Raises:
            PluginError: a built-in module fails to import (that is a bug in olmkit).
        """
        for name in names:
            self.known_names.add(name)
            if self.is_disabled(name) or self.has_plugin(name):
                continue
            try:
                module = importlib.import_module(name)
            except ImportError as exc:
                raise PluginError(f"cannot import built-in plugin: {exc}", plugin=name) from exc
            self.register(module, name, origin=origin)

    def load_entrypoints(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Load third-party plugins from an entry-point group; broken ones are skipped."""
        found = _entry_points.entry_points(group)
        if found is None:  # a layout only importlib.metadata reads
            import importlib.metadata

            for ep in importlib.metadata.entry_points(group=group):
                self._load_entrypoint(ep.name, ep.value, ep.load, partial(_described_entry_point, ep))
            return
        for point in found:
            origin = _Origin("distribution", metadata=point.metadata)
            self._load_entrypoint(point.name, point.value, partial(_entry_points.load, point), origin.described, origin)

    def _load_entrypoint(
        self,
        name: str,
        value: str,
        load: Callable[[], Any],
        distribution: Callable[[], tuple[str | None, str | None] | None],
        origin: _Origin | None = None,
    ) -> None:
        self.known_names.add(name)
        if self.is_disabled(name) or self.has_plugin(name):
            return
        try:
            plugin = load()
        except Exception as exc:  # a third-party plugin must never break olmkit
            dist = distribution()
            where = f"distribution {dist[0]} {dist[1]}, " if dist is not None else ""
            message = (
                f"plugin {name!r} ({where}{value}) failed to import and is skipped: "
                f"{type(exc).__name__}: {exc} (OLMKIT_DISABLE_PLUGINS={name} silences this)"
            )
            self.load_failures.append((name, message))
            warnings.warn(message, PluginLoadWarning, stacklevel=3)
            return
        self.register(plugin, name)
        if origin is None:
            dist = distribution()
            origin = _Origin("distribution", *(dist or (None, None)))
        self._origins[name] = origin

    def warn_unknown_disabled(self) -> list[str]:
        """Warn about names in ``OLMKIT_DISABLE_PLUGINS`` that match no plugin; returns them."""
        known = self.known_names | {name for name, _ in self.list_name_plugin()}
        candidates = known | {_short(name) for name in known}
        unknown = sorted(
            name for name in self.disabled if name not in candidates and not any(_short(k) == name for k in known)
        )
        if unknown:
            import difflib
        for name in unknown:
            close = difflib.get_close_matches(name, sorted(candidates), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            warnings.warn(
                f"{DISABLE_ENV} names {name!r}, which is no plugin{hint}; known: {', '.join(sorted(candidates))}",
                PluginLoadWarning,
                stacklevel=2,
            )
        return unknown

    # -- the registry ---------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """All registration records, collected once (again after (un)registration)."""
        if self._registry is None:
            self._registry = Registry.collect(self)
        return self._registry

    def plugin_info(self) -> list[PluginInfo]:
        """Describe every registered plugin: origin, hooks implemented, names registered."""
        registry = self.registry
        by_plugin: dict[str, dict[str, list[str]]] = {}
        for (kind, name), owner in registry.owners.items():
            by_plugin.setdefault(owner, {}).setdefault(kind, []).append(name)
        infos = []
        for name, plugin in self.list_name_plugin():
            if plugin is None:
                continue
            hooks = tuple(sorted(impl.name for impl in self.get_hookcallers(plugin) or ()))
            origin = self._origins.get(name, _Origin("registered"))
            distribution, version = origin.described()
            infos.append(
                PluginInfo(
                    name=name,
                    origin=origin.origin,
                    distribution=distribution,
                    version=version,
                    hooks=hooks,
                    registers={k: sorted(v) for k, v in sorted(by_plugin.get(name, {}).items())},
                )
            )
        return infos

    def culprit(self, exc: BaseException) -> str | None:
        """The plugin whose code raised ``exc``: the innermost traceback frame in a plugin module.

        A plugin's hooks and the callables of its registration records (parsers, predicates,
        checks, controllers) run inside olmkit's own code; when one of them raises something
        that is not an :class:`~olmkit.errors.OlmkitError`, this names the plugin to blame, so
        the failure is reported as the plugin's, not as olmkit's. ``None`` when no plugin
        module is on the traceback (the kernel's own hook implementations do not count).

        .. versionadded:: 0.2
        """
        modules: dict[str, str] = {}
        for name, plugin in self.list_name_plugin():
            if plugin is None or self._origins.get(name, _Origin("registered")).origin == "kernel":
                continue  # the kernel's own hook implementations are olmkit, not a plugin
            module = getattr(plugin, "__name__", None) if isinstance(plugin, types.ModuleType) else None
            module = module or getattr(type(plugin), "__module__", None)
            if module and module != "builtins":
                modules.setdefault(module, name)
        found = None
        tb = exc.__traceback__
        while tb is not None:
            module = tb.tb_frame.f_globals.get("__name__", "")
            while module:
                if module in modules:
                    found = modules[module]
                    break
                module = module.rpartition(".")[0]
            tb = tb.tb_next
        return found


def get_plugin_manager(*, builtins: bool = True, entrypoints: bool = True) -> PluginManager:
    """Return a fresh plugin manager.

    Args:
        builtins: register the built-in plugins (OLM's own meaning).
        entrypoints: load third-party plugins from the ``olmkit`` entry-point group.
    """
    pm = PluginManager()
    pm.load_modules(KERNEL_PLUGINS, origin="kernel")
    if builtins:
        pm.load_modules(BUILTIN_PLUGINS, origin="built-in")
    if entrypoints:
        pm.load_entrypoints()
    if builtins and entrypoints:  # only then is every plugin name known
        pm.warn_unknown_disabled()
    return pm
