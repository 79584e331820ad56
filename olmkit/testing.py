"""A pytest plugin for plugin authors (opt in with ``pytest_plugins = ["olmkit.testing"]``).

Fixtures:
    olmkit_pm: a fresh plugin manager with the built-in plugins (no third-party ones).
    olmkit_bare_pm: a plugin manager with the hook specs only: no built-ins.
    olmkit_register: ``olmkit_register(plugin, name=None)`` registers a throwaway plugin
        on ``olmkit_pm`` for one test.
    hook_recorder: records every hook call made through ``olmkit_pm``.
    make_catalog, resolve: build a small catalog and resolve subscriptions against it.
    embedded_cluster: an :class:`EmbeddedCluster` (SQLite store in ``tmp_path``, the controllers
        of ``olmkit_pm``'s plugins, a fake clock) for testing install strategies, controllers,
        admission checks and catalog sources end to end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from pluggy import HookImpl, Result

from olmkit.lifecycle import FakeClock, LifecycleOptions, Reporter, RunOutcome, build_manager
from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION
from olmkit.lifecycle.kinds import resolve_kind
from olmkit.manager import PluginManager, get_plugin_manager
from olmkit.store import NotFound, SqliteStore, Store

__all__ = ["EmbeddedCluster", "EventRecorder", "HookCall", "HookRecorder", "assert_installed", "assert_unsatisfiable"]


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
    """``resolve(subscriptions, catalogs, installed=(), namespace="operators", backend=None)``: resolve a namespace.

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
        backend: str | None = None,
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
            namespace=namespace,
            registry=olmkit_pm.registry,
            subscriptions=subs,
            installed=installed,
            sources=refs,
            backend=backend,
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


# --------------------------------------------------------------------------- an embedded cluster

V1ALPHA1 = "operators.coreos.com/v1alpha1"


