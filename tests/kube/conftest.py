"""Fixtures of the kube backend's own tests: ``olmkit serve`` processes, a TCP proxy that can cut
connections, kubeconfigs and fresh namespaces.

One ``olmkit serve --no-controllers`` process serves each module (tests use fresh namespaces and
uniquely named cluster-scoped objects); tests that restart or starve a server start their own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from olmkit.kube import KubeStore, connect
from tests.apiserver.conftest import ServeProcess, start_serve


class Proxy:
    """A TCP proxy on 127.0.0.1 (port 0) in front of a server: it can drop every open connection,
    refuse new ones for a while, and change its target (a restarted server's new port)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.refusing = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._closed = False
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:  # refuse() and drop() take the lock: no connection slips past them
                if self.refusing:
                    client.close()
                    upstream.close()
                    continue
                self._open += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def refuse(self, refusing: bool = True) -> None:
        """Close new connections at once (``False``: forward them again)."""
        with self._lock:
            self.refusing = refusing

    def drop(self) -> int:
        """Cut every open connection; returns how many there were."""
        with self._lock:
            cut, self._open = self._open, []
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        return len(cut) // 2

    def close(self) -> None:
        self._closed = True
        close_listener(self._listener, self._accepting)
        self.drop()


def close_listener(listener: socket.socket, accepting: threading.Thread) -> None:
    """Close a listening socket and wait for the thread blocked in its ``accept()``.

    Closing alone does not wake that thread (on Linux): it would outlive the test, and while
    a process has other threads olmkit does not fork (its parallel validation and background
    cache writes), so the tests after it would take the serial paths only.
    """
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()
    accepting.join(timeout=10)
    assert not accepting.is_alive(), "the accept thread did not end"


def watching(informer: Any, timeout: float = 10.0) -> None:
    """Wait until the informer's watch request is open (its list is done before that)."""
    deadline = time.monotonic() + timeout
    while not informer.watching and time.monotonic() < deadline:
        time.sleep(0.01)
    assert informer.watching, f"the {informer.kind} informer opened no watch in {timeout} s"


def kubeconfig_via(kubeconfig: Path, port: int, path: Path) -> Path:
    """A copy of ``kubeconfig`` whose server is 127.0.0.1:``port`` (the certificate names 127.0.0.1)."""
    config = yaml.safe_load(kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    return path


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One ``olmkit serve --no-controllers`` per module (its simulated API server still runs); not
    per session: tests elsewhere wait for any child process to end (bench-compare's CPU figures)."""
    server = start_serve(tmp_path_factory.mktemp("serve"), "--no-controllers", kubectl=False)
    yield server
    server.stop()


@pytest.fixture
def kube(serve: ServeProcess) -> Iterator[KubeStore]:
    """A KubeStore on the module's server."""
    store = connect(serve.kubeconfig)
    yield store
    store.close()


@pytest.fixture
def ns(kube: KubeStore) -> str:
    """A fresh namespace of the module's server."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def cm(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}
