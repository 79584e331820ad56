"""Built-in plugin: the property types a bundle declares about itself.

* ``olm.package`` ``{packageName, version}``: the bundle's identity (one per bundle);
  at most one bundle per package in a namespace.
* ``olm.gvk`` ``{group, version, kind}``: an API the bundle provides; at most one
  provider per exact group/version/kind in a namespace.
* ``olm.label`` ``{label}``: a label ``olm.label.required`` can ask for.
* ``olm.deprecated``: the bundle must not be installed.
* ``olm.bundle.object`` ``{data: base64}`` / ``{ref}`` and ``olm.csv.metadata``: bundle
  content carried inline (kept out of what the resolver and CEL see).
* ``olm.maxOpenShiftVersion``: the newest OpenShift minor the bundle supports.

What a bundle requires of others (``olm.gvk.required``, ``olm.package.required``,
``olm.label.required``, ``olm.constraint``) is registered by
:mod:`olmkit.plugins.requirements`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Hashable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Final

import attrs

from olmkit import hookimpl
from olmkit.catalog.semver import parse_version
from olmkit.types import PackageIdentity, PropertyType, Uniqueness, ValueFields

__all__ = ["GVK", "PACKAGE_TEXTS", "parse_gvk", "parse_label", "parse_package"]

PACKAGE_TYPE: Final = "olm.package"
GVK_TYPE: Final = "olm.gvk"
LABEL_TYPE: Final = "olm.label"


@attrs.frozen(slots=True)
class GVK:
    """An API: group, version, kind. ``str()`` is ``Kind (group/version)`` (upstream's key text)."""

    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.group}/{self.version})"


def _object(value: Any) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):  # the exact check first: ABCs are slow
        raise ValueError(f"value must be an object, not {type(value).__name__}")
    return value


def _string(value: Mapping[str, Any], key: str, *, empty: bool = False) -> str:
    found = value.get(key)
    if found is None and empty:
        return ""
    if not isinstance(found, str):
        raise ValueError(f"{key} is required and must be a string")
    if not found and not empty:
        raise ValueError(f"{key} must not be empty")
    return found


def parse_package(value: Any) -> PackageIdentity:
    """``{packageName, version}`` -> :class:`PackageIdentity`.

    The version is kept as text: a bundle with an invalid version still loads (the
    resolver then treats it as unversioned); ``validate`` reports it.
    """
    obj = _object(value)
    version = obj.get("version")
    if version is not None and not isinstance(version, str):
        raise ValueError(f"version must be a string, not {type(version).__name__}")
    return PackageIdentity(_string(obj, "packageName"), version)


def _validate_package(value: PackageIdentity) -> Iterator[str]:
    if not value.version:
        yield "version is required"
        return
    try:
        parse_version(value.version)
    except ValueError as exc:
        yield str(exc)


PACKAGE_TEXTS: Final = (
    "there can be only one operator from package {key}",
    "{ids} originate from package {key}",
)


def _package_uniqueness(value: PackageIdentity) -> Uniqueness:
    return _package_rule(value.package)


@lru_cache(maxsize=65536)
def _package_rule(package: str) -> Uniqueness:
    """One (immutable) rule per package: every bundle of a package asks for it."""
    return Uniqueness(key=package, mandatory_text=PACKAGE_TEXTS[0], members_text=PACKAGE_TEXTS[1])


def parse_gvk(value: Any) -> GVK:
    """``{group, version, kind}`` -> :class:`GVK` (the core API group is the empty string)."""
    obj = _object(value)
    return GVK(_string(obj, "group", empty=True), _string(obj, "version"), _string(obj, "kind"))


def _gvk_uniqueness(value: GVK) -> Uniqueness:
    return Uniqueness(
        key=str(value),
        mandatory_text="there can be only one provider of {key}",
        members_text="{ids} provide {key}",
    )


def parse_label(value: Any) -> str:
    """``{label}`` -> the label text."""
    return _string(_object(value), "label")


def _parse_bundle_object(value: Any) -> Mapping[str, Any]:
    obj = _object(value)
    if "data" not in obj and "ref" not in obj:
        raise ValueError("needs data (base64 of a manifest) or ref")
    return obj


def _validate_bundle_object(value: Mapping[str, Any]) -> Iterator[str]:
    data = value.get("data")
    if data is None:
        return
    if not isinstance(data, str):
        yield "data must be a base64 string"
        return
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        yield f"data is not valid base64: {exc}"


def _parse_max_openshift(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value:
        raise ValueError('value must be a version string such as "4.12"')
    return value


def _validate_max_openshift(value: str) -> Iterator[str]:
    try:
        parse_version(value, tolerant=True)
    except ValueError as exc:
        yield str(exc)


def _single(value: Any) -> tuple[Hashable, ...]:
    return (value,)


@hookimpl
def olmkit_property_types() -> Iterator[PropertyType]:
    """OLM's self-describing property types."""
    yield PropertyType(
        name=PACKAGE_TYPE,
        parse=parse_package,
        description="the bundle's package and version (its identity)",
        identity=True,
        index_keys=lambda v: (v.package,),
        uniqueness=_package_uniqueness,
        validate=_validate_package,
        fields=ValueFields(
            ("packageName", "version"),
            key_fields=1,
            may_be_empty=("version",),
            validated_by=("version",),
            unique_by_key=True,
        ),
    )
    yield PropertyType(
        name=GVK_TYPE,
        parse=parse_gvk,
        description="an API (group/version/kind) the bundle provides",
        index_keys=lambda v: ((v.group, v.version, v.kind),),
        uniqueness=_gvk_uniqueness,
    )
    yield PropertyType(
        name=LABEL_TYPE,
        parse=parse_label,
        description="a label that olm.label.required can ask for",
        index_keys=_single,
    )
    yield PropertyType(
        name="olm.deprecated",
        description="the bundle is deprecated and must not be installed",
        prohibits="bundle {id} is deprecated",
    )
    yield PropertyType(
        name="olm.bundle.object",
        parse=_parse_bundle_object,
        description="a bundle manifest carried inline (base64)",
        inline=True,
        validate=_validate_bundle_object,
    )
    yield PropertyType(
        name="olm.csv.metadata",
        parse=_object,
        description="the ClusterServiceVersion's metadata carried inline",
        inline=True,
    )
    yield PropertyType(
        name="olm.maxOpenShiftVersion",
        parse=_parse_max_openshift,
        description="the newest OpenShift minor version the bundle supports",
        validate=_validate_max_openshift,
    )
