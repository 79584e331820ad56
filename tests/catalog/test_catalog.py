import pytest

from olmkit.catalog import load_catalog, load_catalog_result
from olmkit.catalog.graph import upgrade_path
from olmkit.catalog.sources import open_source
from olmkit.catalog.validate import validate_catalog
from olmkit.errors import CatalogError, InputError
from olmkit.serde import dump_json_stream
from tests.shared import COMMUNITY

EXAMPLES = "examples/catalog"


def pkg(name, default="stable"):
    return {"schema": "olm.package", "name": name, "defaultChannel": default}


def chan(package, entries, name="stable"):
    return {"schema": "olm.channel", "package": package, "name": name, "entries": entries}


def bundle(package, version, props=(), name=None):
    return {
        "schema": "olm.bundle",
        "package": package,
        "name": name or f"{package}.v{version}",
        "image": f"example.invalid/{package}:{version}",
        "properties": [{"type": "olm.package", "value": {"packageName": package, "version": version}}, *props],
    }


def test_example_catalog_loads_with_channels_in_file_order(olmkit_pm):
    """The example catalog loads; channel_order walks replaces from the head."""
    cat = load_catalog(EXAMPLES, olmkit_pm.registry, cache=False)

    assert 5 == len(cat.packages)
    assert ["cert-manager-lite.v1.2.0", "cert-manager-lite.v1.1.0", "cert-manager-lite.v1.0.0"] == [
        e.name for e in cat.channel_order("cert-manager-lite", "stable")
    ]
    assert "1.2.0" == cat.bundles["cert-manager-lite"]["cert-manager-lite.v1.2.0"].version


def test_index_finds_providers_of_a_gvk(make_catalog):
    """lookup(olm.gvk, (g, v, k)) returns exactly the bundles providing it."""
    gvk = {"type": "olm.gvk", "value": {"group": "g.io", "version": "v1", "kind": "K"}}
    cat = make_catalog(
        [
            pkg("a"),
            chan("a", [{"name": "a.v1.0.0"}]),
            bundle("a", "1.0.0", [gvk]),
            pkg("b"),
            chan("b", [{"name": "b.v1.0.0"}]),
            bundle("b", "1.0.0"),
        ]
    )

    assert ["a.v1.0.0"] == [b.name for b in cat.lookup("olm.gvk", ("g.io", "v1", "K"))]
    assert "K (g.io/v1)" == str(cat.values(cat.bundles["a"]["a.v1.0.0"], "olm.gvk")[0])


def test_channel_order_drops_skipped_entries(make_catalog):
    """Entries skipped by another entry never appear in the preference order."""
    entries = [
        {"name": "a.v3.0.0", "replaces": "a.v2.0.0", "skips": ["a.v2.0.0"]},
        {"name": "a.v2.0.0", "replaces": "a.v1.0.0"},
        {"name": "a.v1.0.0"},
    ]
    cat = make_catalog([pkg("a"), chan("a", entries)] + [bundle("a", v) for v in ("1.0.0", "2.0.0", "3.0.0")])

    assert ["a.v3.0.0", "a.v1.0.0"] == [e.name for e in cat.channel_order("a", "stable")]


def test_two_heads_give_upstreams_message(make_catalog):
    """Two replacement chains raise the resolver's exact text."""
    entries = [{"name": "a.v2.0.0", "replaces": "a.v1.0.0"}, {"name": "a.v1.0.0"}, {"name": "a.v9.0.0"}]
    cat = make_catalog([pkg("a"), chan("a", entries)] + [bundle("a", v) for v in ("1.0.0", "2.0.0", "9.0.0")])

    with pytest.raises(CatalogError) as info:
        cat.channel_head("a", "stable")
    assert (
        "a unique replacement chain within a channel is required to determine the relative order between channel "
        'entries, but 2 replacement chains were found in channel "stable" of package "a": a.v2.0.0...a.v1.0.0, '
        "a.v9.0.0"
    ) == str(info.value)


def test_replaces_cycle_reported(make_catalog):
    """A replaces cycle reachable from the head names the head."""
    entries = [
        {"name": "a.v3.0.0", "replaces": "a.v2.0.0"},
        {"name": "a.v2.0.0", "replaces": "a.v1.0.0"},
        {"name": "a.v1.0.0", "replaces": "a.v2.0.0"},
    ]
    cat = make_catalog([pkg("a"), chan("a", entries)] + [bundle("a", v) for v in ("1.0.0", "2.0.0", "3.0.0")])

    with pytest.raises(CatalogError, match=r'a cycle exists in the chain of replacement beginning with "a\.v3\.0\.0"'):
        cat.channel_order("a", "stable")


