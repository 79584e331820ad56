"""``olmkit reconcile`` and ``olmkit run``: the lifecycle controllers on a store.

``reconcile`` runs every controller until nothing is left to do (or ``--timeout``) and
exits 0 when the cluster is stable, 1 when work was still pending; ``run`` keeps them
running until interrupted. What the controllers do is reported as it happens (one line
per event; ``-q`` keeps only the summary).

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

from olmkit.cli.options import add_global_namespace_option, add_kube_options, store_from_args
from olmkit.errors import OlmkitError, UsageError
from olmkit.lifecycle import LifecycleOptions, Reporter, build_manager
from olmkit.lifecycle.outcome import subscription_outcomes
from olmkit.lifecycle.runtime import Key, Result
from olmkit.store import Forbidden, Store

#: where ``olmkit run`` serves metrics unless told otherwise (kept here: importing the server is lazy)
DEFAULT_ADDRESS = "127.0.0.1:8080"

__all__ = ["DEFAULT_ADDRESS", "ProgressReporter", "add_commands", "add_lifecycle_options", "options_from_args"]


class ProgressReporter(Reporter):
    """Prints controller events, with the elapsed time, as they happen.

    Args:
        stream: where lines go (default standard output).
        quiet: print nothing but the summary.
        verbose: 0 events and first failures; 1 (``-v``) also every reconcile and every
            failure with its traceback; 2 (``-vv``) also what each reconcile asked for next.
        log_format: ``text`` (a line per event, for people) or ``json`` (an object per line).
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        quiet: bool = False,
        verbose: int | bool = 0,
        log_format: str = "text",
    ) -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.verbose = int(verbose)
        self.json = log_format == "json"
        self.start = time.monotonic()
        self.errors = 0

    def log(self, message: str, *, level: str = "info", **fields: Any) -> None:
        """Write one line (text) or one JSON object (json) with ``fields``."""
        elapsed = time.monotonic() - self.start
        if self.json:
            import orjson

            record = {
                "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "level": level,
                "msg": message,
                "elapsed": round(elapsed, 3),
                **fields,
            }
            self.stream.write(orjson.dumps(record, default=str).decode() + "\n")
        else:
            self.stream.write(f"[{elapsed:6.2f}s] {message}\n")
        self.stream.flush()

    def on_event(self, message: str) -> None:
        if not self.quiet:
            self.log(message)

    def on_error(self, key: Key, error: BaseException, attempt: int, retry_in: float) -> None:
        self.errors += 1
        notes = "".join(getattr(error, "__notes__", None) or ())
        if self.verbose or attempt in (1, 5, 10):
            fields: dict[str, Any] = {"key": str(key), "attempt": attempt, "retry_in": round(retry_in, 3)}
            if self.verbose and notes and self.json:
                fields["traceback"] = notes
            self.log(f"{key}: {error} (attempt {attempt}, retrying in {retry_in:.2f}s)", level="error", **fields)
        if self.verbose and notes and not self.json:
            self.stream.write(notes)

    def on_reconcile(self, key: Key, seconds: float, result: Result | None) -> None:
        if not self.verbose:
            return
        fields: dict[str, Any] = {"key": str(key), "seconds": round(seconds, 6)}
        text = f"reconciled {key} in {seconds * 1000:.1f} ms"
        if self.verbose >= 2 and result is not None and result.requeue_after is not None:
            fields.update(requeue_after=result.requeue_after, resync=result.resync, waiting=result.waiting)
            kind = "resync" if result.resync else "again"
            text += f"; {kind} in {result.requeue_after:g}s" + (f" ({result.waiting})" if result.waiting else "")
        self.log(text, level="debug", **fields)


def add_lifecycle_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that runs controllers takes."""
    parser.add_argument("--store", metavar="PATH", help="cluster store (default $OLMKIT_STORE or .olmkit/cluster.db)")
    add_global_namespace_option(parser)
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
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="-v: every reconcile and every error with its traceback; -vv: also what each reconcile waits for",
    )
    parser.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text: a line per event (default); json: one JSON object per line",
    )


def options_from_args(args: argparse.Namespace, store: Store) -> LifecycleOptions:
    """Build the run's options from parsed arguments."""
    if args.install_timeout <= 0:
        raise UsageError("--install-timeout must be positive")
    return LifecycleOptions(
        global_namespace=args.global_namespace,
        install_timeout=args.install_timeout,
        embedded=store.embedded,
        simulate_kubelet=not args.no_simulated_kubelet,
        disk_cache=not args.no_cache,
    )


def _forbidden(exc: Forbidden) -> OlmkitError:
    """A refused list or watch of the controllers, with what they need (they follow kinds cluster-wide)."""
    return OlmkitError(
        f"{exc} (the controllers list and watch every kind they follow in every namespace: "
        "the credentials need list and watch on it at cluster scope)"
    )


