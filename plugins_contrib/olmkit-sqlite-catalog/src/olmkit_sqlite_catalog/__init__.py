"""olmkit-sqlite-catalog: the legacy SQLite index database (``index.db``) as a catalog source.

Before file-based catalogs, ``opm index add`` built catalogs as an SQLite database, and
many mirrors and air-gapped registries still hold them. With this plugin a CatalogSource
reads one directly::

    apiVersion: operators.coreos.com/v1alpha1
    kind: CatalogSource
    metadata: {name: legacy, namespace: olm}
    spec:
      sourceType: sqlite
      path: mirror/index.db        # relative to the manifest's directory

and ``olmkit migrate-index index.db DIR`` writes the same catalog as file-based catalog
JSON, one ``index.json`` per package (what ``opm migrate`` does).

How the database is read (the schema of operator-registry's ``pkg/sqlite`` migrations):

* ``package``: name and default channel; ``channel``: the channels of each package.
* ``channel_entry``: one row per bundle per channel per inbound upgrade edge, ``replaces``
  pointing at the row of the bundle it upgrades from. The entry's ``replaces`` is the
  bundle's own ``operatorbundle.replaces`` (the CSV's) when the channel holds that edge,
  else its nearest edge by depth, as opm's backfill chose it; the other edges, or the
  bundle's ``operatorbundle.skips`` where the database has that column, are its ``skips``.
* ``operatorbundle``: the bundle image (``bundlepath``), ``version``, ``skiprange`` and its
  manifests (``bundle``, a JSON stream; else ``csv``), which become ``olm.bundle.object``
  properties so that the bundle installs without pulling its image.
* ``properties``: the bundle's properties; ``olm.package`` is added from ``version`` where
  a database predates that table. ``related_image`` gives ``relatedImages``; ``deprecated``
  marks bundles ``olm.deprecated``.

A database that is not an opm index (a table missing), or that cannot be read, is an
error naming the file; the CatalogSource then reports ``TRANSIENT_FAILURE``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from olmkit import hookimpl
from olmkit.catalog import Catalog, build_catalog
from olmkit.catalog.sources import CONNECTING, READY, TRANSIENT_FAILURE, SourceContext, SourceHealth
from olmkit.errors import CatalogError, InputError, OlmkitError
from olmkit.types import CatalogSourceType

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SOURCE_TYPE", "SqliteIndexSource", "read_index"]

SOURCE_TYPE = "sqlite"
_REQUIRED = ("package", "channel", "channel_entry", "operatorbundle")


def _connect(path: Path) -> tuple[sqlite3.Connection, set[str]]:
    """A read-only connection to an opm index, and the tables it has."""
    if not path.is_file():
        raise InputError("no such index database", path=str(path))
    import sqlite3  # here, not at import: a command that reads no index does not load SQLite

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not an SQLite database: {exc}", path=str(path)) from None
    missing = [t for t in _REQUIRED if t not in tables]
    if missing:
        con.close()
        raise InputError(f"not an opm index database (no table {', '.join(missing)})", path=str(path))
    con.row_factory = sqlite3.Row
    return con, tables


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info({table})")}


def _manifests(text: str | bytes | None) -> list[Any]:
    """The objects of an ``operatorbundle.bundle`` / ``csv`` value: JSON documents one after another."""
    if not text:
        return []
    if isinstance(text, bytes):
        text = text.decode()
    decoder = json.JSONDecoder()
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = decoder.raw_decode(text, i)
        out.append(obj)


def read_index(path: str | Path) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """The catalog in an opm SQLite index, as file-based catalog blobs.

    Yields ``(where, line, blob)`` triples, ``where`` naming the database and the row, in the
    order a file-based catalog would hold them: per package, its ``olm.package``, its
    channels, then its bundles.

    Raises:
        InputError: the file is missing, not SQLite, not an opm index, or a row does not parse.
    """
    path = Path(path)
    con, tables = _connect(path)
    import sqlite3

    try:
        yield from _blobs(con, tables, str(path))
    except sqlite3.DatabaseError as exc:
        raise InputError(f"cannot read the index database: {exc}", path=str(path)) from None
    finally:
        con.close()


def _blobs(con: sqlite3.Connection, tables: set[str], where: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    bundle_cols = _columns(con, "operatorbundle")
    wanted = [
        c
        for c in ("name", "csv", "bundle", "bundlepath", "version", "skiprange", "replaces", "skips")
        if c in bundle_cols
    ]
    rows = {r["name"]: r for r in con.execute(f"SELECT {', '.join(wanted)} FROM operatorbundle")}

    properties: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if "properties" in tables:
        for r in con.execute("SELECT type, value, operatorbundle_name FROM properties ORDER BY rowid"):
            try:
                value = json.loads(r["value"])
            except (TypeError, ValueError) as exc:
                raise InputError(
                    f"property {r['type']} of bundle {r['operatorbundle_name']} is not JSON: {exc}", path=where
                ) from None
            prop = {"type": r["type"], "value": value}
            if prop not in properties[r["operatorbundle_name"]]:
                properties[r["operatorbundle_name"]].append(prop)
    related: dict[str, list[str]] = defaultdict(list)
    if "related_image" in tables:
        for r in con.execute("SELECT image, operatorbundle_name FROM related_image ORDER BY rowid"):
            if r["image"] and r["image"] not in related[r["operatorbundle_name"]]:
                related[r["operatorbundle_name"]].append(r["image"])
    deprecated = set()
    if "deprecated" in tables:
        deprecated = {r[0] for r in con.execute("SELECT operatorbundle_name FROM deprecated")}

    entries = list(
        con.execute(
            "SELECT rowid AS id, channel_name, package_name, operatorbundle_name, replaces, depth "
            "FROM channel_entry ORDER BY package_name, channel_name, depth, rowid"
        )
    )
    by_id = {e["id"]: e for e in entries}
    # per package and channel, per bundle: the bundles its rows point at, nearest first
    edges: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for e in entries:
        targets = edges[(e["package_name"], e["channel_name"])][e["operatorbundle_name"]]
        target = by_id.get(e["replaces"]) if e["replaces"] is not None else None
        if target is not None and target["operatorbundle_name"] not in targets:
            targets.append(target["operatorbundle_name"])

    packages = list(con.execute("SELECT name, default_channel FROM package ORDER BY name"))
    channels: dict[str, list[str]] = defaultdict(list)
    for r in con.execute("SELECT name, package_name FROM channel ORDER BY package_name, name"):
        channels[r["package_name"]].append(r["name"])
    line = 0
    for pkg in packages:
        name = pkg["name"]
        line += 1
        blob: dict[str, Any] = {"schema": "olm.package", "name": name}
        if pkg["default_channel"]:
            blob["defaultChannel"] = pkg["default_channel"]
        yield f"{where}:package/{name}", line, blob
        in_package: list[str] = []
        for channel in channels.get(name, []):
            line += 1
            out = []
            for bundle, targets in edges[(name, channel)].items():
                out.append(_entry(bundle, targets, rows.get(bundle)))
                if bundle not in in_package:
                    in_package.append(bundle)
            yield (
                f"{where}:channel/{name}/{channel}",
                line,
                {
                    "schema": "olm.channel",
                    "package": name,
                    "name": channel,
                    "entries": out,
                },
            )
        for bundle in in_package:
            row = rows.get(bundle)
            if row is None:
                continue  # a channel entry without a bundle row: the catalog's validation names it
            line += 1
            yield (
                f"{where}:bundle/{bundle}",
                line,
                _bundle(name, row, properties.get(bundle, []), related.get(bundle, []), bundle in deprecated, where),
            )


def _entry(bundle: str, targets: list[str], row: Mapping[str, Any] | None) -> dict[str, Any]:
    """A channel entry: the upgrade edges of ``bundle`` in one channel."""
    entry: dict[str, Any] = {"name": bundle}
    keys = row.keys() if row is not None else ()
    own = row["replaces"] if "replaces" in keys else None
    replaces = own if own in targets else (targets[0] if targets else None)
    if replaces:
        entry["replaces"] = replaces
    if "skips" in keys and row is not None and row["skips"]:
        skips = [s for s in str(row["skips"]).split(",") if s]
    else:
        skips = [t for t in targets if t != replaces]
    if skips:
        entry["skips"] = skips
    if row is not None and "skiprange" in keys and row["skiprange"]:
        entry["skipRange"] = row["skiprange"]
    return entry


def _bundle(
    package: str,
    row: Mapping[str, Any],
    properties: list[dict[str, Any]],
    related: list[str],
    deprecated: bool,
    where: str,
) -> dict[str, Any]:
    name = row["name"]
    props = list(properties)
    if not any(p["type"] == "olm.package" for p in props) and row["version"]:
        props.insert(0, {"type": "olm.package", "value": {"packageName": package, "version": row["version"]}})
    keys = row.keys()
    try:
        objects = _manifests(row["bundle"] if "bundle" in keys else None) or _manifests(
            row["csv"] if "csv" in keys else None
        )
    except ValueError as exc:
        raise InputError(f"the manifests of bundle {name} are not JSON: {exc}", path=where) from None
    for obj in objects:
        data = base64.b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode()
        props.append({"type": "olm.bundle.object", "value": {"data": data}})
    if deprecated:
        props.append({"type": "olm.deprecated", "value": {}})
    blob: dict[str, Any] = {"schema": "olm.bundle", "name": name, "package": package, "properties": props}
    if "bundlepath" in keys and row["bundlepath"]:
        blob["image"] = row["bundlepath"]
    if related:
        blob["relatedImages"] = [{"name": "", "image": image} for image in related]
    return blob


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns)


@attrs.define
class SqliteIndexSource:
    """A catalog source reading an opm SQLite index; reloaded when the file changes."""

    name: str
    path: Path
    context: SourceContext
    _catalog: Catalog | None = None
    _signature: tuple[int, int] | None = None
    _last_error: str | None = None

    @classmethod
    def open(cls, spec: Mapping[str, Any], context: SourceContext) -> SqliteIndexSource:
        """Build from a CatalogSource spec (``spec.path``, relative to the manifest's directory)."""
        raw = spec.get("path")
        if not isinstance(raw, str) or not raw:
            raise InputError(
                f"spec.path is required for sourceType {SOURCE_TYPE}",
                obj=f"catalogsource {context.namespace}/{context.name}",
            )
        path = Path(raw)
        if not path.is_absolute() and context.base_dir is not None:
            path = context.base_dir / path
        return cls(context.name, path, context)

    def load(self) -> Catalog:
        """The catalog in the database (the last one built, while the file is unchanged)."""
        signature = _signature(self.path)
        if self._catalog is not None and signature == self._signature:
            return self._catalog
        try:
            digest = hashlib.sha256(self.path.read_bytes()).hexdigest() if signature else ""
            result = build_catalog(read_index(self.path), self.context.registry, name=self.name, digest=digest)
            if result.problems:
                raise CatalogError(
                    f"{self.path} holds an invalid catalog:\n  " + "\n  ".join(map(str, result.problems))
                )
        except OlmkitError as exc:
            self._last_error = str(exc)
            raise
        self._catalog, self._signature, self._last_error = result.catalog, signature, None
        return result.catalog

    def health(self) -> SourceHealth:
        """``TRANSIENT_FAILURE`` when the file is missing or the last load failed."""
        if not self.path.exists():
            return SourceHealth(TRANSIENT_FAILURE, f"{self.path}: no such file")
        if self._last_error is not None:
            return SourceHealth(TRANSIENT_FAILURE, self._last_error)
        return SourceHealth(READY if self._catalog is not None else CONNECTING)

    def revision(self) -> str | None:
        """Changes when the database file does (size and modification time)."""
        signature = _signature(self.path)
        return None if signature is None else f"{signature[0]}:{signature[1]}"


def migrate(args: argparse.Namespace, pm: Any) -> int:
    """``olmkit migrate-index INDEX.DB DIR``: write the index as a file-based catalog."""
    out = Path(args.output)
    if out.exists() and any(out.iterdir()):
        raise InputError("the output directory is not empty", path=str(out))
    per_package: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, _, blob in read_index(args.index):
        package = blob["name"] if blob["schema"] == "olm.package" else blob["package"]
        per_package[package].append(blob)
    for package, blobs in per_package.items():
        target = out / package / "index.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(json.dumps(b, sort_keys=True) + "\n" for b in blobs))
    bundles = sum(1 for blobs in per_package.values() for b in blobs if b["schema"] == "olm.bundle")
    print(f"{out}: {len(per_package)} packages, {bundles} bundles")
    return 0


@hookimpl
def olmkit_catalog_source_types() -> Iterator[CatalogSourceType]:
    yield CatalogSourceType(
        name=SOURCE_TYPE,
        open=SqliteIndexSource.open,
        description="a legacy opm SQLite index database (spec.path)",
    )


@hookimpl
def olmkit_add_commands(subparsers: Any) -> None:
    p = subparsers.add_parser("migrate-index", help="write a legacy SQLite index (index.db) as a file-based catalog")
    p.add_argument("index", metavar="INDEX.DB")
    p.add_argument("output", metavar="DIR", help="an empty or new directory")
    p.set_defaults(func=migrate)
