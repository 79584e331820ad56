"""A pytest plugin for plugin authors (opt in with ``pytest_plugins = ["olmkit.testing"]``).

Fixtures:
    olmkit_pm: a fresh plugin manager with the built-in plugins (no third-party ones).
    olmkit_bare_pm: a plugin manager with the hook specs only: no built-ins.
    olmkit_register: ``olmkit_register(plugin, name=None)`` registers a throwaway plugin
        on ``olmkit_pm`` for one test.
    hook_recorder: records every hook call made through ``olmkit_pm``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import pytest
from pluggy import HookImpl, Result

from olmkit.manager import PluginManager, get_plugin_manager

__all__ = ["HookCall", "HookRecorder", "assert_installed", "assert_unsatisfiable"]


@attrs.frozen
class HookCall:
    """One recorded hook call: the hook's name and its keyword arguments."""

    name: str
    kwargs: dict[str, Any]


@attrs.define
class HookRecorder:
    """Records hook calls made through a plugin manager until ``undo()``."""

    calls: list[HookCall] = attrs.field(factory=list)
    _undo: Callable[[], None] | None = None

    def attach(self, pm: PluginManager) -> None:
        """Start recording on ``pm``."""

        def before(hook_name: str, hook_impls: Sequence[HookImpl], kwargs: Mapping[str, Any]) -> None:
            self.calls.append(HookCall(hook_name, dict(kwargs)))

        def after(
            outcome: Result[Any], hook_name: str, hook_impls: Sequence[HookImpl], kwargs: Mapping[str, Any]
        ) -> None:
            return None

        self._undo = pm.add_hookcall_monitoring(before, after)

    def undo(self) -> None:
        """Stop recording."""
        if self._undo is not None:
            self._undo()
            self._undo = None

    def names(self) -> list[str]:
        """Names of the recorded hooks, in call order."""
        return [call.name for call in self.calls]

    def calls_of(self, name: str) -> list[HookCall]:
        """The recorded calls of one hook."""
        return [call for call in self.calls if call.name == name]


@pytest.fixture
def olmkit_pm() -> PluginManager:
    """A fresh plugin manager with the built-in plugins only."""
    return get_plugin_manager(entrypoints=False)


@pytest.fixture
def olmkit_bare_pm() -> PluginManager:
    """A plugin manager with the hook specifications and the kernel only."""
    return get_plugin_manager(builtins=False, entrypoints=False)


@pytest.fixture
def olmkit_register(olmkit_pm: PluginManager) -> Iterator[Callable[..., str | None]]:
    """Register a throwaway plugin on ``olmkit_pm`` for the duration of one test."""
    registered: list[Any] = []

    def register(plugin: Any, name: str | None = None) -> str | None:
        registered.append(plugin)
        return olmkit_pm.register(plugin, name)

    yield register
    for plugin in registered:
        if olmkit_pm.is_registered(plugin):
            olmkit_pm.unregister(plugin)


@pytest.fixture
def hook_recorder(olmkit_pm: PluginManager) -> Iterator[HookRecorder]:
    """Record every hook call made through ``olmkit_pm``."""
    recorder = HookRecorder()
    recorder.attach(olmkit_pm)
    yield recorder
    recorder.undo()


@pytest.fixture
def make_catalog(olmkit_pm: PluginManager, tmp_path: Any) -> Callable[..., Any]:
    """``make_catalog(blobs, name="test", pm=None)``: write FBC blobs to a tmp dir and load them.

    ``blobs`` is a list of mappings (one JSON line each) or a mapping ``{relative file: [blobs]}``.
    Returns the loaded :class:`olmkit.catalog.Catalog` (no on-disk cache).
    """
    import orjson

    from olmkit.catalog import load_catalog

    def make(blobs: Any, name: str = "test", pm: PluginManager | None = None) -> Any:
        root = tmp_path / name
        files = blobs if isinstance(blobs, dict) else {"catalog.json": blobs}
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in content))
        return load_catalog(root, (pm or olmkit_pm).registry, name=name, cache=False)

    return make


@attrs.define
class _LoadedSource:
    """A catalog source around an already loaded catalog (for tests)."""

    name: str
    catalog: Any

    def load(self) -> Any:
        return self.catalog


@pytest.fixture
def resolve(olmkit_pm: PluginManager) -> Callable[..., Any]:
    """``resolve(subscriptions, catalogs, installed=(), namespace="operators")``: resolve a namespace.

    ``subscriptions`` are ``"pkg"`` / ``"pkg/channel"`` strings or SubscriptionRef values (a string
    subscribes through the first catalog); ``catalogs`` are loaded catalogs (see ``make_catalog``)
    or ``(catalog, namespace, priority)`` tuples; ``installed`` are InstalledCSV values.
    Returns the :class:`olmkit.resolver.Resolution`.
    """
    from olmkit.resolver import ResolutionRequest, SourceRef, SubscriptionRef

    def run(
        subscriptions: Sequence[Any],
        catalogs: Sequence[Any],
        installed: Sequence[Any] = (),
        namespace: str = "operators",
    ) -> Any:
        refs = []
        for item in catalogs:
            catalog, ns, priority = item if isinstance(item, tuple) else (item, namespace, 0)
            refs.append(SourceRef(catalog.name, ns, _LoadedSource(catalog.name, catalog), priority))
        subs = []
        for sub in subscriptions:
            if isinstance(sub, str):
                package, _, channel = sub.partition("/")
                sub = SubscriptionRef(
                    name=package,
                    package=package,
                    channel=channel,
                    source=refs[0].name,
                    source_namespace=refs[0].namespace,
                )
            subs.append(sub)
        request = ResolutionRequest(
            namespace=namespace, registry=olmkit_pm.registry, subscriptions=subs, installed=installed, sources=refs
        )
        return olmkit_pm.hook.olmkit_resolve(request=request)

    return run


def assert_installed(resolution: Any, *bundles: str) -> None:
    """The resolution succeeded and its steps are exactly ``bundles`` (names, in order)."""
    assert "ok" == resolution.status, resolution.message
    assert list(bundles) == [step.bundle for step in resolution.steps]


def assert_unsatisfiable(resolution: Any, *fragments: str) -> None:
    """The resolution is unsatisfiable and its message contains every fragment."""
    assert "unsatisfiable" == resolution.status, resolution.status
    for fragment in fragments:
        assert fragment in (resolution.message or ""), resolution.message
