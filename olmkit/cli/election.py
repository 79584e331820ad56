"""``olmkit run --leader-elect``: the options of leader election (client-go's flag names).

.. versionadded:: 0.3
"""

from __future__ import annotations

import argparse

from olmkit.cli.options import namespace_name, parse_duration
from olmkit.lifecycle.leader import DEFAULT_LEASE_NAME, LeaderElection

__all__ = ["add_leader_election_options", "leader_election_from_args"]


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
