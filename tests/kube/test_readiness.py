"""`olmkit run --kubeconfig`'s /readyz follows the API server: not ready while the server cannot be reached
or a watch of the controllers is not open, ready again once they are back; /healthz (liveness) does not
follow it, as a restart would not bring the server back."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from olmkit.store import STORE_ENV
from tests.apiserver.conftest import start_serve
from tests.kube.conftest import Proxy, kubeconfig_via, port_of
from tests.lifecycle.test_observe import _get
from tests.lifecycle.test_run_service import Service


def _until(url: str, wanted: Callable[[int, str], bool], timeout: float = 20.0) -> tuple[int, str, float]:
    """Poll ``url`` until ``wanted(status, body)``; the answer and how long it took."""
    start = time.monotonic()
    status, body = _get(url)
    while not wanted(status, body):
        assert time.monotonic() - start < timeout, f"{url} still answers {status} {body!r}"
        time.sleep(0.1)
        status, body = _get(url)
    return status, body, time.monotonic() - start


@pytest.mark.slow
def test_readyz_follows_the_api_server_and_the_watches(tmp_path: Path) -> None:
    """Ready once the controllers synced; the server unreachable (a proxy in between refuses and cuts every
    connection): 503 naming the API server within a few seconds, /healthz still 200; reachable again: ready
    again once the watches are back; the server stopped: 503 again; SIGTERM still ends the run with exit 0."""
    server = start_serve(tmp_path / "serve", "--no-controllers", kubectl=False)
    proxy = Proxy(port_of(server.url))
    kubeconfig = kubeconfig_via(server.kubeconfig, proxy.port, tmp_path / "via-proxy.yaml")
    env = {**os.environ, "OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    env.pop(STORE_ENV, None)
    service = Service(Path("kube"), env, "--kubeconfig", str(kubeconfig), "--metrics-address", "127.0.0.1:0")
    try:
        url = service.url
        service.wait_for_line(lambda rec: rec["msg"].startswith("ready"))
        ready = _get(f"{url}/readyz")

        proxy.refuse()
        proxy.drop()
        cut = _until(f"{url}/readyz", lambda status, _: status == 503)
        unreachable = _until(f"{url}/readyz", lambda _, body: "the API server does not answer" in body)
        health_while_cut = _get(f"{url}/healthz")
        proxy.refuse(False)
        back = _until(f"{url}/readyz", lambda status, _: status == 200)

        server.stop()
        stopped = _until(f"{url}/readyz", lambda status, _: status == 503)
        code, _ = service.stop(signal.SIGTERM)
    finally:
        service.close()
        proxy.close()
        server.stop()

    assert (200, "ok\n") == ready
    assert cut[2] < 5.0, cut
    assert re.fullmatch(
        r"not ready: (the API server does not answer: .*|no watch open for \d+ of \d+ kinds .*)\n", cut[1]
    )
    assert unreachable[1].startswith("not ready: the API server does not answer: cannot reach the API server at ")
    assert 503 == unreachable[0]
    assert (200, "ok\n") == health_while_cut
    assert (200, "ok\n") == back[:2]
    assert stopped[1].startswith("not ready: the API server does not answer: "), stopped
    assert 0 == code, "".join(service.raw)
