"""``olmkit cluster init``: install on a cluster what OLM's controllers need.

:func:`init_objects` lists what upstream OLM's install creates besides its own Deployments:
the ``olm`` namespace (the global catalog namespace) and the ``operators`` namespace, with
upstream's pod-security labels; the CustomResourceDefinitions of OLM's kinds
(:mod:`olmkit.lifecycle.olmcrds`); and the OperatorGroups ``global-operators`` (in
``operators``, targeting every namespace) and ``olm-operators`` (in ``olm``, targeting it).

:func:`init_cluster` writes them through the :class:`~olmkit.store.Store` interface, so it
works on every backend (the embedded store, or a cluster's API server). It is idempotent:
an object that already says everything the generated one says is left alone (``unchanged``;
fields the API server fills in, such as a CRD's ``conversion``, do not count as a
difference); a CRD or Namespace that differs is updated (its spec replaced, labels merged);
an OperatorGroup that exists is kept as it is, since people change them.

.. versionadded:: 0.3
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from olmkit.lifecycle.kinds import CRD, NAMESPACE, OPERATOR_GROUP
from olmkit.lifecycle.olmcrds import olm_crds
from olmkit.store import NotFound, Object, Store, retry_on_conflict

__all__ = ["OPERATORS_NAMESPACE", "InitStep", "covers", "init_cluster", "init_objects"]

#: The namespace upstream's install makes for operators that watch every namespace.
OPERATORS_NAMESPACE: Final = "operators"

Action = Literal["created", "configured", "unchanged"]


def init_objects(global_namespace: str = "olm", operators_namespace: str = OPERATORS_NAMESPACE) -> list[Object]:
    """What ``cluster init`` installs, in the order it installs it (namespaces, CRDs, OperatorGroups)."""

    def namespace(name: str, enforce: str) -> Object:
        labels = {"pod-security.kubernetes.io/enforce": enforce, "pod-security.kubernetes.io/enforce-version": "latest"}
        return {
            "apiVersion": NAMESPACE.api_version,
            "kind": NAMESPACE.kind,
            "metadata": {"name": name, "labels": labels},
        }

    def group(name: str, ns: str, spec: Mapping[str, Any]) -> Object:
        return {
            "apiVersion": OPERATOR_GROUP.api_version,
            "kind": OPERATOR_GROUP.kind,
            "metadata": {"name": name, "namespace": ns},
            "spec": dict(spec),
        }

    return [
        namespace(global_namespace, "restricted"),
        namespace(operators_namespace, "baseline"),
        *olm_crds(),
        group("global-operators", operators_namespace, {}),
        group("olm-operators", global_namespace, {"targetNamespaces": [global_namespace]}),
    ]


def covers(actual: Any, wanted: Any) -> bool:
    """Whether ``actual`` says everything ``wanted`` says (mappings may hold more keys; lists match item by item)."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and covers(actual[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(actual, list) and len(actual) == len(wanted) and all(map(covers, actual, wanted))
    return bool(actual == wanted and type(actual) is type(wanted))


@attrs.frozen
class InitStep:
    """What ``cluster init`` did (or, in a dry run, would do) with one object."""

    object: Object
    action: Action


def _current(store: Store, obj: Mapping[str, Any]) -> Object | None:
    meta = obj["metadata"]
    try:
        return store.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    except NotFound:
        return None


def _up_to_date(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    labels = (current.get("metadata") or {}).get("labels") or {}
    if not covers(labels, wanted["metadata"].get("labels") or {}):
        return False
    return "spec" not in wanted or covers(current.get("spec"), wanted["spec"])


def _desired_update(current: Object, wanted: Mapping[str, Any]) -> Object:
    """``current`` with ``wanted``'s spec and labels (its resourceVersion kept: a precondition)."""
    updated = dict(current)
    meta = updated["metadata"] = dict(current["metadata"])
    labels = wanted["metadata"].get("labels")
    if labels:
        meta["labels"] = {**(meta.get("labels") or {}), **labels}
    if "spec" in wanted:
        updated["spec"] = wanted["spec"]
    return updated


def init_cluster(
    store: Store,
    objects: Sequence[Mapping[str, Any]],
    *,
    dry_run: bool = False,
    timeout: float = 60.0,
    on_step: Callable[[InitStep], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[InitStep]:
    """Create or update ``objects`` (from :func:`init_objects`) in ``store``.

    A custom resource whose CRD was just created may not be served at once (a cluster's API
    server takes a moment to establish a CRD): its create is retried until ``timeout``.

    Args:
        store: the cluster store.
        objects: what to install, in order.
        dry_run: only read: say what would be done.
        timeout: seconds to wait for a new kind to be served.
        on_step: called after each object (to report progress).
        sleep: the pause between retries (tests pass a fake).

    Raises:
        StoreError: a write failed (a kind still not served at ``timeout`` is ``NotFound``).
    """
    steps: list[InitStep] = []
    new_kinds = False
    for obj in objects:
        current = _current(store, obj)
        if current is None:
            action: Action = "created"
            if not dry_run:
                _create(store, obj, patient=new_kinds, timeout=timeout, sleep=sleep)
                new_kinds = new_kinds or obj["kind"] == CRD.kind
        elif obj["kind"] == OPERATOR_GROUP.kind or _up_to_date(current, obj):
            action = "unchanged"
        else:
            action = "configured"
            if not dry_run:
                _update(store, obj)
        step = InitStep(dict(obj), action)
        steps.append(step)
        if on_step is not None:
            on_step(step)
    return steps


def _create(
    store: Store, obj: Mapping[str, Any], *, patient: bool, timeout: float, sleep: Callable[[float], None]
) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.1
    while True:
        try:
            store.create(obj)
            return
        except NotFound:
            # on create: the kind is not served (yet); only worth waiting for after a new CRD
            if not patient or time.monotonic() + delay > deadline:
                raise
        sleep(delay)
        delay = min(delay * 2, 2.0)


def _update(store: Store, wanted: Mapping[str, Any]) -> None:
    def attempt() -> None:
        current = _current(store, wanted)
        if current is None:
            store.create(wanted)
        else:
            store.update(_desired_update(current, wanted))

    retry_on_conflict(attempt)
