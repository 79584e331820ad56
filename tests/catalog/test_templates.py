"""Catalog templates: olm.template.basic and olm.semver, and the template hook."""

from pathlib import Path

import orjson
import pytest

from olmkit import hookimpl
from olmkit.catalog import load_catalog_result
from olmkit.catalog.problems import ERROR
from olmkit.catalog.semver import parse_version
from olmkit.catalog.templates import render_template
from olmkit.catalog.validate import validate_catalog
from olmkit.cli import main
from olmkit.errors import InputError
from olmkit.plugins.templates import generate_channels
from olmkit.types import CatalogTemplate

DATA = Path(__file__).parent / "data"
TEMPLATES = DATA / "templates"

# upstream's TestGenerateChannels input (operator-registry alpha/template/semver)
UPSTREAM_STABLE = [
    "0.1.0",
    "0.1.1",
    "1.1.0",
    "1.2.1",
    "1.3.1",
    "2.1.0",
    "1.3.1-beta",
    "2.1.1",
    "2.3.1",
    "2.3.2",
    "3.1.0",
    "3.1.1",
    "1.3.1-alpha",
    "1.4.1",
    "1.4.1-beta1",
    "1.4.1-beta2",
]

MINOR_EXPECTED = {
    "stable-v0.1": [("a-v0.1.0", None, ()), ("a-v0.1.1", None, ("a-v0.1.0",))],
    "stable-v1.1": [("a-v1.1.0", None, ())],
    "stable-v1.2": [("a-v1.2.1", "a-v1.1.0", ())],
    "stable-v1.3": [
        ("a-v1.3.1-alpha", None, ()),
        ("a-v1.3.1-beta", None, ()),
        ("a-v1.3.1", "a-v1.2.1", ("a-v1.1.0", "a-v1.3.1-alpha", "a-v1.3.1-beta")),
    ],
    "stable-v1.4": [
        ("a-v1.4.1-beta1", None, ()),
        ("a-v1.4.1-beta2", None, ()),
        (
            "a-v1.4.1",
            "a-v1.3.1",
            ("a-v1.1.0", "a-v1.2.1", "a-v1.3.1-alpha", "a-v1.3.1-beta", "a-v1.4.1-beta1", "a-v1.4.1-beta2"),
        ),
    ],
    "stable-v2.1": [("a-v2.1.0", None, ()), ("a-v2.1.1", None, ("a-v2.1.0",))],
    "stable-v2.3": [("a-v2.3.1", None, ()), ("a-v2.3.2", "a-v2.1.1", ("a-v2.1.0", "a-v2.3.1"))],
    "stable-v3.1": [("a-v3.1.0", None, ()), ("a-v3.1.1", None, ("a-v3.1.0",))],
}

MAJOR_EXPECTED = {
    "stable-v0": [("a-v0.1.0", None, ()), ("a-v0.1.1", None, ("a-v0.1.0",))],
    "stable-v1": [
        ("a-v1.1.0", None, ()),
        ("a-v1.2.1", "a-v1.1.0", ()),
        ("a-v1.3.1-alpha", None, ()),
        ("a-v1.3.1-beta", None, ()),
        ("a-v1.3.1", "a-v1.2.1", ("a-v1.1.0", "a-v1.3.1-alpha", "a-v1.3.1-beta")),
        ("a-v1.4.1-beta1", None, ()),
        ("a-v1.4.1-beta2", None, ()),
        (
            "a-v1.4.1",
            "a-v1.3.1",
            ("a-v1.1.0", "a-v1.2.1", "a-v1.3.1-alpha", "a-v1.3.1-beta", "a-v1.4.1-beta1", "a-v1.4.1-beta2"),
        ),
    ],
    "stable-v2": [
        ("a-v2.1.0", None, ()),
        ("a-v2.1.1", None, ("a-v2.1.0",)),
        ("a-v2.3.1", None, ()),
        ("a-v2.3.2", "a-v2.1.1", ("a-v2.1.0", "a-v2.3.1")),
    ],
    "stable-v3": [("a-v3.1.0", None, ()), ("a-v3.1.1", None, ("a-v3.1.0",))],
}


def shape(channels):
    return {c.name: [(e.name, e.replaces, e.skips) for e in c.entries] for c in channels}


