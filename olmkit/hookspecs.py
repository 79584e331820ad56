"""Hook specifications: every extension point of olmkit.

Sections follow the lifecycle: registration (collected once into the registry),
resolution, lifecycle events and the command line. Call hooks with keyword arguments
only, so a spec can gain a parameter without breaking plugins that accept fewer.

Registration hooks yield frozen records (:mod:`olmkit.types`). Two plugins yielding
the same name for one extension point is a :class:`~olmkit.errors.PluginConflictError`
naming both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olmkit import hookspec

if TYPE_CHECKING:
    import argparse

    from olmkit.types import (
        AdmissionCheck,
        BundleFormat,
        CatalogSourceType,
        CatalogTemplate,
        ConstraintEvaluator,
        InstallStrategy,
        PropertyType,
        SolverBackend,
    )

# --------------------------------------------------------------------------- registration


@hookspec
def olmkit_property_types() -> Iterable[PropertyType]:
    """Register property types that bundles may carry.

    Returns:
        An iterable of :class:`~olmkit.types.PropertyType`. A property whose type no
        plugin registers stays an opaque value.

    Example:
        @hookimpl
        def olmkit_property_types():
            yield PropertyType(name="example.io/tier", parse=str)
    """
    raise NotImplementedError


@hookspec
def olmkit_constraint_evaluators() -> Iterable[ConstraintEvaluator]:
    """Register keys of compound constraint objects (``gvk``, ``cel``, ``all`` ...).

    Returns:
        An iterable of :class:`~olmkit.types.ConstraintEvaluator`.

    Example:
        @hookimpl
        def olmkit_constraint_evaluators():
            yield ConstraintEvaluator(key="tier", build=build_tier_predicate)
    """
    raise NotImplementedError


@hookspec
def olmkit_install_strategies() -> Iterable[InstallStrategy]:
    """Register install strategies for ClusterServiceVersions.

    Returns:
        An iterable of :class:`~olmkit.types.InstallStrategy`.

    Example:
        @hookimpl
        def olmkit_install_strategies():
            yield InstallStrategy(name="helm", installer=HelmInstaller)
    """
    raise NotImplementedError


@hookspec
def olmkit_catalog_source_types() -> Iterable[CatalogSourceType]:
    """Register kinds of catalog source (``spec.sourceType`` of a CatalogSource).

    Returns:
        An iterable of :class:`~olmkit.types.CatalogSourceType`.

    Example:
        @hookimpl
        def olmkit_catalog_source_types():
            yield CatalogSourceType(name="http", open=HttpCatalogSource.open)
    """
    raise NotImplementedError


@hookspec
def olmkit_admission_checks() -> Iterable[AdmissionCheck]:
    """Register checks run before objects are written to the cluster store.

    Returns:
        An iterable of :class:`~olmkit.types.AdmissionCheck`.

    Example:
        @hookimpl
        def olmkit_admission_checks():
            yield AdmissionCheck(name="no-latest", check=refuse_latest_tags, kinds={"ClusterServiceVersion"})
    """
    raise NotImplementedError


@hookspec
def olmkit_solver_backends() -> Iterable[SolverBackend]:
    """Register SAT solver backends.

    Returns:
        An iterable of :class:`~olmkit.types.SolverBackend`.

    Example:
        @hookimpl
        def olmkit_solver_backends():
            yield SolverBackend(name="minisat", factory=MiniSatBackend)
    """
    raise NotImplementedError


@hookspec
def olmkit_bundle_formats() -> Iterable[BundleFormat]:
    """Register ways bundles are packaged (directories, archives ...).

    ``olmkit catalog render`` hands each path to the first format whose ``accepts``
    says yes (anything else is read as a catalog); catalog templates resolve bundle
    references the same way; the lifecycle reads a bundle's manifests through
    :func:`olmkit.catalog.bundles.read_bundle`, which asks the same formats. Formats are
    asked in hook call order: ``tryfirst`` ones first, then later-registered plugins
    before the built-ins.

    Returns:
        An iterable of :class:`~olmkit.types.BundleFormat`.

    Example:
        @hookimpl
        def olmkit_bundle_formats():
            yield BundleFormat(name="tarball", accepts=lambda ref: ref.endswith(".tar"), read=read_tarball)
    """
    raise NotImplementedError


@hookspec
def olmkit_catalog_templates() -> Iterable[CatalogTemplate]:
    """Register catalog templates (``olmkit catalog render-template``), one per schema.

    Returns:
        An iterable of :class:`~olmkit.types.CatalogTemplate`.

    Example:
        @hookimpl
        def olmkit_catalog_templates():
            yield CatalogTemplate(schema="example.io/one-channel", render=render_one_channel)
    """
    raise NotImplementedError


# --------------------------------------------------------------------------- resolution


@hookspec(firstresult=True)
def olmkit_resolve(request: Any) -> Any:
    """Resolve one namespace; the first non-``None`` answer wins.

    The kernel's resolver implements it; plugins wrap it (``@hookimpl(wrapper=True)``)
    to time, log or post-process resolutions.

    Args:
        request: a :class:`olmkit.resolver.ResolutionRequest`.

    Returns:
        A :class:`olmkit.resolver.Resolution`.

    Example:
        @hookimpl(wrapper=True)
        def olmkit_resolve(request):
            start = time.perf_counter()
            result = yield
            print(request.namespace, time.perf_counter() - start)
            return result
    """
    raise NotImplementedError


@hookspec
def olmkit_catalog_loaded(source: str, catalog: Any, seconds: float, cached: bool) -> None:
    """Called after a catalog source has been read.

    Args:
        source: the source's display name (``namespace/name`` or a path).
        catalog: the loaded :class:`olmkit.catalog.Catalog`.
        seconds: wall time the load took.
        cached: whether it came from the on-disk cache.

    Example:
        @hookimpl
        def olmkit_catalog_loaded(source, catalog, seconds, cached):
            LOAD_SECONDS.labels(source).observe(seconds)
    """


@hookspec
def olmkit_csv_properties(csv: Mapping[str, Any], package: str | None) -> list[Mapping[str, Any]] | None:
    """Derive the properties of an installed ClusterServiceVersion that carries no properties annotation.

    Resolution reads an installed CSV's properties from its properties annotation; without
    it, the first plugin that answers derives them (the built-in one from owned and
    required APIs, plus the package when ``package`` is known).

    Args:
        csv: the CSV object.
        package: the package inferred from the subscriptions whose ``status.installedCSV``
            names the CSV, or ``None``.

    Returns:
        A list of ``{"type": ..., "value": ...}`` mappings, or ``None`` to let another plugin answer.

    Example:
        @hookimpl
        def olmkit_csv_properties(csv, package):
            return [{"type": "example.io/tier", "value": csv["metadata"]["labels"].get("tier")}]
    """


# --------------------------------------------------------------------------- lifecycle


@hookspec
def olmkit_controllers(context: Any) -> Iterable[Any]:
    """Contribute controllers to a run of the lifecycle (``olmkit reconcile``, ``olmkit run``).

    Called once per run. The kernel contributes OLM's Catalog Operator and OLM Operator
    controllers this way; plugins add their own (the built-in simulated kubelet does).

    Args:
        context: the :class:`olmkit.lifecycle.LifecycleContext` of the run (store, plugins,
            clock, options, catalogs).

    Returns:
        An iterable of :class:`olmkit.lifecycle.runtime.Controller` objects (names must be unique).

    Example:
        @hookimpl
        def olmkit_controllers(context):
            if context.options.embedded:
                yield MyController(context)
    """
    raise NotImplementedError


@hookspec(firstresult=True)
def olmkit_csv_targets_problem(csv: Mapping[str, Any], targets: Sequence[str]) -> tuple[str, str] | None:
    """Whether a ClusterServiceVersion can watch the namespaces its OperatorGroup targets.

    The CSV phase machine asks before it moves a member CSV; the first answer wins. The
    built-in plugin checks ``spec.installModes`` as upstream OLM does.

    Args:
        csv: the CSV object (its own namespace is ``metadata.namespace``).
        targets: the group's target namespaces, sorted (``[""]``: all namespaces).

    Returns:
        ``(reason, message)`` when it cannot (the CSV fails with them until the targets or
        the CSV change), or ``None`` when it can or the plugin has no opinion.

    Example:
        @hookimpl
        def olmkit_csv_targets_problem(csv, targets):
            if len(targets) > 10:
                return "TooManyTargets", "this operator watches at most 10 namespaces"
            return None
    """


@hookspec(firstresult=True)
def olmkit_bundle_content(bundle: Any, registry: Any) -> list[Mapping[str, Any]] | None:
    """The manifests of a bundle chosen for installation (its CSV, CRDs and other objects).

    Upstream OLM unpacks bundle images; here each plugin that knows a way to get a
    bundle's content answers, the first non-``None`` answer wins. The built-in plugin reads
    the bundle's inline manifest properties and bundle directories on disk.

    Args:
        bundle: the :class:`olmkit.model.Bundle` (its ``image``, ``properties`` and ``origin``).
        registry: the plugin registry (bundle formats, for reading bundle directories).

    Returns:
        The manifests as mappings, or ``None`` when this plugin cannot provide them.

    Raises:
        OlmkitError: the plugin should provide the content but it is broken (the message
            names the bundle and what is wrong).

    Example:
        @hookimpl
        def olmkit_bundle_content(bundle, registry):
            if bundle.image and bundle.image.startswith("oci-archive:"):
                return unpack_archive(bundle.image)
            return None
    """


@hookspec
def olmkit_csv_phase_changed(csv: Mapping[str, Any], old_phase: str | None, new_phase: str, reason: str) -> None:
    """Called after a ClusterServiceVersion changed phase (notification only).

    Args:
        csv: the object as stored after the change.
        old_phase: the phase before (``None`` for a new CSV).
        new_phase: the phase now.
        reason: the reason recorded with the change.

    Example:
        @hookimpl
        def olmkit_csv_phase_changed(csv, old_phase, new_phase, reason):
            log.info("%s: %s -> %s (%s)", csv["metadata"]["name"], old_phase, new_phase, reason)
    """
    raise NotImplementedError


@hookspec
def olmkit_install_plan_step(plan: Mapping[str, Any], step: Mapping[str, Any], status: str) -> None:
    """Called after an InstallPlan step changed status (notification only).

    Args:
        plan: the InstallPlan as stored.
        step: the step (``resolving``, ``resource``, ``status``).
        status: the step's new status (``Created``, ``Present``, ``Failed`` ...).

    Example:
        @hookimpl
        def olmkit_install_plan_step(plan, step, status):
            STEPS.labels(status).inc()
    """


@hookspec
def olmkit_reconciled(
    context: Any,
    controller: str,
    namespace: str,
    name: str,
    seconds: float,
    error: BaseException | None,
    queue_depth: int,
) -> None:
    """Called after every reconcile of a lifecycle controller (notification only).

    Called once per reconcile, on the thread that ran it, so an implementation must be
    cheap (count, time; no store reads): it runs for every key of every controller.

    Args:
        context: the :class:`olmkit.lifecycle.LifecycleContext` of the run.
        controller: the controller's name (``subscription``, ``installplan`` ...).
        namespace: the key's namespace (``""`` for cluster-scoped keys).
        name: the key's name.
        seconds: wall time the reconcile took.
        error: what the reconcile raised (it will be retried with backoff), or ``None``.
        queue_depth: keys queued after this reconcile (ready or delayed).

    Example:
        @hookimpl
        def olmkit_reconciled(context, controller, namespace, name, seconds, error, queue_depth):
            RECONCILE_SECONDS.labels(controller).observe(seconds)

    .. versionadded:: 0.2
    """


@hookspec
def olmkit_metric_collectors(store: Any) -> Iterable[Any]:
    """Contribute Prometheus collectors to the ``/metrics`` endpoint of ``olmkit run``.

    Called each time a metrics endpoint is set up (once per process for ``olmkit run``).
    A collector is any object with a ``collect()`` method yielding
    ``prometheus_client`` metric families; it runs at every scrape, so values read from
    ``store`` there are true at scrape time. Import ``prometheus_client`` inside the
    implementation: commands that serve no metrics must not pay for it.

    Args:
        store: the cluster store the process runs on.

    Returns:
        An iterable of collectors.

    Example:
        @hookimpl
        def olmkit_metric_collectors(store):
            from prometheus_client.core import GaugeMetricFamily

            class Widgets:
                def collect(self):
                    yield GaugeMetricFamily("widget_count", "Widgets", value=len(store.list("v1", "ConfigMap")))

            yield Widgets()

    .. versionadded:: 0.2
    """
    raise NotImplementedError


# --------------------------------------------------------------------------- command line


@hookspec
def olmkit_add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add subcommands to the ``olmkit`` command line.

    A command's parser must set ``func`` (``parser.set_defaults(func=run)``); ``run(args)``
    returns the exit code.

    Example:
        @hookimpl
        def olmkit_add_commands(subparsers):
            p = subparsers.add_parser("hello", help="say hello")
            p.set_defaults(func=lambda args: print("hello") or 0)
    """
