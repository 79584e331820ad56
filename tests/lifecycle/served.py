"""``olmkit serve --no-controllers`` as a process: the API server the kube backend's lifecycle runs against.

The served side keeps only its simulated API server and kubelet (they establish CRDs and make
Deployments available, as a real cluster does); OLM's controllers run in the test process,
over the kube store. :class:`ServerPool` hands out a fresh server per cluster and starts the
next one while the current test runs, so a test does not wait for a start (about 0.35 s).
Used by the lifecycle tests and by ``benchmarks/bench_lifecycle_kube.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import orjson
import urllib3

OLMKIT = [sys.executable, "-m", "olmkit"]
READY = "serving the Kubernetes API on "


@attrs.define
class Served:
    """One running ``olmkit serve --no-controllers``: its URL, kubeconfig and an HTTPS client."""

    directory: Path
    process: subprocess.Popen[str]
    url: str
    kubeconfig: Path
    token: str
    pool: urllib3.PoolManager

    def request(self, method: str, path: str) -> urllib3.BaseHTTPResponse:
        """A request to the server, with its bearer token."""
        return self.pool.request(
            method, self.url + path, headers={"Authorization": f"Bearer {self.token}"}, timeout=30.0
        )

    def resource_version(self) -> str:
        """The server's latest resourceVersion (a one-item list of Namespaces answers it)."""
        response = self.request("GET", "/api/v1/namespaces?limit=1")
        assert 200 == response.status, response.data
        return str(orjson.loads(response.data)["metadata"]["resourceVersion"])

    def metrics(self) -> str:
        """The server's ``/metrics`` text."""
        response = self.request("GET", "/metrics")
        assert 200 == response.status, response.data
        return response.data.decode()

    def stop(self, wait: bool = True) -> None:
        """Stop the server (SIGTERM); ``wait=False`` does not wait for it to finish (call again to wait)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            if not wait:
                return
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.pool.clear()


def launch(directory: Path, pki: Path, extra: Sequence[str] = ()) -> subprocess.Popen[str]:
    """Start ``olmkit serve --no-controllers`` on a fresh SQLite store in ``directory`` (port 0); do not wait."""
    directory.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(directory / "cache"), "PYTHONUNBUFFERED": "1"}
    env.pop("OLMKIT_STORE", None)
    with (directory / "serve.log").open("w") as log:  # the server writes to its own copy of the handle
        return subprocess.Popen(
            [*OLMKIT, "serve", "--no-controllers", "--store", str(directory / "cluster.db"),
             "--address", "127.0.0.1:0", "--pki-dir", str(pki), "--kubeconfig-out", str(directory / "kubeconfig"),
             "--bookmark-interval", "1", *extra],
            stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=directory,
        )  # fmt: skip


def ready(directory: Path, pki: Path, process: subprocess.Popen[str]) -> Served:
    """Wait until a launched server listens (60 s at most) and return it."""
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line or line.startswith(READY):
            break
    if not line.startswith(READY):
        process.kill()
        process.wait()
        raise AssertionError(f"olmkit serve did not start: {line!r}\n{(directory / 'serve.log').read_text()}")
    url = line[len(READY) :].split(" ", 1)[0]
    stdout = process.stdout

    def drain() -> None:  # the server's progress lines must not fill the pipe
        try:
            for _ in stdout:
                pass
        except ValueError:  # closed by stop()
            pass

    threading.Thread(target=drain, daemon=True).start()
    token = (pki / "token").read_text().strip()
    pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=str(pki / "ca.crt"), retries=False)
    return Served(directory, process, url, directory / "kubeconfig", token, pool)


class ServerPool:
    """Fresh servers on demand, one started ahead: ``take()`` returns a listening server and launches the next.

    Every server of a pool shares one certificate directory (made by the first), so a start
    is only the process start.
    """

    def __init__(self, root: Path, extra: Sequence[str] = ()) -> None:
        self.root = root
        self.pki = root / "pki"
        self.extra = tuple(extra)
        self._count = 0
        self._next: tuple[Path, subprocess.Popen[str]] | None = None
        self.taken: list[Served] = []

    def _launch(self) -> tuple[Path, subprocess.Popen[str]]:
        directory = self.root / f"server{self._count}"
        self._count += 1
        return directory, launch(directory, self.pki, self.extra)

    def take(self) -> Served:
        directory, process = self._next or self._launch()
        self._next = None
        served = ready(directory, self.pki, process)
        self.taken.append(served)
        self._next = self._launch()  # starts while the caller works
        return served

    def close(self) -> None:
        """Stop every server taken (waiting for them) and the one started ahead."""
        for served in self.taken:
            served.stop()
        if self._next is not None:
            _, process = self._next
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
            self._next = None
