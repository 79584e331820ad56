"""Between olmkit's catalog model and the ``api.Registry`` messages.

:class:`ApiView` answers every RPC's question from one :class:`~olmkit.catalog.Catalog`
snapshot (the server builds one per snapshot); :func:`blobs_from_api` turns what a
registry server streams back into FBC blobs (the grpc catalog source builds its catalog
from them). Messages are filled as ``opm serve`` fills them from a file-based catalog;
the module docstring of :mod:`olmkit.plugins.grpc_registry` lists the quirks kept.

Only this module and :mod:`.server`, :mod:`.client` import the generated code, and
only when a grpc feature is used.

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from olmkit.catalog import write_atomic
from olmkit.errors import CatalogError
from olmkit.model import Channel, ChannelEntry
from olmkit.plugins.grpc_registry._api import registry_pb2 as pb
from olmkit.serde import SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE, channel_to_dict

if TYPE_CHECKING:
    from olmkit.catalog import Catalog
    from olmkit.model import Bundle

__all__ = ["ApiView", "NotFoundError", "blobs_from_api"]

BUNDLE_OBJECT: Final = "olm.bundle.object"
PACKAGE: Final = "olm.package"
GVK: Final = "olm.gvk"
GVK_REQUIRED: Final = "olm.gvk.required"
PACKAGE_REQUIRED: Final = "olm.package.required"
CSV_KIND: Final = "ClusterServiceVersion"
#: Starts a stored ListBundles answer; a new encoding changes it, so old files are not read.
_STORE_MAGIC: Final = b"olmkit-api-listbundles-1\n"


class NotFoundError(CatalogError):
    """What an RPC asked for is not in the catalog (the server answers ``NOT_FOUND``)."""


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _gvk(value: Any) -> tuple[str, str, str] | None:
    if not isinstance(value, Mapping):
        return None
    return (str(value.get("group", "")), str(value.get("version", "")), str(value.get("kind", "")))


def _deprecation(message: str | None) -> Any:
    return pb.Deprecation(message=message) if message else None


def _varint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _message(field: int, data: bytes) -> bytes:
    """A length-delimited field (fields 1-15 have one-byte keys)."""
    n = len(data)
    if n < 0x80:
        return bytes(((field << 3) | 2, n)) + data
    return bytes(((field << 3) | 2,)) + _varint(n) + data


def _string(field: int, text: str, *, always: bool = False) -> bytes:
    """A string field; proto3 leaves empty strings out (not elements of repeated fields)."""
    if not text and not always:
        return b""
    return _message(field, text.encode())


class _Props:
    """A bundle's properties as the Bundle message has them: JSON texts, APIs, dependencies, version."""

    __slots__ = ("dependencies", "properties", "provided", "required", "version")

    def __init__(self, bundle: Bundle) -> None:
        self.properties: list[tuple[str, str]] = []
        self.provided: list[tuple[str, str, str]] = []
        self.required: list[tuple[str, str, str]] = []
        self.dependencies: list[tuple[str, str]] = []
        version = ""
        for p in bundle.properties:
            if p.type == BUNDLE_OBJECT:
                continue  # upstream leaves inline manifests out of the properties
            text = _json(p.value)
            self.properties.append((p.type, text))
            if p.type == PACKAGE and isinstance(p.value, Mapping) and not version:
                version = str(p.value.get("version", ""))
            elif p.type == GVK:
                gvk = _gvk(p.value)
                if gvk is not None:
                    self.provided.append(gvk)
            elif p.type == GVK_REQUIRED:
                gvk = _gvk(p.value)
                if gvk is not None:
                    self.required.append(gvk)
                self.dependencies.append((GVK, text))
            elif p.type == PACKAGE_REQUIRED:
                self.dependencies.append((PACKAGE, text))
        self.version = version or bundle.version or ""


