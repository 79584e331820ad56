"""Serving and reading: the command, ``catalog list --address``, reloads without dropped
connections, dead addresses and server restarts, and the committed stubs."""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest

from olmkit.catalog.sources import CONNECTING, READY, TRANSIENT_FAILURE, open_source
from olmkit.cli import main
from olmkit.errors import CatalogError, InputError
from olmkit.plugins.grpc_registry._api import registry_pb2 as pb
from olmkit.plugins.grpc_registry._api.registry_pb2_grpc import RegistryStub

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "catalog"


def _package(root: Path, name: str, version: str = "1.0.0") -> None:
    blobs = [
        {"schema": "olm.package", "name": name, "defaultChannel": "stable"},
        {"schema": "olm.channel", "package": name, "name": "stable", "entries": [{"name": f"{name}.v{version}"}]},
        {
            "schema": "olm.bundle",
            "package": name,
            "name": f"{name}.v{version}",
            "image": f"example.invalid/{name}:{version}",
            "properties": [{"type": "olm.package", "value": {"packageName": name, "version": version}}],
        },
    ]
    (root / f"{name}.json").write_bytes(b"\n".join(orjson.dumps(b) for b in blobs) + b"\n")


def _grpc_source(olmkit_pm: Any, address: str) -> Any:
    return open_source(
        {"sourceType": "grpc", "address": address},
        registry=olmkit_pm.registry,
        name="cs",
        namespace="olm",
        base_dir=None,
    )


