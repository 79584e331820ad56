"""Bundle directories: reading them, the properties opm derives, the spec's rules, rendering."""

import base64
import shutil
from pathlib import Path

import orjson
import pytest

from olmkit import hookimpl
from olmkit.catalog import load_catalog_result
from olmkit.catalog.bundles import bundles_to_blobs, read_bundle
from olmkit.catalog.problems import ERROR
from olmkit.catalog.validate import validate_catalog
from olmkit.cli import main
from olmkit.errors import BundleError, InputError, InvalidBundleError
from olmkit.plugins.bundle_format import read_bundle_dir
from olmkit.types import BundleContents, BundleFormat

DATA = Path(__file__).parent / "data" / "bundles"
WIDGETS = DATA / "widgets-v1.0.0"
CSV_FILE = "manifests/widgets.clusterserviceversion.yaml"


def gvk(group, version, kind):
    return {"group": group, "kind": kind, "version": version}


def props(blob, ptype):
    return [p["value"] for p in blob["properties"] if p["type"] == ptype]


@pytest.fixture
def widgets(tmp_path):
    """A writable copy of the plain widgets bundle directory."""
    target = tmp_path / "widgets"
    shutil.copytree(WIDGETS, target)
    return target


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def render_json(capsys, *args):
    code = main(["catalog", "render", *map(str, args)])
    out, err = capsys.readouterr()
    return code, [orjson.loads(line) for line in out.splitlines()], err


def test_plain_bundle_properties_follow_opm():
    """olm.package from annotations + CSV version, one olm.gvk per served CRD version, objects inline."""
    contents = read_bundle_dir(WIDGETS)
    blob = contents.blob

    assert {"schema": "olm.bundle", "name": "widgets.v1.0.0", "package": "widgets"}.items() <= blob.items()
    assert "image" not in blob
    assert [{"packageName": "widgets", "version": "1.0.0"}] == props(blob, "olm.package")
    # v1alpha1 is not served, so it is not provided
    assert [gvk("example.com", "v1", "Widget"), gvk("example.com", "v1beta1", "Widget")] == props(blob, "olm.gvk")
    assert [] == props(blob, "olm.gvk.required")
    assert ["olm.gvk", "olm.gvk", "olm.package"] + ["olm.bundle.object"] * 4 == [p["type"] for p in blob["properties"]]
    assert [
        {"name": "widget-agent", "image": "example.invalid/widgets/agent:v1.0.0"},
        {"image": "example.invalid/widgets/operator:v1.0.0"},
    ] == blob["relatedImages"]


def test_bundle_objects_are_the_manifests_in_base64_json():
    """Each olm.bundle.object decodes to one manifest, and manifests carry their files."""
    contents = read_bundle_dir(WIDGETS)

    decoded = [orjson.loads(base64.b64decode(v["data"])) for v in props(contents.blob, "olm.bundle.object")]
    kinds = sorted(m["kind"] for m in contents.manifests)
    assert sorted(decoded, key=orjson.dumps) == sorted(contents.manifests, key=orjson.dumps)
    assert ["ClusterServiceVersion", "ConfigMap", "CustomResourceDefinition", "ServiceAccount"] == kinds
    assert [
        "widgets-config.configmap.yaml",
        "widgets.clusterserviceversion.yaml",
        "widgets.example.com.crd.yaml",
        "widgets.serviceaccount.yaml",
    ] == [Path(f).name for f in contents.manifest_files]


