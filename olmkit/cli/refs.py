"""How commands name and find objects: ``KIND/NAME``, kubectl's resource names, NotFound lines.

.. versionadded:: 0.2
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from olmkit.errors import UsageError
from olmkit.lifecycle.kinds import Kind, kind_of, resolve_kind
from olmkit.store import NotFound, Object, Store

__all__ = ["get_or_none", "kind_and_names", "not_found", "plural_ref", "resource_ref"]


def resource_ref(kind: Kind | Mapping[str, Any]) -> str:
    """How kubectl names a kind in its messages: ``subscription.operators.coreos.com``, ``configmap``."""
    k = kind if isinstance(kind, Kind) else kind_of(kind)
    return f"{k.kind.lower()}.{k.group}" if k.group else k.kind.lower()


def plural_ref(kind: Kind) -> str:
    """``subscriptions.operators.coreos.com``: how kubectl names a kind in NotFound messages."""
    return f"{kind.plural}.{kind.group}" if kind.group else kind.plural


def not_found(kind: Kind, name: str) -> None:
    """Print kubectl's NotFound line on stderr."""
    sys.stderr.write(f'Error from server (NotFound): {plural_ref(kind)} "{name}" not found\n')


def get_or_none(store: Store, kind: Kind, name: str, namespace: str | None) -> Object | None:
    """The stored object, or ``None``."""
    try:
        return store.get(kind.api_version, kind.kind, name, namespace)
    except NotFound:
        return None


def kind_and_names(store: Store, kind_arg: str, names: Sequence[str]) -> tuple[Kind, list[str]]:
    """``KIND NAME...`` or ``KIND/NAME``."""
    if "/" in kind_arg:
        if names:
            raise UsageError(f"there is no need to name a resource after {kind_arg!r}")
        kind_name, _, name = kind_arg.partition("/")
        return resolve_kind(kind_name, store), [name]
    return resolve_kind(kind_arg, store), list(names)
