"""The registry: every registration record, collected once, in plain mappings.

Hot paths (catalog loading, resolution) read these mappings directly; they never call
pluggy per catalog entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
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


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(mapping, (MappingProxyType, _Conflicted)):
        return mapping
    return MappingProxyType(dict(mapping))


class _Conflicted(Mapping[str, Any]):
    """Records of one extension point where some names are claimed by two plugins.

    Those names are left out of iteration, and looking one up raises the
    :class:`PluginConflictError`: only what needs a contested name breaks.
    """

    def __init__(self, records: Mapping[str, Any], conflicts: Mapping[str, PluginConflictError]) -> None:
        self._records = {name: record for name, record in records.items() if name not in conflicts}
        self._conflicts = dict(conflicts)

    def __getitem__(self, name: str) -> Any:
        error = self._conflicts.get(name)
        if error is not None:
            raise error
        return self._records[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._records!r}, conflicts={sorted(self._conflicts)!r})"


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
    #: ``(kind, name)`` claimed by more than one plugin, with the error a lookup raises
    conflicts: Mapping[tuple[str, str], PluginConflictError] = attrs.field(factory=dict, converter=_frozen)

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

        Two plugins registering one name for one extension point do not make the whole
        registry fail: the name is recorded in :attr:`conflicts`, left out of the
        mappings, and looking it up raises :class:`PluginConflictError` (which names both
        plugins and suggests ``OLMKIT_DISABLE_PLUGINS``). Use :meth:`check` to fail on any.

        Raises:
            PluginError: a plugin yields something that is not the expected record type.
        """
        fields: dict[str, Any] = {}
        owners: dict[tuple[str, str], str] = {}
        claimants: dict[tuple[str, str], list[str]] = {}
        conflicts: dict[tuple[str, str], PluginConflictError] = {}
        for point in EXTENSION_POINTS:
            records: dict[str, Any] = {}
            contested: dict[str, PluginConflictError] = {}
            hook = getattr(pm.hook, point.hook)
            # get_hookimpls() is in registration order (tryfirst/trylast aside)
            for impl in hook.get_hookimpls():
                for record in _call(impl, point):
                    name = getattr(record, point.name_attr)
                    key = (point.kind, name)
                    if key in owners:
                        claimants[key].append(impl.plugin_name)
                        error = PluginConflictError(kind=point.kind, name=name, plugins=tuple(claimants[key]))
                        conflicts[key] = contested[name] = error
                        continue
                    owners[key] = impl.plugin_name
                    claimants[key] = [impl.plugin_name]
                    records[name] = record
            fields[point.field] = _Conflicted(records, contested) if contested else records
        return cls(owners=owners, conflicts=conflicts, **fields)  # type: ignore[arg-type]

    def check(self) -> None:
        """Raise the first name conflict, if any.

        Raises:
            PluginConflictError: two plugins register one name for one extension point.
        """
        for error in self.conflicts.values():
            raise error


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