class ApiView:
    """The ``api.Registry`` answers for one catalog snapshot.

    Args:
        catalog: the snapshot.
        objects: ``objects(bundle)`` gives a bundle's manifests (decoded) or ``None``;
            used for ``csvJson``/``object`` when the bundle has no ``olm.bundle.object``
            properties (a bundle directory named by ``image``).
    """

    def __init__(self, catalog: Catalog, objects: Any = None) -> None:
        self.catalog = catalog
        self._objects = objects
        self._provides: dict[tuple[str, str, str], list[tuple[str, str, ChannelEntry]]] | None = None
        self._props: dict[tuple[str, str], _Props] = {}
        self._listed: list[bytes] | None = None
        self._encoded_props: dict[int, bytes] = {}
        self._lock = threading.Lock()

    # -- lookups ----------------------------------------------------------------------

    def package_names(self) -> list[str]:
        """Every package, sorted (as ``opm serve`` lists them)."""
        return sorted(self.catalog.packages)

    def channels(self, package: str) -> list[str]:
        """A package's channel names, sorted."""
        return sorted(self.catalog.channels.get(package, {}))

    def entries(self, package: str, channel: str) -> Sequence[ChannelEntry]:
        """A channel's entries in catalog order (only those whose bundle exists)."""
        ch = self.catalog.channels.get(package, {}).get(channel)
        if ch is None:
            return ()
        bundles = self.catalog.bundles.get(package, {})
        return [e for e in ch.entries if e.name in bundles]

    def head(self, package: str, channel: str) -> ChannelEntry:
        """The channel head.

        Raises:
            NotFoundError: no such package or channel, or the channel has no single head.
        """
        if channel not in self.catalog.channels.get(package, {}):
            raise NotFoundError(f'package "{package}", channel "{channel}" not found')
        try:
            return self.catalog.channel_head(package, channel)
        except CatalogError as exc:
            raise NotFoundError(str(exc)) from None

    def walk(self) -> Iterator[tuple[str, str, ChannelEntry]]:
        """Every channel entry: packages and channels by name, entries in catalog order."""
        for package in self.package_names():
            for channel in self.channels(package):
                for entry in self.entries(package, channel):
                    yield package, channel, entry

    def _provided(self) -> dict[tuple[str, str, str], list[tuple[str, str, ChannelEntry]]]:
        if self._provides is None:
            out: dict[tuple[str, str, str], list[tuple[str, str, ChannelEntry]]] = {}
            bundles = self.catalog.bundles
            for package, channel, entry in self.walk():
                for p in bundles[package][entry.name].properties:
                    if p.type == GVK:
                        key = _gvk(p.value)
                        if key is not None:
                            out.setdefault(key, []).append((package, channel, entry))
            self._provides = out
        return self._provides

    # -- messages ---------------------------------------------------------------------

    def package(self, name: str) -> Any:
        """``GetPackage``: channels (sorted) with their heads, the default channel, deprecations.

        Raises:
            NotFoundError: no such package.
        """
        pkg = self.catalog.packages.get(name)
        if pkg is None:
            raise NotFoundError(f'package "{name}" not found')
        dep = self.catalog.deprecations.get(name)
        channels = []
        for ch in self.channels(name):
            try:
                head = self.catalog.channel_head(name, ch).name
            except CatalogError:
                head = ""
            channels.append(
                pb.Channel(name=ch, csvName=head, deprecation=_deprecation(dep.channels.get(ch) if dep else None))
            )
        return pb.Package(
            name=name,
            channels=channels,
            defaultChannelName=pkg.default_channel or "",
            deprecation=_deprecation(dep.package_message if dep else None),
        )

    def _bundle_props(self, bundle: Bundle) -> _Props:
        """A bundle's properties as the Bundle message has them (plain values, kept per bundle)."""
        key = (bundle.package, bundle.name)
        found = self._props.get(key)
        if found is None:
            found = _Props(bundle)
            self._props[key] = found
        return found

    def manifests(self, bundle: Bundle) -> tuple[str, list[str]]:
        """``csvJson`` and ``object``: the bundle's manifests as JSON texts (the CSV's also as csvJson)."""
        texts: list[str] = []
        csv_json = ""
        inline = [p for p in bundle.properties if p.type == BUNDLE_OBJECT]
        if inline:
            for p in inline:
                data = p.value.get("data") if isinstance(p.value, Mapping) else None
                if not isinstance(data, str):
                    continue
                raw = base64.b64decode(data)
                texts.append(raw.decode())
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(obj, dict) and obj.get("kind") == CSV_KIND and not csv_json:
                    csv_json = raw.decode()
        elif self._objects is not None:
            for obj in self._objects(bundle) or ():
                text = _json(obj)
                texts.append(text)
                if obj.get("kind") == CSV_KIND and not csv_json:
                    csv_json = text
        return csv_json, texts

    def bundle(self, package: str, channel: str, entry: ChannelEntry, *, full: bool = True) -> Any:
        """The ``Bundle`` message of one channel entry.

        ``full=False`` (``ListBundles``): ``csvJson`` and ``object`` stay empty when the
        bundle has an image, as ``opm serve`` streams them.
        """
        b = self.catalog.bundles[package][entry.name]
        p = self._bundle_props(b)
        dep = self.catalog.deprecations.get(package)
        csv_json, objects = self.manifests(b) if full or not b.image else ("", [])

        def gvks(items: list[tuple[str, str, str]]) -> list[Any]:
            return [pb.GroupVersionKind(group=g, version=v, kind=k) for g, v, k in items]

        return pb.Bundle(
            csvName=b.name,
            packageName=package,
            channelName=channel,
            csvJson=csv_json,
            object=objects,
            bundlePath=b.image or "",
            providedApis=gvks(p.provided),
            requiredApis=gvks(p.required),
            version=p.version,
            skipRange=entry.skip_range or "",
            dependencies=[pb.Dependency(type=t, value=v) for t, v in p.dependencies],
            properties=[pb.Property(type=t, value=v) for t, v in p.properties],
            replaces=entry.replaces or "",
            skips=list(entry.skips),
            deprecation=_deprecation(dep.bundles.get(b.name) if dep else None),
        )

    def _encoded_own(self, package: str, name: str) -> bytes:
        """A bundle's own fields (all but the channel entry's) in the wire format, for ListBundles."""
        b = self.catalog.bundles[package][name]
        p = self._bundle_props(b)
        out = [_string(1, b.name), _string(2, package)]
        if not b.image:
            csv_json, objects = self.manifests(b)
            out.append(_string(4, csv_json))
            out += [_string(5, o, always=True) for o in objects]
        out.append(_string(6, b.image or ""))
        for field, items in ((7, p.provided), (8, p.required)):
            for g, v, k in items:
                out.append(_message(field, _string(1, g) + _string(2, v) + _string(3, k)))
        out.append(_string(9, p.version))
        for t, v in p.dependencies:
            out.append(_message(11, _string(1, t) + _string(2, v)))
        encoded = self._encoded_props
        for prop in b.properties:  # equal properties are often one object (the loader interns them)
            data = encoded.get(id(prop))
            if data is None:
                data = (
                    b""
                    if prop.type == BUNDLE_OBJECT
                    else _message(12, _string(1, prop.type) + _string(2, _json(prop.value)))
                )
                encoded[id(prop)] = data
            out.append(data)
        dep = self.catalog.deprecations.get(package)
        message = dep.bundles.get(name) if dep else None
        if message:
            out.append(_message(15, _string(1, message)))
        return b"".join(out)

    def list_bundles(self) -> list[bytes]:
        """``ListBundles``, encoded: one serialized ``Bundle`` per channel entry (kept per snapshot).

        A bundle's own fields are encoded once and joined with each entry's fields
        (channel, replaces, skips, skipRange): two serialized messages with disjoint fields,
        concatenated, are the serialization of the message with all of them.
        """
        with self._lock:
            if self._listed is None:
                own: dict[tuple[str, str], bytes] = {}
                out = []
                for package, channel, entry in self.walk():
                    key = (package, entry.name)
                    head = own.get(key)
                    if head is None:
                        head = own[key] = self._encoded_own(package, entry.name)
                    tail = [head, _string(3, channel), _string(10, entry.skip_range or "")]
                    tail.append(_string(13, entry.replaces or ""))
                    tail += [_string(14, x, always=True) for x in entry.skips]
                    out.append(b"".join(tail))
                self._listed = out
            return self._listed

    @property
    def encoded(self) -> bool:
        """Whether the ListBundles answer is encoded already (or was read back)."""
        return self._listed is not None

    def save_list_bundles(self, path: Path) -> bool:
        """Write the encoded ListBundles answer to ``path`` (for the next start on the same catalog)."""
        data = self.list_bundles()
        chunks = [_STORE_MAGIC, len(data).to_bytes(4, "little")]
        for item in data:
            chunks += [len(item).to_bytes(4, "little"), item]
        return write_atomic(path, chunks)

    def load_list_bundles(self, path: Path) -> bool:
        """Take the encoded ListBundles answer from ``path`` (written by :meth:`save_list_bundles`).

        Returns False (and keeps nothing) when the file is missing or not one this version wrote.
        """
        try:
            raw = path.read_bytes()
        except OSError:
            return False
        if not raw.startswith(_STORE_MAGIC):
            return False
        view = memoryview(raw)
        at = len(_STORE_MAGIC)
        count = int.from_bytes(view[at : at + 4], "little")
        at += 4
        out = []
        for _ in range(count):
            size = int.from_bytes(view[at : at + 4], "little")
            at += 4
            out.append(bytes(view[at : at + size]))
            at += size
        if at != len(raw):
            return False
        with self._lock:
            if self._listed is None:
                self._listed = out
        return True

    def find(self, package: str, channel: str, name: str) -> ChannelEntry:
        """The entry ``name`` of a channel.

        Raises:
            NotFoundError: it is not there.
        """
        for entry in self.entries(package, channel):
            if entry.name == name:
                return entry
        raise NotFoundError(f'bundle "{name}" not found in package "{package}", channel "{channel}"')

    def replacing(self, name: str) -> list[Any]:
        """``GetChannelEntriesThatReplace``: entries whose replaces or skips name ``name``.

        An entry found through its skips carries its own ``replaces`` (upstream's quirk).
        """
        out = []
        for package, channel, e in self.walk():
            replaces = e.replaces or ""
            if replaces == name:
                out.append(pb.ChannelEntry(packageName=package, channelName=channel, bundleName=e.name, replaces=name))
            for s in e.skips:
                if s == name and s != replaces:
                    out.append(
                        pb.ChannelEntry(packageName=package, channelName=channel, bundleName=e.name, replaces=replaces)
                    )
        return out

    def replacement(self, name: str, package: str, channel: str) -> Any:
        """``GetBundleThatReplaces``: the channel's bundle whose replaces or skips name ``name``.

        Raises:
            NotFoundError: none does.
        """
        for e in self.entries(package, channel):
            if e.replaces == name or name in e.skips:
                return self.bundle(package, channel, e)
        raise NotFoundError(f'no entry found for package "{package}", channel "{channel}"')

    def _entries_for(self, package: str, channel: str, e: ChannelEntry, any_channel: bool) -> list[Any]:
        """The entry itself, plus one per skipped bundle (``replaces`` = the skipped name)."""
        replaces = e.replaces or ""
        out = [pb.ChannelEntry(packageName=package, channelName=channel, bundleName=e.name, replaces=replaces)]
        names = None if any_channel else {x.name for x in self.entries(package, channel)}
        for s in e.skips:
            if s != replaces and (names is None or s in names):
                out.append(pb.ChannelEntry(packageName=package, channelName=channel, bundleName=e.name, replaces=s))
        return out

    def providing(self, group: str, version: str, kind: str) -> list[Any]:
        """``GetChannelEntriesThatProvide``: every entry whose bundle provides the GVK."""
        out = []
        for package, channel, e in self._provided().get((group, version, kind), ()):
            out += self._entries_for(package, channel, e, True)
        return out

    def latest_providing(self, group: str, version: str, kind: str) -> list[Any]:
        """``GetLatestChannelEntriesThatProvide``: channel heads whose bundle provides the GVK."""
        out = []
        for package, channel, e in self._provided().get((group, version, kind), ()):
            try:
                head = self.catalog.channel_head(package, channel)
            except CatalogError:
                continue
            if head.name == e.name:
                out += self._entries_for(package, channel, e, False)
        return out

    def default_providing(self, group: str, version: str, kind: str) -> Any:
        """``GetDefaultBundleThatProvides``: the default channel head providing the GVK, by package name.

        Raises:
            NotFoundError: no default channel head provides it.
        """
        for entry in sorted(self.latest_providing(group, version, kind), key=lambda x: x.packageName):
            pkg = self.catalog.packages.get(entry.packageName)
            if pkg is not None and entry.channelName == pkg.default_channel:
                found = self.find(entry.packageName, entry.channelName, entry.bundleName)
                return self.bundle(entry.packageName, entry.channelName, found)
        raise NotFoundError(f'no entry found that provides group:"{group}" version:"{version}" kind:"{kind}"')


