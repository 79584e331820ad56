"""``olmkit serve --no-controllers`` as a process: the API server the kube backend's lifecycle runs against.

The served side keeps only its simulated API server and kubelet (they establish CRDs and make
Deployments available, as a real cluster does); OLM's controllers run in the test process,
over the kube store. :class:`ServerPool` hands out a fresh server per cluster and starts the
next one while the current test runs, so a test does not wait for a start (about 0.35 s).
Used by the lifecycle tests and by ``benchmarks/bench_lifecycle_kube.py``.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from tests.apiserver.conftest import ServeProcess, start_serve

__all__ = ["ServeProcess", "ServerPool", "metrics", "serve_no_controllers", "stop_later"]


def serve_no_controllers(directory: Path, pki: Path, extra: Sequence[str] = ()) -> ServeProcess:
    """``olmkit serve --no-controllers`` on a fresh SQLite store in ``directory``, listening (port 0)."""
    return start_serve(directory, "--no-controllers", "--pki-dir", str(pki), *extra, kubectl=False)


def metrics(served: ServeProcess) -> str:
    """The server's ``/metrics`` text."""
    response = served.http.request("GET", "/metrics")
    assert 200 == response.status, response.data
    return response.data.decode()


def stop_later(served: ServeProcess) -> None:
    """Ask a server to stop (SIGTERM) without waiting for it (its open watches take about a second)."""
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGTERM)


class ServerPool:
    """Fresh servers on demand, one started ahead: ``take()`` returns a listening server and starts the next.

    Every server of a pool shares one certificate directory (made by the first), so a start
    is only the process start.
    """

    def __init__(self, root: Path, extra: Sequence[str] = ()) -> None:
        self.root = root
        self.pki = root / "pki"
        self.extra = tuple(extra)
        self.taken: list[ServeProcess] = []
        self._count = 0
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="serve-pool")
        self._next: Future[ServeProcess] | None = None

    def _start(self) -> Future[ServeProcess]:
        directory = self.root / f"server{self._count}"
        self._count += 1
        return self._starter.submit(serve_no_controllers, directory, self.pki, self.extra)

    def take(self) -> ServeProcess:
        served = (self._next or self._start()).result(timeout=120)
        self._next = None
        self.taken.append(served)
        self._next = self._start()  # starts while the caller works
        return served

    def close(self) -> None:
        """Stop every server taken (waiting for them) and the one started ahead."""
        if self._next is not None:
            self.taken.append(self._next.result(timeout=120))
            self._next = None
        for served in self.taken:
            served.stop()
        self._starter.shutdown()