def _reconcile(args: argparse.Namespace, pm: Any) -> int:
    from olmkit.cli.election import refuse_if_led

    store = store_from_args(args)
    reporter = ProgressReporter(quiet=args.quiet, verbose=args.verbose, log_format=args.log_format)
    with store:
        refuse_if_led(args, store)
        with build_manager(store, pm, options=options_from_args(args, store), reporter=reporter) as manager:
            try:
                outcome = manager.run_until_stable(timeout=args.timeout, wait=args.until_stable)
            except Forbidden as exc:
                raise _forbidden(exc) from None
        subscriptions = subscription_outcomes(store)
    elapsed = time.monotonic() - reporter.start
    if reporter.json:
        reporter.log(
            "stable" if outcome.stable else "not stable",
            level="info" if outcome.stable else "warning",
            reconciles=outcome.reconciles,
            seconds=round(elapsed, 3),
            pending=list(outcome.pending),
        )
        return 0 if outcome.stable else 1
    if outcome.stable:
        failed = [o for o in subscriptions if o.state == "failed"]
        # waiting for approval, or (after waiting for delayed work too) stuck on something else
        waiting = [o for o in subscriptions if o.state == "approval" or (args.until_stable and o.state == "pending")]
        if failed:  # settled, but not where anyone wanted: say so and exit 1
            print(
                f"stable after {outcome.reconciles} reconciles in {elapsed:.2f}s, but {len(failed)} of "
                f"{len(subscriptions)} subscription(s) failed:"
            )
            for o in failed:
                print(f"  subscription {o.ref}: {o.message.splitlines()[0] if o.message else 'failed'}")
            for o in waiting:
                print(f"  subscription {o.ref}: {o.message}")
            return 1
        print(f"stable after {outcome.reconciles} reconciles in {elapsed:.2f}s")
        for o in waiting:
            print(f"  subscription {o.ref}: {o.message}")
        return 0
    print(f"not stable after {elapsed:.2f}s ({outcome.reconciles} reconciles); still pending:")
    for line in outcome.pending:
        print(f"  {line}")
    return 1


class _Stop:
    """SIGTERM/SIGINT: the first asks the run to stop after the reconcile in progress, a second forces it."""

    def __init__(self, reporter: ProgressReporter) -> None:
        self.reporter = reporter
        self.requested: str | None = None
        self._said = False
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)

    def _handle(self, signum: int, frame: Any) -> None:
        # only a flag here: writing to the log from a signal handler could re-enter a write in progress
        if self.requested is not None:
            raise KeyboardInterrupt  # asked twice: stop now
        self.requested = signal.Signals(signum).name

    def __call__(self) -> bool:
        if self.requested is None:
            return False
        if not self._said:
            self._said = True
            name = self.requested
            self.reporter.log(f"{name}: stopping after the reconcile in progress", signal=name)
        return True


def _run(args: argparse.Namespace, pm: Any) -> int:
    from olmkit.cli.election import leader_election_from_args
    from olmkit.lifecycle.observe import start_observability_server

    election = leader_election_from_args(args)
    reporter = ProgressReporter(quiet=args.quiet, verbose=args.verbose, log_format=args.log_format)
    stop = _Stop(reporter)
    stop.install()
    server = None
    forced = False
    reconciles = 0
    try:
        with store_from_args(args) as store:
            options = options_from_args(args, store)
            server = start_observability_server(args.metrics_address, store=store, pm=pm)
            if server is not None:
                reporter.log(
                    f"serving metrics on {server.url}/metrics (health: /healthz, /readyz)", address=server.address
                )

            def should_stop() -> bool:
                if not stop():
                    return False
                if server is not None:
                    server.begin_shutdown()  # not ready any more: traffic may drain elsewhere
                return True

            def lead(stop_leading: Any) -> None:
                nonlocal reconciles
                manager = build_manager(store, pm, options=options, reporter=reporter)
                controllers = list(manager.controllers)
                reporter.log("controllers running (Ctrl-C to stop): " + ", ".join(controllers), controllers=controllers)
                ready = False

                def on_idle() -> None:
                    nonlocal ready
                    if not ready:
                        ready = True
                        if server is not None:
                            server.set_ready(True)
                        reporter.log("ready: every controller has synced", reconciles=manager.reconciles)

                try:
                    manager.run_forever(stop_leading, on_idle=on_idle)
                finally:
                    manager.close()
                    reconciles += manager.reconciles
                    if server is not None:
                        server.set_ready(False)

            try:
                if election is None:
                    lead(should_stop)
                else:
                    from olmkit.lifecycle.leader import LeaderElector

                    elector = LeaderElector(store, election, reporter.log)
                    if server is not None:
                        server.set_election(elector)
                    elector.run(lead, should_stop)
            except KeyboardInterrupt:
                forced = True
            except Forbidden as exc:
                raise _forbidden(exc) from None
    finally:
        if server is not None:
            server.stop()
        stop.restore()
    if forced:
        reporter.log(f"interrupted after {reconciles} reconciles", level="warning")
        return 130
    reporter.log(f"stopped after {reconciles} reconciles", reconciles=reconciles)
    return 0


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``reconcile`` and ``run``."""
    p = subparsers.add_parser(
        "reconcile",
        help="run the controllers until nothing changes",
        description="Run the controllers until nothing is left to do. Exit 0 when stable, 1 when work is still "
        "pending or when it is stable with a Subscription failed (ResolutionFailed, BundleUnpackFailed ...).",
    )
    add_lifecycle_options(p)
    add_kube_options(p)
    p.add_argument(
        "--until-stable",
        action="store_true",
        help="also wait for delayed work (Deployments becoming available, retries) until nothing is pending; "
        "a periodic catalog poll does not count",
    )
    p.add_argument(
        "--timeout", type=float, default=120.0, metavar="SECONDS", help="give up after this long (default 120)"
    )
    from olmkit.cli.election import add_reconcile_election_options

    add_reconcile_election_options(p)
    p.set_defaults(func=_reconcile)

    p = subparsers.add_parser(
        "run",
        help="run the controllers until interrupted (SIGTERM/SIGINT end it after the reconcile in progress)",
    )
    add_lifecycle_options(p)
    add_kube_options(p)
    p.add_argument(
        "--metrics-address",
        default=DEFAULT_ADDRESS,
        metavar="HOST:PORT",
        help=f"serve /metrics, /healthz and /readyz here (default {DEFAULT_ADDRESS}; port 0 picks a free port; "
        "0 turns the server off)",
    )
    from olmkit.cli.election import add_leader_election_options

    add_leader_election_options(p)
    p.set_defaults(func=_run)