# --------------------------------------------------------------------------- back to FBC


def blobs_from_api(packages: Sequence[Any], bundles: Iterator[Any], origin: str) -> Iterator[tuple[str, int, Any]]:
    """FBC blobs, as ``(path, line, blob)`` for :func:`~olmkit.catalog.build_catalog`, from RPC answers.

    Args:
        packages: ``Package`` messages (``GetPackage`` of every listed package).
        bundles: the ``ListBundles`` stream (one message per channel entry).
        origin: the path the blobs are said to come from (``grpc://address``); a bundle's
            is ``grpc://address/package/channel`` (a channel it is in, for ``GetBundle``).

    Channels keep the order their entries arrive in; a bundle's properties are parsed
    back from their JSON texts, and its ``object`` manifests become ``olm.bundle.object``
    properties again.
    """
    channels: dict[tuple[str, str], list[ChannelEntry]] = {}
    seen: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
    bundle_deprecations: dict[str, dict[str, str]] = {}
    for msg in bundles:
        entry = ChannelEntry(msg.csvName, msg.replaces or None, tuple(msg.skips), msg.skipRange or None)
        channels.setdefault((msg.packageName, msg.channelName), []).append(entry)
        key = (msg.packageName, msg.csvName)
        if key in seen:
            continue
        props: list[dict[str, Any]] = [{"type": p.type, "value": orjson.loads(p.value)} for p in msg.properties]
        props += [{"type": BUNDLE_OBJECT, "value": {"data": base64.b64encode(o.encode()).decode()}} for o in msg.object]
        blob: dict[str, Any] = {"schema": SCHEMA_BUNDLE, "package": msg.packageName, "name": msg.csvName}
        if msg.bundlePath:
            blob["image"] = msg.bundlePath
        blob["properties"] = props
        seen[key] = (blob, msg.channelName)
        if msg.HasField("deprecation") and msg.deprecation.message:
            bundle_deprecations.setdefault(msg.packageName, {})[msg.csvName] = msg.deprecation.message
    line = 0
    for pkg in packages:
        line += 1
        blob = {"schema": SCHEMA_PACKAGE, "name": pkg.name}
        if pkg.defaultChannelName:
            blob["defaultChannel"] = pkg.defaultChannelName
        yield origin, line, blob
        entries: list[dict[str, Any]] = []
        if pkg.HasField("deprecation") and pkg.deprecation.message:
            entries.append({"reference": {"schema": SCHEMA_PACKAGE}, "message": pkg.deprecation.message})
        for ch in pkg.channels:
            line += 1
            chan_entries = tuple(channels.pop((pkg.name, ch.name), ()))
            yield origin, line, channel_to_dict(Channel(pkg.name, ch.name, chan_entries))
            if ch.HasField("deprecation") and ch.deprecation.message:
                ref = {"schema": SCHEMA_CHANNEL, "name": ch.name}
                entries.append({"reference": ref, "message": ch.deprecation.message})
        for name, message in bundle_deprecations.get(pkg.name, {}).items():
            entries.append({"reference": {"schema": SCHEMA_BUNDLE, "name": name}, "message": message})
        if entries:
            line += 1
            yield origin, line, {"schema": SCHEMA_DEPRECATIONS, "package": pkg.name, "entries": entries}
    for (package, channel), rest in channels.items():  # channels no package listed
        line += 1
        yield origin, line, channel_to_dict(Channel(package, channel, tuple(rest)))
    for (package, _), (blob, channel) in seen.items():
        line += 1
        yield f"{origin}/{package}/{channel}", line, blob
