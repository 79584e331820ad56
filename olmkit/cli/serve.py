"""``olmkit serve``: the cluster store over a Kubernetes-compatible HTTPS API, with the controllers.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from olmkit.cli.lifecycle import ProgressReporter, add_lifecycle_options, options_from_args
from olmkit.errors import UsageError
from olmkit.store import default_store_path, open_store

__all__ = ["add_commands", "parse_address"]

#: The controllers that stand in for a cluster's own API server and kubelet (kept by --no-controllers).
_SIMULATED_PREFIX = "simulated-"


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a pair.

    Raises:
        UsageError: not HOST:PORT, or a port out of range.
    """
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--address {text!r} is not HOST:PORT (for example 127.0.0.1:6443)")
    return host, int(port)


def _store_dir(args: argparse.Namespace) -> Path:
    where = default_store_path(args.store)
    return Path(".olmkit") if where == ":memory:" else Path(where).parent


def _serve(args: argparse.Namespace, pm: Any) -> int:
    from olmkit.apiserver.server import ServeConfig, serve
    from olmkit.lifecycle import build_manager
    from olmkit.lifecycle.runtime import ControllerManager

    host, port = parse_address(args.address)
    directory = _store_dir(args)
    config = ServeConfig(
        host=host,
        port=port,
        pki_dir=Path(args.pki_dir) if args.pki_dir else directory / "pki",
        kubeconfig=Path(args.kubeconfig_out) if args.kubeconfig_out else directory / "kubeconfig",
        bookmark_interval=args.bookmark_interval,
    )
    reporter = ProgressReporter(quiet=args.quiet, verbose=args.verbose)
    with open_store(args.store) as store:
        manager = build_manager(store, pm, options=options_from_args(args, store), reporter=reporter)
        if args.no_controllers:
            kept = [c for name, c in manager.controllers.items() if name.startswith(_SIMULATED_PREFIX)]
            manager = ControllerManager(store, kept, clock=manager.clock, reporter=reporter, context=manager.context)

        def ready(url: str) -> None:
            print(f"serving the Kubernetes API on {url} (kubeconfig: {config.kubeconfig})")
            print("controllers running: " + (", ".join(manager.controllers) or "none"))
            sys.stdout.flush()

        with manager:
            serve(config, store, pm.registry, run_controllers=manager.run_forever, on_ready=ready)
    print(f"stopped after {manager.reconciles} reconciles")
    return 0


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``serve``."""
    p = subparsers.add_parser(
        "serve", help="serve the cluster store as a Kubernetes API (for kubectl) and run the controllers"
    )
    add_lifecycle_options(p)
    p.add_argument(
        "--address",
        default="127.0.0.1:6443",
        metavar="HOST:PORT",
        help="where to listen (default 127.0.0.1:6443; port 0 picks a free one)",
    )
    p.add_argument(
        "--no-controllers",
        action="store_true",
        help="do not run OLM's controllers (the simulated API server and kubelet still run)",
    )
    p.add_argument("--kubeconfig-out", metavar="PATH", help="where to write the kubeconfig (default: beside the store)")
    p.add_argument(
        "--pki-dir", metavar="DIR", help="where the certificates and token are kept (default: beside the store)"
    )
    p.add_argument(
        "--bookmark-interval", type=float, default=10.0, metavar="SECONDS", help="seconds between watch bookmarks"
    )
    p.set_defaults(func=_serve)
