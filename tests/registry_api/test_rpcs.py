"""Every api.Registry RPC, field by field, on a small catalog written for the test.

The expectations follow operator-registry's proto and how ``opm serve`` fills messages from a
file-based catalog, including the quirks listed in :mod:`olmkit.plugins.grpc_registry`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from olmkit.plugins.grpc_registry._api import registry_pb2 as pb

CSV = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "ClusterServiceVersion",
    "metadata": {"name": "etcd.v0.9.2"},
    "spec": {"version": "0.9.2"},
}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x"}}


def _b64(obj: Any) -> str:
    return base64.b64encode(orjson.dumps(obj)).decode()


def _bundle(pkg: str, version: str, *props: dict[str, Any], image: str | None = None) -> dict[str, Any]:
    blob: dict[str, Any] = {
        "schema": "olm.bundle",
        "package": pkg,
        "name": f"{pkg}.v{version}",
        "properties": [{"type": "olm.package", "value": {"packageName": pkg, "version": version}}, *props],
    }
    if image:
        blob["image"] = image
    return blob


ETCD_GVK = {"type": "olm.gvk", "value": {"group": "etcd.database.coreos.com", "version": "v1", "kind": "EtcdCluster"}}
BLOBS = [
    {"schema": "olm.package", "name": "etcd", "defaultChannel": "stable"},
    {
        "schema": "olm.channel",
        "package": "etcd",
        "name": "stable",
        "entries": [
            {"name": "etcd.v0.9.0"},
            {"name": "etcd.v0.9.1", "replaces": "etcd.v0.9.0"},
            {"name": "etcd.v0.9.2", "replaces": "etcd.v0.9.1", "skips": ["etcd.v0.9.0"], "skipRange": "<0.9.2"},
        ],
    },
    {"schema": "olm.channel", "package": "etcd", "name": "alpha", "entries": [{"name": "etcd.v0.9.2"}]},
    _bundle("etcd", "0.9.0", ETCD_GVK, image="quay.io/etcd:0.9.0"),
    _bundle("etcd", "0.9.1", ETCD_GVK, image="quay.io/etcd:0.9.1"),
    _bundle(
        "etcd",
        "0.9.2",
        ETCD_GVK,
        {"type": "olm.gvk.required", "value": {"group": "certs.io", "version": "v1", "kind": "Cert"}},
        {"type": "olm.package.required", "value": {"packageName": "certs", "versionRange": ">=1.0.0"}},
        {"type": "olm.bundle.object", "value": {"data": _b64(CSV)}},
        {"type": "olm.bundle.object", "value": {"data": _b64(CRD)}},
        image="quay.io/etcd:0.9.2",
    ),
    {
        "schema": "olm.deprecations",
        "package": "etcd",
        "entries": [
            {"reference": {"schema": "olm.channel", "name": "alpha"}, "message": "alpha is gone"},
            {"reference": {"schema": "olm.bundle", "name": "etcd.v0.9.0"}, "message": "0.9.0 is broken"},
        ],
    },
    {"schema": "olm.package", "name": "certs", "defaultChannel": "stable"},
    {"schema": "olm.channel", "package": "certs", "name": "stable", "entries": [{"name": "certs.v1.0.0"}]},
    _bundle(
        "certs",
        "1.0.0",
        {"type": "olm.gvk", "value": {"group": "certs.io", "version": "v1", "kind": "Cert"}},
        ETCD_GVK,
        image="quay.io/certs:1.0.0",
    ),
]


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    root.mkdir()
    (root / "index.json").write_bytes(b"\n".join(orjson.dumps(b) for b in BLOBS) + b"\n")
    return root


@pytest.fixture
def api(catalog: Path, serve: Callable[..., Any], stub: Callable[[Any], Any]) -> Any:
    return stub(serve(catalog))


def _entry(msg: Any) -> tuple[str, str, str, str]:
    return (msg.packageName, msg.channelName, msg.bundleName, msg.replaces)


def _gvks(items: Any) -> list[tuple[str, str, str, str]]:
    return [(g.group, g.version, g.kind, g.plural) for g in items]


def test_list_packages_streams_every_package_sorted(api: Any) -> None:
    """ListPackages streams one PackageName per package, by name."""
    names = [p.name for p in api.ListPackages(pb.ListPackageRequest())]

    assert ["certs", "etcd"] == names


def test_get_package_lists_channels_with_heads_default_and_deprecations(api: Any) -> None:
    """GetPackage: channels sorted by name with their head as csvName, the default channel, deprecations."""
    pkg = api.GetPackage(pb.GetPackageRequest(name="etcd"))

    assert "etcd" == pkg.name
    assert "stable" == pkg.defaultChannelName
    assert [("alpha", "etcd.v0.9.2"), ("stable", "etcd.v0.9.2")] == [(c.name, c.csvName) for c in pkg.channels]
    assert "alpha is gone" == pkg.channels[0].deprecation.message
    assert not pkg.channels[1].HasField("deprecation")
    assert not pkg.HasField("deprecation")


def test_get_package_unknown_is_not_found(api: Any) -> None:
    """An unknown package is NOT_FOUND, naming it."""
    with pytest.raises(grpc.RpcError) as info:
        api.GetPackage(pb.GetPackageRequest(name="nope"))

    assert grpc.StatusCode.NOT_FOUND == info.value.code()
    assert '"nope"' in info.value.details()


def test_get_bundle_fills_every_field_as_opm_does(api: Any) -> None:
    """GetBundle: entry fields from the channel, APIs and dependencies from properties, manifests decoded."""
    b = api.GetBundle(pb.GetBundleRequest(pkgName="etcd", channelName="stable", csvName="etcd.v0.9.2"))

    assert ("etcd.v0.9.2", "etcd", "stable") == (b.csvName, b.packageName, b.channelName)
    assert "quay.io/etcd:0.9.2" == b.bundlePath
    assert "0.9.2" == b.version
    assert ("etcd.v0.9.1", ["etcd.v0.9.0"], "<0.9.2") == (b.replaces, list(b.skips), b.skipRange)
    assert [("etcd.database.coreos.com", "v1", "EtcdCluster", "")] == _gvks(b.providedApis)
    assert [("certs.io", "v1", "Cert", "")] == _gvks(b.requiredApis)
    assert [
        ("olm.gvk", {"group": "certs.io", "version": "v1", "kind": "Cert"}),
        ("olm.package", {"packageName": "certs", "versionRange": ">=1.0.0"}),
    ] == [(d.type, orjson.loads(d.value)) for d in b.dependencies]
    assert ["olm.package", "olm.gvk", "olm.gvk.required", "olm.package.required"] == [p.type for p in b.properties]
    assert '{"packageName":"etcd","version":"0.9.2"}' == b.properties[0].value
    assert [CSV, CRD] == [orjson.loads(o) for o in b.object]
    assert CSV == orjson.loads(b.csvJson)
    assert not b.HasField("deprecation")


def test_get_bundle_carries_its_deprecation_and_not_found_names_it(api: Any) -> None:
    """A deprecated bundle carries the message; a bundle not in the channel is NOT_FOUND."""
    b = api.GetBundle(pb.GetBundleRequest(pkgName="etcd", channelName="stable", csvName="etcd.v0.9.0"))
    with pytest.raises(grpc.RpcError) as info:
        api.GetBundle(pb.GetBundleRequest(pkgName="etcd", channelName="alpha", csvName="etcd.v0.9.0"))

    assert "0.9.0 is broken" == b.deprecation.message
    assert ("", "", []) == (b.csvJson, b.replaces, list(b.object))
    assert grpc.StatusCode.NOT_FOUND == info.value.code()
    assert "etcd.v0.9.0" in info.value.details()


def test_get_bundle_for_channel_is_the_head(api: Any) -> None:
    """GetBundleForChannel gives the channel head, with the entry fields of that channel."""
    b = api.GetBundleForChannel(pb.GetBundleInChannelRequest(pkgName="etcd", channelName="alpha"))

    assert ("etcd.v0.9.2", "alpha", "", []) == (b.csvName, b.channelName, b.replaces, list(b.skips))
    with pytest.raises(grpc.RpcError) as info:
        api.GetBundleForChannel(pb.GetBundleInChannelRequest(pkgName="etcd", channelName="beta"))
    assert grpc.StatusCode.NOT_FOUND == info.value.code()


def test_get_channel_entries_that_replace_includes_skips_with_their_own_replaces(api: Any) -> None:
    """Entries replacing a bundle, and those skipping it (whose replaces stays their own: upstream's quirk)."""
    by_replaces = [
        _entry(e) for e in api.GetChannelEntriesThatReplace(pb.GetAllReplacementsRequest(csvName="etcd.v0.9.1"))
    ]
    by_skips = [
        _entry(e) for e in api.GetChannelEntriesThatReplace(pb.GetAllReplacementsRequest(csvName="etcd.v0.9.0"))
    ]

    assert [("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.1")] == by_replaces
    assert [
        ("etcd", "stable", "etcd.v0.9.1", "etcd.v0.9.0"),
        ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.1"),
    ] == by_skips
    with pytest.raises(grpc.RpcError) as info:
        list(api.GetChannelEntriesThatReplace(pb.GetAllReplacementsRequest(csvName="etcd.v0.9.2")))
    assert grpc.StatusCode.NOT_FOUND == info.value.code()


def test_get_bundle_that_replaces_matches_replaces_or_skips(api: Any) -> None:
    """GetBundleThatReplaces finds the channel's bundle naming the CSV in replaces or skips."""
    b = api.GetBundleThatReplaces(pb.GetReplacementRequest(csvName="etcd.v0.9.0", pkgName="etcd", channelName="stable"))

    assert "etcd.v0.9.1" == b.csvName
    with pytest.raises(grpc.RpcError) as info:
        api.GetBundleThatReplaces(pb.GetReplacementRequest(csvName="etcd.v0.9.0", pkgName="etcd", channelName="alpha"))
    assert grpc.StatusCode.NOT_FOUND == info.value.code()


def test_get_channel_entries_that_provide_adds_one_entry_per_skip(api: Any) -> None:
    """Every entry whose bundle provides the GVK, plus one per skipped bundle with replaces = the skipped name."""
    req = pb.GetAllProvidersRequest(group="etcd.database.coreos.com", version="v1", kind="EtcdCluster", plural="x")
    found = [_entry(e) for e in api.GetChannelEntriesThatProvide(req)]

    assert [
        ("certs", "stable", "certs.v1.0.0", ""),
        ("etcd", "alpha", "etcd.v0.9.2", ""),
        ("etcd", "stable", "etcd.v0.9.0", ""),
        ("etcd", "stable", "etcd.v0.9.1", "etcd.v0.9.0"),
        ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.1"),
        ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.0"),
    ] == found


def test_get_latest_channel_entries_that_provide_is_channel_heads(api: Any) -> None:
    """Only channel heads that provide the GVK (and their skips of bundles in the same channel)."""
    req = pb.GetLatestProvidersRequest(group="etcd.database.coreos.com", version="v1", kind="EtcdCluster")
    found = [_entry(e) for e in api.GetLatestChannelEntriesThatProvide(req)]

    assert [
        ("certs", "stable", "certs.v1.0.0", ""),
        ("etcd", "alpha", "etcd.v0.9.2", ""),
        ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.1"),
        ("etcd", "stable", "etcd.v0.9.2", "etcd.v0.9.0"),
    ] == found
    missing = pb.GetLatestProvidersRequest(group="no.io", version="v1", kind="None")
    with pytest.raises(grpc.RpcError) as info:
        list(api.GetLatestChannelEntriesThatProvide(missing))
    assert grpc.StatusCode.NOT_FOUND == info.value.code()


def test_get_default_bundle_that_provides_picks_the_first_package_by_name(api: Any) -> None:
    """Among default-channel heads providing the GVK, the first package by name wins."""
    req = pb.GetDefaultProviderRequest(group="etcd.database.coreos.com", version="v1", kind="EtcdCluster")

    b = api.GetDefaultBundleThatProvides(req)

    assert ("certs.v1.0.0", "stable") == (b.csvName, b.channelName)
    with pytest.raises(grpc.RpcError) as info:
        api.GetDefaultBundleThatProvides(pb.GetDefaultProviderRequest(group="no.io", version="v1", kind="None"))
    assert grpc.StatusCode.NOT_FOUND == info.value.code()


def test_list_bundles_streams_one_message_per_channel_entry_without_manifests(api: Any) -> None:
    """ListBundles: one Bundle per channel entry; csvJson/object empty for bundles with an image (quirk)."""
    found = list(api.ListBundles(pb.ListBundlesRequest()))

    assert [
        ("certs.v1.0.0", "stable"),
        ("etcd.v0.9.2", "alpha"),
        ("etcd.v0.9.0", "stable"),
        ("etcd.v0.9.1", "stable"),
        ("etcd.v0.9.2", "stable"),
    ] == [(b.csvName, b.channelName) for b in found]
    head = found[-1]
    assert ("", []) == (head.csvJson, list(head.object))
    assert ("etcd.v0.9.1", ["etcd.v0.9.0"], "<0.9.2", "0.9.2") == (
        head.replaces,
        list(head.skips),
        head.skipRange,
        head.version,
    )
    assert [("certs.io", "v1", "Cert", "")] == _gvks(head.requiredApis)
    assert "0.9.0 is broken" == found[2].deprecation.message


def test_health_and_reflection_are_served(catalog: Path, serve: Callable[..., Any]) -> None:
    """grpc.health.v1 says SERVING for "" and api.Registry; reflection lists the services."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    server = serve(catalog)
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        states = [health.Check(health_pb2.HealthCheckRequest(service=s)).status for s in ("", "api.Registry")]
        refl = reflection_pb2_grpc.ServerReflectionStub(channel)
        answers = list(refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))

    assert [health_pb2.HealthCheckResponse.SERVING] * 2 == states
    names = sorted(s.name for s in answers[0].list_services_response.service)
    assert ["api.Registry", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"] == names


@pytest.mark.parametrize("image", [True, False])
def test_list_bundles_wire_encoding_is_the_messages(tmp_path: Path, olmkit_pm: Any, image: bool) -> None:
    """ListBundles' hand-encoded answers parse to exactly the Bundle messages (with and without images)."""
    from olmkit.catalog import load_catalog
    from olmkit.plugins.grpc_registry.convert import ApiView

    root = tmp_path / "catalog"
    root.mkdir()
    blobs = [b if image else {k: v for k, v in b.items() if k != "image"} for b in BLOBS]
    (root / "index.json").write_bytes(b"\n".join(orjson.dumps(b) for b in blobs) + b"\n")
    view = ApiView(load_catalog(root, olmkit_pm.registry))

    expected = [view.bundle(p, ch, e, full=False) for p, ch, e in view.walk()]
    actual = [pb.Bundle.FromString(data) for data in view.list_bundles()]

    assert expected == actual
    assert 5 == len(actual)
    assert bool(actual[-1].csvJson) != image  # manifests only for bundles without an image


def test_get_bundle_reads_a_bundle_directory_named_by_image(
    serve: Callable[..., Any], stub: Callable[[Any], Any]
) -> None:
    """A bundle without inline manifests whose image is a bundle directory gets csvJson/object from it."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "catalog"
    api = stub(serve(examples))

    b = api.GetBundle(
        pb.GetBundleRequest(pkgName="postgres-operator", channelName="stable", csvName="postgres-operator.v2.3.0")
    )

    csv = orjson.loads(b.csvJson)
    assert ("ClusterServiceVersion", "postgres-operator.v2.3.0") == (csv["kind"], csv["metadata"]["name"])
    kinds = sorted(orjson.loads(o)["kind"] for o in b.object)
    assert "ClusterServiceVersion" in kinds
    assert "CustomResourceDefinition" in kinds
    assert "../../bundles/postgres-operator.v2.3.0" == b.bundlePath
