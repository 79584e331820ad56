"""``olmkit reconcile`` and ``olmkit run``: the lifecycle controllers on a store.

``reconcile`` runs every controller until nothing is left to do (or ``--timeout``) and
exits 0 when the cluster is stable, 1 when work was still pending; ``run`` keeps them
running until interrupted. What the controllers do is reported as it happens (one line
per event; ``-q`` keeps only the summary).

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from typing import Any, TextIO

from olmkit.cli.options import namespace_name
from olmkit.errors import UsageError
from olmkit.lifecycle import LifecycleOptions, Reporter, build_manager
from olmkit.lifecycle.runtime import Key, Result
from olmkit.store import MemoryStore, SqliteStore, Store, open_store

__all__ = ["ProgressReporter", "add_commands", "add_lifecycle_options", "options_from_args"]


class ProgressReporter(Reporter):
    """Prints controller events, with the elapsed time, as they happen."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, verbose: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.verbose = verbose
        self.start = time.monotonic()
        self.errors = 0

    def _line(self, text: str) -> None:
        self.stream.write(f"[{time.monotonic() - self.start:6.2f}s] {text}\n")
        self.stream.flush()

    def on_event(self, message: str) -> None:
        if not self.quiet:
            self._line(message)

    def on_error(self, key: Key, error: BaseException, attempt: int, retry_in: float) -> None:
        self.errors += 1
        if self.verbose or attempt in (1, 5, 10):
            self._line(f"{key}: {error} (attempt {attempt}, retrying in {retry_in:.2f}s)")
        if self.verbose and getattr(error, "__notes__", None):
            self.stream.write("".join(error.__notes__))

    def on_reconcile(self, key: Key, seconds: float, result: Result | None) -> None:
        if self.verbose:
            self._line(f"reconciled {key} in {seconds * 1000:.1f} ms")


def add_lifecycle_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that runs controllers takes."""
    parser.add_argument("--store", metavar="PATH", help="cluster store (default $OLMKIT_STORE or .olmkit/cluster.db)")
    parser.add_argument(
        "--global-namespace", type=namespace_name, default="olm", help="global catalog namespace (default olm)"
    )
    parser.add_argument(
        "--install-timeout", type=float, default=300.0, metavar="SECONDS", help="how long a CSV may stay Installing"
    )
    parser.add_argument(
        "--no-simulated-kubelet",
        action="store_true",
        help="on the embedded store, do not mark Deployments available (installs then time out)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not use the on-disk catalog cache")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every reconcile and error")


def _embedded(store: Store) -> bool:
    return isinstance(store, (SqliteStore, MemoryStore))


def options_from_args(args: argparse.Namespace, store: Store) -> LifecycleOptions:
    """Build the run's options from parsed arguments."""
    if args.install_timeout <= 0:
        raise UsageError("--install-timeout must be positive")
    return LifecycleOptions(
        global_namespace=args.global_namespace,
        install_timeout=args.install_timeout,
        embedded=_embedded(store),
        simulate_kubelet=not args.no_simulated_kubelet,
        disk_cache=not args.no_cache,
    )


def _reconcile(args: argparse.Namespace, pm: Any) -> int:
    store = open_store(args.store)
    reporter = ProgressReporter(quiet=args.quiet, verbose=args.verbose)
    with store:
        manager = build_manager(store, pm, options=options_from_args(args, store), reporter=reporter)
        outcome = manager.run_until_stable(timeout=args.timeout, wait=args.until_stable)
    elapsed = time.monotonic() - reporter.start
    if outcome.stable:
        print(f"stable after {outcome.reconciles} reconciles in {elapsed:.2f}s")
        return 0
    print(f"not stable after {elapsed:.2f}s ({outcome.reconciles} reconciles); still pending:")
    for line in outcome.pending:
        print(f"  {line}")
    return 1


def _run(args: argparse.Namespace, pm: Any) -> int:
    store = open_store(args.store)
    reporter = ProgressReporter(quiet=args.quiet, verbose=args.verbose)
    stop = False

    def handle(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, handle)
    with store:
        manager = build_manager(store, pm, options=options_from_args(args, store), reporter=reporter)
        print("controllers running (Ctrl-C to stop): " + ", ".join(manager.controllers))
        with contextlib.suppress(KeyboardInterrupt):
            manager.run_forever(lambda: stop)
    print(f"stopped after {manager.reconciles} reconciles")
    return 0


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``reconcile`` and ``run``."""
    p = subparsers.add_parser("reconcile", help="run the controllers until nothing changes")
    add_lifecycle_options(p)
    p.add_argument(
        "--until-stable",
        action="store_true",
        help="also wait for delayed work (Deployments becoming available, retries) until nothing is pending; "
        "a periodic catalog poll does not count",
    )
    p.add_argument(
        "--timeout", type=float, default=120.0, metavar="SECONDS", help="give up after this long (default 120)"
    )
    p.set_defaults(func=_reconcile)

    p = subparsers.add_parser("run", help="run the controllers until interrupted")
    add_lifecycle_options(p)
    p.set_defaults(func=_run)