@pytest.mark.parametrize(
    ("major", "minor", "preference", "expected", "default"),
    [
        (False, True, "minor", MINOR_EXPECTED, "stable-v3.1"),
        (True, False, "major", MAJOR_EXPECTED, "stable-v3"),
        (True, True, "minor", {**MINOR_EXPECTED, **MAJOR_EXPECTED}, "stable-v3.1"),
        (True, True, "major", {**MINOR_EXPECTED, **MAJOR_EXPECTED}, "stable-v3"),
    ],
)
def test_semver_channels_match_upstream(major, minor, preference, expected, default):
    """Channels, edges and default channel are those of opm's semver template for its own test input."""
    versions = {"stable": {f"a-v{v}": parse_version(v) for v in UPSTREAM_STABLE}}

    channels, chosen = generate_channels("a", versions, major=major, minor=minor, preference=preference)

    assert expected == shape(channels)
    assert sorted(expected) == [c.name for c in channels]
    assert default == chosen


def test_semver_edges_stop_at_an_archetype_change():
    """No edge crosses archetypes; the most stable archetype gives the default channel."""
    versions = {
        "stable": {f"a-v{v}": parse_version(v) for v in ("1.1.0", "1.2.1", "1.3.1", "2.1.0", "2.1.1", "2.3.1")},
        "candidate": {"a-v2.3.2": parse_version("2.3.2")},
    }

    channels, default = generate_channels("a", versions, major=True, minor=False, preference="major")

    assert {
        "candidate-v2": [("a-v2.3.2", None, ())],
        "stable-v1": [("a-v1.1.0", None, ()), ("a-v1.2.1", "a-v1.1.0", ()), ("a-v1.3.1", "a-v1.2.1", ("a-v1.1.0",))],
        "stable-v2": [
            ("a-v2.1.0", None, ()),
            ("a-v2.1.1", None, ("a-v2.1.0",)),
            ("a-v2.3.1", "a-v2.1.1", ("a-v2.1.0",)),
        ],
    } == shape(channels)
    assert "stable-v2" == default


def write_catalog(path, package, versions, **extra):
    """A catalog of bundles only (referenced by image), one per version."""
    path.mkdir(parents=True, exist_ok=True)
    lines = []
    for v in versions:
        blob = {
            "schema": "olm.bundle",
            "package": package,
            "name": f"{package}.v{v}",
            "image": f"quay.io/acme/{package}:v{v}",
            "properties": [{"type": "olm.package", "value": {"packageName": package, "version": v}}],
        }
        lines.append(orjson.dumps({**blob, **extra}))
    (path / "bundles.json").write_bytes(b"\n".join(lines) + b"\n")
    return path


def semver_template(path, body):
    path.write_text("schema: olm.semver\n" + body)
    return path


def render(capsys, *args):
    code = main(["catalog", "render-template", *map(str, args)])
    out, err = capsys.readouterr()
    return code, [orjson.loads(line) for line in out.splitlines()], err


def load_and_validate(pm, tmp_path, blobs):
    root = tmp_path / "rendered"
    root.mkdir()
    (root / "catalog.json").write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in blobs))
    result = load_catalog_result(root, pm.registry, cache=False)
    problems = validate_catalog(result.catalog, pm.registry, result.problems)
    return result.catalog, [str(p) for p in problems if p.severity == ERROR]


def test_semver_template_of_bundle_directories_validates(olmkit_pm, tmp_path, capsys):
    """A semver template referencing bundle directories renders a catalog the validator accepts."""
    code, blobs, _ = render(capsys, TEMPLATES / "widgets.semver.yaml")
    catalog, errors = load_and_validate(olmkit_pm, tmp_path, blobs)

    assert 0 == code
    assert [] == errors
    assert ["olm.package"] + ["olm.channel"] * 5 + ["olm.bundle"] * 2 == [b["schema"] for b in blobs]
    assert "stable-v1.0" == catalog.packages["widgets"].default_channel
    assert ["candidate-v1", "candidate-v1.0", "candidate-v1.1", "stable-v1", "stable-v1.0"] == sorted(
        catalog.channels["widgets"]
    )
    assert "widgets.v1.1.0" == catalog.channel_head("widgets", "candidate-v1").name
    assert "widgets.v1.0.0" == catalog.channels["widgets"]["candidate-v1"].entries[1].replaces
    # bundles referenced by image carry the reference and their CSV metadata (opm's bundle-image form)
    assert "../bundles/widgets-v1.0.0" == blobs[-2]["image"]
    assert "olm.csv.metadata" in [p["type"] for p in blobs[-2]["properties"]]


