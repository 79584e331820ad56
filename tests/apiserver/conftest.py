"""Fixtures for the API server: ``olmkit serve`` as a process, an in-process server, kubectl, HTTP.

kubectl is required: without it these tests fail with a clear message when ``CI`` is set, and
are skipped with one line otherwise.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
import urllib3

from olmkit.apiserver.app import ApiServer, ServerOptions
from olmkit.apiserver.certs import Credentials, ensure_credentials, write_kubeconfig
from olmkit.apiserver.server import _tls
from olmkit.manager import get_plugin_manager
from olmkit.store import Store

ROOT = Path(__file__).resolve().parents[2]
OLMKIT = [sys.executable, "-m", "olmkit"]


#: a namespaced custom resource's CRD (group example.io, kind Gadget, version v1)
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.io"},
    "spec": {
        "group": "example.io",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [{"name": "v1", "served": True, "storage": True}],
    },
}


def kubectl_path() -> str:
    """The kubectl to drive the server with (fails under CI, skips elsewhere, when there is none)."""
    found = shutil.which("kubectl")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is required for the API server tests and is not on PATH (install kubectl v1.32)")
        pytest.skip("SKIPPED LOUDLY: kubectl is not installed; the API server tests need it (CI runs them)")
    return found


@attrs.define
class Http:
    """Raw HTTPS requests to a server, authenticated with the bearer token unless told otherwise."""

    url: str
    credentials: Credentials
    pool: urllib3.PoolManager = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=str(self.credentials.ca), retries=False)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        token: str | None = "default",
        preload: bool = True,
        timeout: float = 30.0,
    ) -> urllib3.BaseHTTPResponse:
        all_headers = {"Content-Type": content_type, **(headers or {})}
        if token == "default":
            all_headers["Authorization"] = f"Bearer {self.credentials.token}"
        elif token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        data = body if isinstance(body, (bytes, str)) or body is None else orjson.dumps(body)
        return self.pool.request(
            method, self.url + path, body=data, headers=all_headers, preload_content=preload, timeout=timeout
        )

    def json(self, method: str, path: str, body: Any = None, **kwargs: Any) -> tuple[int, Any]:
        response = self.request(method, path, body, **kwargs)
        return response.status, orjson.loads(response.data) if response.data else None


@attrs.define
class ServeProcess:
    """``olmkit serve`` running as a process, with kubectl pointed at it."""

    directory: Path
    process: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    http: Http
    kubectl_bin: str
    log: Any = None
    notes: dict[str, Any] = attrs.field(factory=dict)

    def kubectl(
        self, *args: str, check: bool = True, timeout: float = 60, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.kubectl_bin, "--kubeconfig", str(self.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self.log is not None:
            self.log.close()
        self.http.pool.clear()


def start_serve(directory: Path, *extra: str, kubectl: bool = True) -> ServeProcess:
    """Start ``olmkit serve`` on a fresh store in ``directory`` (port 0) and wait until it listens.

    ``kubectl=False``: for tests that drive the server with other clients only (no kubectl needed).
    """
    kubectl_bin = kubectl_path() if kubectl else shutil.which("kubectl") or "kubectl"
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(directory / "cache"), "PYTHONUNBUFFERED": "1"}
    env.pop("OLMKIT_STORE", None)
    log = (directory / "serve.log").open("w")
    process = subprocess.Popen(
        [*OLMKIT, "serve", "--store", str(directory / "cluster.db"), "--address", "127.0.0.1:0",
         "--bookmark-interval", "0.5", *extra],
        stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=directory,
    )  # fmt: skip
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith("serving the Kubernetes API on "):
            break
    if not line.startswith("serving"):
        process.kill()
        process.wait()
        log.close()
        raise AssertionError(f"olmkit serve did not start: {line!r}\n{(directory / 'serve.log').read_text()}")
    url = line.split(" on ", 1)[1].split(" ", 1)[0]
    stdout = process.stdout

    def drain() -> None:
        try:
            for _ in stdout:
                pass
        except ValueError:  # closed by stop()
            pass

    threading.Thread(target=drain, daemon=True).start()
    pki = Path(extra[extra.index("--pki-dir") + 1]) if "--pki-dir" in extra else directory / "pki"
    credentials = ensure_credentials(pki, "127.0.0.1")
    return ServeProcess(directory, process, url, directory / "kubeconfig", Http(url, credentials), kubectl_bin, log)


@attrs.define
class InProcessServer:
    """The API server on an event loop thread of the test process, over a store the test holds."""

    store: Store
    url: str
    kubeconfig: Path
    http: Http
    api: ApiServer
    loop: asyncio.AbstractEventLoop
    runner: Any

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(15)
        self.loop.call_soon_threadsafe(self.loop.stop)


def start_in_process(
    store: Store,
    directory: Path,
    shutdown_timeout: float = 0.5,
    **options: Any,
) -> InProcessServer:
    from aiohttp import web

    credentials = ensure_credentials(directory / "pki", "127.0.0.1")
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    api = ApiServer(store, get_plugin_manager().registry, ServerOptions(token=credentials.token, **options))

    async def start() -> tuple[Any, int]:
        runner = web.AppRunner(api.app(), access_log=None, shutdown_timeout=shutdown_timeout)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=_tls(credentials))
        await site.start()
        return runner, runner.addresses[0][1]

    runner, port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    url = f"https://127.0.0.1:{port}"
    api.address = f"127.0.0.1:{port}"
    write_kubeconfig(directory / "kubeconfig", url, credentials)
    return InProcessServer(store, url, directory / "kubeconfig", Http(url, credentials), api, loop, runner)


@pytest.fixture
def in_process(tmp_path: Path) -> Iterator[InProcessServer]:
    """An in-process server over a memory store with a short history (5 events), for 410 Gone."""
    from olmkit.store import MemoryStore

    server = start_in_process(MemoryStore(history=5), tmp_path, bookmark_interval=0.3)
    yield server
    server.close()
