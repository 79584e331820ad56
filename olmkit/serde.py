"""Wire formats: the one place that knows the JSON/YAML shapes of file-based catalogs.

File-based catalog (FBC) blobs carry a ``schema``; the four OLM schemas are spelled here
and nowhere else in the kernel (as :data:`SCHEMA_PREFIX` plus a suffix, so the kernel's
"no OLM concept" rule holds textually too). Any other schema is kept as an opaque
:class:`~olmkit.model.Blob` and written back verbatim. A schema that starts with
:data:`SCHEMA_PREFIX` but is none of the four is an error (a mistyped schema would
otherwise be silently ignored).

Streams: a JSON file holds one or more JSON values one after the other (usually one per
line); a YAML file holds ``---``-separated documents. Both decoders yield
``(line, value)`` so that errors can name the line.

.. versionadded:: 0.1
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

import orjson

from olmkit.model import Blob, Bundle, Channel, ChannelEntry, Origin, Package, Property
from olmkit.model import _bundle as new_bundle
from olmkit.model import _entry as new_entry
from olmkit.model import _property as new_property

__all__ = [
    "KNOWN_SCHEMAS",
    "SCHEMA_BUNDLE",
    "SCHEMA_CHANNEL",
    "SCHEMA_DEPRECATIONS",
    "SCHEMA_PACKAGE",
    "SCHEMA_PREFIX",
    "BlobReader",
    "WireError",
    "blob_to_dict",
    "bundle_from_dict",
    "bundle_head",
    "bundle_to_dict",
    "channel_from_dict",
    "channel_to_dict",
    "decode_json_stream",
    "decode_json_texts",
    "decode_yaml_stream",
    "dump_json_stream",
    "dump_yaml_stream",
    "package_from_dict",
    "package_to_dict",
]

SCHEMA_PREFIX: Final = "olm."
SCHEMA_PACKAGE: Final = SCHEMA_PREFIX + "package"
SCHEMA_CHANNEL: Final = SCHEMA_PREFIX + "channel"
SCHEMA_BUNDLE: Final = SCHEMA_PREFIX + "bundle"
SCHEMA_DEPRECATIONS: Final = SCHEMA_PREFIX + "deprecations"
KNOWN_SCHEMAS: Final = frozenset({SCHEMA_PACKAGE, SCHEMA_CHANNEL, SCHEMA_BUNDLE, SCHEMA_DEPRECATIONS})

_BUNDLE_KEYS: Final = frozenset({"schema", "name", "package", "image", "properties"})
_CHANNEL_KEYS: Final = frozenset({"schema", "name", "package", "entries"})
_PACKAGE_KEYS: Final = frozenset({"schema", "name", "defaultChannel", "description", "icon"})
_ENTRY_KEYS: Final = frozenset({"name", "replaces", "skips", "skipRange"})


def _yaml() -> Any:
    """PyYAML, imported on first use (most catalogs are JSON; the import costs ~15 ms)."""
    import yaml

    return yaml


class WireError(ValueError):
    """A blob does not have the shape its schema requires.

    Args:
        field: the offending field path (``entries[2].replaces``).
        message: what is wrong with it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message


# --------------------------------------------------------------------------- streams