class EventRecorder(Reporter):
    """Keeps every event and error message."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.errors: list[str] = []

    def on_event(self, message: str) -> None:
        self.events.append(message)

    def on_error(self, key: Any, error: BaseException, attempt: int, retry_in: float) -> None:
        self.errors.append(f"{key}: {error}")


class EmbeddedCluster:
    """An embedded cluster for tests: an SQLite store, every plugin's controllers, a fake clock.

    ``reconcile()`` runs the controllers until nothing is pending; waits (install timeouts,
    retries, catalog polls after ``clock.advance``) cost no real time. Events and errors the
    controllers report are kept in ``reporter.events`` and ``reporter.errors``.

    The store is an SQLite file at ``path``, or ``store`` when given (any backend; the cluster
    closes it).

    .. versionadded:: 0.1
    .. versionchanged:: 0.2
       ``store``: run on a store of any backend.
    """

    def __init__(
        self,
        path: Path | None,
        pm: Any,
        *,
        store: Store | None = None,
        kubelet: bool = True,
        install_timeout: float = 300.0,
        protected_copied_csv_namespaces: Sequence[str] = (),
    ) -> None:
        if store is None and path is None:
            raise TypeError("EmbeddedCluster needs an SQLite path or a store")
        self.store: Store = store if store is not None else SqliteStore(str(path))
        self.pm = pm
        self.clock = FakeClock()
        self.reporter = EventRecorder()
        self.manager = build_manager(
            self.store,
            pm,
            options=LifecycleOptions(
                install_timeout=install_timeout,
                simulate_kubelet=kubelet,
                protected_copied_csv_namespaces=tuple(protected_copied_csv_namespaces),
            ),
            clock=self.clock,
            reporter=self.reporter,
        )

    # -- writing ------------------------------------------------------------------------

    def apply(self, *objs: Mapping[str, Any]) -> None:
        """Create each object, or replace the spec of an existing one."""
        for obj in objs:
            kind = resolve_kind(obj["kind"])
            meta = obj["metadata"]
            try:
                current = self.store.get(obj["apiVersion"], kind.kind, meta["name"], meta.get("namespace"))
            except NotFound:
                self.store.create(dict(obj))
                continue
            self.store.update({**current, **{k: v for k, v in obj.items() if k not in ("metadata", "status")}})

    def catalog_source(
        self, name: str, path: Path, *, namespace: str = "olm", priority: int = 0, poll: str = ""
    ) -> None:
        spec: dict[str, Any] = {"sourceType": "file", "path": str(path), "priority": priority}
        if poll:
            spec["updateStrategy"] = {"registryPoll": {"interval": poll}}
        self.apply(
            {
                "apiVersion": V1ALPHA1,
                "kind": "CatalogSource",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "annotations": {MANIFEST_DIR_ANNOTATION: str(path.parent)},
                },
                "spec": spec,
            }
        )

    def operator_group(
        self, namespace: str = "operators", name: str = "og", *, targets: Sequence[str] | None = None
    ) -> None:
        """An OperatorGroup: global, or watching ``targets``."""
        self.apply(
            {
                "apiVersion": "operators.coreos.com/v1",
                "kind": "OperatorGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"targetNamespaces": list(targets)} if targets else {},
            }
        )

    def subscribe(
        self,
        package: str,
        *,
        channel: str = "",
        source: str = "examples",
        namespace: str = "operators",
        approval: str = "",
        starting_csv: str = "",
        source_namespace: str = "olm",
    ) -> None:
        spec = {"name": package, "source": source, "sourceNamespace": source_namespace}
        if channel:
            spec["channel"] = channel
        if approval:
            spec["installPlanApproval"] = approval
        if starting_csv:
            spec["startingCSV"] = starting_csv
        self.apply(
            {
                "apiVersion": V1ALPHA1,
                "kind": "Subscription",
                "metadata": {"name": package, "namespace": namespace},
                "spec": spec,
            }
        )

    def approve(self, plan: str, namespace: str = "operators") -> None:
        """Approve an InstallPlan, as ``olmkit approve`` does."""
        obj = self.get("ip", plan, namespace)
        obj["spec"]["approved"] = True
        self.store.update(obj)

    # -- running ------------------------------------------------------------------------

    def reconcile(self, timeout: float = 3600.0) -> RunOutcome:
        """Run the controllers until stable (on the fake clock)."""
        return self.manager.run_until_stable(timeout=timeout)

    # -- reading ------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str | None = "operators") -> dict[str, Any]:
        k = resolve_kind(kind, self.store)
        return self.store.get(k.api_version, k.kind, name, namespace)

    def exists(self, kind: str, name: str, namespace: str | None = "operators") -> bool:
        try:
            self.get(kind, name, namespace)
        except NotFound:
            return False
        return True

    def names(self, kind: str, namespace: str | None = "operators") -> list[str]:
        k = resolve_kind(kind, self.store)
        return [o["metadata"]["name"] for o in self.store.list(k.api_version, k.kind, namespace)]

    def phase(self, csv: str, namespace: str = "operators") -> str:
        return str((self.get("csv", csv, namespace).get("status") or {}).get("phase"))

    def plans(self, namespace: str = "operators") -> list[dict[str, Any]]:
        plans = list(self.store.list(V1ALPHA1, "InstallPlan", namespace))
        return sorted(plans, key=lambda p: int(p["spec"].get("generation") or 0))

    def condition(self, obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
        for cond in (obj.get("status") or {}).get("conditions") or ():
            if cond.get("type") == type_:
                return dict(cond)
        return None

    def close(self) -> None:
        self.manager.close()
        self.store.close()


@pytest.fixture
def embedded_cluster(olmkit_pm: PluginManager, tmp_path: Any) -> Iterator[EmbeddedCluster]:
    """An :class:`EmbeddedCluster` on ``olmkit_pm`` (register your plugin first)."""
    cluster = EmbeddedCluster(tmp_path / "cluster.db", olmkit_pm)
    yield cluster
    cluster.close()
