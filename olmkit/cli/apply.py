"""``olmkit apply -f``: validate every object of the manifests, then create or update each.

Validation and writing are :mod:`olmkit.lifecycle.apply`'s, shared with every other writer.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from olmkit.cli.options import (
    add_files_option,
    add_namespace_option,
    add_store_option,
    store_from_args,
)
from olmkit.cli.refs import resource_ref
from olmkit.errors import UsageError
from olmkit.lifecycle.apply import apply_object, load_manifest_files, prepare_manifests

if TYPE_CHECKING:
    from olmkit.manager import PluginManager

__all__ = ["add_commands", "run_apply"]


def run_apply(args: argparse.Namespace, pm: PluginManager) -> int:
    """Validate every object of every file, then create or update each."""
    if not args.files:
        raise UsageError("apply needs manifests: -f FILE (a file or a directory, repeatable)")
    manifests = load_manifest_files(args.files)
    with store_from_args(args) as store:
        prepared = prepare_manifests(store, pm.registry, manifests, namespace=args.namespace)
        suffix = " (dry run)" if args.dry_run else ""
        for item in prepared:
            action = apply_object(store, item.obj, dry_run=args.dry_run)
            print(f"{resource_ref(item.obj)}/{item.obj['metadata']['name']} {action}{suffix}")
    return 0


def add_commands(subparsers: Any) -> None:
    """Add ``apply``."""
    p = subparsers.add_parser("apply", help="create or update objects from manifest files")
    add_files_option(p, "to apply")
    add_namespace_option(p)
    p.add_argument("--dry-run", action="store_true", help="validate and report, write nothing")
    add_store_option(p)
    p.set_defaults(func=run_apply)
