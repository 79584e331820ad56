"""Built-in plugin: the ``registry+v1`` bundle directory (OLM's bundle format).

A bundle directory holds ``manifests/`` (exactly one ClusterServiceVersion, the CRDs it
owns and optional objects of the kinds the spec lists) and ``metadata/``
(``annotations.yaml``, optional ``dependencies.yaml`` and ``properties.yaml``; ``.yml``
and ``.json`` spellings are accepted too). :func:`read_bundle_dir` reads one into its
file-based catalog bundle blob and its manifests, deriving properties as ``opm render``
does:

* ``olm.package`` from the annotations' package (authoritative, as the spec says) and the
  CSV's ``spec.version``; an ``olm.package`` in ``properties.yaml`` or the CSV's
  ``olm.properties`` annotation is dropped in its favour;
* ``olm.gvk`` for every served version of every CRD in ``manifests/`` and for every owned
  API service; ``olm.gvk.required`` for every required CRD and API service;
* ``dependencies.yaml``: ``olm.gvk`` -> ``olm.gvk.required``, ``olm.package`` ->
  ``olm.package.required`` (``version`` becomes ``versionRange``), ``olm.label`` ->
  ``olm.label.required``, ``olm.constraint`` kept (OLM's own mapping of legacy
  dependencies);
* ``properties.yaml`` and the CSV's ``olm.properties`` annotation (a JSON list), kept;
* without an image: one ``olm.bundle.object`` (base64 of the JSON of each manifest); with
  an image: one ``olm.csv.metadata`` instead (what opm does for bundle images).

Properties are deduplicated and sorted by type, then by their JSON value, with the
inline content last, as opm writes them. ``relatedImages`` lists the CSV's related
images, the bundle image and the images of the install strategy's deployments.

Rules enforced (each violation names its file and object; all are reported at once, exit
code 1): at least one channel; a default channel that is one of them; exactly one CSV;
every owned CRD present in ``manifests/`` with the owned version and kind; only
supported object kinds; a valid semver ``spec.version``; well-formed dependencies and
properties. A missing directory or ``annotations.yaml`` and malformed YAML/JSON are
unreadable input (exit code 2).

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from olmkit import hookimpl
from olmkit.plugins.bundle_format._blob import BundleReader
from olmkit.plugins.bundle_format._vocabulary import ANNOTATION_PREFIX, MEDIA_TYPE, SUPPORTED_KINDS
from olmkit.types import BundleContents, BundleFormat

__all__ = [
    "ANNOTATION_PREFIX",
    "MEDIA_TYPE",
    "SUPPORTED_KINDS",
    "is_bundle_dir",
    "read_bundle_dir",
]


def is_bundle_dir(ref: str | os.PathLike[str]) -> bool:
    """Whether ``ref`` is a directory with a ``manifests/`` or a ``metadata/`` subdirectory.

    opm needs both; one is enough here, so that a bundle missing the other is reported
    as a broken bundle rather than read as a catalog.
    """
    path = Path(ref)
    return path.is_dir() and ((path / "manifests").is_dir() or (path / "metadata").is_dir())


def read_bundle_dir(path: str | os.PathLike[str], *, image: str | None = None) -> BundleContents:
    """Read a ``registry+v1`` bundle directory.

    Args:
        path: the bundle directory (``manifests/`` and ``metadata/``).
        image: the image reference to record in the blob. ``None`` (a bundle known only
            as a directory): no image, every manifest inline as ``olm.bundle.object``.
            Set: ``image`` is recorded and the CSV's metadata is inline as
            ``olm.csv.metadata`` instead (opm's choice for bundle images).

    Returns:
        :class:`~olmkit.types.BundleContents`: ``blob`` (the ``olm.bundle`` blob with the
        derived properties and related images), ``manifests`` (CSV, CRDs and other objects
        as plain JSON data, in file-name order, several documents of one file in file
        order) with ``manifest_files``, the package, version, channels, default channel,
        upgrade edges (``entry``: replaces, skips, ``olm.skipRange``) and the package's
        description and icon.

    Raises:
        BundleError: the directory, ``manifests/``, ``metadata/`` or
            ``metadata/annotations.yaml`` is missing, a file cannot be read, or holds
            malformed YAML/JSON or a document that is not an object (exit code 2).
        InvalidBundleError: the bundle breaks the format's rules; ``problems`` lists
            every one, each naming its file and object (exit code 1).
    """
    return BundleReader(Path(path)).read(image)


@hookimpl
def olmkit_bundle_formats() -> Iterator[BundleFormat]:
    """The bundle directory format of OLM's bundle images."""
    yield BundleFormat(
        name=MEDIA_TYPE,
        accepts=is_bundle_dir,
        read=read_bundle_dir,
        description="bundle directory: manifests/ (one CSV, its CRDs, optional objects) and metadata/annotations.yaml",
    )
