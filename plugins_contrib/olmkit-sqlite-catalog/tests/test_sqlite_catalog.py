"""olmkit-sqlite-catalog against real SQLite index files built the way opm built them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import attrs
import olmkit_sqlite_catalog as plugin
import pytest
import yaml

from olmkit.catalog import load_catalog
from olmkit.catalog.sources import SourceContext

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "catalog"

SCHEMA = """
CREATE TABLE operatorbundle (name TEXT PRIMARY KEY, csv TEXT, bundle TEXT, bundlepath TEXT, version TEXT,
                             skiprange TEXT, replaces TEXT, skips TEXT, substitutesfor TEXT);
CREATE TABLE package (name TEXT PRIMARY KEY, default_channel TEXT, add_mode TEXT);
CREATE TABLE channel (name TEXT, package_name TEXT, head_operatorbundle_name TEXT, PRIMARY KEY(name, package_name));
CREATE TABLE channel_entry (entry_id INTEGER PRIMARY KEY, channel_name TEXT, package_name TEXT,
                            operatorbundle_name TEXT, replaces INTEGER, depth INTEGER);
CREATE TABLE properties (type TEXT, value TEXT, operatorbundle_name TEXT, operatorbundle_version TEXT,
                         operatorbundle_path TEXT);
CREATE TABLE related_image (image TEXT, operatorbundle_name TEXT);
CREATE TABLE deprecated (operatorbundle_name TEXT PRIMARY KEY);
"""


def bundle_manifests(catalog_dir: Path, image: str) -> list[dict]:
    """The manifests of a bundle directory the catalog's ``image`` names."""
    folder = (catalog_dir / image).resolve() / "manifests"
    return [doc for f in sorted(folder.iterdir()) for doc in yaml.safe_load_all(f.read_text()) if doc]


def build_index(db: Path, catalog, catalog_root: Path, *, deprecated: tuple[str, ...] = ()) -> Path:
    """Write ``catalog`` as an opm SQLite index: one channel_entry row per inbound edge, depth
    counted from the channel head, manifests in ``operatorbundle.bundle``."""
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    for name, pkg in catalog.packages.items():
        con.execute("INSERT INTO package VALUES (?, ?, 'replaces')", (name, pkg.default_channel))
        for channel_name in catalog.channels.get(name, {}):
            order = catalog.channel_order(name, channel_name)  # the replaces chain, head first
            entries = catalog.channels[name][channel_name].entries
            depth_of = {e.name: depth for depth, e in enumerate(order)}
            con.execute("INSERT INTO channel VALUES (?, ?, ?)", (channel_name, name, order[0].name))
            ids: dict[str, list[int]] = {}
            rows = []
            for entry in sorted(entries, key=lambda e: (depth_of.get(e.name, len(order)), e.name)):
                targets = ([entry.replaces] if entry.replaces else []) + sorted(entry.skips)
                in_channel = [t for t in targets if any(e.name == t for e in entries)] or [None]
                rows.append((entry.name, in_channel, depth_of.get(entry.name, len(order))))
            for bundle, targets, depth in rows:
                for _ in targets:
                    cur = con.execute(
                        "INSERT INTO channel_entry (channel_name, package_name, operatorbundle_name, depth) "
                        "VALUES (?, ?, ?, ?)",
                        (channel_name, name, bundle, depth),
                    )
                    ids.setdefault(bundle, []).append(cur.lastrowid)
            for bundle, targets, _ in rows:
                for row_id, target in zip(ids[bundle], targets, strict=True):
                    if target is not None:
                        con.execute(
                            "UPDATE channel_entry SET replaces = ? WHERE entry_id = ?", (ids[target][0], row_id)
                        )
    for package, per in catalog.bundles.items():
        for name, b in per.items():
            entry = next(e for ch in catalog.channels[package].values() for e in ch.entries if e.name == name)
            skip_range = next(
                (
                    e.skip_range
                    for ch in catalog.channels[package].values()
                    for e in ch.entries
                    if e.name == name and e.skip_range
                ),
                "",
            )
            manifests = bundle_manifests(catalog_root / package, b.image)
            csv = next(m for m in manifests if m["kind"] == "ClusterServiceVersion")
            con.execute(
                "INSERT INTO operatorbundle VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (
                    name,
                    json.dumps(csv),
                    "".join(json.dumps(m) for m in manifests),
                    f"registry.example.com/bundles/{name}:latest",
                    b.version,
                    skip_range,
                    entry.replaces or "",
                    ",".join(sorted(entry.skips)),
                ),
            )
            for prop in b.properties:
                if prop.type != "olm.bundle.object":
                    con.execute(
                        "INSERT INTO properties VALUES (?, ?, ?, ?, NULL)",
                        (prop.type, json.dumps(prop.value), name, b.version),
                    )
            for image in csv["spec"].get("relatedImages") or ():
                con.execute("INSERT INTO related_image VALUES (?, ?)", (image["image"], name))
    for name in deprecated:
        con.execute("INSERT INTO deprecated VALUES (?)", (name,))
    con.commit()
    con.close()
    return db