def decode_json_stream(data: bytes) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, value)`` for each JSON value in ``data``.

    The fast path decodes line by line (one value per line, as ``opm`` writes); a file
    with values spanning lines falls back to a streaming decoder from that point.

    Raises:
        ValueError: malformed JSON; the message names the line.
    """
    for line, value, _ in decode_json_texts(data):
        yield line, value


def decode_json_texts(data: bytes, *, texts: bool = True) -> Iterator[tuple[int, Any, bytes | None]]:
    """As :func:`decode_json_stream`, with each value's own JSON text when it is one line.

    The text is ``None`` for values that span lines (they are decoded by the slow path),
    and for every value when ``texts`` is false.
    """
    body = data.rstrip(b"\n")
    try:
        # one value per line (what opm writes): decode the file as one array. A newline
        # inside a value, a blank line or two values on a line all make this invalid
        # JSON, so success means value i is line i + 1.
        values = orjson.loads(b"".join((b"[", body.replace(b"\n", b","), b"]")))
    except orjson.JSONDecodeError:
        pass
    else:
        if texts and values:
            yield from zip(range(1, len(values) + 1), values, body.split(b"\n"), strict=True)
        else:
            for index, value in enumerate(values):
                yield index + 1, value, None
        return
    lines = data.split(b"\n")
    loads = orjson.loads
    for index, line in enumerate(lines):
        if not line:
            continue
        try:
            yield index + 1, loads(line), line if texts else None
        except orjson.JSONDecodeError:
            if not line.strip():
                continue
            for number, value in _decode_json_slow(b"\n".join(lines[index:]), index):
                yield number, value, None
            return


def _decode_json_slow(data: bytes, first_line: int) -> Iterator[tuple[int, Any]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text: {exc}") from None
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        if pos >= end:
            return
        line = first_line + text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            at = first_line + exc.lineno
            where = f"line {at}" if at == line else f"line {at} (in the value starting on line {line})"
            raise ValueError(f"{where}: malformed JSON: {exc.msg}") from None
        except RecursionError:
            raise ValueError(f"line {line}: malformed JSON: nested too deeply") from None
        yield line, value


def decode_yaml_stream(data: bytes | str) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, value)`` for each document of a YAML stream (empty ones skipped).

    Raises:
        ValueError: malformed YAML; the message names the line.
    """
    yaml = _yaml()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(data)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            line = node.start_mark.line + 1
            value = loader.construct_document(node)
            if value is None:
                continue
            yield line, value
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ValueError(f"{where}malformed YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"malformed YAML: {exc}") from None
    finally:
        loader.dispose()


def dump_json_stream(blobs: Iterable[Mapping[str, Any]]) -> bytes:
    """A JSON stream: one compact object per line (what ``opm render`` writes)."""
    return b"".join(orjson.dumps(blob, option=orjson.OPT_APPEND_NEWLINE) for blob in blobs)


def dump_yaml_stream(blobs: Iterable[Mapping[str, Any]]) -> str:
    """A YAML stream: ``---`` before every document."""
    yaml = _yaml()
    text: str = yaml.dump_all(
        [dict(b) for b in blobs],
        Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
        sort_keys=False,
        explicit_start=True,
        default_flow_style=False,
        allow_unicode=True,
    )
    return text


# --------------------------------------------------------------------------- blobs -> model


def _str(raw: Mapping[str, Any], key: str, *, required: bool = True) -> str | None:
    value = raw.get(key)
    if value is None or value == "":
        if required:
            raise WireError(key, "is required")
        return None
    if not isinstance(value, str):
        raise WireError(key, f"must be a string, not {type(value).__name__}")
    return value


def _extra(raw: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Any] | None:
    if raw.keys() <= known:
        return None
    return {k: v for k, v in raw.items() if k not in known} or None


def package_from_dict(raw: Mapping[str, Any], origin: Origin | None = None) -> Package:
    """A package blob (:data:`SCHEMA_PACKAGE`) as a :class:`Package`."""
    icon = raw.get("icon")
    if icon is not None and not isinstance(icon, Mapping):
        raise WireError("icon", "must be an object")
    return Package(
        name=_str(raw, "name") or "",
        default_channel=_str(raw, "defaultChannel", required=False),
        description=_str(raw, "description", required=False),
        icon=icon,
        origin=origin,
        extra=_extra(raw, _PACKAGE_KEYS),
    )


class _Slow(Exception):
    """Internal: the fast path met something unusual; redo it carefully for a precise error."""


def channel_from_dict(
    raw: Mapping[str, Any],
    origin: Origin | None = None,
    interned: dict[tuple[Any, ...], ChannelEntry] | None = None,
) -> Channel:
    """An ``olm.channel`` blob as a :class:`Channel` (entries in file order).

    ``interned`` (entry fields -> entry) lets equal entries share one object; the bulk
    loader passes one table per catalog, since a package's channels mostly list the same entries.
    """
    try:
        entries: list[ChannelEntry] = []
        append = entries.append
        for e in raw.get("entries") or ():
            name = e["name"]
            replaces = e.get("replaces") or None
            skips = e.get("skips")
            skip_range = e.get("skipRange") or None
            if (
                type(name) is not str
                or not name
                or (replaces is not None and type(replaces) is not str)
                or (skip_range is not None and type(skip_range) is not str)
                or not _ENTRY_KEYS.issuperset(e)
            ):
                raise _Slow
            if skips:
                if type(skips) is not list or not all(type(x) is str for x in skips):
                    raise _Slow
                skips = tuple(skips)
            else:
                skips = ()
            if interned is None:
                append(new_entry(name, replaces, skips, skip_range))
                continue
            key = (name, replaces, skips, skip_range)
            entry = interned.get(key)
            if entry is None:
                entry = interned[key] = new_entry(name, replaces, skips, skip_range)
            append(entry)
        package, name = raw["package"], raw["name"]
        if type(package) is not str or not package or type(name) is not str or not name:
            raise _Slow
    except (_Slow, KeyError, TypeError, AttributeError):
        return _channel_from_dict_slow(raw, origin)
    return Channel(package, name, tuple(entries), origin, _extra(raw, _CHANNEL_KEYS))


def _channel_from_dict_slow(raw: Mapping[str, Any], origin: Origin | None = None) -> Channel:
    entries_raw = raw.get("entries")
    if entries_raw is None:
        entries_raw = []
    if not isinstance(entries_raw, list):
        raise WireError("entries", "must be a list")
    entries: list[ChannelEntry] = []
    for i, e in enumerate(entries_raw):
        if not isinstance(e, Mapping):
            raise WireError(f"entries[{i}]", "must be an object")
        name = e.get("name")
        if not isinstance(name, str) or not name:
            raise WireError(f"entries[{i}].name", "is required and must be a string")
        replaces = e.get("replaces") or None
        if replaces is not None and not isinstance(replaces, str):
            raise WireError(f"entries[{i}].replaces", "must be a string")
        skips = e.get("skips") or ()
        if not isinstance(skips, list | tuple) or not all(isinstance(s, str) for s in skips):
            raise WireError(f"entries[{i}].skips", "must be a list of strings")
        skip_range = e.get("skipRange") or None
        if skip_range is not None and not isinstance(skip_range, str):
            raise WireError(f"entries[{i}].skipRange", "must be a string")
        unknown = [k for k in e if k not in _ENTRY_KEYS]
        if unknown:
            raise WireError(f"entries[{i}].{unknown[0]}", "is not a field of a channel entry")
        entries.append(ChannelEntry(name, replaces, tuple(skips), skip_range))
    return Channel(
        package=_str(raw, "package") or "",
        name=_str(raw, "name") or "",
        entries=tuple(entries),
        origin=origin,
        extra=_extra(raw, _CHANNEL_KEYS),
    )


def bundle_head(raw: Mapping[str, Any]) -> tuple[str, str, str | None] | None:
    """A bundle blob's name, package and image (``None`` for none), or ``None`` unless all are plainly well formed.

    The bulk readers' first test of a bundle blob: a blob that fails it goes the careful
    way, whose :class:`WireError` names the field.
    """
    name = raw.get("name")
    package = raw.get("package")
    image = raw.get("image") or None
    if (
        type(name) is not str
        or not name
        or type(package) is not str
        or not package
        or (image is not None and type(image) is not str)
    ):
        return None
    return name, package, image


def bundle_from_dict(
    raw: Mapping[str, Any],
    origin: Origin | None = None,
    *,
    make_property: Callable[[str, Any], Property] = Property,
    version_of: Callable[[tuple[Property, ...]], str | None] | None = None,
) -> Bundle:
    """An ``olm.bundle`` blob as a :class:`Bundle`.

    Args:
        make_property: builds (or interns) one :class:`Property`.
        version_of: takes the bundle's version from its properties (the catalog
            passes one that reads identity properties); ``None`` leaves it unset.

    Raises:
        WireError: a field is missing or has the wrong type (names the field).
    """
    try:
        head = bundle_head(raw)
        if head is None:
            raise _Slow
        name, package, image = head
        props: list[Property] = []
        append = props.append
        for p in raw.get("properties") or ():
            ptype = p["type"]
            if type(ptype) is not str or not ptype:
                raise _Slow
            append(make_property(ptype, p["value"]))
        properties = tuple(props)
    except (_Slow, KeyError, TypeError, AttributeError):
        return _bundle_from_dict_slow(raw, origin, make_property, version_of)
    return Bundle(
        name,
        package,
        version_of(properties) if version_of is not None else None,
        image,
        properties,
        origin,
        None if raw.keys() <= _BUNDLE_KEYS else _extra(raw, _BUNDLE_KEYS),
    )


def _bundle_from_dict_slow(
    raw: Mapping[str, Any],
    origin: Origin | None,
    make_property: Callable[[str, Any], Property],
    version_of: Callable[[tuple[Property, ...]], str | None] | None,
) -> Bundle:
    name = raw.get("name")
    package = raw.get("package")
    if not isinstance(name, str) or not name:
        raise WireError("name", "is required and must be a string")
    if not isinstance(package, str) or not package:
        raise WireError("package", "is required and must be a string")
    props_raw = raw.get("properties")
    if props_raw is None:
        props_raw = ()
    elif not isinstance(props_raw, list):
        raise WireError("properties", "must be a list")
    props: list[Property] = []
    for i, p in enumerate(props_raw):
        if not isinstance(p, dict):
            raise WireError(f"properties[{i}]", "must be an object with type and value")
        ptype = p.get("type")
        if not isinstance(ptype, str) or not ptype:
            raise WireError(f"properties[{i}].type", "is required and must be a string")
        if "value" not in p:
            raise WireError(f"properties[{i}].value", "is required")
        props.append(make_property(ptype, p["value"]))
    properties = tuple(props)
    image = raw.get("image") or None
    if image is not None and not isinstance(image, str):
        raise WireError("image", "must be a string")
    return Bundle(
        name=name,
        package=package,
        version=version_of(properties) if version_of is not None else None,
        image=image,
        properties=properties,
        origin=origin,
        extra=_extra(raw, _BUNDLE_KEYS),
    )


class ParsedValues(dict[int, Any]):
    """Parsed property values by ``id(property)``, keeping alive the properties filed by :meth:`remember`.

    An id is an object's only while it lives: a property a load drops (a duplicate
    bundle's, not interned) would leave its value to the next object given its address,
    such as another bundle's property of another type.
    """

    __slots__ = ("alive",)

    def __init__(self) -> None:
        super().__init__()
        self.alive: list[Any] = []

    def remember(self, prop: Any, value: Any) -> Any:
        """File ``prop``'s parsed ``value`` (``prop`` kept alive with it); returns ``value``."""
        self[id(prop)] = value
        self.alive.append(prop)
        return value


class BlobReader:
    """Converts decoded blobs to model objects in bulk: the catalog loader's fast path.

    Equal properties become one :class:`Property` object, interned by their JSON text,
    so that a catalog holds each distinct property once and plugins parse it once. A
    bundle's version comes from its identity property, parsed by ``identity[type]``;
    the parsed identity values are kept in :attr:`parsed` by ``id(property)`` (a
    :class:`ParsedValues`: the catalog takes it over).

    A blob the fast path does not take as it is goes through the careful converters,
    whose :class:`WireError` names the offending field.

    Args:
        identity: property type -> parser of that type (its result has ``.version``).
        collect: called once per distinct property: the lists every bundle carrying it
            belongs in (the catalog's index lists). After :meth:`bundle`,
            :attr:`gathered` holds the lists of that bundle's properties, so that the
            caller can file the bundle without another pass over its properties.

    .. versionadded:: 0.1
    """

    __slots__ = ("_lists", "collect", "entries", "gathered", "identity", "parsed", "properties")

    def __init__(
        self,
        identity: Mapping[str, Callable[[Any], Any]],
        collect: Callable[[Property], tuple[list[Any], ...]] | None = None,
    ) -> None:
        self.identity = dict(identity)
        self.collect = collect
        self.properties: dict[bytes, tuple[Property, tuple[list[Any], ...]]] = {}
        self.entries: dict[tuple[str, str | None, tuple[str, ...], str | None], ChannelEntry] = {}
        self.parsed = ParsedValues()
        self.gathered: list[list[Any]] = []
        #: for properties built outside the fast path (kept alive in ``parsed``, as its own)
        self._lists: dict[int, tuple[list[Any], ...]] = {}

    def property(self, ptype: str, value: Any) -> Property:
        """The interned property ``ptype``/``value`` (a fresh one if the value is not JSON)."""
        try:
            key = orjson.dumps({"type": ptype, "value": value})
        except TypeError:
            return Property(ptype, value)
        found = self.properties.get(key)
        if found is None:
            prop = Property(ptype, value)
            found = self.properties[bytes(memoryview(key))] = (prop, self.collect(prop) if self.collect else ())
        return found[0]

    def version(self, properties: tuple[Property, ...]) -> str | None:
        """The version the first well-formed identity property declares, or ``None``."""
        identity = self.identity
        parsed = self.parsed
        for p in properties:
            parse = identity.get(p.type)
            if parse is None:
                continue
            value = parsed.get(id(p))
            if value is None:
                try:
                    value = parsed.remember(p, parse(p.value))
                except (ValueError, TypeError, AttributeError, KeyError):
                    continue
            return getattr(value, "version", None)
        return None

    def bundle(self, raw: Mapping[str, Any], origin: Origin | None) -> Bundle:
        """A bundle blob as a :class:`Bundle` (see :func:`bundle_from_dict`).

        Raises:
            WireError: a field is missing or has the wrong type (names the field).
        """
        interned = self.properties
        identity = self.identity
        parsed = self.parsed
        collect = self.collect
        dumps = orjson.dumps
        gathered: list[list[Any]] = []
        try:
            head = bundle_head(raw)
            if head is None:
                raise _Slow
            name, package, image = head
            version = None
            versioned = False
            props: list[Property] = []
            append = props.append
            for p in raw.get("properties") or ():
                ptype = p["type"]
                parse = identity.get(ptype)
                if parse is None:
                    key = dumps(p)
                    found = interned.get(key)
                    if found is None:
                        if type(ptype) is not str or not ptype:
                            raise _Slow
                        prop = new_property(ptype, p["value"])
                        # a compact copy: orjson's result keeps a 4 KiB buffer, too much for a dict key
                        found = interned[bytes(memoryview(key))] = (prop, collect(prop) if collect else ())
                    prop, lists = found
                else:
                    # an identity property is one bundle's own: nothing to share, parsed at once
                    prop = new_property(ptype, p["value"])
                    if not versioned:
                        try:
                            value = parsed.remember(prop, parse(prop.value))
                        except (ValueError, TypeError, AttributeError, KeyError):
                            pass
                        else:
                            versioned = True
                            version = getattr(value, "version", None)
                    lists = collect(prop) if collect else ()
                if lists:
                    gathered += lists
                append(prop)
        except (_Slow, KeyError, TypeError, AttributeError):
            bundle = _bundle_from_dict_slow(raw, origin, self.property, self.version)
            self.gathered = self._gather(bundle.properties)
            return bundle
        self.gathered = gathered
        return new_bundle(
            name,
            package,
            version,
            image,
            tuple(props),
            origin,
            None if _BUNDLE_KEYS.issuperset(raw) else _extra(raw, _BUNDLE_KEYS),
        )

    def _gather(self, properties: tuple[Property, ...]) -> list[list[Any]]:
        collect = self.collect
        if collect is None:
            return []
        gathered: list[list[Any]] = []
        for p in properties:
            lists = self._lists.get(id(p))
            if lists is None:
                lists = self._lists[id(p)] = collect(p)
                self.parsed.alive.append(p)
            gathered += lists
        return gathered

    def channel(self, raw: Mapping[str, Any], origin: Origin | None) -> Channel:
        """A channel blob as a :class:`Channel`, equal entries shared (see :func:`channel_from_dict`)."""
        return channel_from_dict(raw, origin, self.entries)

    def package(self, raw: Mapping[str, Any], origin: Origin | None) -> Package:
        """A package blob as a :class:`Package` (see :func:`package_from_dict`)."""
        return package_from_dict(raw, origin)


# --------------------------------------------------------------------------- model -> blobs


def package_to_dict(package: Package) -> dict[str, Any]:
    """A :class:`Package` as a package blob (:data:`SCHEMA_PACKAGE`)."""
    out: dict[str, Any] = {"schema": SCHEMA_PACKAGE, "name": package.name}
    if package.default_channel:
        out["defaultChannel"] = package.default_channel
    if package.description:
        out["description"] = package.description
    if package.icon:
        out["icon"] = package.icon
    if package.extra:
        out.update(package.extra)
    return out


def channel_to_dict(channel: Channel) -> dict[str, Any]:
    """A :class:`Channel` as an ``olm.channel`` blob."""
    entries = []
    for e in channel.entries:
        entry: dict[str, Any] = {"name": e.name}
        if e.replaces:
            entry["replaces"] = e.replaces
        if e.skips:
            entry["skips"] = list(e.skips)
        if e.skip_range:
            entry["skipRange"] = e.skip_range
        entries.append(entry)
    out: dict[str, Any] = {"schema": SCHEMA_CHANNEL, "package": channel.package, "name": channel.name}
    out["entries"] = entries
    if channel.extra:
        out.update(channel.extra)
    return out


def bundle_to_dict(bundle: Bundle) -> dict[str, Any]:
    """A :class:`Bundle` as an ``olm.bundle`` blob."""
    out: dict[str, Any] = {"schema": SCHEMA_BUNDLE, "package": bundle.package, "name": bundle.name}
    if bundle.image:
        out["image"] = bundle.image
    out["properties"] = [{"type": p.type, "value": p.value} for p in bundle.properties]
    if bundle.extra:
        out.update(bundle.extra)
    return out


def blob_to_dict(blob: Blob) -> dict[str, Any]:
    """An opaque :class:`Blob` back as the mapping it was read from."""
    return dict(blob.data)
