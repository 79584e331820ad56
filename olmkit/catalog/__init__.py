"""File-based catalogs: loading, the indexed snapshot, validation and the upgrade graph.

The public contract the resolver codes against:

* :class:`Catalog`: an immutable, indexed snapshot (``packages``, ``channels``,
  ``bundles``, ``others``, ``deprecations``; ``channel_head``, ``channel_order``,
  ``lookup``, ``values``).
* :func:`load_catalog`: a directory (or a single file) of FBC JSON/YAML streams, with an
  on-disk cache keyed by content digest.
* :class:`BundleColumns` (``Catalog.columns()``): every bundle as columns, for the graph
  compiler (:func:`build_columns` builds them from any catalog's bundles).
* :mod:`olmkit.catalog.semver`: OLM's version and range rules.
* :mod:`olmkit.catalog.sources`: the catalog-source contract (``file``, ``configmap`` ...).
* :func:`cache_dir` (``$OLMKIT_CACHE_DIR``, :data:`CACHE_ENV`) and :func:`write_atomic`: for
  what a plugin keeps next to the catalog cache; :func:`write_later` has a cache write done
  now, or, in a one-shot command that called :func:`defer_writes`, once the command is
  done (:func:`finish_writes`).

``deprecations`` maps a package to a :class:`Deprecation` holding the messages of its
deprecations blob by what they deprecate (the package, channels, bundles).

.. versionadded:: 0.1
"""

from __future__ import annotations

from olmkit.catalog._catalog import Catalog, Deprecation
from olmkit.catalog._columns import BundleColumns, build_columns
from olmkit.catalog._files import write_atomic
from olmkit.catalog._load import (
    CACHE_ENV,
    LoadResult,
    build_catalog,
    cache_dir,
    catalog_files,
    invalid_catalog,
    load_catalog,
    load_catalog_result,
)
from olmkit.catalog._writes import LOCK_NAME, defer_writes, deferring, finish_writes, wait_for_writers, write_later
from olmkit.catalog.problems import Problem

__all__ = [
    "CACHE_ENV",
    "LOCK_NAME",
    "BundleColumns",
    "Catalog",
    "Deprecation",
    "LoadResult",
    "Problem",
    "build_catalog",
    "build_columns",
    "cache_dir",
    "catalog_files",
    "defer_writes",
    "deferring",
    "finish_writes",
    "invalid_catalog",
    "load_catalog",
    "load_catalog_result",
    "wait_for_writers",
    "write_atomic",
    "write_later",
]
