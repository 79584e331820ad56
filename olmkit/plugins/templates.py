"""Built-in plugin: the catalog templates of opm, ``olm.template.basic`` and ``olm.semver``.

Bundles are referenced by ``image``; a reference is resolved by the template context: a
bundle directory (relative to the template file) or the image of a bundle in a catalog
given with ``--catalog`` (see :class:`olmkit.catalog.bundles.BundleResolver`).

``olm.template.basic``: ``entries`` is a list of catalog blobs, kept in order; an
``olm.bundle`` entry holds only ``schema`` and ``image`` and is replaced by the bundle it
references (opm refuses any other field there, and so does this plugin).

``olm.semver`` generates a package's channels from bundle versions. Bundles are listed
under the channel archetypes ``candidate``, ``fast`` and ``stable`` (in order of
increasing stability). With ``generateMinorChannels`` (the default when neither flag is
set) each archetype gets one channel per major.minor (``stable-v1.2``); with
``generateMajorChannels`` one per major (``stable-v1``); both may be set. Within an
archetype and kind, bundles are walked in version order: the newest bundle of each
minor version replaces the newest bundle of the previous minor version (never across a
major version) and skips every other bundle seen since the major version started. The
default channel is the most stable channel: the highest archetype, then the highest
version of the bundle that opened the channel, then the kind named by
``defaultChannelTypePreference`` (which defaults to the generated kind, minor when
both). Fields are matched case-insensitively and unknown fields are errors, as opm does;
versions must be strict semver, and two bundles of one archetype whose versions differ
only by build metadata cannot be ordered, which is an error.

.. versionadded:: 0.1
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from olmkit import hookimpl
from olmkit.catalog.semver import Version, parse_version
from olmkit.model import Channel, ChannelEntry, Package
from olmkit.serde import channel_to_dict, package_to_dict
from olmkit.types import CatalogTemplate, TemplateContext

__all__ = ["ARCHETYPES", "BASIC_SCHEMA", "SEMVER_SCHEMA", "generate_channels", "render_basic", "render_semver"]

BASIC_SCHEMA: Final = "olm.template.basic"
SEMVER_SCHEMA: Final = "olm.semver"
BUNDLE_SCHEMA: Final = "olm.bundle"
PACKAGE_TYPE: Final = "olm.package"

#: Channel archetypes of the semver template, in order of increasing stability.
ARCHETYPES: Final = ("candidate", "fast", "stable")
MINOR: Final = "minor"
MAJOR: Final = "major"
#: Preference between channel kinds when nothing else decides (minor over major).
_KIND_RANK: Final = {MINOR: 2, MAJOR: 1, "": 0}


# --------------------------------------------------------------------------- basic


def render_basic(doc: Mapping[str, Any], context: TemplateContext) -> list[dict[str, Any]]:
    """Render an ``olm.template.basic`` document: its entries, bundle references resolved.

    Raises:
        ValueError: an unknown field, entries that are not a list of blobs, or a bundle
            entry with fields other than ``schema`` and ``image``.
    """
    fields = _fields(doc, ("schema", "entries"), "")
    entries = fields.get("entries")
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise ValueError("entries must be a list of catalog blobs")
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("schema"), str) or not entry.get("schema"):
            raise ValueError(f"entries[{i}] must be a catalog blob with a schema")
        if entry["schema"] != BUNDLE_SCHEMA:
            out.append(dict(entry))
            continue
        extra = sorted(str(k) for k in entry if k not in ("schema", "image"))
        if extra:
            raise ValueError(
                f"entries[{i}]: a bundle entry of a basic template holds only schema and image, "
                f"found also {', '.join(extra)}"
            )
        image = entry.get("image")
        if not isinstance(image, str) or not image:
            raise ValueError(f"entries[{i}].image is required: the bundle directory or image the bundle comes from")
        out.append(dict(context.resolve_bundle(image)))
    return out


# --------------------------------------------------------------------------- semver


def _fields(doc: Mapping[str, Any], known: Sequence[str], where: str) -> dict[str, Any]:
    """Fields of ``doc`` by their canonical name, matched case-insensitively (opm decodes so)."""
    canonical = {k.lower(): k for k in known}
    out: dict[str, Any] = {}
    for key, value in doc.items():
        name = canonical.get(str(key).lower())
        if name is None:
            raise ValueError(f"unknown field {where}{key!r} (known: {', '.join(known)})")
        if name in out:
            raise ValueError(f"field {where}{name!r} is given twice")
        out[name] = value
    return out


@attrs.frozen
class _Semver:
    generate_major: bool
    generate_minor: bool
    preference: str
    channels: Mapping[str, tuple[str, ...]]  # archetype -> bundle references, in template order

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> _Semver:
        fields = _fields(
            doc,
            (
                "schema",
                "generateMajorChannels",
                "generateMinorChannels",
                "defaultChannelTypePreference",
                *ARCHETYPES,
            ),
            "",
        )
        flags = []
        for key in ("generateMajorChannels", "generateMinorChannels"):
            value = fields.get(key, False)
            if value is None:
                value = False
            if not isinstance(value, bool):
                raise ValueError(f"{key} must be true or false, not {value!r}")
            flags.append(value)
        major, minor = flags
        if not major and not minor:
            minor = True
        preference = fields.get("defaultChannelTypePreference") or ""
        if preference not in ("", MINOR, MAJOR):
            raise ValueError(f"unknown defaultChannelTypePreference {preference!r} (valid: major, minor)")
        if preference == "":
            preference = MINOR if minor else MAJOR
        elif preference == MINOR and not minor:
            raise ValueError(
                "schema attribute mismatch: defaultChannelTypePreference 'minor' needs generateMinorChannels"
            )
        elif preference == MAJOR and not major:
            raise ValueError(
                "schema attribute mismatch: defaultChannelTypePreference 'major' needs generateMajorChannels"
            )
        channels = {arch: _references(fields.get(arch), arch) for arch in ARCHETYPES}
        return cls(major, minor, preference, channels)


def _references(raw: Any, arch: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ValueError(f"{arch} must be a mapping with a bundles list")
    bundles = _fields(raw, ("bundles",), f"{arch}.").get("bundles") or []
    if not isinstance(bundles, list):
        raise ValueError(f"{arch}.bundles must be a list of {{image: ...}}")
    refs = []
    for i, item in enumerate(bundles):
        if not isinstance(item, Mapping):
            raise ValueError(f"{arch}.bundles[{i}] must be a mapping with an image")
        image = _fields(item, ("image",), f"{arch}.bundles[{i}].").get("image")
        if not isinstance(image, str) or not image:
            raise ValueError(f"{arch}.bundles[{i}].image is required")
        refs.append(image)
    return tuple(refs)


def _identity(blob: Mapping[str, Any], ref: str) -> tuple[str, str, Version]:
    """``(bundle name, package, version)`` of a resolved bundle blob."""
    name = blob.get("name")
    if blob.get("schema") != BUNDLE_SCHEMA or not isinstance(name, str) or not name:
        raise ValueError(f"bundle reference {ref!r} did not resolve to a named {BUNDLE_SCHEMA} blob")
    packages = [
        p.get("value") for p in blob.get("properties") or () if isinstance(p, Mapping) and p.get("type") == PACKAGE_TYPE
    ]
    if len(packages) != 1 or not isinstance(packages[0], Mapping):
        raise ValueError(f"bundle {name!r} ({ref}) has {len(packages)} {PACKAGE_TYPE} properties, expected exactly 1")
    package, text = packages[0].get("packageName"), packages[0].get("version")
    if not isinstance(package, str) or not package:
        raise ValueError(f"bundle {name!r} ({ref}) has no package name in its {PACKAGE_TYPE} property")
    try:
        version = parse_version(text if isinstance(text, str) else "")
    except ValueError as exc:
        raise ValueError(f"bundle {name!r} ({ref}) has invalid version {text!r}: {exc}") from None
    return name, package, version


def render_semver(doc: Mapping[str, Any], context: TemplateContext) -> list[dict[str, Any]]:
    """Render an ``olm.semver`` document: a package blob, generated channels, the bundles.

    Raises:
        ValueError: malformed fields, no bundles, bundles of several packages, a version
            that is not strict semver, duplicates, or versions that cannot be ordered.
    """
    template = _Semver.from_doc(doc)
    resolved: dict[str, tuple[dict[str, Any], str, str, Version]] = {}
    by_name: dict[str, str] = {}
    package = ""
    for arch in ARCHETYPES:
        for ref in template.channels[arch]:
            if ref in resolved:
                continue
            blob = dict(context.resolve_bundle(ref))
            name, pkg, version = _identity(blob, ref)
            if package and pkg != package:
                raise ValueError(f"bundle {name!r} ({ref}) belongs to package {pkg!r}, not {package!r}")
            package = package or pkg
            if name in by_name:
                raise ValueError(f"bundle {name!r} is referenced as both {by_name[name]!r} and {ref!r}")
            by_name[name] = ref
            resolved[ref] = (blob, name, pkg, version)
    if not resolved:
        raise ValueError("no bundles specified: list bundles under candidate, fast or stable")
    versions: dict[str, dict[str, Version]] = {}
    for arch in ARCHETYPES:
        members: dict[str, Version] = {}
        seen: dict[Version, str] = {}
        for ref in template.channels[arch]:
            _, name, _, version = resolved[ref]
            if name in members:
                raise ValueError(f"{arch}: duplicate bundle {name!r}")
            if version in seen:
                raise ValueError(
                    f"{arch}: bundles {seen[version]!r} and {name!r} have versions that differ only by build "
                    f"metadata ({members[seen[version]]} and {version}), which cannot be ordered"
                )
            seen[version] = name
            members[name] = version
        versions[arch] = members
    channels, default = generate_channels(
        package, versions, major=template.generate_major, minor=template.generate_minor, preference=template.preference
    )
    bundles = sorted(resolved.values(), key=lambda item: (item[3], item[1]))
    return [
        package_to_dict(Package(name=package, default_channel=default)),
        *(channel_to_dict(c) for c in channels),
        *(b[0] for b in bundles),
    ]


@attrs.frozen
class _Edge:
    rank: int  # archetype index
    kind: str
    channel: str
    name: str
    version: Version


def _newer_default(
    candidate: tuple[int, str, Version, str], current: tuple[int, str, Version, str], preference: str
) -> bool:
    """Whether ``candidate`` is a more stable default channel than ``current`` (opm's order)."""
    if candidate[0] != current[0]:
        return candidate[0] > current[0]
    if candidate[2] != current[2]:
        return candidate[2] > current[2]
    if candidate[1] != current[1]:
        if candidate[1] == preference:
            return True
        if current[1] == preference:
            return False
        return _KIND_RANK[candidate[1]] > _KIND_RANK[current[1]]
    return False


def generate_channels(
    package: str,
    versions: Mapping[str, Mapping[str, Version]],
    *,
    major: bool,
    minor: bool,
    preference: str,
) -> tuple[list[Channel], str]:
    """The semver template's channels and default channel for bundle versions by archetype.

    Args:
        package: the package the channels belong to.
        versions: archetype (``candidate``, ``fast``, ``stable``) -> bundle name -> version.
        major: generate one channel per major version (``stable-v1``).
        minor: generate one channel per minor version (``stable-v1.2``).
        preference: the kind (``minor`` or ``major``) the default channel prefers.

    Returns:
        ``(channels sorted by name, default channel name)``.
    """
    entries: dict[str, list[ChannelEntry]] = {}
    edges: list[_Edge] = []
    best: tuple[int, str, Version, str] = (0, "", Version(0, 0, 0), "")
    for rank, arch in enumerate(ARCHETYPES):
        bundles = versions.get(arch) or {}
        for name in sorted(bundles, key=lambda n: (bundles[n], n)):
            version = bundles[name]
            kinds = []
            if major:
                kinds.append((MAJOR, f"{arch}-v{version.major}"))
            if minor:
                kinds.append((MINOR, f"{arch}-v{version.major}.{version.minor}"))
            for kind, channel in kinds:
                if channel not in entries:
                    entries[channel] = []
                    candidate = (rank, kind, version, channel)
                    if _newer_default(candidate, best, preference):
                        best = candidate
                entries[channel].append(ChannelEntry(name))
                edges.append(_Edge(rank, kind, channel, name, version))
    edges.sort(key=lambda e: (e.rank, _KIND_RANK[e.kind], e.version))
    links: dict[tuple[str, str], tuple[str | None, tuple[str, ...]]] = {}

    def link(edge: _Edge, replaces: str, skips: set[str]) -> None:
        links[(edge.channel, edge.name)] = (replaces or None, tuple(sorted(skips - {replaces})))

    replaces, skips = "", set[str]()
    for prev, cur in itertools.pairwise(edges):
        same_stream = prev.rank == cur.rank and prev.kind == cur.kind and prev.version.major == cur.version.major
        if not same_stream or prev.version.minor != cur.version.minor:
            link(prev, replaces, skips)  # prev is the newest bundle of its minor version
        if not same_stream:
            replaces, skips = "", set()
        else:
            if prev.version.minor != cur.version.minor:
                replaces = prev.name
            skips.add(prev.name)
    if len(edges) > 1:
        last, before = edges[-1], edges[-2]
        if last.rank == before.rank and last.kind == before.kind and last.version.major == before.version.major:
            link(last, replaces, skips)
    channels = []
    for channel in sorted(entries):
        linked = []
        for entry in entries[channel]:
            found = links.get((channel, entry.name))
            linked.append(attrs.evolve(entry, replaces=found[0], skips=found[1]) if found else entry)
        channels.append(Channel(package=package, name=channel, entries=tuple(linked)))
    return channels, best[3]


@hookimpl
def olmkit_catalog_templates() -> Iterator[CatalogTemplate]:
    """opm's basic and semver templates."""
    yield CatalogTemplate(
        schema=BASIC_SCHEMA,
        render=render_basic,
        description="catalog blobs with bundles given by image (a bundle directory or a catalog's bundle)",
    )
    yield CatalogTemplate(
        schema=SEMVER_SCHEMA,
        render=render_semver,
        description="channels generated from bundle versions: candidate/fast/stable, by major and/or minor",
    )