def _wait(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_catalog_list_address_reads_a_served_catalog(
    serve: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """``catalog list bundles --address`` lists what ``catalog list bundles PATH`` lists."""
    server = serve(EXAMPLES)

    assert 0 == main(["catalog", "list", "bundles", str(EXAMPLES), "-o", "json"])
    from_files = orjson.loads(capsys.readouterr().out)
    assert 0 == main(["catalog", "list", "bundles", "--address", f"127.0.0.1:{server.port}", "-o", "json"])
    from_server = orjson.loads(capsys.readouterr().out)

    def key(row: dict[str, Any]) -> tuple[str, str]:
        return row["package"], row["name"]

    normal = [{**r, "channels": sorted(r["channels"])} for r in sorted(from_files, key=key)]
    assert normal == [{**r, "channels": sorted(r["channels"])} for r in sorted(from_server, key=key)]
    assert 17 == len(from_server)


def test_catalog_list_needs_exactly_one_of_path_and_address(capsys: pytest.CaptureFixture[str]) -> None:
    """Neither or both: a usage error, exit 2, one line."""
    assert 2 == main(["catalog", "list", "packages"])
    assert 2 == main(["catalog", "list", "packages", str(EXAMPLES), "--address", "127.0.0.1:1"])

    err = capsys.readouterr().err
    assert 2 == err.count("give a catalog PATH or --address HOST:PORT")


def test_dead_address_is_a_transient_failure_naming_it(olmkit_pm: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listens: load fails with UNAVAILABLE naming the address, TRANSIENT_FAILURE, one CLI line."""
    address = f"127.0.0.1:{_free_port()}"
    source = _grpc_source(olmkit_pm, address)
    assert CONNECTING == source.health().state

    with pytest.raises(CatalogError) as info:
        source.load()

    assert f"registry server {address}: ListPackages: UNAVAILABLE" in str(info.value)
    assert (TRANSIENT_FAILURE, str(info.value)) == (source.health().state, source.health().message)
    assert 2 == main(["catalog", "list", "packages", "--address", address])
    err = capsys.readouterr().err
    assert 1 == len(err.splitlines())
    assert address in err


@pytest.mark.parametrize("address", ["", "localhost", "localhost:http", ":50051", "host:99999"])
def test_bad_address_is_refused_naming_the_catalog_source(olmkit_pm: Any, address: str) -> None:
    """spec.address must be host:port."""
    with pytest.raises(InputError) as info:
        _grpc_source(olmkit_pm, address)

    assert "catalogsource olm/cs" in str(info.value)


def test_image_without_address_is_refused_with_what_to_do(olmkit_pm: Any) -> None:
    """spec.image (a catalog pod upstream) is not run: the error says to serve the catalog and give its address."""
    with pytest.raises(InputError) as info:
        open_source(
            {"sourceType": "grpc", "image": "quay.io/x/catalog:latest"},
            registry=olmkit_pm.registry,
            name="cs",
            namespace="olm",
            base_dir=None,
        )

    assert "catalogsource olm/cs" in str(info.value)
    assert "spec.image is not supported" in str(info.value)
    assert "spec.address" in str(info.value)


def test_server_restart_is_picked_up_by_the_next_load(
    olmkit_pm: Any, tmp_path: Path, serve: Callable[..., Any]
) -> None:
    """Server gone: TRANSIENT_FAILURE; back on the same address: READY with the new content."""
    root = tmp_path / "catalog"
    root.mkdir()
    _package(root, "alpha")
    first = serve(root, watch_interval=0)
    address = f"127.0.0.1:{first.port}"
    source = _grpc_source(olmkit_pm, address)
    assert ["alpha"] == list(source.load().packages)
    assert READY == source.health().state

    first.stop(0)
    with pytest.raises(CatalogError):
        source.load()
    assert TRANSIENT_FAILURE == source.health().state
    _package(root, "beta")
    from olmkit.plugins.grpc_registry.server import RegistryServer

    second = RegistryServer(root, olmkit_pm, address=address, watch_interval=0)
    second.start()
    try:
        assert ["alpha", "beta"] == sorted(source.load().packages)
        assert READY == source.health().state
    finally:
        second.stop(0)


def test_catalog_change_is_served_without_dropping_connections(
    tmp_path: Path, serve: Callable[..., Any], stub: Callable[[Any], Any]
) -> None:
    """A file change is picked up; an open channel stays READY and sees it; a stream under way ends on its snapshot."""
    root = tmp_path / "catalog"
    root.mkdir()
    for name in ("a", "b", "c"):
        _package(root, name)
    server = serve(root, watch_interval=0.05)
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    states: list[Any] = []
    channel.subscribe(states.append, try_to_connect=True)
    api = RegistryStub(channel)
    assert ["a", "b", "c"] == [p.name for p in api.ListPackages(pb.ListPackageRequest())]
    stream = api.ListBundles(pb.ListBundlesRequest())
    first = next(stream)

    _package(root, "d")
    _wait(lambda: server.reloads == 1)
    rest = list(stream)

    assert ["a", "b", "c", "d"] == [p.name for p in api.ListPackages(pb.ListPackageRequest())]
    assert ["a.v1.0.0", "b.v1.0.0", "c.v1.0.0"] == [first.csvName] + [b.csvName for b in rest]
    seen = [s for s in states if s is not grpc.ChannelConnectivity.IDLE]
    assert grpc.ChannelConnectivity.READY == seen[-1]
    assert grpc.ChannelConnectivity.TRANSIENT_FAILURE not in seen
    assert 1 == seen.count(grpc.ChannelConnectivity.READY)  # connected once, never reconnected
    channel.unsubscribe(states.append)
    channel.close()


def test_touching_the_files_without_changing_them_keeps_the_snapshot(tmp_path: Path, serve: Callable[..., Any]) -> None:
    """A new mtime with the same content (the digest) is no change: the snapshot and its encoded answers stay."""
    root = tmp_path / "catalog"
    root.mkdir()
    _package(root, "a")
    server = serve(root, watch_interval=0)
    view = server.view()
    payload = view.list_bundles()

    os.utime(root / "a.json", ns=(1, 1))
    assert not server.check()
    _package(root, "b")
    assert server.check()

    assert (1, "b") == (server.reloads, sorted(server.view().catalog.packages)[-1])
    assert view is not server.view()
    assert payload is view.list_bundles()


def test_the_encoded_list_bundles_answer_is_kept_for_the_next_start(
    olmkit_pm: Any, tmp_path: Path, serve: Callable[..., Any], stub: Callable[[Any], Any]
) -> None:
    """A second server on the same catalog and cache reads the ListBundles answer back; a damaged copy is ignored."""
    from olmkit.catalog import cache_dir
    from olmkit.plugins.grpc_registry.server import RegistryServer

    first = serve(EXAMPLES)
    stored = cache_dir() / f"{first.view().catalog.digest}.api-bundles"
    _wait(stored.exists)
    expected = [b.SerializeToString() for b in stub(first).ListBundles(pb.ListBundlesRequest())]
    first.stop(0)

    second = serve(EXAMPLES, warm=False)
    assert second.view().encoded
    assert expected == [b.SerializeToString() for b in stub(second).ListBundles(pb.ListBundlesRequest())]
    stored.write_bytes(stored.read_bytes()[:-3])
    third = RegistryServer(EXAMPLES, olmkit_pm, address="127.0.0.1:0", watch_interval=0, warm=False)
    third.load()
    assert not third.view().encoded


def test_a_change_that_breaks_the_catalog_keeps_the_previous_snapshot(
    tmp_path: Path, serve: Callable[..., Any], stub: Callable[[Any], Any]
) -> None:
    """An invalid catalog after a change is reported and the last good one still served."""
    root = tmp_path / "catalog"
    root.mkdir()
    _package(root, "a")
    messages: list[str] = []
    server = serve(root, watch_interval=0.05, log=messages.append)
    api = stub(server)

    (root / "bad.json").write_text('{"schema": "olm.bundle", "name": 3}\n')
    _wait(lambda: bool(messages))

    assert ["a"] == [p.name for p in api.ListPackages(pb.ListPackageRequest())]
    assert "still serving the previous catalog" in messages[0]
    assert "bad.json" in messages[0]


def test_serve_command_serves_until_terminated(tmp_path: Path) -> None:
    """``olmkit catalog serve`` prints where it listens, answers, and exits 0 on SIGTERM."""
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "olmkit",
            "catalog",
            "serve",
            str(EXAMPLES),
            "--address",
            "127.0.0.1:0",
            "--cache-dir",
            str(tmp_path / "c2"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"serving 5 packages on 127\.0\.0\.1:(\d+)", line)
        assert match, line
        with grpc.insecure_channel(f"127.0.0.1:{match.group(1)}") as channel:
            pkg = RegistryStub(channel).GetPackage(pb.GetPackageRequest(name="postgres-operator"), timeout=10)
        assert "stable" == pkg.defaultChannelName
        assert any((tmp_path / "c2").iterdir())  # --cache-dir is where the parsed catalog went
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
        if proc.stderr is not None:
            proc.stderr.close()
    assert 0 == code


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["/no/such/catalog"], "no such file or directory"),
        ([str(EXAMPLES), "--address", "nonsense"], "is not host:port"),
    ],
)
def test_serve_command_refuses_bad_input(args: list[str], text: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing catalog or a bad address: one line, exit 2."""
    assert 2 == main(["catalog", "serve", *args])

    assert text in capsys.readouterr().err


def test_serve_command_refuses_an_invalid_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An invalid catalog is not served: the problems name the file and blob, exit 2."""
    (tmp_path / "bad.json").write_text('{"schema": "olm.bundle", "name": 3}\n')

    assert 2 == main(["catalog", "serve", str(tmp_path), "--address", "127.0.0.1:0"])

    err = capsys.readouterr().err
    assert "is invalid" in err
    assert "bad.json:1" in err


def test_committed_stubs_are_what_grpcio_tools_generates(tmp_path: Path) -> None:
    """Regenerating from registry.proto with the command it names gives the committed files."""
    pytest.importorskip("grpc_tools", reason="grpcio-tools is in the test extras")
    api = Path("olmkit/plugins/grpc_registry/_api")
    shutil.copytree(ROOT / api, tmp_path / api, ignore=shutil.ignore_patterns("*_pb2*.py", "__pycache__"))
    command = (ROOT / api / "registry.proto").read_text().split("//   python -m grpc_tools.protoc", 1)[1]
    argv = [*command.split("\n//       ")[0].rstrip(" \\").split(), str(api / "registry.proto")]
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *argv], cwd=tmp_path, check=True)

    for name in ("registry_pb2.py", "registry_pb2_grpc.py"):
        assert filecmp.cmp(ROOT / api / name, tmp_path / api / name, shallow=False), name


def test_resolve_short_form_takes_a_served_catalog(
    serve: Callable[..., Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``resolve --catalog grpc://HOST:PORT`` resolves as ``--catalog DIR`` does (a catalog named like it)."""
    root = tmp_path / "catalog"  # the short form names the CatalogSource after the directory: "catalog"
    shutil.copytree(EXAMPLES, root)
    server = serve(root)
    outputs = []
    for where in (str(root), f"grpc://127.0.0.1:{server.port}"):
        code = main(["resolve", "--catalog", where, "--subscribe", "postgres-operator/stable", "-o", "json"])
        outputs.append((code, capsys.readouterr().out))

    assert outputs[0] == outputs[1]
    assert 0 == outputs[0][0]
    assert '"bundle": "cert-manager-lite.v1.2.0"' in outputs[0][1]


def test_commands_that_do_not_use_grpc_do_not_import_it() -> None:
    """Listing a catalog directory, resolving and listing plugins leave grpc and protobuf unimported."""
    code = (
        "import sys, contextlib, io\n"
        "from olmkit.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert 0 == main(['catalog', 'list', 'packages', {str(EXAMPLES)!r}])\n"
        f"    assert 0 == main(['resolve', '--catalog', {str(EXAMPLES)!r}, '--subscribe', 'postgres-operator'])\n"
        "    assert 0 == main(['plugins', 'list'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google', 'grpc_health')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout

    assert "[]" == out.strip()