def test_channels_and_upgrade_edges_come_from_annotations_and_csv():
    """Channels and default channel from annotations; replaces, skips, olm.skipRange from the CSV."""
    first = read_bundle_dir(WIDGETS)
    second = read_bundle_dir(DATA / "widgets-v1.1.0")

    assert ("stable", "fast") == first.channels
    assert "stable" == first.default_channel
    assert ("fast",) == second.channels
    assert second.default_channel is None
    assert ("widgets.v1.1.0", "widgets.v1.0.0", ("widgets.v1.0.1",), ">=0.9.0 <1.1.0") == (
        second.entry.name,
        second.entry.replaces,
        second.entry.skips,
        second.entry.skip_range,
    )
    assert {"description": "Manages widgets.", "icon": {"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}} == (
        first.package_info
    )


def test_an_image_puts_the_csv_metadata_inline_instead_of_objects():
    """With an image (a bundle image), opm records olm.csv.metadata and no olm.bundle.object."""
    blob = read_bundle_dir(WIDGETS, image="quay.io/acme/widgets-bundle:v1.0.0").blob

    (metadata,) = props(blob, "olm.csv.metadata")
    assert "quay.io/acme/widgets-bundle:v1.0.0" == blob["image"]
    assert [] == props(blob, "olm.bundle.object")
    assert "olm.csv.metadata" == blob["properties"][-1]["type"]
    assert "Widgets Operator" == metadata["displayName"]
    assert {"name": "Example"} == metadata["provider"]
    assert {} == metadata["apiServiceDefinitions"]
    assert "widgets.example.com" == metadata["crdDescriptions"]["owned"][0]["name"]
    assert {"image": "quay.io/acme/widgets-bundle:v1.0.0"} in blob["relatedImages"]


def test_dependencies_and_properties_files_become_properties():
    """dependencies.yaml maps to *.required / olm.constraint; properties.yaml and olm.properties are kept."""
    blob = read_bundle_dir(DATA / "gadgets-v2.0.0").blob

    assert [{"packageName": "widgets", "versionRange": ">=1.0.0 <2.0.0"}] == props(blob, "olm.package.required")
    assert [gvk("example.com", "v1", "Widget"), gvk("example.com", "v1beta1", "Widget")] == props(
        blob, "olm.gvk.required"
    )
    assert [{"label": "widgets-compatible"}] == props(blob, "olm.label.required")
    assert [
        {
            "cel": {"rule": 'properties.exists(p, p.type == "certified")'},
            "failureMessage": "gadgets need a certified widgets operator",
        }
    ] == props(blob, "olm.constraint")
    assert [{"label": "gadgets"}] == props(blob, "olm.label")
    assert ["4.14"] == props(blob, "olm.maxOpenShiftVersion")
    assert ["red"] == props(blob, "example.io/color")  # the spec's {property: {type, value}} spelling
    assert ["gold"] == props(blob, "example.io/tier")  # from the CSV's olm.properties annotation
    # annotations.yaml is authoritative for the package: the annotation's olm.package is dropped
    assert [{"packageName": "gadgets", "version": "2.0.0"}] == props(blob, "olm.package")
    # a v1beta1 CRD's single spec.version is provided
    assert [gvk("example.com", "v1beta1", "Gadget")] == props(blob, "olm.gvk")
    types = [p["type"] for p in blob["properties"]]
    assert sorted(types[:-2]) == types[:-2]
    assert [
        {"image": "example.invalid/gadgets/init:v2.0.0"},
        {"image": "example.invalid/gadgets/operator:v2.0.0"},
    ] == blob["relatedImages"]


def test_owned_and_required_api_services_become_gvks():
    """An owned APIService is provided (olm.gvk), a required one is required (olm.gvk.required)."""
    contents = read_bundle_dir(DATA / "metrics-v0.3.0")

    assert [gvk("metrics.example.com", "v1beta1", "Metric")] == props(contents.blob, "olm.gvk")
    assert [gvk("custom.metrics.k8s.io", "v1beta2", "ExternalMetric")] == props(contents.blob, "olm.gvk.required")
    assert "0.3.0-rc.1" == contents.version
    assert ["ClusterRole", "ClusterServiceVersion"] == [m["kind"] for m in contents.manifests]


def test_rendered_bundle_dirs_load_and_validate_without_errors(olmkit_pm, tmp_path, capsys):
    """render BUNDLE_DIR... prints a complete catalog that the loader and validator accept."""
    dirs = [DATA / name for name in ("widgets-v1.1.0", "widgets-v1.0.0", "gadgets-v2.0.0", "metrics-v0.3.0")]
    code, blobs, _ = render_json(capsys, *dirs)
    (tmp_path / "catalog.json").write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in blobs))

    result = load_catalog_result(tmp_path, olmkit_pm.registry, cache=False)
    problems = validate_catalog(result.catalog, olmkit_pm.registry, result.problems)
    catalog = result.catalog

    assert 0 == code
    assert [] == [str(p) for p in problems if p.severity == ERROR]
    assert {"widgets", "gadgets", "metrics"} == set(catalog.packages)
    assert "stable" == catalog.packages["widgets"].default_channel
    assert "Manages widgets, faster." == catalog.packages["widgets"].description
    assert "alpha" == catalog.packages["gadgets"].default_channel
    assert "widgets.v1.1.0" == catalog.channel_head("widgets", "fast").name
    assert ["widgets.v1.0.0"] == [e.name for e in catalog.channels["widgets"]["stable"].entries]
    assert "1.1.0" == catalog.bundles["widgets"]["widgets.v1.1.0"].version
    assert ["gadgets.v2.0.0"] == [b.name for b in catalog.lookup("olm.gvk", ("example.com", "v1beta1", "Gadget"))]


