"""The on-disk cache, the stat-cached file digests and the loader's fast paths."""

import os
from pathlib import Path

import orjson
import pytest

from olmkit.catalog import _cache, _files, cache_dir, load_catalog_result
from olmkit.catalog.validate import validate_catalog, validate_path
from olmkit.cli.catalog import catalog_blobs
from olmkit.serde import decode_json_stream, decode_json_texts


def pkg(name, default="stable"):
    return {"schema": "olm.package", "name": name, "defaultChannel": default}


def chan(package, entries, name="stable"):
    return {"schema": "olm.channel", "package": package, "name": name, "entries": entries}


def bundle(package, version, props=()):
    return {
        "schema": "olm.bundle",
        "package": package,
        "name": f"{package}.v{version}",
        "image": f"example.invalid/{package}:{version}",
        "properties": [{"type": "olm.package", "value": {"packageName": package, "version": version}}, *props],
    }


GVK = {"type": "olm.gvk", "value": {"group": "g.io", "version": "v1", "kind": "K"}}
NEEDS_GVK = {"type": "olm.gvk.required", "value": {"group": "g.io", "version": "v1", "kind": "K"}}
NEEDS_NOTHING_HERE = {"type": "olm.package.required", "value": {"packageName": "zzz", "versionRange": ">=1.0.0"}}


def write(root, files):
    root.mkdir(parents=True, exist_ok=True)
    for name, blobs in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in blobs))


@pytest.fixture
def later(monkeypatch):
    """Record digests as if a minute had passed since the files were written (so they are trusted)."""
    real = _files._clock
    monkeypatch.setattr(_files, "_clock", lambda: real() + 60_000_000_000)


CATALOG = {
    "a/index.json": [
        pkg("a"),
        chan("a", [{"name": "a.v1.1.0", "replaces": "a.v1.0.0"}, {"name": "a.v1.0.0"}]),
        chan("a", [{"name": "a.v1.1.0", "replaces": "a.v1.0.0"}, {"name": "a.v1.0.0"}], name="fast"),
        bundle("a", "1.0.0", [GVK]),
        bundle("a", "1.1.0", [GVK, NEEDS_NOTHING_HERE]),
    ],
    "b/index.json": [
        pkg("b"),
        chan("b", [{"name": "b.v2.0.0"}]),
        bundle("b", "2.0.0", [NEEDS_GVK]),
        {"schema": "example.io/notes", "package": "b", "text": "kept verbatim"},
    ],
}


def test_cached_catalog_equals_the_loaded_one(tmp_path, olmkit_pm):
    """A catalog read back from the cache has the same blobs, origins, versions and index as the cold load."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    cold = load_catalog_result(root, olmkit_pm.registry)
    warm = load_catalog_result(root, olmkit_pm.registry)

    assert (False, True) == (cold.cached, warm.cached)
    assert catalog_blobs(cold.catalog) == catalog_blobs(warm.catalog)
    assert cold.catalog.digest == warm.catalog.digest
    for package, bundles in cold.catalog.bundles.items():
        for name, b in bundles.items():
            cached = warm.catalog.bundles[package][name]
            assert (b.origin, b.version) == (cached.origin, cached.version)
    key = ("g.io", "v1", "K")
    assert [b.name for b in cold.catalog.lookup("olm.gvk", key)] == [
        b.name for b in warm.catalog.lookup("olm.gvk", key)
    ]
    assert ["a.v1.1.0", "a.v1.0.0"] == [e.name for e in warm.catalog.channel_order("a", "fast")]


def test_cache_builds_a_package_only_when_it_is_used(tmp_path, olmkit_pm):
    """Reading the cache decodes the package list; a package's channels or bundles are built on first access."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    load_catalog_result(root, olmkit_pm.registry)
    warm = load_catalog_result(root, olmkit_pm.registry).catalog
    channels_of = {name: list(channels) for name, channels in warm.channels.items()}

    assert ["a", "b"] == list(warm.packages)
    assert {"a": ["stable", "fast"], "b": ["stable"]} == channels_of
    assert {} == warm.bundles._done  # walking every channel built no bundle
    assert "1.1.0" == warm.bundles["a"]["a.v1.1.0"].version
    assert ["a"] == list(warm.bundles._done)


