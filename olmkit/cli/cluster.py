"""``olmkit cluster init``: install the CRDs of OLM's kinds and OLM's namespaces on a cluster.

What is installed, and how a second run changes nothing, is
:mod:`olmkit.lifecycle.clusterinit`'s; this module parses and prints.

.. versionadded:: 0.3
"""

from __future__ import annotations

import argparse
from typing import Any

from olmkit.cli.options import add_global_namespace_option, add_store_option, namespace_name, store_from_args
from olmkit.errors import UsageError
from olmkit.store import MemoryStore, Store

__all__ = ["add_commands", "run_init"]


def run_init(args: argparse.Namespace, pm: Any) -> int:
    """Install (or, with ``--dry-run``, show) the CRDs, namespaces and OperatorGroups OLM needs."""
    from olmkit.cli.output import dump_json, dump_yaml
    from olmkit.cli.refs import resource_ref
    from olmkit.lifecycle.clusterinit import InitStep, init_cluster, init_objects

    if args.global_namespace == args.operators_namespace:
        raise UsageError("--global-namespace and --operators-namespace must differ")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    objects = init_objects(args.global_namespace, args.operators_namespace)
    if args.output == "yaml":
        if not args.dry_run:
            raise UsageError("-o yaml prints what would be installed: use it with --dry-run")
        print("---\n".join(dump_yaml(obj) for obj in objects), end="")
        return 0
    if args.output == "json":
        if not args.dry_run:
            raise UsageError("-o json prints what would be installed: use it with --dry-run")
        print(dump_json({"apiVersion": "v1", "kind": "List", "items": objects}))
        return 0

    suffix = " (dry run)" if args.dry_run else ""

    def report(step: InitStep) -> None:
        print(f"{resource_ref(step.object)}/{step.object['metadata']['name']} {step.action}{suffix}", flush=True)

    with _open(args) as store:
        steps = init_cluster(store, objects, dry_run=args.dry_run, timeout=args.timeout, on_step=report)
    changed = sum(step.action != "unchanged" for step in steps)
    if not changed:
        print("nothing to do: the cluster already has everything OLM needs")
    return 0


def _open(args: argparse.Namespace) -> Store:
    """The store; a dry run creates none (where there is none, everything would be created)."""
    if not args.dry_run:
        return store_from_args(args)
    try:
        return store_from_args(args, existing=True)
    except UsageError:
        return MemoryStore()


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``cluster init``."""
    cluster = subparsers.add_parser("cluster", help="prepare a cluster for OLM (cluster init)")
    commands = cluster.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True)
    p = commands.add_parser(
        "init",
        help="install the CRDs of OLM's kinds, the olm and operators namespaces and their OperatorGroups",
        description="Install what OLM's controllers need on a cluster: the CustomResourceDefinitions of "
        "OLM's kinds (schemas generated from olmkit's model, upstream's short names and printer columns, "
        "the status subresource), the olm and operators namespaces and the OperatorGroups upstream's "
        "install makes. A second run changes nothing; a CRD that differs is updated.",
    )
    add_store_option(p)
    add_global_namespace_option(p)
    p.add_argument(
        "--operators-namespace",
        type=namespace_name,
        default="operators",
        metavar="NS",
        help="namespace for operators that watch every namespace (default operators)",
    )
    p.add_argument("--dry-run", action="store_true", help="write nothing: say what would change (-o: print it)")
    p.add_argument(
        "-o",
        "--output",
        choices=("text", "yaml", "json"),
        default="text",
        help="with --dry-run: yaml (a stream) or json (a List) of every object, for kubectl apply -f -",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for a new CRD to be served (default 60)",
    )
    p.set_defaults(func=run_init)