def test_render_yaml_and_image_reference_template(capsys):
    """-o yaml works for bundles; --image-ref-template fills {package} and opm's {{.Version}}."""
    code = main(
        [
            "catalog",
            "render",
            str(WIDGETS),
            "--bundles-only",
            "--image-ref-template",
            "quay.io/acme/{package}-bundle:v{{.Version}}",
            "-o",
            "yaml",
        ]
    )
    out = capsys.readouterr().out

    assert 0 == code
    assert out.startswith("---\nschema: olm.bundle\n")
    assert "image: quay.io/acme/widgets-bundle:v1.0.0\n" in out
    assert "olm.csv.metadata" in out
    assert "olm.channel" not in out


def test_bundles_of_a_package_a_catalog_defines_get_no_package_blob(tmp_path, capsys):
    """A package defined by a catalog argument is not defined again by the bundle directories."""
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    (catalog / "widgets.json").write_text(
        '{"schema": "olm.package", "name": "widgets", "defaultChannel": "stable"}\n'
        '{"schema": "olm.channel", "package": "widgets", "name": "stable", "entries": [{"name": "widgets.v1.0.0"}]}\n'
    )

    code, blobs, _ = render_json(capsys, catalog, WIDGETS)

    assert 0 == code
    assert ["olm.package", "olm.channel", "olm.bundle"] == [b["schema"] for b in blobs]


def test_bundles_only_prints_just_the_bundle_blobs(capsys):
    """--bundles-only is opm's output for bundle directories: the olm.bundle blobs."""
    code, blobs, _ = render_json(capsys, WIDGETS, DATA / "metrics-v0.3.0", "--bundles-only")

    assert 0 == code
    assert [("olm.bundle", "widgets.v1.0.0"), ("olm.bundle", "metrics.v0.3.0")] == [
        (b["schema"], b["name"]) for b in blobs
    ]


def test_the_same_bundle_twice_is_an_error(tmp_path):
    """Two directories holding one bundle name are reported, naming both."""
    copy = tmp_path / "copy"
    shutil.copytree(WIDGETS, copy)

    with pytest.raises(InvalidBundleError, match=r"widgets\.v1\.0\.0.*also read from .*widgets-v1\.0\.0"):
        bundles_to_blobs([read_bundle_dir(WIDGETS), read_bundle_dir(copy)])


# --------------------------------------------------------------------------- bad bundles


def _missing_annotations(d):
    (d / "metadata" / "annotations.yaml").unlink()


def _malformed_csv(d):
    (d / CSV_FILE).write_text("apiVersion: v1\nkind: a: b\n")


def _two_csvs(d):
    text = (d / CSV_FILE).read_text().replace("widgets.v1.0.0", "widgets.v1.0.0-copy")
    (d / "manifests" / "copy.clusterserviceversion.yaml").write_text(text)


def _no_csv(d):
    (d / CSV_FILE).unlink()


def _owned_crd_absent(d):
    (d / "manifests" / "widgets.example.com.crd.yaml").unlink()


def _owned_version_absent(d):
    edit(d / CSV_FILE, "        version: v1\n", "        version: v2\n")


def _no_channel(d):
    edit(d / "metadata/annotations.yaml", "  operators.operatorframework.io.bundle.channels.v1: stable,fast\n", "")


def _unknown_default_channel(d):
    edit(d / "metadata/annotations.yaml", "default.v1: stable", "default.v1: beta")


def _invalid_version(d):
    edit(d / CSV_FILE, "  version: 1.0.0\n", "  version: v1.0.0\n")


def _unsupported_kind(d):
    (d / "manifests" / "deploy.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: stray\n")


def _bad_dependency(d):
    (d / "metadata" / "dependencies.yaml").write_text(
        "dependencies:\n  - type: olm.package\n    value: {packageName: x, version: '<v1.13.0'}\n"
        "  - type: olm.kubeversion\n    value: {version: 1.20.0}\n"
    )


def _bad_properties_annotation(d):
    edit(
        d / CSV_FILE, "    capabilities: Basic Install\n", "    capabilities: Basic Install\n    olm.properties: '[{'\n"
    )


def _no_metadata_dir(d):
    shutil.rmtree(d / "metadata")


def _manifest_not_an_object(d):
    (d / "manifests" / "list.yaml").write_text("- just\n- a list\n")


def _manifest_without_kind(d):
    (d / "manifests" / "nokind.yaml").write_text("apiVersion: v1\nmetadata:\n  name: nokind\n")