def test_semver_template_of_catalog_bundles(olmkit_pm, tmp_path, capsys):
    """Images of bundles in --catalog catalogs resolve to those bundles; output validates."""
    catalog_dir = write_catalog(tmp_path / "cat", "a", ["0.1.0", "0.1.1", "0.2.0", "1.0.0"])
    template = semver_template(
        tmp_path / "t.yaml",
        "generateMajorChannels: true\n"
        "generateMinorChannels: false\n"
        "fast:\n  bundles:\n"
        + "".join(f"    - image: quay.io/acme/a:v{v}\n" for v in ("0.1.0", "0.1.1", "0.2.0", "1.0.0"))
        + "stable:\n  bundles:\n    - image: quay.io/acme/a:v0.1.1\n",
    )

    code, blobs, _ = render(capsys, template, "--catalog", catalog_dir)
    catalog, errors = load_and_validate(olmkit_pm, tmp_path, blobs)

    assert 0 == code
    assert [] == errors
    assert "stable-v0" == catalog.packages["a"].default_channel
    assert [("a.v0.1.0", None, ()), ("a.v0.1.1", None, ("a.v0.1.0",)), ("a.v0.2.0", "a.v0.1.1", ("a.v0.1.0",))] == [
        (e.name, e.replaces, e.skips) for e in catalog.channels["a"]["fast-v0"].entries
    ]
    assert ["a.v0.1.0", "a.v0.1.1", "a.v0.2.0", "a.v1.0.0"] == [b["name"] for b in blobs if b["schema"] == "olm.bundle"]


def test_basic_template_resolves_bundle_entries_and_keeps_the_rest(olmkit_pm, tmp_path, capsys):
    """olm.template.basic keeps its entries in order, bundle references replaced by bundles."""
    code, blobs, _ = render(capsys, TEMPLATES / "widgets.basic.yaml", "-o", "json")
    catalog, errors = load_and_validate(olmkit_pm, tmp_path, blobs)

    assert 0 == code
    assert [] == errors
    assert [
        ("olm.package", "widgets"),
        ("olm.channel", "fast"),
        ("olm.bundle", "widgets.v1.0.0"),
        ("olm.bundle", "widgets.v1.1.0"),
        ("example.io/note", None),
    ] == [(b["schema"], b.get("name")) for b in blobs]
    assert "widgets.v1.1.0" == catalog.channel_head("widgets", "fast").name
    assert 1 == len(catalog.others)


def test_template_from_standard_input(tmp_path, capsys, monkeypatch):
    """FILE '-' reads the template from standard input; references resolve from the working directory."""
    import io
    import sys

    monkeypatch.chdir(DATA / "bundles")
    stdin = io.TextIOWrapper(
        io.BytesIO(b"schema: olm.template.basic\nentries:\n- {schema: olm.bundle, image: metrics-v0.3.0}\n")
    )
    monkeypatch.setattr(sys, "stdin", stdin)

    code, blobs, _ = render(capsys, "-")

    assert 0 == code
    assert ["metrics.v0.3.0"] == [b["name"] for b in blobs]


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        ("schema: olm.unknown\n", ["unknown template schema 'olm.unknown'", "olm.semver, olm.template.basic"]),
        ("entries: []\n", ["the template has no schema"]),
        ("schema: [\n", ["malformed YAML"]),
        ("schema: olm.semver\ninvalid:\n  bundles: []\n", ["olm.semver", "unknown field 'invalid'"]),
        (
            "schema: olm.semver\ngenerateMinorChannels: false\ngenerateMajorChannels: true\n"
            "defaultChannelTypePreference: minor\n",
            ["schema attribute mismatch"],
        ),
        ("schema: olm.semver\ndefaultChannelTypePreference: foo\n", ["unknown defaultChannelTypePreference 'foo'"]),
        ("schema: olm.semver\n", ["no bundles specified"]),
        (
            "schema: olm.semver\nstable:\n  bundles:\n  - image: nowhere/at-all\n",
            ["bundle 'nowhere/at-all' not found", "pass --catalog"],
        ),
        (
            "schema: olm.template.basic\nentries:\n- {schema: olm.bundle, image: x, package: p}\n",
            ["entries[0]: a bundle entry of a basic template holds only schema and image", "package"],
        ),
        ("schema: olm.template.basic\nentries:\n- {name: x}\n", ["entries[0] must be a catalog blob with a schema"]),
        ("---\nschema: olm.semver\n---\nschema: olm.semver\n", ["holds one document, found 2"]),
    ],
)
def test_bad_templates_give_one_clear_error(tmp_path, capsys, body, fragments):
    """Malformed templates exit 2 with one line naming the template file, never a traceback."""
    template = tmp_path / "bad.yaml"
    template.write_text(body)

    code, _, err = render(capsys, template)

    assert 2 == code
    assert err.startswith(f"olmkit: error: {template}")
    assert 1 == len(err.splitlines())
    for fragment in fragments:
        assert fragment in err


