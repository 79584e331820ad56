"""Model values: what a catalog holds, independent of any wire format.

The model is shaped like OLM's file-based catalogs (packages, channels with upgrade
entries, bundles with properties) but gives properties no meaning: a property is a
type string and an opaque JSON value until a property-type plugin interprets it.
File formats are read and written in :mod:`olmkit.serde`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

__all__ = ["Blob", "Bundle", "Channel", "ChannelEntry", "Origin", "Package", "Property"]


@attrs.frozen(slots=True)
class Origin:
    """Where an object was read from: a file and, where known, a line."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


@attrs.frozen(slots=True)
class Property:
    """One bundle property: its type and its JSON value (opaque to the kernel)."""

    type: str
    value: Any


@attrs.frozen(slots=True)
class ChannelEntry:
    """One entry of a channel's upgrade graph."""

    name: str
    replaces: str | None = None
    skips: tuple[str, ...] = ()
    skip_range: str | None = None


@attrs.frozen(slots=True)
class Channel:
    """A channel of a package: its upgrade graph as entries."""

    package: str
    name: str
    entries: tuple[ChannelEntry, ...] = ()
    origin: Origin | None = attrs.field(default=None, eq=False)
    extra: Mapping[str, Any] | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class Package:
    """A package: its name, default channel and descriptive fields."""

    name: str
    default_channel: str | None = None
    description: str | None = None
    icon: Mapping[str, Any] | None = attrs.field(default=None, eq=False)
    origin: Origin | None = attrs.field(default=None, eq=False)
    extra: Mapping[str, Any] | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class Bundle:
    """A bundle: one version of a package's operator and its properties.

    ``version`` comes from the bundle's identity property (see
    :attr:`olmkit.types.PropertyType.identity`); it is ``None`` when no registered
    property type declares one.
    """

    name: str
    package: str
    version: str | None = None
    image: str | None = None
    properties: tuple[Property, ...] = ()
    origin: Origin | None = attrs.field(default=None, eq=False)
    extra: Mapping[str, Any] | None = attrs.field(default=None, eq=False)


@attrs.frozen(slots=True)
class Blob:
    """A catalog object of a schema the kernel does not model, kept verbatim."""

    schema: str
    data: Mapping[str, Any]
    origin: Origin | None = attrs.field(default=None, eq=False)