@pytest.fixture
def examples(olmkit_pm):
    return load_catalog(EXAMPLES, olmkit_pm.registry, name="examples", cache=False)


@pytest.fixture
def index(tmp_path, examples):
    return build_index(tmp_path / "index.db", examples, EXAMPLES)


def open_index(path: Path, pm) -> plugin.SqliteIndexSource:
    context = SourceContext(registry=pm.registry, name="examples", namespace="olm", base_dir=path.parent)
    return plugin.SqliteIndexSource.open({"sourceType": "sqlite", "path": path.name}, context)


def bundle_skip_range(catalog, package: str, name: str) -> str | None:
    """A bundle's skipRange: an index keeps one per bundle, not one per channel entry."""
    ranges = [e.skip_range for ch in catalog.channels[package].values() for e in ch.entries if e.name == name]
    return next((r for r in ranges if r), None)


def test_index_holds_the_same_upgrade_graph_and_properties(olmkit_pm, examples, index):
    """Every channel (entries, replaces, skips, skipRange) and every bundle's properties and
    version read from the database equal the file-based catalog it was built from. (A
    skipRange belongs to the bundle in an index, so it holds in each of the bundle's channels.)"""
    catalog = open_index(index, olmkit_pm).load()

    assert sorted(examples.packages) == sorted(catalog.packages)
    for package, channels in examples.channels.items():
        expected = {
            c: {attrs.evolve(e, skip_range=bundle_skip_range(examples, package, e.name)) for e in ch.entries}
            for c, ch in channels.items()
        }
        assert expected == {c: set(ch.entries) for c, ch in catalog.channels[package].items()}
        assert examples.packages[package].default_channel == catalog.packages[package].default_channel
    for package, per in examples.bundles.items():
        for name, b in per.items():
            read = catalog.bundles[package][name]
            assert b.version == read.version
            plain = [(p.type, p.value) for p in b.properties if p.type != "olm.bundle.object"]
            assert plain == [(p.type, p.value) for p in read.properties if p.type != "olm.bundle.object"]
            assert f"registry.example.com/bundles/{name}:latest" == read.image


def test_every_package_resolves_as_from_the_files(olmkit_pm, examples, index, resolve):
    """Subscribing to each package gives the same answer from the database and from the files."""
    catalog = open_index(index, olmkit_pm).load()

    for package in sorted(examples.packages):
        from_files = resolve([package], [examples])
        from_index = resolve([package], [catalog])
        assert from_files.status == from_index.status, package
        assert [(s.bundle, s.replaces) for s in from_files.steps] == [
            (s.bundle, s.replaces) for s in from_index.steps
        ], package


def test_deprecated_bundles_are_not_installed(olmkit_pm, examples, tmp_path, resolve):
    """A bundle in the ``deprecated`` table carries olm.deprecated: the resolver passes it over."""
    head = examples.channel_head("storage-operator", "stable").name
    db = build_index(tmp_path / "index.db", examples, EXAMPLES, deprecated=(head,))

    outcome = resolve(["storage-operator"], [open_index(db, olmkit_pm).load()])

    assert "ok" == outcome.status
    assert head not in [s.bundle for s in outcome.steps]


