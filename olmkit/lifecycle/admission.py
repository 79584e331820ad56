"""Admission: the registered checks an object must pass before it is written to the store.

Plugins register :class:`~olmkit.types.AdmissionCheck` records through
``olmkit_admission_checks``; :func:`admit` runs the ones whose ``kinds`` match an object
and collects their messages. An empty answer admits the object. The kernel gives the
checks no meaning: the built-in ones (what a Subscription or a CatalogSource must look
like) live in :mod:`olmkit.plugins.admission`.

A check's ``kinds`` names kinds bare (``"ConfigMap"``: that kind in any API group) or
qualified with the group (``"Subscription.operators.coreos.com"``: only that group, so a
check never judges another project's kind of the same name); empty means every kind.

Checks run wherever objects enter the cluster: on every write people make through
:mod:`olmkit.lifecycle.apply` (``olmkit apply``, ``install``), and when an InstallPlan is
planned, on each object of each step (the CSV, its CRDs, the bundle's other objects and what
the install strategy will create), with ``bundle`` and ``bundle_image`` set in the context.
A refusal there fails the InstallPlan (``InstallCheckFailed``, the checks' messages) and its
Subscriptions report ``InstallPlanFailed``; see :class:`AdmissionRefused`.

Example:
    problems = admit(pm.registry, manifest)
    if problems:
        raise InputError("; ".join(problems), obj=f"{manifest['kind']}/{manifest['metadata']['name']}")

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from olmkit.errors import OlmkitError, PluginError

if TYPE_CHECKING:
    from olmkit.registry import Registry
    from olmkit.store import Store
    from olmkit.types import AdmissionCheck

__all__ = ["AdmissionContext", "AdmissionRefused", "admit", "applies_to"]

#: The registry's name for the extension point (the key of ``Registry.owners``).
_POINT = "admission check"


@attrs.frozen
class AdmissionContext:
    """What a check gets besides the object.

    Args:
        registry: the plugin registry (registered source types, install strategies ...).
        store: the store the object is about to be written to, when there is one.
        old: the stored object this write replaces (``None`` for a new object).
        bundle: when the object is one an InstallPlan is about to install, the bundle it
            comes from (``None`` for objects people write themselves).
        bundle_image: that bundle's image, when the catalog names one.

    .. versionchanged:: 0.2
        ``bundle`` and ``bundle_image``: checks also judge the objects of every InstallPlan
        when it is planned.
    """

    registry: Registry
    store: Store | None = None
    old: Mapping[str, Any] | None = None
    bundle: str | None = None
    bundle_image: str | None = None


@attrs.define(auto_exc=True, eq=False)
class AdmissionRefused(OlmkitError):
    """Admission checks refused objects an InstallPlan was about to install.

    Args:
        message: every refusal, ``Kind/name: message``, joined with ``; ``.
        bundle: the bundle whose objects were refused.

    .. versionadded:: 0.2
    """

    bundle: str = attrs.field(default="", kw_only=True)


def applies_to(check: AdmissionCheck, obj: Mapping[str, Any]) -> bool:
    """Whether ``check`` judges ``obj`` (see the module docstring for how ``kinds`` match)."""
    if not check.kinds:
        return True
    kind = str(obj.get("kind") or "")
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return kind in check.kinds or f"{kind}.{group}" in check.kinds


def _label(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return f"{obj.get('kind') or '?'}/{name or '?'}"


def admit(
    registry: Registry,
    obj: Mapping[str, Any],
    *,
    store: Store | None = None,
    old: Mapping[str, Any] | None = None,
    bundle: str | None = None,
    bundle_image: str | None = None,
) -> list[str]:
    """Run every registered admission check that applies to ``obj``; return their messages.

    Checks run in registration order; an empty list admits the object.

    Args:
        registry: the registry holding the checks.
        obj: the object about to be written.
        store: passed on to the checks in the :class:`AdmissionContext`.
        old: the stored object being replaced, if any.
        bundle: the bundle an InstallPlan installs ``obj`` for, if it does.
        bundle_image: that bundle's image.

    Returns:
        One message per reason to refuse ``obj``, in check order.

    Raises:
        PluginError: a check raised (a bug in its plugin); the error names the plugin and the check.
    """
    context = AdmissionContext(registry, store, old, bundle, bundle_image)
    messages: list[str] = []
    for name, check in registry.admission_checks.items():
        if not applies_to(check, obj):
            continue
        try:
            found = [str(m) for m in check.check(obj, context) or ()]
        except Exception as exc:  # a plugin's own bug: name the plugin, never a traceback
            plugin = registry.owners.get((_POINT, name), "?")
            raise PluginError(f"admission check {name!r} failed on {_label(obj)}: {exc!r}", plugin=plugin) from exc
        messages.extend(found)
    return messages
