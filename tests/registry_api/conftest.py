from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own on-disk catalog cache."""
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def serve(olmkit_pm: Any) -> Iterator[Callable[..., Any]]:
    """``serve(path, **options)``: a RegistryServer on 127.0.0.1, a free port; stopped after the test."""
    from olmkit.plugins.grpc_registry.server import serve_for_tests

    started: list[Any] = []

    def start(path: Path, **options: Any) -> Any:
        server = serve_for_tests(path, olmkit_pm, **options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop(0)


@pytest.fixture
def stub() -> Iterator[Callable[[Any], Any]]:
    """``stub(server)``: an api.Registry client stub on a channel to the server (closed after the test)."""
    import grpc

    from olmkit.plugins.grpc_registry._api import registry_pb2_grpc

    channels: list[Any] = []

    def make(server: Any) -> Any:
        channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
        channels.append(channel)
        return registry_pb2_grpc.RegistryStub(channel)

    yield make
    for channel in channels:
        channel.close()