def test_catalog_source_installs_an_operator_with_its_dependency(olmkit_pm, olmkit_register, examples, tmp_path):
    """End to end on the embedded cluster: a CatalogSource of sourceType sqlite is READY and
    postgres-operator installs from it, with cert-manager-lite for the API it needs."""
    from olmkit.testing import EmbeddedCluster

    olmkit_register(plugin, "sqlite-catalog")
    db = build_index(tmp_path / "index.db", examples, EXAMPLES)
    cluster = EmbeddedCluster(tmp_path / "cluster.db", olmkit_pm)
    try:
        cluster.apply(
            {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "CatalogSource",
                "metadata": {"name": "legacy", "namespace": "olm"},
                "spec": {"sourceType": "sqlite", "path": str(db)},
            }
        )
        cluster.operator_group()
        cluster.subscribe("postgres-operator", source="legacy")
        cluster.reconcile()

        source = cluster.get("catsrc", "legacy", "olm")
        assert "READY" == source["status"]["connectionState"]["lastObservedState"]
        default = examples.packages["postgres-operator"].default_channel
        head = examples.channel_head("postgres-operator", default).name
        first = min(cluster.plans(), key=lambda plan: plan["spec"]["generation"])
        assert head == first["spec"]["clusterServiceVersionNames"][0]
        assert any(n.startswith("cert-manager-lite.") for n in first["spec"]["clusterServiceVersionNames"])
        installed = cluster.get("sub", "postgres-operator")["status"]["installedCSV"]
        assert "Succeeded" == cluster.phase(installed)
    finally:
        cluster.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such index database"),
        (b"this is not a database at all, just text" * 10, "not an SQLite database"),
        ("empty-sqlite", "not an opm index database (no table package, channel, channel_entry, operatorbundle)"),
    ],
)
def test_bad_files_are_clear_errors(olmkit_pm, tmp_path, content, message):
    """A missing file, a file that is not SQLite and an SQLite file of another kind each give
    an error naming the file; the source reports TRANSIENT_FAILURE with it."""
    db = tmp_path / "index.db"
    if content == "empty-sqlite":
        sqlite3.connect(db).execute("CREATE TABLE other (x)").connection.commit()
    elif content is not None:
        db.write_bytes(content)
    source = open_index(db, olmkit_pm)

    with pytest.raises(Exception, match=r"index\.db") as raised:
        source.load()

    assert message in str(raised.value)
    health = source.health()
    assert "TRANSIENT_FAILURE" == health.state


def olmkit(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "olmkit", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def test_migrate_index_writes_a_catalog_that_validates(examples, index, tmp_path):
    """``olmkit migrate-index`` writes one index.json per package; the result validates and
    holds every bundle; a non-empty output directory is refused."""
    out = tmp_path / "fbc"

    result = olmkit("migrate-index", str(index), str(out))

    assert 0 == result.returncode, result.stderr
    bundles = sum(len(per) for per in examples.bundles.values())
    assert f"{out}: {len(examples.packages)} packages, {bundles} bundles" == result.stdout.strip()
    assert sorted(examples.packages) == sorted(p.name for p in out.iterdir())
    validated = olmkit("catalog", "validate", str(out), "--no-cache")
    assert 0 == validated.returncode, validated.stdout + validated.stderr

    again = olmkit("migrate-index", str(index), str(out))
    assert 2 == again.returncode
    assert "the output directory is not empty" in again.stderr


def test_source_type_and_command_go_with_the_plugin(tmp_path, index):
    """With the plugin a CatalogSource of sourceType sqlite becomes READY; with
    OLMKIT_DISABLE_PLUGINS=sqlite-catalog the same source reports the unknown source type and
    migrate-index is no longer a command."""
    manifest = tmp_path / "catsrc.yaml"
    manifest.write_text(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\n"
        f"metadata: {{name: legacy, namespace: olm}}\nspec: {{sourceType: sqlite, path: {index}}}\n"
    )
    off = {"OLMKIT_DISABLE_PLUGINS": "sqlite-catalog"}

    def state(store: Path, env: dict) -> dict:
        assert 0 == olmkit("apply", "-f", str(manifest), "--store", str(store), env=env).returncode
        olmkit("reconcile", "--until-stable", "--timeout", "30", "--store", str(store), env=env)
        got = olmkit("get", "catsrc", "legacy", "-n", "olm", "-o", "json", "--store", str(store), env=env)
        return json.loads(got.stdout)["status"]

    assert "READY" == state(tmp_path / "on.db", {})["connectionState"]["lastObservedState"]
    disabled = state(tmp_path / "off.db", off)
    assert "TRANSIENT_FAILURE" == disabled["connectionState"]["lastObservedState"]
    assert "SpecInvalidError" == disabled["reason"]
    assert "unknown spec.sourceType 'sqlite'" in disabled["message"]
    assert 2 == olmkit("migrate-index", str(index), str(tmp_path / "out"), env=off).returncode
