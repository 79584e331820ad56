"""Run the API server: TLS with client certificates, the kubeconfig, the controllers beside it.

.. versionadded:: 0.2
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from olmkit.apiserver.app import ApiServer, ServerOptions
from olmkit.apiserver.certs import Credentials, ensure_credentials, write_kubeconfig
from olmkit.errors import OlmkitError
from olmkit.store import Store

__all__ = ["ServeConfig", "serve"]


@attrs.frozen
class ServeConfig:
    """Where and how to serve.

    Args:
        host: the address to listen on.
        port: the port (0: any free one; the kubeconfig names the port bound).
        pki_dir: where the CA, certificates and token are kept.
        kubeconfig: where the kubeconfig is written.
        bookmark_interval: seconds between watch bookmarks.
    """

    host: str
    port: int
    pki_dir: Path
    kubeconfig: Path
    bookmark_interval: float = 10.0


def _tls(credentials: Credentials) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(credentials.server_cert, credentials.server_key)
    context.load_verify_locations(credentials.ca)
    context.verify_mode = ssl.CERT_OPTIONAL  # no certificate: a bearer token, else 401
    return context


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def serve(
    config: ServeConfig,
    store: Store,
    registry: Any,
    *,
    run_controllers: Callable[[Callable[[], bool]], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``store`` until SIGINT or SIGTERM.

    Args:
        config: address, credentials directory, kubeconfig path.
        store: the cluster store.
        registry: the plugin registry (admission checks).
        run_controllers: runs the controllers until the function it is given returns true
            (in a thread of its own).
        on_ready: called with the server's URL once it listens and the kubeconfig is written.
    """
    credentials = ensure_credentials(config.pki_dir, config.host)
    serving = _serve(config, store, registry, credentials, run_controllers, on_ready)
    try:
        import uvloop  # the event loop and its TLS in C (not on Windows): less CPU per request
    except ImportError:
        asyncio.run(serving)
    else:
        uvloop.run(serving)


async def _serve(
    config: ServeConfig,
    store: Store,
    registry: Any,
    credentials: Credentials,
    run_controllers: Callable[[Callable[[], bool]], None] | None,
    on_ready: Callable[[str], None] | None,
) -> None:
    from aiohttp import web

    api = ApiServer(store, registry, ServerOptions(token=credentials.token, bookmark_interval=config.bookmark_interval))
    runner = web.AppRunner(api.app(), handle_signals=False, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, ssl_context=_tls(credentials), backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    stopping = threading.Event()
    controllers: threading.Thread | None = None
    try:
        try:
            await site.start()
        except OSError as exc:
            raise OlmkitError(f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}") from None
        port = runner.addresses[0][1]
        api.address = f"{_url_host(config.host)}:{port}"
        url = f"https://{api.address}"
        write_kubeconfig(config.kubeconfig, url, credentials)
        if run_controllers is not None:
            controllers = threading.Thread(
                target=run_controllers, args=(stopping.is_set,), name="olmkit-controllers", daemon=True
            )
            controllers.start()
        if on_ready is not None:
            on_ready(url)
        await stop.wait()
    finally:
        stopping.set()
        with contextlib.suppress(Exception):
            await runner.cleanup()
        if controllers is not None:
            controllers.join(timeout=10)
