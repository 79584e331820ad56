"""Bundles as packaged by their authors, read through the registered bundle formats.

The kernel does not know any bundle format: plugins register them
(:class:`~olmkit.types.BundleFormat`, hook ``olmkit_bundle_formats``). This module asks
them, in hook call order (``tryfirst`` first, then later-registered plugins before
earlier ones, so a plugin can take over a reference from a built-in format):

* :func:`read_bundle` reads one bundle: its catalog blob and its manifests. The
  lifecycle uses it to get the manifests of a bundle the catalog points at.
* :func:`bundles_to_blobs` turns bundles read for ``catalog render`` into catalog blobs,
  adding for each package the package and channel blobs its bundles ask for.
* :class:`BundleResolver` resolves the bundle references of catalog templates.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
from collections.abc import Container, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from olmkit.catalog.semver import Version, parse_version
from olmkit.errors import InputError, InvalidBundleError
from olmkit.model import Channel, Package
from olmkit.registry import Registry
from olmkit.serde import bundle_to_dict, channel_to_dict, package_to_dict
from olmkit.types import BundleContents, BundleFormat

if TYPE_CHECKING:
    from olmkit.catalog import Catalog

__all__ = [
    "IMAGE_FIELDS",
    "BundleResolver",
    "bundles_to_blobs",
    "fill_image_template",
    "find_format",
    "read_bundle",
]

#: Placeholders of an image reference template, and their spelling in opm's Go templates.
IMAGE_FIELDS: Final = {"package": "{{.Package}}", "name": "{{.Name}}", "version": "{{.Version}}"}


def _formats(registry: Registry) -> list[BundleFormat]:
    # the registry keeps get_hookimpls() order; pluggy calls hooks in the reverse order
    return list(registry.bundle_formats.values())[::-1]


def find_format(ref: str | os.PathLike[str], registry: Registry) -> BundleFormat | None:
    """The first registered bundle format that accepts ``ref``, or ``None``."""
    text = os.fspath(ref)
    for fmt in _formats(registry):
        if fmt.accepts(text):
            return fmt
    return None


def read_bundle(ref: str | os.PathLike[str], registry: Registry, *, image: str | None = None) -> BundleContents:
    """Read one bundle (a bundle directory, or whatever a plugin's format accepts).

    This is what the lifecycle uses to get an InstallPlan's manifests from the bundle a
    catalog points at; ``catalog render`` and templates use it too.

    Args:
        ref: where the bundle is (for the built-in format: a bundle directory with
            ``manifests/`` and ``metadata/``).
        registry: the plugin registry (its bundle formats).
        image: the image reference to record in the bundle blob; ``None`` records none,
            and a format then carries the manifests inline in the blob.

    Returns:
        The :class:`~olmkit.types.BundleContents`: ``blob`` (the catalog bundle blob),
        ``manifests`` (every object as a mapping, in file order) with
        ``manifest_files``, and the package, version, channels and upgrade edges.

    Raises:
        BundleError: a file is missing, unreadable or malformed (exit code 2).
        InvalidBundleError: the bundle breaks its format's rules (exit code 1).
        InputError: no registered format accepts ``ref``.
    """
    fmt = find_format(ref, registry)
    if fmt is None:
        known = ", ".join(f.name for f in _formats(registry)) or "none registered"
        raise InputError(f"not a bundle of any known format ({known})", path=os.fspath(ref))
    contents = fmt.read(os.fspath(ref), image=image)
    if not isinstance(contents, BundleContents):
        raise TypeError(f"bundle format {fmt.name!r} returned {type(contents).__name__}, not BundleContents")
    return contents


def fill_image_template(template: str, contents: BundleContents) -> str:
    """Substitute ``{package}``, ``{name}`` and ``{version}`` (or opm's ``{{.Package}}`` ...)."""
    values = {"package": contents.package, "name": contents.name, "version": contents.version or ""}
    out = template
    for key, go in IMAGE_FIELDS.items():
        out = out.replace(go, values[key]).replace("{" + key + "}", values[key])
    return out


def _sort_key(contents: BundleContents) -> tuple[bool, Version, str]:
    """Bundles in version order (unversioned ones first), then by name."""
    try:
        version = parse_version(contents.version) if contents.version else None
    except ValueError:
        version = None
    return (version is not None, version or Version(0, 0, 0), contents.name)


def bundles_to_blobs(
    bundles: Sequence[BundleContents], *, standalone: bool = True, defined: Container[str] = ()
) -> list[dict[str, Any]]:
    """Catalog blobs for bundles read by :func:`read_bundle`.

    Per package (in order of first appearance): with ``standalone``, a package blob and
    one channel blob per channel the bundles ask for, entries in version order with each
    bundle's upgrade edges; then the bundle blobs in version order. The package blob takes
    its default channel (and description and icon) from the newest bundle that names one;
    without one, the newest bundle's first channel. Packages named in ``defined`` (already
    defined by another input) get their bundle blobs only.

    Raises:
        InvalidBundleError: two bundles of one package have the same name.
    """
    by_package: dict[str, list[BundleContents]] = {}
    for contents in bundles:
        by_package.setdefault(contents.package, []).append(contents)
    out: list[dict[str, Any]] = []
    for package, members in by_package.items():
        seen: dict[str, str] = {}
        for contents in members:
            if contents.name in seen:
                raise InvalidBundleError(
                    f"bundle {contents.name!r} of package {package!r} is also read from {seen[contents.name]}",
                    path=contents.source,
                )
            seen[contents.name] = contents.source
        ordered = sorted(members, key=_sort_key)
        if standalone and package not in defined:
            out.append(package_to_dict(_package(package, ordered)))
            out += [channel_to_dict(c) for c in _channels(package, ordered)]
        out += [dict(c.blob) for c in ordered]
    return out


def _package(name: str, ordered: Sequence[BundleContents]) -> Package:
    newest = ordered[-1]
    default = next((c.default_channel for c in reversed(ordered) if c.default_channel), None)
    if default is None and newest.channels:
        default = newest.channels[0]
    info = newest.package_info or {}
    description = info.get("description")
    icon = info.get("icon")
    return Package(
        name=name,
        default_channel=default,
        description=description if isinstance(description, str) and description else None,
        icon=icon if isinstance(icon, Mapping) and icon else None,
    )


def _channels(package: str, ordered: Sequence[BundleContents]) -> list[Channel]:
    names: dict[str, None] = {}
    for contents in ordered:
        names.update(dict.fromkeys(contents.channels))
    channels = []
    for channel in sorted(names):
        entries = tuple(c.entry for c in ordered if channel in c.channels and c.entry is not None)
        channels.append(Channel(package=package, name=channel, entries=entries))
    return channels


class BundleResolver:
    """Resolves bundle references of catalog templates (a :class:`~olmkit.types.TemplateContext`).

    A reference is, in this order: a bundle a registered format accepts (a relative path
    is taken relative to ``base_dir``), read with its image set to the reference as
    written; or the ``image`` of a bundle in one of ``catalogs``.
    """

    def __init__(self, registry: Registry, base_dir: Path, catalogs: Iterable[Catalog] = ()) -> None:
        self.registry = registry
        self.base_dir = base_dir
        self.catalogs = tuple(catalogs)
        self._by_image: dict[str, Any] | None = None

    def _catalog_bundle(self, ref: str) -> Mapping[str, Any] | None:
        if self._by_image is None:
            self._by_image = {}
            for catalog in self.catalogs:
                for per in catalog.bundles.values():
                    for bundle in per.values():
                        if bundle.image:
                            self._by_image.setdefault(bundle.image, bundle)
        found = self._by_image.get(ref)
        return bundle_to_dict(found) if found is not None else None

    def resolve_bundle(self, ref: str) -> Mapping[str, Any]:
        """The bundle blob ``ref`` names.

        Raises:
            InputError: nothing answers to ``ref``.
            BundleError: the bundle ``ref`` names cannot be read (or is invalid).
        """
        if not isinstance(ref, str) or not ref:
            raise InputError("a bundle reference must be a non-empty string")
        path = Path(ref)
        if not path.is_absolute():
            path = self.base_dir / path
        if find_format(path, self.registry) is not None:
            return read_bundle(path, self.registry, image=ref).blob
        found = self._catalog_bundle(ref)
        if found is not None:
            return found
        where = f"relative to {self.base_dir}" if not Path(ref).is_absolute() else "at that path"
        catalogs = (
            "no catalog has a bundle with that image"
            if self.catalogs
            else "no catalogs to look it up in (pass --catalog PATH)"
        )
        raise InputError(f"bundle {ref!r} not found: no bundle directory {where}, and {catalogs}")
