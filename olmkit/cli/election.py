"""``olmkit run --leader-elect``: the options of leader election (client-go's flag names).

.. versionadded:: 0.3
"""

from __future__ import annotations

import argparse
import time

from olmkit.cli.options import namespace_name, parse_duration
from olmkit.errors import OlmkitError
from olmkit.lifecycle.leader import DEFAULT_LEASE_NAME, LeaderElection, live_leader
from olmkit.store import Store, StoreError

__all__ = [
    "add_leader_election_options",
    "add_reconcile_election_options",
    "leader_election_from_args",
    "refuse_if_led",
]


def add_leader_election_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--leader-elect`` and its timings, Lease name and namespace."""
    group = parser.add_argument_group(
        "leader election",
        "with --leader-elect, of several `olmkit run` on one store only the holder of a "
        "coordination.k8s.io Lease runs the controllers; the others stand by and take over "
        "within the lease duration when it dies",
    )
    group.add_argument("--leader-elect", action="store_true", help="run the controllers only while leading")
    for flag, default, what in (
        ("lease-duration", "15s", "how long standbys wait after the leader's last renewal before taking over"),
        ("renew-deadline", "10s", "how long the leader retries renewing before it stops leading"),
        ("retry-period", "2s", "how often standbys try to take the lease and the leader renews it"),
    ):
        group.add_argument(
            f"--leader-elect-{flag}",
            type=parse_duration,
            default=parse_duration(default),
            metavar="DURATION",
            help=f"{what} (default {default})",
        )
    _add_lease_options(group)


def _add_lease_options(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--leader-elect-resource-name",
        default=DEFAULT_LEASE_NAME,
        metavar="NAME",
        help=f"the Lease's name (default {DEFAULT_LEASE_NAME})",
    )
    group.add_argument(
        "--leader-elect-resource-namespace",
        type=namespace_name,
        default=None,
        metavar="NS",
        help="the Lease's namespace (default: the global namespace, olm)",
    )


def add_reconcile_election_options(parser: argparse.ArgumentParser) -> None:
    """``reconcile``'s part: the Lease of the ``run`` processes it defers to, and ``--force``.

    .. versionadded:: 0.4
    """
    group = parser.add_argument_group(
        "leader election",
        "while an `olmkit run --leader-elect` leads on the store (holds its Lease, renewed within the lease "
        "duration), reconcile refuses to run beside it (exit 3)",
    )
    group.add_argument("--force", action="store_true", help="reconcile even while an `olmkit run --leader-elect` leads")
    _add_lease_options(group)


def refuse_if_led(args: argparse.Namespace, store: Store) -> None:
    """Raise :class:`~olmkit.lifecycle.leader.LeaderActive` when a leader holds the Lease (unless ``--force``).

    Raises:
        LeaderActive: another process leads (exit code 3).
        OlmkitError: the Lease cannot be read (exit code 1).
    """
    if args.force:
        return
    namespace = args.leader_elect_resource_namespace or args.global_namespace
    name = args.leader_elect_resource_name
    try:
        leader = live_leader(store, namespace, name, time.time())
    except StoreError as exc:
        if exc.code == 503:  # the server cannot be reached at all: its own error says so best
            raise
        raise OlmkitError(
            f"cannot tell whether an `olmkit run --leader-elect` leads: reading lease {namespace}/{name} failed: "
            f"{exc}; pass --force to reconcile without looking",
            exit_code=1,
        ) from None
    if leader is not None:
        leader.message = (
            "Reconciling beside it would do its work twice: stop it (it releases the Lease at once), "
            "or pass --force to reconcile anyway"
        )
        raise leader


def leader_election_from_args(args: argparse.Namespace) -> LeaderElection | None:
    """The election ``--leader-elect`` asks for, or ``None``.

    Raises:
        UsageError: timings that do not fit (``lease > renew deadline > 1.2 x retry period``).
    """
    if not args.leader_elect:
        return None
    return LeaderElection(
        namespace=args.leader_elect_resource_namespace or args.global_namespace,
        name=args.leader_elect_resource_name,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
    )
