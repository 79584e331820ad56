"""Model values: what a catalog holds, independent of any wire format.

The model is shaped like OLM's file-based catalogs (packages, channels with upgrade
entries, bundles with properties) but gives properties no meaning: a property is a
type string and an opaque JSON value until a property-type plugin interprets it.
File formats are read and written in :mod:`olmkit.serde`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from itertools import repeat
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


# --------------------------------------------------------------------------- bulk construction
#
# Loading a large catalog builds hundreds of thousands of these objects. attrs' frozen
# __init__ stores each field through object.__setattr__; the functions below store
# straight into the slots (one C call per field), about a third cheaper per object.
# They take every field positionally, run no converter or validator (the classes have
# none) and give objects equal in every way to the classes' own constructors.

_new = object.__new__


def _slot_setters(cls: type, *names: str) -> tuple[Any, ...]:
    assert tuple(f.name for f in attrs.fields(cls)) == names, f"{cls.__name__} fields changed"
    return tuple(cls.__dict__[name].__set__ for name in names)


_ORIGIN_SET = _slot_setters(Origin, "path", "line")
_PROPERTY_SET = _slot_setters(Property, "type", "value")
_ENTRY_SET = _slot_setters(ChannelEntry, "name", "replaces", "skips", "skip_range")
_BUNDLE_SET = _slot_setters(Bundle, "name", "package", "version", "image", "properties", "origin", "extra")
_CHANNEL_SET = _slot_setters(Channel, "package", "name", "entries", "origin", "extra")


def _origin(path: str, line: int | None, _set: tuple[Any, ...] = _ORIGIN_SET) -> Origin:
    o = _new(Origin)
    _set[0](o, path)
    _set[1](o, line)
    return o


def _property(ptype: str, value: Any, _set: tuple[Any, ...] = _PROPERTY_SET) -> Property:
    p = _new(Property)
    _set[0](p, ptype)
    _set[1](p, value)
    return p


def _entry(
    name: str, replaces: str | None, skips: tuple[str, ...], skip_range: str | None, _set: tuple[Any, ...] = _ENTRY_SET
) -> ChannelEntry:
    e = _new(ChannelEntry)
    _set[0](e, name)
    _set[1](e, replaces)
    _set[2](e, skips)
    _set[3](e, skip_range)
    return e


def _entries(
    names: Sequence[str],
    replaces: Sequence[str | None],
    skips: Sequence[tuple[str, ...]],
    skip_ranges: Sequence[str | None],
    _set: tuple[Any, ...] = _ENTRY_SET,
) -> list[ChannelEntry]:
    """Entries from columns of their fields (equal lengths): one C-level pass per field, no call per entry."""
    out = list(map(_new, repeat(ChannelEntry, len(names))))
    for setter, column in zip(_set, (names, replaces, skips, skip_ranges), strict=True):
        deque(map(setter, out, column), 0)
    return out


def _channel(
    package: str,
    name: str,
    entries: tuple[ChannelEntry, ...],
    origin: Origin | None,
    extra: Mapping[str, Any] | None,
    _set: tuple[Any, ...] = _CHANNEL_SET,
) -> Channel:
    c = _new(Channel)
    _set[0](c, package)
    _set[1](c, name)
    _set[2](c, entries)
    _set[3](c, origin)
    _set[4](c, extra)
    return c


def _bundle(
    name: str,
    package: str,
    version: str | None,
    image: str | None,
    properties: tuple[Property, ...],
    origin: Origin | None,
    extra: Mapping[str, Any] | None,
    _set: tuple[Any, ...] = _BUNDLE_SET,
) -> Bundle:
    b = _new(Bundle)
    _set[0](b, name)
    _set[1](b, package)
    _set[2](b, version)
    _set[3](b, image)
    _set[4](b, properties)
    _set[5](b, origin)
    _set[6](b, extra)
    return b
