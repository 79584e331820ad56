"""``olmkit delete``: by name, label selector, ``--all`` or the objects of manifest files.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from olmkit.cli.fields import obj_name, obj_namespace
from olmkit.cli.options import (
    EXIT_NOT_FOUND,
    add_files_option,
    add_namespace_option,
    add_store_option,
    namespace_arg,
    store_from_args,
)
from olmkit.cli.refs import kind_and_names, not_found, resource_ref
from olmkit.errors import InputError, UsageError
from olmkit.lifecycle.apply import load_manifest_files, object_label, shape_problems
from olmkit.lifecycle.kinds import (
    Kind,
    kind_of,
)
from olmkit.store import NotFound, Store

if TYPE_CHECKING:
    from olmkit.manager import PluginManager

__all__ = ["add_commands", "delete_object", "run_delete"]


def delete_object(store: Store, kind: Kind, name: str, namespace: str | None, *, ignore_not_found: bool) -> bool:
    """Delete one object and say so; ``False`` when it was not there (and that was not ignored)."""
    try:
        store.delete(kind.api_version, kind.kind, name, namespace)
    except NotFound:
        if ignore_not_found:
            return True
        not_found(kind, name)
        return False
    print(f'{resource_ref(kind)} "{name}" deleted')
    return True


def run_delete(args: argparse.Namespace, pm: PluginManager) -> int:
    """Delete objects by name, by selector, every one of a kind, or those of manifest files."""
    ok = True
    with store_from_args(args, existing=True) as store:
        if args.files:
            if args.kind or args.names:
                raise UsageError("delete takes either -f FILE or KIND NAME, not both")
            for _path, obj in load_manifest_files(args.files):
                problems = shape_problems(obj)
                if problems:
                    raise InputError("; ".join(problems), path=_path, obj=object_label(obj))
                kind = kind_of(obj)
                ns = obj_namespace(obj) or namespace_arg(args)
                ok &= delete_object(store, kind, obj_name(obj), ns, ignore_not_found=args.ignore_not_found)
            return 0 if ok else EXIT_NOT_FOUND
        if not args.kind:
            raise UsageError("delete needs KIND NAME, KIND -l SELECTOR, KIND --all or -f FILE")
        kind, names = kind_and_names(store, args.kind, args.names)
        namespace = namespace_arg(args)
        if names:
            if args.selector or args.all:
                raise UsageError("name resources, or select them with -l or --all, not both")
            targets = names
        elif args.selector or args.all:
            targets = [obj_name(o) for o in store.list(kind.api_version, kind.kind, namespace, args.selector)]
            if not targets:
                sys.stderr.write("No resources found\n")
        else:
            raise UsageError(f"delete {args.kind} needs a name (or -l SELECTOR, or --all)")
        for name in targets:
            ok &= delete_object(store, kind, name, namespace, ignore_not_found=args.ignore_not_found)
    return 0 if ok else EXIT_NOT_FOUND


def add_commands(subparsers: Any) -> None:
    """Add ``delete``."""
    p = subparsers.add_parser("delete", help="delete objects by name, selector or manifest file")
    p.add_argument("kind", metavar="KIND", nargs="?")
    p.add_argument("names", nargs="*", metavar="NAME")
    add_files_option(p, "whose objects to delete")
    add_namespace_option(p)
    p.add_argument("-l", "--selector", default=None, help="delete the objects of KIND this label selector matches")
    p.add_argument("--all", action="store_true", help="delete every object of KIND in the namespace")
    p.add_argument("--ignore-not-found", action="store_true", help="a missing object is not an error")
    add_store_option(p)
    p.set_defaults(func=run_delete)