def test_semver_template_rejects_invalid_versions_and_mixed_packages(tmp_path, capsys):
    """A bundle version that is not strict semver, and bundles of two packages, are errors."""
    bad = write_catalog(tmp_path / "bad", "a", ["v1.2"])
    mixed = write_catalog(tmp_path / "b", "b", ["1.0.0"])
    good = write_catalog(tmp_path / "a", "a", ["1.0.0"])
    invalid = semver_template(tmp_path / "invalid.yaml", "stable:\n  bundles:\n  - image: quay.io/acme/a:vv1.2\n")
    two = semver_template(
        tmp_path / "two.yaml",
        "stable:\n  bundles:\n  - image: quay.io/acme/a:v1.0.0\n  - image: quay.io/acme/b:v1.0.0\n",
    )

    code1, _, err1 = render(capsys, invalid, "--catalog", bad)
    code2, _, err2 = render(capsys, two, "--catalog", good, "--catalog", mixed)

    assert (2, 2) == (code1, code2)
    assert "bundle 'a.vv1.2' (quay.io/acme/a:vv1.2) has invalid version 'v1.2'" in err1
    assert "belongs to package 'b', not 'a'" in err2


def test_semver_template_rejects_versions_differing_only_by_build_metadata(tmp_path, capsys):
    """Two bundles whose versions differ only by build metadata cannot be ordered (opm refuses them)."""
    catalog = write_catalog(tmp_path / "cat", "a", ["1.0.0+build1", "1.0.0+build2"])
    template = semver_template(
        tmp_path / "t.yaml",
        "stable:\n  bundles:\n  - image: quay.io/acme/a:v1.0.0+build1\n  - image: quay.io/acme/a:v1.0.0+build2\n",
    )

    code, _, err = render(capsys, template, "--catalog", catalog)

    assert 2 == code
    assert "differ only by build metadata" in err


def test_broken_bundle_directory_in_a_template_names_the_bundle_file(tmp_path, capsys):
    """A template referencing a broken bundle directory reports the bundle's own error and exit code."""
    bundle = tmp_path / "b"
    (bundle / "manifests").mkdir(parents=True)
    (bundle / "metadata").mkdir()
    template = semver_template(tmp_path / "t.yaml", "stable:\n  bundles:\n  - image: b\n")

    code, _, err = render(capsys, template)

    assert 2 == code
    assert f"{bundle / 'metadata'}: annotations.yaml is missing" in err


def test_missing_template_file(tmp_path, capsys):
    """A missing template file is exit code 2 naming the file."""
    code, _, err = render(capsys, tmp_path / "missing.yaml")

    assert 2 == code
    assert "missing.yaml: cannot read template" in err


def test_hook_olmkit_catalog_templates(olmkit_pm, olmkit_register, tmp_path):
    """A plugin's template is picked by schema and resolves bundles through the context."""
    calls = []

    def render_one(doc, context):
        calls.append(context.base_dir)
        bundle = dict(context.resolve_bundle(doc["bundle"]))
        return [{"schema": "olm.package", "name": bundle["package"], "defaultChannel": "only"}, bundle]

    class OneBundle:
        @hookimpl
        def olmkit_catalog_templates(self):
            yield CatalogTemplate(schema="example.io/one", render=render_one)

    olmkit_register(OneBundle(), "one-bundle")
    template = tmp_path / "one.yaml"
    template.write_text(f"schema: example.io/one\nbundle: {DATA / 'bundles' / 'metrics-v0.3.0'}\n")

    blobs = render_template(template, olmkit_pm.registry)

    assert [tmp_path] == calls
    assert ["olm.package", "olm.bundle"] == [b["schema"] for b in blobs]
    assert "one-bundle" == olmkit_pm.registry.owners[("catalog template", "example.io/one")]
    template.write_text("schema: example.io/two\n")
    with pytest.raises(InputError, match=r"unknown template schema 'example\.io/two'"):
        render_template(template, olmkit_pm.registry)