def test_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path, olmkit_pm, later):
    """Changing a file's content but restoring its size and mtime changes its ctime: the cache is not used."""
    root = tmp_path / "cat"
    write(root, {"c.json": [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0")]})
    first = load_catalog_result(root, olmkit_pm.registry)
    second = load_catalog_result(root, olmkit_pm.registry)
    path = root / "c.json"
    st = path.stat()
    path.write_bytes(path.read_bytes().replace(b"1.0.0", b"1.0.1"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    third = load_catalog_result(root, olmkit_pm.registry)

    assert st.st_size == path.stat().st_size
    assert (False, True, False) == (first.cached, second.cached, third.cached)
    assert ["a.v1.0.1"] == list(third.catalog.bundles["a"])


def test_unchanged_files_are_not_read_again(tmp_path, olmkit_pm, monkeypatch, later):
    """With remembered digests, recognising an unchanged catalog reads no catalog file."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    load_catalog_result(root, olmkit_pm.registry)
    reads = []
    real = _files.read_signed
    monkeypatch.setattr(_files, "read_signed", lambda path: reads.append(path) or real(path))
    warm = load_catalog_result(root, olmkit_pm.registry)

    assert warm.cached
    assert [] == reads


def test_fresh_files_are_hashed_again(tmp_path, monkeypatch):
    """A digest is remembered only once the file's last change is 2 s older than the recording (racy timestamps)."""
    path = tmp_path / "f.json"
    path.write_bytes(b"{}\n")
    store = tmp_path / "digests.marshal"
    now = _files._clock()
    remembered = []
    for delay in (0, 1, 3):
        monkeypatch.setattr(_files, "_clock", lambda delay=delay: now + delay * 1_000_000_000)
        digests = _files.FileDigests(store)
        digests.digest(str(path), "f.json")
        digests.save()
        remembered.append("f.json" in _files.FileDigests(store)._entries)

    assert [False, False, True] == remembered


@pytest.mark.parametrize(
    "damage", [b"", b"\x00" * 8, b"garbage that is not a cache", _cache._MAGIC + b"\xff" * 8, _cache._MAGIC + bytes(8)]
)
def test_damaged_or_foreign_cache_files_are_ignored(tmp_path, olmkit_pm, damage):
    """A cache file that is truncated, empty or of another format is ignored; the catalog loads from its files."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    first = load_catalog_result(root, olmkit_pm.registry)
    [path] = cache_dir().glob(f"{first.catalog.digest}-*.cache")
    path.write_bytes(damage)
    second = load_catalog_result(root, olmkit_pm.registry)

    assert not second.cached
    assert catalog_blobs(first.catalog) == catalog_blobs(second.catalog)


def test_truncated_cache_is_ignored(tmp_path, olmkit_pm):
    """A cache file cut short is detected by its recorded size."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    first = load_catalog_result(root, olmkit_pm.registry)
    [path] = cache_dir().glob(f"{first.catalog.digest}-*.cache")
    path.write_bytes(path.read_bytes()[:-10])

    assert not load_catalog_result(root, olmkit_pm.registry).cached


def test_a_copied_catalog_names_its_own_files(tmp_path, olmkit_pm):
    """Two copies of one catalog share a digest but not a cache file: each copy's blobs come
    from its own files (bundle directories named relative to a blob are found next to it)."""
    first, second = tmp_path / "a" / "cat", tmp_path / "b" / "cat"
    write(first, CATALOG)
    write(second, CATALOG)
    original = load_catalog_result(first, olmkit_pm.registry)
    copy = load_catalog_result(second, olmkit_pm.registry)
    again = load_catalog_result(first, olmkit_pm.registry)

    assert again.cached
    assert original.catalog.digest == copy.catalog.digest
    for result, root in ((original, first), (copy, second), (again, first)):
        origins = {b.origin.path for per in result.catalog.bundles.values() for b in per.values()}
        assert origins
        assert all(Path(path).is_relative_to(root) for path in origins), (root, origins)


def test_validation_report_comes_from_the_cache(tmp_path, olmkit_pm):
    """validate_path on an unchanged catalog returns the stored report, equal to a fresh one."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    _, fresh, first_cached = validate_path(root, olmkit_pm.registry)
    _, stored, second_cached = validate_path(root, olmkit_pm.registry)

    assert (False, True) == (first_cached, second_cached)
    assert [str(p) for p in fresh] == [str(p) for p in stored]
    assert any("nothing in this catalog satisfies" in p.message for p in stored)


def test_a_copied_catalogs_stored_report_names_its_own_files(tmp_path, olmkit_pm):
    """The stored validation report is kept per copy, as the snapshot is: its problems name files."""
    first, second = tmp_path / "a" / "cat", tmp_path / "b" / "cat"
    write(first, CATALOG)
    write(second, CATALOG)
    validate_path(first, olmkit_pm.registry)
    validate_path(second, olmkit_pm.registry)
    _, stored, cached = validate_path(first, olmkit_pm.registry)

    assert cached
    assert stored
    assert all(Path(p.path).is_relative_to(first) for p in stored if p.path), [p.path for p in stored]


def test_parallel_validation_equals_serial(tmp_path, olmkit_pm):
    """Two processes find exactly the problems one finds, in the same order, a requirement warned once per package."""
    blobs = []
    for i in range(12):
        name = f"p{i:02d}"
        blobs += [
            pkg(name, default="nope" if i % 5 == 0 else "stable"),
            chan(
                name,
                [{"name": f"{name}.v1.0.0"}, {"name": f"{name}.v2.0.0"}]
                if i % 4 == 0
                else [{"name": f"{name}.v1.0.0"}],
            ),
            bundle(name, "1.0.0", [NEEDS_NOTHING_HERE, {"type": "x.io/typo", "value": i}]),
            bundle(name, "2.0.0", [NEEDS_NOTHING_HERE]),
        ]
    write(tmp_path / "cat", {"c.json": blobs})
    result = load_catalog_result(tmp_path / "cat", olmkit_pm.registry, cache=False)
    serial = validate_catalog(result.catalog, olmkit_pm.registry, result.problems, jobs=1)
    parallel = validate_catalog(result.catalog, olmkit_pm.registry, result.problems, jobs=2)

    assert [str(p) for p in serial] == [str(p) for p in parallel]
    assert 12 == sum("nothing in this catalog satisfies" in p.message for p in parallel)
    assert any("(required by 2 bundles of p03, versions 1.0.0 to 2.0.0: " in p.message for p in parallel)
    assert 12 == sum("unknown property type" in p.message for p in parallel)


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1}\n{"b":2}\n',
        b'{"a":1}\n\n{"b":2}',
        b'{"a":\n1}\n{"b":2}\n',
        b"{} {}\n",
        b"",
        b'{"a":1}\r\n{"b":[1,\n2]}\r\n',
        b'  {"x": "a\\nb"}\n[1]\n"s"\n',
    ],
)
def test_json_texts_match_the_stream_decoder(data):
    """Whole-file decoding gives line-by-line decoding's values and line numbers, and one-line values' texts."""
    texts = list(decode_json_texts(data))
    lines = data.split(b"\n")

    assert [(line, value) for line, value, _ in texts] == list(decode_json_stream(data))
    assert [(line, value, None) for line, value, _ in texts] == list(decode_json_texts(data, texts=False))
    for line, value, text in texts:
        if text is not None:
            assert text == lines[line - 1]
            assert value == orjson.loads(text)


def test_has_type_cel_rules_do_not_build_the_cel_parser(tmp_path, olmkit_pm):
    """Validating properties.exists(p, p.type == "T") rules compiles no CEL; another rule still compiles."""
    from olmkit.plugins import requirements

    has_type = {"type": "olm.constraint", "value": {"cel": {"rule": 'properties.exists(p, p.type == "marker-1")'}}}
    write(tmp_path / "cat", {"c.json": [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0", [has_type])]})
    result = load_catalog_result(tmp_path / "cat", olmkit_pm.registry, cache=False)
    before = dict(requirements._CEL_STATS)
    problems = validate_catalog(result.catalog, olmkit_pm.registry, result.problems)
    rule = requirements.CelRule('properties.exists(p, p.type == "marker-2" && true)')

    assert before["compiled"] == requirements._CEL_STATS["compiled"] - 1
    assert rule.has_type is None
    assert [] == [p for p in problems if p.severity == "error"]


def test_large_catalog_cache_is_written_by_a_child(tmp_path, olmkit_pm, monkeypatch):
    """A large catalog's cache is written in the background; the next load waits for it and hits."""
    from olmkit.catalog import _fork, _load

    monkeypatch.setattr(_load, "BACKGROUND_MIN_BUNDLES", 1)
    monkeypatch.setattr(_load.gc, "freeze", lambda: None)  # keep the test process's collector as it is
    root = tmp_path / "cat"
    write(root, CATALOG)
    first = load_catalog_result(root, olmkit_pm.registry)
    writers = len(_fork._pending)
    second = load_catalog_result(root, olmkit_pm.registry)

    assert 1 == writers
    assert 0 == len(_fork._pending)
    assert (False, True) == (first.cached, second.cached)
    assert catalog_blobs(first.catalog) == catalog_blobs(second.catalog)


def test_validation_child_writes_the_cache_of_a_large_catalog(tmp_path, olmkit_pm, monkeypatch):
    """validate_path on a large catalog: the validation child writes the cache after its half; the next run hits it."""
    from olmkit.catalog import _fork, _load
    from olmkit.catalog import validate as validate_module

    monkeypatch.setattr(_load, "BACKGROUND_MIN_BUNDLES", 1)
    monkeypatch.setattr(validate_module, "PARALLEL_MIN_BUNDLES", 1)
    monkeypatch.setattr(_fork, "spare_cpu", lambda: True)  # however busy the machine running the tests
    monkeypatch.setattr(_load.gc, "freeze", lambda: None)  # keep the test process's collector as it is
    background = []
    monkeypatch.setattr(_fork, "background", lambda work: background.append(work) or False)
    root = tmp_path / "cat"
    write(root, CATALOG)
    _, first, first_cached = validate_path(root, olmkit_pm.registry)
    helpers = len(_fork._pending)
    _, second, second_cached = validate_path(root, olmkit_pm.registry)

    assert [] == background  # the write went to the validation child, not to a writer of its own
    assert 1 == helpers
    assert (False, True) == (first_cached, second_cached)
    assert [str(p) for p in first] == [str(p) for p in second]


def test_lookup_names_are_lookups_bundles_without_building_them(tmp_path, olmkit_pm):
    """lookup_names gives lookup's (package, name) pairs in its order, cold and cached (building nothing)."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    cold = load_catalog_result(root, olmkit_pm.registry).catalog
    warm = load_catalog_result(root, olmkit_pm.registry).catalog
    keys = [("olm.gvk", ("g.io", "v1", "K")), ("olm.package", "a"), ("olm.package", "b"), ("olm.package", "zz")]

    named = [list(warm.lookup_names(*k)) for k in keys]

    assert {} == warm.bundles._done
    assert [
        [("a", "a.v1.0.0"), ("a", "a.v1.1.0")],
        [("a", "a.v1.0.0"), ("a", "a.v1.1.0")],
        [("b", "b.v2.0.0")],
        [],
    ] == named
    for catalog in (cold, warm):
        assert [[(b.package, b.name) for b in catalog.lookup(*k)] for k in keys] == named
        assert named == [list(catalog.lookup_names(*k)) for k in keys]  # again, from the filled index


@pytest.fixture
def scans(monkeypatch):
    """The directories listed (os.scandir) from now on."""
    listed: list[str] = []
    real = os.scandir
    monkeypatch.setattr(_files.os, "scandir", lambda path: listed.append(os.fspath(path)) or real(path))
    return listed


def test_unchanged_directories_are_not_listed_again(tmp_path, olmkit_pm, later, scans):
    """Recognising an unchanged catalog stats its directories instead of listing them."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    first = load_catalog_result(root, olmkit_pm.registry)
    listed_first = list(scans)
    scans.clear()
    warm = load_catalog_result(root, olmkit_pm.registry)

    assert sorted(listed_first) == sorted(map(str, [root, root / "a", root / "b"]))
    assert warm.cached
    assert [] == scans
    assert list(first.catalog.bundles) == list(warm.catalog.bundles)


@pytest.mark.parametrize("change", ["add", "remove", "add-dir", "ignore-edit", "content"])
def test_a_changed_tree_is_listed_again(tmp_path, olmkit_pm, later, change):
    """Files added or removed anywhere, an .indexignore edited in place, or a file's content: the catalog is current."""
    root = tmp_path / "cat"
    write(root, {**CATALOG, "c/index.json": [pkg("c"), chan("c", [{"name": "c.v1.0.0"}]), bundle("c", "1.0.0")]})
    (root / "c" / ".indexignore").write_text("skip.json\n")
    load_catalog_result(root, olmkit_pm.registry)
    assert load_catalog_result(root, olmkit_pm.registry).cached
    d = [pkg("d"), chan("d", [{"name": "d.v1.0.0"}]), bundle("d", "1.0.0")]
    expected = {"a", "b", "c"}
    if change == "add":
        write(root, {"b/d.json": d})
        expected.add("d")
    elif change == "remove":
        (root / "b" / "index.json").unlink()
        expected.discard("b")
    elif change == "add-dir":
        write(root, {"a/deeper/d.json": d})
        expected.add("d")
    elif change == "ignore-edit":
        write(root, {"c/skip.json": d})  # ignored for now; the directory changes: listed again here
        assert set(load_catalog_result(root, olmkit_pm.registry).catalog.bundles) == expected
        ignore = root / "c" / ".indexignore"
        st = (root / "c").stat()
        ignore.write_text("other.json\n")  # in place: the directory itself does not change
        assert st.st_mtime_ns == (root / "c").stat().st_mtime_ns
        expected.add("d")
    else:
        path = root / "a" / "index.json"
        path.write_bytes(path.read_bytes().replace(b'"a.v1.0.0"', b'"a.v1.0.9"'))
    loaded = load_catalog_result(root, olmkit_pm.registry)

    assert not loaded.cached
    assert set(loaded.catalog.bundles) == expected
    if change == "content":
        assert "a.v1.0.9" in loaded.catalog.bundles["a"]
    assert load_catalog_result(root, olmkit_pm.registry).cached  # and remembered again


def test_a_listing_is_remembered_only_for_the_same_spelling_and_settled_directories(tmp_path, monkeypatch):
    """The root spelt otherwise is listed again (remembered paths keep their spelling); so is a fresh tree."""
    root = tmp_path / "cat"
    write(root, CATALOG)
    store = tmp_path / "digests.marshal"
    now = _files._clock()
    monkeypatch.setattr(_files, "_clock", lambda: now + 60_000_000_000)
    digests = _files.FileDigests(store)
    files, remembered = digests.files(root)
    digests.save()

    assert not remembered
    assert (files, True) == _files.FileDigests(store).files(root)
    assert (files, True) == _files.FileDigests(store).files(str(root))
    monkeypatch.chdir(tmp_path)
    relative, again = _files.FileDigests(store).files("cat")
    assert not again
    assert [rel for _, rel in files] == [rel for _, rel in relative]
    assert all(not os.path.isabs(path) for path, _ in relative)

    monkeypatch.setattr(_files, "_clock", lambda: now)  # the directories changed just now: not trusted
    fresh = _files.FileDigests(tmp_path / "fresh.marshal")
    fresh.files(root)
    fresh.save()
    assert not _files.FileDigests(tmp_path / "fresh.marshal").files(root)[1]


def test_digests_remembered_before_listings_were_kept_still_count(tmp_path, olmkit_pm, later):
    """A digest store of the previous format still recognises an unchanged catalog (and gains a listing)."""
    import marshal

    root = tmp_path / "cat"
    write(root, CATALOG)
    load_catalog_result(root, olmkit_pm.registry)
    [store] = (cache_dir() / "files").glob("*.marshal")
    state = marshal.loads(store.read_bytes())
    store.write_bytes(marshal.dumps((1, state[1])))

    assert load_catalog_result(root, olmkit_pm.registry).cached
    assert 3 == len(marshal.loads(store.read_bytes()))


def test_validate_command_leaves_a_large_catalogs_cache_write_until_its_report_is_out(tmp_path, olmkit_pm, monkeypatch):
    """`catalog validate` defers the cache writes: the validation child only checks, the catalog's cache
    and the report are queued and written when the command is done; the next validation is answered
    from them."""
    from olmkit import catalog as catalog_api
    from olmkit.catalog import _fork, _load
    from olmkit.catalog import validate as validate_module

    monkeypatch.setattr(_load, "BACKGROUND_MIN_BUNDLES", 1)
    monkeypatch.setattr(validate_module, "PARALLEL_MIN_BUNDLES", 1)
    monkeypatch.setattr(_load.gc, "freeze", lambda: None)  # keep the test process's collector as it is
    monkeypatch.setattr(_fork, "background", lambda work: False)  # a write, if any, in this process
    handed = []
    real = validate_module._validate_catalog
    monkeypatch.setattr(
        validate_module,
        "_validate_catalog",
        lambda *a, **k: handed.append(k.get("then")) or real(*a, **k),
    )
    root = tmp_path / "cat"
    write(root, CATALOG)
    catalog_api.defer_writes()
    try:
        _, first, first_cached = validate_path(root, olmkit_pm.registry)
        written = [p.name for p in cache_dir().glob("*") if p.suffix in (".cache", ".json")]
        queued = catalog_api.deferring() and not written  # neither the catalog's cache nor the report
    finally:
        catalog_api.finish_writes()
    _, second, second_cached = validate_path(root, olmkit_pm.registry)

    assert [None] == handed  # the child got no write to do
    assert queued  # nothing written while the command ran
    assert (False, True) == (first_cached, second_cached)
    assert [str(p) for p in first] == [str(p) for p in second]


def test_parallel_validation_does_not_wait_for_the_child_to_exit(tmp_path, olmkit_pm, monkeypatch):
    """The checking child's rows are taken as soon as sent; the child is reaped later (next load or exit)."""
    from olmkit.catalog import _fork

    monkeypatch.setattr(_fork, "_pending", [])
    blobs = []
    for i in range(6):
        name = f"p{i:02d}"
        blobs += [pkg(name), chan(name, [{"name": f"{name}.v1.0.0"}]), bundle(name, "1.0.0", [NEEDS_NOTHING_HERE])]
    write(tmp_path / "cat", {"c.json": blobs})
    result = load_catalog_result(tmp_path / "cat", olmkit_pm.registry, cache=False)
    serial = validate_catalog(result.catalog, olmkit_pm.registry, result.problems, jobs=1)
    parallel = validate_catalog(result.catalog, olmkit_pm.registry, result.problems, jobs=2)
    left = [child.pid for child in _fork._pending]
    _fork.wait_background()

    assert [str(p) for p in serial] == [str(p) for p in parallel]
    assert 1 == len(left)
    assert [] == _fork._pending
    with pytest.raises(ChildProcessError):  # reaped by wait_background
        os.waitpid(left[0], os.WNOHANG)