def test_opaque_schema_round_trips(tmp_path, olmkit_pm):
    """A custom schema blob is kept verbatim and rendered back."""
    custom = {"schema": "example.io/notes", "package": "a", "text": "hello", "n": [1, 2]}
    (tmp_path / "c.json").write_bytes(
        dump_json_stream([pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0"), custom])
    )
    cat = load_catalog(tmp_path, olmkit_pm.registry, cache=False)

    assert [custom] == [dict(b.data) for b in cat.others]


def test_bare_kernel_keeps_unknown_properties_opaque(tmp_path, olmkit_bare_pm):
    """With no built-ins loaded, bundles load and their properties pass through as opaque values."""
    (tmp_path / "c.json").write_bytes(
        dump_json_stream(
            [pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0", [{"type": "x.io/y", "value": [1]}])]
        )
    )
    cat = load_catalog(tmp_path, olmkit_bare_pm.registry, cache=False)
    b = cat.bundles["a"]["a.v1.0.0"]

    assert None is b.version
    assert [("olm.package", {"packageName": "a", "version": "1.0.0"}), ("x.io/y", [1])] == [
        (p.type, p.value) for p in b.properties
    ]


def test_indexignore_and_yaml_streams(tmp_path, olmkit_pm):
    """.indexignore hides files with gitignore rules; YAML streams load with line numbers."""
    (tmp_path / ".indexignore").write_text("*.md\n")
    (tmp_path / "README.md").write_text("# not a catalog\n")
    (tmp_path / "c.yaml").write_text(
        "---\nschema: olm.package\nname: a\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: a\n"
        "name: stable\nentries:\n  - name: a.v1.0.0\n---\nschema: olm.bundle\npackage: a\nname: a.v1.0.0\n"
        "properties:\n  - type: olm.package\n    value: {packageName: a, version: 1.0.0}\n"
    )
    cat = load_catalog(tmp_path, olmkit_pm.registry, cache=False)

    assert 12 == cat.bundles["a"]["a.v1.0.0"].origin.line


def test_cache_hit_and_invalidation(tmp_path, olmkit_pm):
    """An unchanged catalog comes from the cache; changing any file invalidates it."""
    root = tmp_path / "cat"
    root.mkdir()
    (root / "c.json").write_bytes(dump_json_stream([pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0")]))
    first = load_catalog_result(root, olmkit_pm.registry)
    second = load_catalog_result(root, olmkit_pm.registry)
    (root / "c.json").write_bytes(dump_json_stream([pkg("a"), chan("a", [{"name": "a.v1.0.1"}]), bundle("a", "1.0.1")]))
    third = load_catalog_result(root, olmkit_pm.registry)

    assert (False, True, False) == (first.cached, second.cached, third.cached)
    assert ["a.v1.0.0"] == list(second.catalog.bundles["a"])
    assert ["a.v1.0.1"] == list(third.catalog.bundles["a"])


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b'{"schema": "olm.package", "name": "a"\n', "malformed JSON"), (b"schema: [\n", "malformed YAML")],
)
def test_malformed_files_name_the_file(tmp_path, olmkit_pm, content, needle):
    """Malformed JSON/YAML is an InputError naming the file."""
    (tmp_path / ("c.json" if b"{" in content else "c.yaml")).write_bytes(content)

    with pytest.raises(InputError) as info:
        load_catalog(tmp_path, olmkit_pm.registry, cache=False)
    assert needle in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_validation_collects_all_problems(tmp_path, olmkit_pm):
    """Duplicates, bad versions, unknown schemas, two heads and missing defaults are all reported."""
    blobs = [
        pkg("a", default="nope"),
        chan("a", [{"name": "a.v1.0.0"}, {"name": "a.v2.0.0"}]),
        bundle("a", "1.0.0"),
        bundle("a", "1.0.0"),
        bundle("a", "v1.2", name="a.v2.0.0"),
        {"schema": "olm.thing", "name": "x"},
        {"name": "no-schema"},
        bundle("a", "3.0.0", [{"type": "olm.gvk", "value": {"group": "g"}}, {"type": "x.io/typo", "value": 1}]),
    ]
    (tmp_path / "c.json").write_bytes(dump_json_stream(blobs))
    result = load_catalog_result(tmp_path, olmkit_pm.registry, cache=False)
    problems = validate_catalog(result.catalog, olmkit_pm.registry, result.problems)
    text = "\n".join(map(str, problems))

    for needle in [
        "duplicate bundle 'a.v1.0.0'",
        "unknown schema 'olm.thing'",
        "blob has no schema",
        "default channel 'nope' does not exist",
        "invalid semantic version 'v1.2'",
        "2 replacement chains",
        "bundle 'a.v3.0.0' is not in any channel",
        "invalid olm.gvk value: version is required",
        "unknown property type 'x.io/typo'",
    ]:
        assert needle in text
    assert all(p.path == str(tmp_path / "c.json") for p in problems if p.severity == "error")


def test_real_catalog_is_valid(olmkit_pm):
    """The community catalog validates with no errors."""
    path = COMMUNITY
    result = load_catalog_result(path, olmkit_pm.registry, cache=False)
    problems = validate_catalog(result.catalog, olmkit_pm.registry, result.problems)

    assert [] == [str(p) for p in problems if p.severity == "error"]
    assert 6467 == sum(len(b) for b in result.catalog.bundles.values())


def test_upgrade_path_uses_skiprange(olmkit_pm):
    """postgres-operator 2.0.0 upgrades straight to the head through its skipRange."""
    cat = load_catalog(EXAMPLES, olmkit_pm.registry, cache=False)

    assert [("postgres-operator.v2.3.0", "skipRange")] == upgrade_path(
        cat, "postgres-operator", "stable", "postgres-operator.v2.0.0"
    )


def test_sources_file_and_configmap(olmkit_pm, tmp_path):
    """file loads a directory relative to base_dir; configmap reads FBC from the ConfigMap's data."""
    reg = olmkit_pm.registry
    f = open_source(
        {"sourceType": "file", "path": "catalog"},
        registry=reg,
        name="ex",
        namespace="olm",
        base_dir=__import__("pathlib").Path("examples"),
    )
    data = {"c.json": dump_json_stream([pkg("a"), chan("a", [{"name": "a.v1.0.0"}]), bundle("a", "1.0.0")]).decode()}
    objects = {("ConfigMap", "olm", "cm"): {"data": data}}
    cm = open_source(
        {"sourceType": "configmap", "configMap": "cm"},
        registry=reg,
        name="cm",
        namespace="olm",
        base_dir=None,
        objects=lambda k, ns, n: objects.get((k, ns, n)),
    )
    missing = open_source(
        {"sourceType": "file", "path": str(tmp_path / "nope")}, registry=reg, name="m", namespace="olm", base_dir=None
    )

    assert 5 == len(f.load().packages)
    assert "READY" == f.health().state
    assert ["a"] == list(cm.load().packages)
    assert "TRANSIENT_FAILURE" == missing.health().state
    with pytest.raises(InputError, match=r"unknown spec\.sourceType 'grpcx'"):
        open_source({"sourceType": "grpcx"}, registry=reg, name="x", namespace="olm", base_dir=None)


def test_problem_to_dict_has_every_field():
    """Problem.to_dict gives every field of the problem, in declaration order (the -o json shape)."""
    import attrs

    from olmkit.catalog.problems import Problem

    problem = Problem("error", "m", path="p", line=3, package="a", blob="olm.bundle a.v1", field="name")

    assert attrs.asdict(problem) == problem.to_dict()
    assert [f.name for f in attrs.fields(Problem)] == list(problem.to_dict())


def test_a_dropped_bundles_parsed_identity_goes_to_no_later_property(olmkit_pm):
    """The loader drops a duplicate bundle after its identity property was parsed (filed by
    ``id()``): that property stays alive with its value, so no property made later takes its
    id and, with it, a value of another type (a PackageIdentity as an olm.label's index key)."""
    from olmkit.model import Property
    from olmkit.serde import BlobReader

    reader = BlobReader({"olm.package": olmkit_pm.registry.property_types["olm.package"].parse})
    dropped = reader.bundle(bundle("a", "1.0.0"), None)
    assert reader.parsed[id(dropped.properties[0])].version == "1.0.0"
    del dropped  # as the loader does with a duplicate
    later = [Property("olm.label", i) for i in range(1000)]
    assert [p for p in later if id(p) in reader.parsed] == []


def test_a_catalog_with_a_duplicate_bundle_files_the_others_by_their_own_values(tmp_path, olmkit_pm):
    """Loaded whole with duplicates dropped (see the test above), every bundle after them is
    indexed by its own properties' values and has its own version."""
    blobs = [pkg("a"), chan("a", [{"name": f"a.v{k}.0.0"} for k in range(1, 40)]), bundle("a", "1.0.0")]
    for k in range(2, 40):
        blobs.append(bundle("a", "1.0.0", [{"type": "olm.label", "value": f"l{k}"}]))  # a duplicate
        b = bundle("a", f"{k}.0.0", [{"type": "olm.label", "value": f"m{k}"}])
        # new indexed properties first: made first after the duplicate is dropped
        gvks = [{"type": "olm.gvk", "value": {"group": "g", "version": f"v{j}", "kind": f"K{k}"}} for j in range(3)]
        b["properties"][:0] = gvks
        blobs.append(b)
    (tmp_path / "c.json").write_bytes(dump_json_stream(blobs))
    result = load_catalog_result(tmp_path, olmkit_pm.registry, cache=False)
    catalog = result.catalog
    assert sum("duplicate bundle 'a.v1.0.0'" in p.message for p in result.problems) == 38
    assert dict(catalog.versions("a")) == {f"a.v{k}.0.0": f"{k}.0.0" for k in range(1, 40)}
    for k in range(2, 40):
        for j in range(3):
            assert [b.name for b in catalog.lookup("olm.gvk", ("g", f"v{j}", f"K{k}"))] == [f"a.v{k}.0.0"]
    assert {type(key) for keys in catalog._index.values() for key in keys} <= {str, tuple}
