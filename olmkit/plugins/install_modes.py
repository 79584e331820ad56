"""Built-in plugin: a CSV's ``installModes`` decide which OperatorGroups it can be a member of.

``OwnNamespace`` (the group targets the CSV's own namespace), ``SingleNamespace`` (one other
namespace), ``MultiNamespace`` (more than one) and ``AllNamespaces`` (``[""]``), checked as
upstream's ``InstallModeSet.Supports`` does, with its messages. A CSV that lists a mode twice
fails with ``InvalidInstallModes``. A CSV that declares no install modes at all is taken to
support every one (bundles written before install modes existed).

.. versionadded:: 0.2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from olmkit import hookimpl

__all__ = ["install_mode_problem"]

UNSUPPORTED: Final = "UnsupportedOperatorGroup"
INVALID: Final = "InvalidInstallModes"
_ALL: Final = ""


def _not_supported(mode: str, what: str) -> tuple[str, str]:
    return UNSUPPORTED, f"{mode} InstallModeType not supported, cannot configure to watch {what}"


def install_mode_problem(csv: Mapping[str, Any], targets: Sequence[str]) -> tuple[str, str] | None:
    """``(reason, message)`` when the CSV's install modes do not support ``targets``, else ``None``."""
    spec = csv.get("spec") or {}
    modes = spec.get("installModes") if isinstance(spec, Mapping) else None
    if not modes:
        return None
    supported: dict[str, bool] = {}
    for mode in modes:
        if not isinstance(mode, Mapping):
            continue
        kind = str(mode.get("type"))
        if kind in supported:
            return INVALID, f"InstallMode list contains duplicates, cannot make set: {modes}"
        supported[kind] = mode.get("supported") is True
    own = str(csv["metadata"]["namespace"])
    if not targets:
        return UNSUPPORTED, "operatorgroup has invalid selected namespaces, cannot configure to watch zero namespaces"
    if len(targets) == 1:
        target = targets[0]
        if target == own:
            return None if supported.get("OwnNamespace") else _not_supported("OwnNamespace", "own namespace")
        if target == _ALL:
            return None if supported.get("AllNamespaces") else _not_supported("AllNamespaces", "all namespaces")
        return None if supported.get("SingleNamespace") else _not_supported("SingleNamespace", "one namespace")
    if not supported.get("MultiNamespace"):
        return _not_supported("MultiNamespace", f"{len(targets)} namespaces")
    for target in targets:
        if target == own and not supported.get("OwnNamespace"):
            return _not_supported("OwnNamespace", "own namespace")
        if target == _ALL:
            return (
                UNSUPPORTED,
                "operatorgroup has invalid selected namespaces, NamespaceAll found when |selected namespaces| > 1",
            )
    return None


@hookimpl
def olmkit_csv_targets_problem(csv: Mapping[str, Any], targets: Sequence[str]) -> tuple[str, str] | None:
    """The install-mode check."""
    return install_mode_problem(csv, targets)
