"""Options the cluster commands share: ``--store``, ``-n``/``-A`` and namespace names.

.. versionadded:: 0.2
"""

from __future__ import annotations

import argparse
import os
import re
from typing import TYPE_CHECKING, Any, Final

from olmkit.errors import UsageError
from olmkit.store import KUBE, MEMORY, STORE_ENV, default_store_path, open_store
from olmkit.store.names import DEFAULT_NAMESPACE, is_namespace_name

if TYPE_CHECKING:
    from olmkit.store import Store

__all__ = [
    "DEFAULT_NAMESPACE",
    "EXIT_NOT_FOUND",
    "GLOBAL_NAMESPACE",
    "add_files_option",
    "add_global_namespace_option",
    "add_kube_options",
    "add_namespace_option",
    "add_store_option",
    "add_target_options",
    "namespace_arg",
    "namespace_name",
    "new_operator_group",
    "parse_duration",
    "store_from_args",
    "target_namespaces",
]

_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|[smhdw]?)\s*$")
_SECONDS: Final = {"ms": 0.001, "": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> float:
    """``30s``, ``5m``, ``12h``, ``2w``, ``500ms`` or plain seconds (``90``) -> seconds.

    Raises:
        argparse.ArgumentTypeError: not a duration.
    """
    match = _DURATION.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 30s, 5m, 12h)")
    return float(match.group(1)) * _SECONDS[match.group(2)]


#: Exit code when an object asked for by name is not in the store.
EXIT_NOT_FOUND: Final = 1
#: The global catalog namespace: CatalogSources there are visible from every namespace.
GLOBAL_NAMESPACE: Final = "olm"


def namespace_name(text: str) -> str:
    """``-n``'s value, checked as Kubernetes checks namespace names.

    Raises:
        argparse.ArgumentTypeError: not a DNS-1123 label.
    """
    if not is_namespace_name(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a valid namespace name: at most 63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return text


def add_global_namespace_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--global-namespace NS``: where the CatalogSources every namespace sees live."""
    parser.add_argument(
        "--global-namespace",
        type=namespace_name,
        default=GLOBAL_NAMESPACE,
        help=f"global catalog namespace (default {GLOBAL_NAMESPACE})",
    )


def add_store_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--store PATH`` and ``--kubeconfig``/``--context`` to a command (read back with
    :func:`store_from_args`)."""
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help=f"cluster store: an SQLite file, :memory:, or {KUBE}[:CONTEXT] for the cluster of a kubeconfig "
        f"(default ${STORE_ENV}, else {default_store_path(env={})})",
    )
    add_kube_options(parser)


def add_kube_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--kubeconfig PATH`` and ``--context NAME``: work on a Kubernetes API server."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        default=None,
        help="work on the cluster of this kubeconfig (as kubectl: default $KUBECONFIG, else ~/.kube/config, "
        f"when --context or {STORE_ENV}={KUBE}[:CONTEXT] asks for a cluster)",
    )
    parser.add_argument(
        "--context", metavar="NAME", default=None, help="the kubeconfig context (default: its current-context)"
    )


def store_from_args(args: argparse.Namespace, *, existing: bool = False) -> Store:
    """Open the store the options name.

    ``--kubeconfig``/``--context`` (or ``--store``/``$OLMKIT_STORE`` set to ``kube`` or
    ``kube:CONTEXT``) open the store on that cluster's API server; else ``--store`` names
    the file (``$OLMKIT_STORE``, else ``.olmkit/cluster.db``).

    Args:
        args: the parsed arguments.
        existing: the command only reads (``get``, ``describe``, ``list`` ...): a store file
            that does not exist is an error instead of being created (with its directories).

    Raises:
        StoreError: the file cannot be opened as a store.
        UsageError: ``existing`` and there is no store at the path (exit code 1); ``--store``
            names a file and ``--kubeconfig``/``--context`` a cluster; the kubeconfig cannot be used.
    """
    given = getattr(args, "store", None)
    kubeconfig = getattr(args, "kubeconfig", None)
    context = getattr(args, "context", None)
    where = default_store_path(given)
    name, sep, named_context = where.partition(":")
    on_cluster = name == KUBE
    if (kubeconfig or context) and given and not on_cluster:
        raise UsageError(f"--store {given} is a file and --kubeconfig/--context a cluster: give one of them")
    if kubeconfig or context or on_cluster:
        from olmkit.kube import connect

        return connect(kubeconfig, context or (named_context if on_cluster and sep else None))
    if existing:
        where = default_store_path(given)
        if where != MEMORY and not os.path.exists(where):
            how = "--store PATH" if given else f"--store PATH or ${STORE_ENV}"
            raise UsageError(
                f"no store at {where}: nothing has been applied or installed there (give {how})", exit_code=1
            )
    return open_store(given)


def add_namespace_option(parser: argparse.ArgumentParser, *, all_namespaces: bool = False) -> None:
    """Add ``-n NAMESPACE`` (and ``-A``) to a command (read back with :func:`namespace_arg`)."""
    parser.add_argument(
        "-n", "--namespace", type=namespace_name, default=None, help=f"namespace (default {DEFAULT_NAMESPACE})"
    )
    if all_namespaces:
        parser.add_argument("-A", "--all-namespaces", action="store_true", help="every namespace")


def namespace_arg(args: argparse.Namespace) -> str:
    """The namespace ``-n`` names, else ``default``."""
    return str(getattr(args, "namespace", None) or DEFAULT_NAMESPACE)


def add_files_option(p: argparse.ArgumentParser, what: str) -> None:
    """Add ``-f FILE`` (repeatable; a file, a directory or ``-``) to a command, into ``args.files``."""
    p.add_argument(
        "-f",
        "--filename",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help=f"manifest file or directory (YAML or JSON; - for standard input) {what}; repeatable",
    )


def add_target_options(p: argparse.ArgumentParser) -> None:
    """Add ``--watch NS[,NS]`` and ``--watch-all``: the targets of an OperatorGroup a command makes."""
    p.add_argument(
        "--watch",
        action="append",
        default=None,
        metavar="NS[,NS]",
        help="target namespaces of a new OperatorGroup (default: the install namespace)",
    )
    p.add_argument("--watch-all", action="store_true", help="a new OperatorGroup targets every namespace")


def target_namespaces(args: argparse.Namespace, namespace: str) -> list[str]:
    """The namespaces ``--watch`` names (default ``namespace``); ``[]`` for ``--watch-all`` (every one)."""
    if args.watch_all:
        return []
    return [t for w in args.watch or [namespace] for t in w.split(",") if t]


def new_operator_group(args: argparse.Namespace, namespace: str) -> dict[str, Any]:
    """The OperatorGroup a command makes in a namespace that has none: named after it, targeting ``--watch``."""
    from olmkit.lifecycle.kinds import OPERATOR_GROUP

    targets = target_namespaces(args, namespace)
    return {
        "apiVersion": OPERATOR_GROUP.api_version,
        "kind": OPERATOR_GROUP.kind,
        "metadata": {"name": namespace, "namespace": namespace},
        "spec": {"targetNamespaces": targets} if targets else {},
    }
