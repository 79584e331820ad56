"""``olmkit wait``, and waiting for Subscriptions (``install --wait``, ``run-bundle``, ``reconcile``).

``olmkit wait KIND[/NAME] [NAME...] --for=condition=TYPE[=VALUE] | --for=jsonpath={PATH}[=VALUE]
| --for=create | --for=delete [--timeout 30s]`` waits as ``kubectl wait`` does: it watches the store (the
controllers run elsewhere: ``olmkit run``, or a cluster) and prints ``KIND/NAME condition met``
for each object, or exits 1 with ``timed out waiting for the condition on ...``.

:func:`settle_subscription` runs the controllers in this process until a Subscription is
installed, failed or waits for approval, or the time is up (while an ``olmkit run
--leader-elect`` leads, it leaves the work to that one and watches); :func:`report_outcome`
prints that and returns the exit code (0 installed, 1 otherwise).

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from olmkit.cli.fields import obj_name
from olmkit.cli.options import (
    add_namespace_option,
    add_store_option,
    namespace_arg,
    parse_duration,
    store_from_args,
)
from olmkit.cli.refs import get_or_none, kind_and_names, plural_ref, resource_ref
from olmkit.errors import UsageError

if TYPE_CHECKING:
    from olmkit.lifecycle.kinds import Kind
    from olmkit.lifecycle.leader import LeaderActive
    from olmkit.lifecycle.outcome import SubscriptionOutcome
    from olmkit.store import Object, Store

__all__ = ["add_commands", "parse_condition", "report_outcome", "run_wait", "settle_subscription"]

#: how often ``wait`` reads the store again
POLL_SECONDS: Final = 0.2
#: reconciles between two looks at the Subscription (and the clock) while settling
SETTLE_BATCH: Final = 10
#: how often the Subscription and the election Lease are read while a leading ``olmkit run`` installs
#: (a few requests each time on a cluster's API server, which is shared)
LEADER_POLL_SECONDS: Final = 1.0

Check = Callable[["Object | None"], bool]


def parse_condition(text: str) -> tuple[str, Check]:
    """``--for``'s value: a description and the check an object (``None``: deleted) must pass.

    Raises:
        UsageError: not ``condition=TYPE[=VALUE]``, ``jsonpath={PATH}[=VALUE]``, ``create`` or ``delete``.
    """
    if text == "delete":
        return "delete", lambda obj: obj is None
    if text == "create":
        return "create", lambda obj: obj is not None
    kind, eq, rest = text.partition("=")
    if kind == "condition" and eq and rest:
        ctype, _, value = rest.partition("=")
        wanted = (value or "True").lower()

        def has_condition(obj: Object | None) -> bool:
            conditions = ((obj or {}).get("status") or {}).get("conditions") or ()
            return any(
                c.get("type") == ctype and str(c.get("status", "")).lower() == wanted
                for c in conditions
                if isinstance(c, Mapping)
            )

        return f"condition={ctype}={value or 'True'}", has_condition
    if kind == "jsonpath" and eq and rest:
        from olmkit.cli.jsonpath import JSONPath, format_value

        close = rest.rfind("}")
        if rest.startswith("{") and close > 0:
            path, tail = rest[: close + 1], rest[close + 1 :]
        else:
            path, _, tail = rest.partition("=")
            tail = "=" + tail if _ else ""
            path = "{" + path + "}"
        if tail and not tail.startswith("="):
            raise UsageError(f"--for={text}: expected jsonpath={{PATH}}=VALUE")
        template = JSONPath(path)
        expected = tail[1:] if tail else None

        def matches(obj: Object | None) -> bool:
            if obj is None:
                return False
            found = template.values(obj)
            if expected is None:
                return bool(found)
            return any(format_value(v) == expected for v in found)

        return f"jsonpath={path}" + (f"={expected}" if expected is not None else ""), matches
    raise UsageError(f"--for={text}: expected condition=TYPE[=VALUE], jsonpath={{PATH}}[=VALUE], create or delete")


def _targets(store: Store, args: argparse.Namespace, kind: Kind, names: Sequence[str]) -> list[str]:
    if names:
        return list(names)
    if not (args.all or args.selector):
        raise UsageError("wait needs objects: NAME..., KIND/NAME, --all or -l SELECTOR")
    listed = store.list(kind.api_version, kind.kind, namespace_arg(args), label_selector=args.selector)
    return [obj_name(obj) for obj in listed]


def run_wait(args: argparse.Namespace, pm: Any) -> int:
    """Wait until every named object passes ``--for``, or ``--timeout`` passes (exit 1)."""
    if not args.condition:
        raise UsageError("wait needs --for=condition=TYPE[=VALUE], --for=jsonpath={PATH}[=VALUE] or --for=delete")
    description, check = parse_condition(args.condition)
    namespace = namespace_arg(args)
    deadline = time.monotonic() + args.timeout
    with store_from_args(args, existing=True) as store:
        kind, names = kind_and_names(store, args.kind, args.names)
        targets = _targets(store, args, kind, names)
        if not targets:
            sys.stderr.write(f"No resources found in {namespace} namespace.\n")
            return 1
        waiting = list(targets)
        while True:
            for name in list(waiting):
                obj = get_or_none(store, kind, name, namespace)
                if obj is None and description != "delete":
                    continue  # not there (yet): kubectl waits for it too
                if check(obj):
                    print(f"{resource_ref(kind)}/{name} condition met")
                    sys.stdout.flush()
                    waiting.remove(name)
            if not waiting:
                return 0
            if time.monotonic() >= deadline:
                for name in waiting:
                    sys.stderr.write(f"error: timed out waiting for the condition on {plural_ref(kind)}/{name}\n")
                return 1
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))


def settle_subscription(
    store: Store, pm: Any, namespace: str, name: str, timeout: float, *, global_namespace: str = "olm"
) -> SubscriptionOutcome:
    """Run the controllers here until the Subscription is installed, failed or waits for approval.

    While an ``olmkit run --leader-elect`` leads on the store (its Lease ``olmkit-run`` in
    ``global_namespace`` is live), the controllers are left to it: this only watches the
    Subscription, and runs them here once nobody leads any more.

    Returns its :class:`~olmkit.lifecycle.outcome.SubscriptionOutcome`; still ``pending`` when
    ``timeout`` seconds passed first.

    .. versionchanged:: 0.4
       defers to a leading ``olmkit run``.
    """
    from olmkit.lifecycle import LifecycleOptions, build_manager
    from olmkit.lifecycle.kinds import SUBSCRIPTION
    from olmkit.lifecycle.leader import DEFAULT_LEASE_NAME, live_leader
    from olmkit.lifecycle.outcome import subscription_outcome
    from olmkit.store import StoreError

    def outcome_now() -> SubscriptionOutcome:
        return subscription_outcome(store, store.get(SUBSCRIPTION.api_version, SUBSCRIPTION.kind, name, namespace))

    def leader() -> LeaderActive | None:
        try:
            return live_leader(store, global_namespace, DEFAULT_LEASE_NAME, time.time())
        except StoreError:
            return None  # cannot tell: run the controllers here, as before leaders existed

    deadline = time.monotonic() + timeout
    said = False
    while (leading := leader()) is not None:
        if not said:
            said = True
            print(
                f"waiting for the leading `olmkit run` to install it (lease {leading.lease} held by {leading.holder})"
            )
            sys.stdout.flush()
        current = outcome_now()
        if current.state != "pending" or time.monotonic() >= deadline:
            return current
        time.sleep(min(LEADER_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
    with build_manager(store, pm, options=LifecycleOptions(embedded=store.embedded)) as manager:
        while True:
            remaining = deadline - time.monotonic()
            # in small batches, so that the deadline holds even while work is ready all the time
            outcome = manager.run_until_stable(timeout=max(0.0, min(remaining, 5.0)), max_reconciles=SETTLE_BATCH)
            current = outcome_now()
            if current.state != "pending" or time.monotonic() >= deadline:
                return current
            if outcome.stable:  # nothing left to do here: someone else (a cluster) must act
                time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))


def report_outcome(outcome: SubscriptionOutcome, *, timeout: float) -> int:
    """Print where the Subscription stands; 0 when installed, else 1 (the reason on stderr)."""
    from olmkit.lifecycle.kinds import SUBSCRIPTION

    ref = f"{resource_ref(SUBSCRIPTION)}/{outcome.name}"
    if outcome.state == "installed":
        print(f"{ref} installed: {outcome.message}")
        return 0
    if outcome.state == "pending":
        sys.stderr.write(f"olmkit: error: {ref} not installed after {timeout:g}s: {outcome.message}\n")
    elif outcome.state == "approval":
        sys.stderr.write(f"olmkit: error: {ref} not installed: {outcome.message}\n")
    else:
        first = outcome.message.splitlines()[0] if outcome.message else "failed"
        sys.stderr.write(
            f"olmkit: error: {ref} failed: {first}"
            + (
                f" (olmkit describe sub/{outcome.name} -n {outcome.namespace} for the rest)\n"
                if "\n" in outcome.message
                else "\n"
            )
        )
    return 1


def add_commands(subparsers: Any) -> None:
    """Add ``wait``."""
    p = subparsers.add_parser(
        "wait",
        help="wait until objects meet a condition (kubectl wait)",
        description="Wait until every object meets --for; the controllers run elsewhere (olmkit run). "
        "Exit 0 when all do, 1 on timeout.",
    )
    p.add_argument("kind", metavar="KIND", help="kind, plural or short name; KIND/NAME")
    p.add_argument("names", nargs="*", metavar="NAME")
    p.add_argument(
        "--for",
        dest="condition",
        metavar="CONDITION",
        help="condition=TYPE[=VALUE] (VALUE default True), jsonpath={PATH}[=VALUE], create or delete",
    )
    p.add_argument(
        "--timeout",
        type=parse_duration,
        default=30.0,
        metavar="DURATION",
        help="give up after this (30s, 5m; default 30s)",
    )
    p.add_argument("--all", action="store_true", help="every object of the kind in the namespace")
    p.add_argument("-l", "--selector", default=None, help="objects with these labels")
    add_namespace_option(p)
    add_store_option(p)
    p.set_defaults(func=run_wait)
