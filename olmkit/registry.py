"""The registry: every registration record, collected once, in plain mappings.

Hot paths (catalog loading, resolution) read these mappings directly; they never call
pluggy per catalog entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import attrs

from olmkit.errors import PluginConflictError, PluginError
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

if TYPE_CHECKING:
    import pluggy

__all__ = ["EXTENSION_POINTS", "ExtensionPoint", "Registry"]


@attrs.frozen
class ExtensionPoint:
    """One registration hook: which record type it yields and how records are named."""

    hook: str
    field: str
    kind: str
    record_type: type
    name_attr: str = "name"


EXTENSION_POINTS: Final = (
    ExtensionPoint("olmkit_property_types", "property_types", "property type", PropertyType),
    ExtensionPoint(
        "olmkit_constraint_evaluators", "constraint_evaluators", "constraint key", ConstraintEvaluator, "key"
    ),
    ExtensionPoint("olmkit_install_strategies", "install_strategies", "install strategy", InstallStrategy),
    ExtensionPoint("olmkit_catalog_source_types", "catalog_source_types", "catalog source type", CatalogSourceType),
    ExtensionPoint("olmkit_admission_checks", "admission_checks", "admission check", AdmissionCheck),
    ExtensionPoint("olmkit_solver_backends", "solver_backends", "solver backend", SolverBackend),
    ExtensionPoint("olmkit_bundle_formats", "bundle_formats", "bundle format", BundleFormat),
    ExtensionPoint("olmkit_catalog_templates", "catalog_templates", "catalog template", CatalogTemplate, "schema"),
)


def _frozen(mapping: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(mapping)


@attrs.frozen
class Registry:
    """Every registered record by name, and which plugin registered it.

    ``owners`` maps ``(kind, name)`` to the registering plugin's name.
    """

    property_types: Mapping[str, PropertyType] = attrs.field(factory=dict, converter=_frozen)
    constraint_evaluators: Mapping[str, ConstraintEvaluator] = attrs.field(factory=dict, converter=_frozen)
    install_strategies: Mapping[str, InstallStrategy] = attrs.field(factory=dict, converter=_frozen)
    catalog_source_types: Mapping[str, CatalogSourceType] = attrs.field(factory=dict, converter=_frozen)
    admission_checks: Mapping[str, AdmissionCheck] = attrs.field(factory=dict, converter=_frozen)
    solver_backends: Mapping[str, SolverBackend] = attrs.field(factory=dict, converter=_frozen)
    bundle_formats: Mapping[str, BundleFormat] = attrs.field(factory=dict, converter=_frozen)
    catalog_templates: Mapping[str, CatalogTemplate] = attrs.field(factory=dict, converter=_frozen)
    owners: Mapping[tuple[str, str], str] = attrs.field(factory=dict, converter=_frozen)

    @property
    def identity_types(self) -> tuple[str, ...]:
        """Names of property types whose value names a bundle's package and version."""
        return tuple(name for name, pt in self.property_types.items() if pt.identity)

    @property
    def inline_types(self) -> frozenset[str]:
        """Names of property types that carry bundle content rather than metadata."""
        return frozenset(name for name, pt in self.property_types.items() if pt.inline)

    @classmethod
    def collect(cls, pm: pluggy.PluginManager) -> Registry:
        """Call every registration hook once, plugin by plugin, and check for clashes.

        Raises:
            PluginConflictError: two plugins register one name for one extension point.
            PluginError: a plugin yields something that is not the expected record type.
        """
        fields: dict[str, Any] = {}
        owners: dict[tuple[str, str], str] = {}
        for point in EXTENSION_POINTS:
            records: dict[str, Any] = {}
            hook = getattr(pm.hook, point.hook)
            # get_hookimpls() is in registration order (tryfirst/trylast aside)
            for impl in hook.get_hookimpls():
                for record in _call(impl, point):
                    name = getattr(record, point.name_attr)
                    key = (point.kind, name)
                    if key in owners:
                        raise PluginConflictError(kind=point.kind, name=name, plugins=(owners[key], impl.plugin_name))
                    owners[key] = impl.plugin_name
                    records[name] = record
            fields[point.field] = records
        return cls(owners=owners, **fields)  # type: ignore[arg-type]


def _call(impl: Any, point: ExtensionPoint) -> Iterable[Any]:
    try:
        result = impl.function()
        records = list(result or ())
    except Exception as exc:  # a plugin's own bug: report it with the plugin's name
        raise PluginError(f"{point.hook} failed: {exc!r}", plugin=impl.plugin_name) from exc
    for record in records:
        if not isinstance(record, point.record_type):
            raise PluginError(
                f"{point.hook} yielded {type(record).__name__}, expected {point.record_type.__name__}",
                plugin=impl.plugin_name,
            )
    return records
