"""Catalog templates: terse documents that render to file-based catalog blobs.

Templates are plugins (:class:`~olmkit.types.CatalogTemplate`, hook
``olmkit_catalog_templates``), one per ``schema``. :func:`render_template` reads a
template file, picks the template registered for its ``schema`` and renders it, resolving
bundle references through the registered bundle formats and the given catalogs
(:class:`~olmkit.catalog.bundles.BundleResolver`).

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from olmkit.catalog.bundles import BundleResolver
from olmkit.errors import InputError
from olmkit.registry import Registry
from olmkit.serde import decode_json_stream, decode_yaml_stream

if TYPE_CHECKING:
    from olmkit.catalog import Catalog

__all__ = ["STDIN", "read_template", "render_template"]

#: The path that means "read the template from standard input".
STDIN: Final = "-"


def read_template(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    """The one document of a template file (YAML or JSON; ``-`` reads standard input).

    Raises:
        InputError: the file is missing or unreadable, malformed, empty, holds more than
            one document, or its document is not a mapping.
    """
    name = os.fspath(path)
    try:
        data = sys.stdin.buffer.read() if name == STDIN else Path(name).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read template: {exc.strerror}", path=name) from None
    try:
        decode = decode_json_stream if name.lower().endswith(".json") else decode_yaml_stream
        docs = list(decode(data))
    except ValueError as exc:
        raise InputError(str(exc), path=name) from None
    if not docs:
        raise InputError("the template file is empty", path=name)
    if len(docs) > 1:
        raise InputError(f"a template file holds one document, found {len(docs)} (line {docs[1][0]})", path=name)
    doc = docs[0][1]
    if not isinstance(doc, Mapping):
        raise InputError(f"a template must be a mapping, not {type(doc).__name__}", path=name)
    return doc


def render_template(
    path: str | os.PathLike[str], registry: Registry, *, catalogs: Iterable[Catalog] = ()
) -> list[dict[str, Any]]:
    """Render a template file to file-based catalog blobs.

    Args:
        path: the template file (``-``: standard input; relative bundle references are
            then resolved against the working directory).
        registry: the plugin registry (templates and bundle formats).
        catalogs: catalogs whose bundles templates may reference by ``image``.

    Raises:
        InputError: the file cannot be read, its ``schema`` is missing or no template is
            registered for it, or the document is malformed (names the file and field).
        BundleError: a referenced bundle cannot be read (or is invalid).
    """
    name = os.fspath(path)
    doc = read_template(name)
    schema = doc.get("schema")
    if schema is None:  # opm's templates read their fields case-insensitively
        schema = next((v for k, v in doc.items() if isinstance(k, str) and k.lower() == "schema"), None)
    known = ", ".join(sorted(registry.catalog_templates)) or "none registered"
    if not isinstance(schema, str) or not schema:
        raise InputError(f"the template has no schema (known template schemas: {known})", path=name)
    template = registry.catalog_templates.get(schema)
    if template is None:
        raise InputError(f"unknown template schema {schema!r} (known: {known})", path=name)
    base_dir = Path.cwd() if name == STDIN else Path(name).resolve().parent
    try:
        return template.render(doc, BundleResolver(registry, base_dir, catalogs))
    except InputError as exc:
        if exc.path is None:  # a reference nothing answers to: name the template file
            exc.path, exc.obj = name, exc.obj or schema
        raise
    except ValueError as exc:
        raise InputError(str(exc), path=name, obj=schema) from None