@pytest.mark.parametrize(
    ("mutate", "code", "fragments"),
    [
        (_missing_annotations, 2, ["widgets/metadata", "annotations.yaml is missing"]),
        (_malformed_csv, 2, [CSV_FILE, "line 2", "malformed YAML"]),
        (_no_metadata_dir, 2, ["widgets", "metadata/ is missing"]),
        (_manifest_not_an_object, 2, ["manifests/list.yaml", "must be an object"]),
        (_two_csvs, 1, ["exactly one ClusterServiceVersion, found 2", "ClusterServiceVersion/widgets.v1.0.0-copy"]),
        (_no_csv, 1, ["exactly one ClusterServiceVersion, found none"]),
        (
            _owned_crd_absent,
            1,
            [CSV_FILE, "ClusterServiceVersion/widgets.v1.0.0", "owns CRD widgets.example.com (Widget v1)"],
        ),
        (_owned_version_absent, 1, ["owns CRD widgets.example.com version v2", "has versions v1, v1beta1, v1alpha1"]),
        (_no_channel, 1, ["metadata/annotations.yaml", "at least one channel"]),
        (_unknown_default_channel, 1, ["default channel 'beta'", "not one of the bundle's channels: stable, fast"]),
        (_invalid_version, 1, [CSV_FILE, "spec.version is not a valid semantic version"]),
        (_unsupported_kind, 1, ["manifests/deploy.yaml:1", "Deployment/stray", "kind Deployment is not supported"]),
        (
            _bad_dependency,
            1,
            ["metadata/dependencies.yaml", "'<v1.13.0' is not a valid range", "unsupported dependency type"],
        ),
        (_bad_properties_annotation, 1, ["annotation olm.properties is not valid JSON"]),
        (_manifest_without_kind, 1, ["manifests/nokind.yaml:1", "kind is required"]),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_bad_bundles_give_one_clear_error(widgets, capsys, mutate, code, fragments):
    """Each broken bundle exits 2 (unreadable) or 1 (invalid), naming file and object, no traceback."""
    mutate(widgets)

    assert code == main(["catalog", "render", str(widgets)])
    err = capsys.readouterr().err
    assert err.startswith("olmkit: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def test_invalid_bundle_lists_every_broken_rule(widgets):
    """All rule violations of a bundle are collected in InvalidBundleError.problems."""
    _no_channel(widgets)
    _owned_crd_absent(widgets)
    _invalid_version(widgets)

    with pytest.raises(InvalidBundleError) as info:
        read_bundle_dir(widgets)

    assert 3 == len(info.value.problems)
    assert str(widgets) == info.value.path
    assert 1 == info.value.exit_code


def test_unreadable_bundle_is_a_bundle_error_with_exit_code_2(tmp_path):
    """A missing directory is a BundleError (an InputError) with exit code 2."""
    with pytest.raises(BundleError) as info:
        read_bundle_dir(tmp_path / "nowhere")

    assert isinstance(info.value, InputError)
    assert not isinstance(info.value, InvalidBundleError)
    assert 2 == info.value.exit_code


# --------------------------------------------------------------------------- the hook


def test_read_bundle_goes_through_the_registered_formats(olmkit_pm):
    """read_bundle asks the registry's bundle formats; the built-in reads bundle directories."""
    contents = read_bundle(WIDGETS, olmkit_pm.registry)

    assert "widgets.v1.0.0" == contents.name
    with pytest.raises(InputError, match="not a bundle of any known format"):
        read_bundle(DATA, olmkit_pm.registry)


def test_hook_olmkit_bundle_formats(olmkit_pm, olmkit_register, tmp_path, capsys, monkeypatch):
    """A plugin's bundle format is asked before the built-in one, by read_bundle and by render."""
    seen = []

    def read(ref, image=None):
        seen.append((ref, image))
        blob = {"schema": "olm.bundle", "name": "tar.v1.0.0", "package": "tar", "properties": []}
        if image:
            blob["image"] = image
        return BundleContents(
            blob=blob, manifests=(), manifest_files=(), source=ref, package="tar", version="1.0.0", channels=["x"]
        )

    class Tarballs:
        @hookimpl
        def olmkit_bundle_formats(self):
            yield BundleFormat(name="tarball", accepts=lambda ref: ref.endswith(".tar"), read=read)

    olmkit_register(Tarballs(), "tarballs")
    monkeypatch.setattr("olmkit.manager.get_plugin_manager", lambda **kw: olmkit_pm)
    (tmp_path / "b.tar").write_bytes(b"")

    contents = read_bundle(tmp_path / "b.tar", olmkit_pm.registry, image="quay.io/x/tar:1")
    code = main(["catalog", "render", str(tmp_path / "b.tar"), "--image-ref-template", "r/{name}"])
    blobs = [orjson.loads(line) for line in capsys.readouterr().out.splitlines()]

    assert "quay.io/x/tar:1" == contents.blob["image"]
    assert "tarballs" == olmkit_pm.registry.owners[("bundle format", "tarball")]
    assert 0 == code
    assert ["olm.package", "olm.channel", "olm.bundle"] == [b["schema"] for b in blobs]
    assert "r/tar.v1.0.0" == blobs[-1]["image"]
    assert [str(tmp_path / "b.tar")] * 3 == [ref for ref, _ in seen]
