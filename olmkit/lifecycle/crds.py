"""CustomResourceDefinitions: their versions and schemas, and the rules for upgrading one.

Pure functions over plain CRD dicts (``apiextensions.k8s.io/v1`` and the legacy ``v1beta1``);
nothing here reads or writes the store. The InstallPlan controller asks
:func:`plan_crd_upgrade` whether a CRD from a bundle may replace the one in the cluster, and
writes :attr:`CRDUpgrade.merged` when it may.

The rules, and where they come from (OpenShift "Understanding Operators" 4.10 §2.4.4.6 "CRD
upgrades", OLM 4.3 §2.2.2 "Custom Resource Definition (CRD) upgrades" with "Adding a new CRD
version" and "Deprecating or removing a CRD version", and upstream OLM's catalog operator,
``pkg/controller/operators/catalog/step.go`` ``NewCRDV1Step`` / ``NewCRDV1Beta1Step`` and
``operator.go`` ``validateV1CRDCompatibility`` / ``validateV1Beta1CRDCompatibility`` /
``validateExistingCRs``):

* **A served version is never removed at once.** A version served by the cluster's CRD must
  still be listed by the new one; it is first marked ``served: false``, and only a later
  upgrade removes it (OLM 4.3 §2.2.2.2). Applied whoever owns the CRD: clients of a served
  version break when it disappears, whichever operator removes it.
* **Existing custom resources must stay valid.** For every version served both before and
  after, each existing custom resource must validate against the new schema of that version
  (:mod:`olmkit.lifecycle.openapi`; fields the new schema does not declare are pruned by the
  API server, not rejected, so they are not errors). *Decision:* this applies to every
  update, shared or not. The documentation says a CRD owned by a single CSV "is upgraded
  immediately" and only a CRD owned by several CSVs is checked; upstream OLM did so until
  its step builder started calling ``validateV1CRDCompatibility`` on every update whatever
  the number of owners (it now names no owners at all), which is the behaviour followed
  here: an upgrade that would leave objects invalid is refused even for a single owner.
  As upstream, when the new CRD converts through a webhook (``spec.conversion.strategy:
  Webhook``) a failed validation is only a warning, since the webhook, which only starts
  with the new bundle, may convert the objects into a valid form. (Upstream does this for
  ``v1`` CRDs only; here it holds for both API versions.) A version whose schema is
  unchanged is not re-checked: the upgrade cannot make its objects less valid, and
  olmkit's store does not validate objects on write, so an object that was already invalid
  would otherwise block every later upgrade.
* **Stale stored versions are cleaned up.** ``status.storedVersions`` keeps only versions the
  new CRD still lists, and gains the new storage version (OLM 4.3 §2.2.2.2: "OLM will attempt
  to do this for you if it detects a stored version no longer exists in the new CRD").
  Recent upstream instead refuses such an upgrade ("risk of data loss",
  ``crd.SafeStorageVersionUpgrade``); olmkit's store keeps objects by API group with no
  per-version encoding, so no data is lost when a version leaves the list, and the
  documented cleanup is followed.
* **Sharing.** A CRD is *shared* when a CSV other than the installing one and the one it
  replaces owns it. The rules above do not depend on it (see the decision above); it is
  reported, and the problems name the other owners, because they are whom a refusal protects.
* The API server's own update checks that olmkit's store does not make are mirrored:
  ``spec.group``, ``spec.names.plural``, ``spec.names.kind`` and ``spec.scope`` do not
  change, and the new CRD lists each version once with exactly one storage version.

``v1beta1`` CRDs may give their versions as ``spec.version`` alone, and their schema as
``spec.validation.openAPIV3Schema`` shared by every version; :func:`schema_for` and the
version functions read both shapes.

.. versionadded:: 0.1
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Final

import attrs

from olmkit.errors import OlmkitError
from olmkit.lifecycle.openapi import validate

__all__ = [
    "CRDUpgrade",
    "CRDUpgradeError",
    "gvks",
    "is_established",
    "plan_crd_upgrade",
    "schema_for",
    "served_versions",
    "storage_version",
    "stored_versions",
    "versions",
]

WEBHOOK_CONVERSION: Final = "Webhook"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _spec(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(crd.get("spec"))


def _name(crd: Mapping[str, Any]) -> str:
    return str(_mapping(crd.get("metadata")).get("name") or "")


def _entries(crd: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The version entries: ``spec.versions``, or the legacy ``spec.version`` (served, storage)."""
    spec = _spec(crd)
    listed = spec.get("versions")
    if isinstance(listed, list) and listed:
        return [v for v in listed if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
    legacy = spec.get("version")
    if isinstance(legacy, str) and legacy:
        return [{"name": legacy, "served": True, "storage": True}]
    return []


def _entry(crd: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    return next((e for e in _entries(crd) if e["name"] == version), None)


def versions(crd: Mapping[str, Any]) -> tuple[str, ...]:
    """Every version the CRD lists, served or not, in the order listed.

    .. versionadded:: 0.1
    """
    return tuple(dict.fromkeys(e["name"] for e in _entries(crd)))


def served_versions(crd: Mapping[str, Any]) -> tuple[str, ...]:
    """The versions the CRD serves (``served: true``), in the order listed.

    A ``v1beta1`` CRD with only ``spec.version`` serves that version.

    .. versionadded:: 0.1
    """
    return tuple(dict.fromkeys(e["name"] for e in _entries(crd) if e.get("served") is True))


def storage_version(crd: Mapping[str, Any]) -> str | None:
    """The version objects are stored at (``storage: true``); ``None`` when none is marked.

    .. versionadded:: 0.1
    """
    return next((e["name"] for e in _entries(crd) if e.get("storage") is True), None)


def stored_versions(crd: Mapping[str, Any]) -> tuple[str, ...]:
    """``status.storedVersions``: every version objects may still be stored at.

    .. versionadded:: 0.1
    """
    found = _mapping(crd.get("status")).get("storedVersions")
    return tuple(v for v in found if isinstance(v, str)) if isinstance(found, list) else ()


def schema_for(crd: Mapping[str, Any], version: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` objects of ``version`` are validated against.

    The version's own ``schema.openAPIV3Schema``, else (``v1beta1``) the CRD-wide
    ``spec.validation.openAPIV3Schema``. ``None`` when the CRD does not list ``version`` or
    gives it no schema (anything goes).

    .. versionadded:: 0.1
    """
    entry = _entry(crd, version)
    if entry is None:
        return None
    own = _mapping(entry.get("schema")).get("openAPIV3Schema")
    if isinstance(own, dict):
        return own
    shared = _mapping(_spec(crd).get("validation")).get("openAPIV3Schema")
    return shared if isinstance(shared, dict) else None


def gvks(crd: Mapping[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """``(group, version, kind)`` of each served version, in the order listed.

    .. versionadded:: 0.1
    """
    spec = _spec(crd)
    group, kind = str(spec.get("group") or ""), str(_mapping(spec.get("names")).get("kind") or "")
    return tuple((group, version, kind) for version in served_versions(crd))


def _condition_true(crd: Mapping[str, Any], kind: str) -> bool:
    conditions = _mapping(crd.get("status")).get("conditions")
    if not isinstance(conditions, list):
        return False
    return any(isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True" for c in conditions)


def is_established(crd: Mapping[str, Any]) -> bool:
    """Whether the CRD's API is being served: ``Established`` and ``NamesAccepted`` are ``True``.

    Upstream OLM moves a CRD step from ``WaitingForAPI`` to ``Created`` on exactly these two.

    .. versionadded:: 0.1
    """
    return _condition_true(crd, "Established") and _condition_true(crd, "NamesAccepted")


def _strings(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@attrs.define(auto_exc=True, eq=False)
class CRDUpgradeError(OlmkitError):
    """A CRD cannot be created or upgraded as asked.

    Args:
        crd: the CRD's name.
        problems: what prevents it, one sentence each (see :attr:`CRDUpgrade.problems`).

    .. versionadded:: 0.1
    """

    crd: str = attrs.field(default="", kw_only=True)
    problems: tuple[str, ...] = attrs.field(default=(), kw_only=True, converter=_strings)

    def __str__(self) -> str:
        if self.message:
            return self.message
        if len(self.problems) == 1:
            return self.problems[0]
        return f"CRD {self.crd} cannot be upgraded:\n" + "\n".join(f"  {p}" for p in self.problems)


@attrs.frozen
class CRDUpgrade:
    """What :func:`plan_crd_upgrade` decided.

    Args:
        crd: the CRD's name.
        problems: why the CRD may not be written, one sentence each naming the CRD and, where
            it applies, the version and the custom resource (``namespace/name``, or ``name``
            when cluster-scoped) with its schema error. Empty when it may.
        merged: the object to write (a fresh dict, the caller's to keep): the new CRD's
            apiVersion and spec; the cluster CRD's metadata (uid, resourceVersion, ...) with
            the new labels and annotations laid over it; the cluster CRD's status with
            ``storedVersions`` cleaned. For a fresh create, the new CRD with
            ``status.storedVersions`` set to its storage version.
        shared: whether a CSV besides the installing one and the one it replaces owns the CRD.
        create: whether there is no CRD in the cluster yet.
        warnings: problems that do not block (invalid objects under a webhook conversion).

    .. versionadded:: 0.1
    """

    crd: str
    problems: tuple[str, ...]
    merged: dict[str, Any] = attrs.field(hash=False, repr=False)
    shared: bool
    create: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        """Whether :attr:`merged` may be written (there are no problems)."""
        return not self.problems

    @property
    def stored_versions(self) -> tuple[str, ...]:
        """``status.storedVersions`` of :attr:`merged`."""
        return stored_versions(self.merged)

    def raise_for_problems(self) -> None:
        """Raise :class:`CRDUpgradeError` when the upgrade is not allowed.

        Raises:
            CRDUpgradeError: with :attr:`crd` and :attr:`problems`.
        """
        if self.problems:
            raise CRDUpgradeError(crd=self.crd, problems=self.problems)


def plan_crd_upgrade(
    existing: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    *,
    owners: Collection[str],
    installing_csv: str,
    replacing_csv: str | None,
    list_resources: Callable[[str], Iterable[Mapping[str, Any]]],
) -> CRDUpgrade:
    """Decide whether ``new`` may replace ``existing`` (see the module docstring for the rules).

    Args:
        existing: the CRD in the cluster, as stored (``None``: it does not exist, a create).
        new: the CRD from the bundle being installed.
        owners: names of the CSVs that own the CRD now.
        installing_csv: the CSV whose install brings ``new``.
        replacing_csv: the CSV ``installing_csv`` replaces, if any.
        list_resources: the existing custom resources served at a version, given the version.
            Called once for each version served before and after whose schema changes.

    Returns:
        The decision; write :attr:`CRDUpgrade.merged` only when :attr:`CRDUpgrade.allowed`.
        With olmkit's store: ``written = store.create(merged)`` or ``store.update(merged)`` (a
        stale resourceVersion raises ``Conflict``: plan again from a fresh read), then
        ``store.update_status({**written, "status": merged["status"]})``, since create and
        update leave the status as stored. Against a real API server, which refuses a spec
        that drops a version still in ``status.storedVersions``, write the status with the
        removed versions dropped first, then the spec.

    Example:
        >>> plan = plan_crd_upgrade(
        ...     cluster_crd, bundle_crd, owners={"etcd.v1"}, installing_csv="etcd.v2",
        ...     replacing_csv="etcd.v1", list_resources=lambda version: store.list(...))
        >>> plan.raise_for_problems()
        >>> written = store.update(plan.merged)
        >>> store.update_status({**written, "status": plan.merged["status"]})

    .. versionadded:: 0.1
    """
    name = _name(new) or (_name(existing) if existing is not None else "")
    others = sorted(set(owners) - {installing_csv, replacing_csv or installing_csv})
    shared = bool(others)
    problems = _shape_problems(name, new)
    warnings: list[str] = []
    if existing is None:
        merged = copy.deepcopy(dict(new))
        storage = storage_version(new)
        merged["status"] = {"storedVersions": [storage] if storage else []}
        return CRDUpgrade(crd=name, problems=tuple(problems), merged=merged, shared=shared, create=True)

    problems += _immutable_problems(name, existing, new)
    kept = set(versions(new))
    by = f" (also owned by {', '.join(others)})" if shared else ""
    for version in served_versions(existing):
        if version not in kept:
            problems.append(
                f"CRD {name}: served version {version} cannot be removed{by}; "
                f"mark it served: false in an earlier upgrade first"
            )

    invalid = _invalid_resources(name, existing, new, list_resources, by)
    conversion = _mapping(_spec(new).get("conversion")).get("strategy")
    (warnings if conversion == WEBHOOK_CONVERSION else problems).extend(invalid)
    return CRDUpgrade(
        crd=name,
        problems=tuple(problems),
        merged=_merge(existing, new),
        shared=shared,
        warnings=tuple(warnings),
    )


def _shape_problems(name: str, new: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in the new CRD's version list."""
    listed = [e["name"] for e in _entries(new)]
    if not listed:
        return [f"CRD {name}: the new CRD lists no versions"]
    problems = [
        f"CRD {name}: version {v} is listed more than once" for v in dict.fromkeys(listed) if listed.count(v) > 1
    ]
    storage = [e["name"] for e in _entries(new) if e.get("storage") is True]
    if len(storage) != 1:
        found = ", ".join(storage) if storage else "none"
        problems.append(f"CRD {name}: exactly one version must be the storage version, found {found}")
    return problems


def _immutable_problems(name: str, existing: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    problems = []
    if _name(existing) and _name(existing) != name:
        problems.append(f"CRD {name}: the cluster CRD is named {_name(existing)}")
    old_spec, new_spec = _spec(existing), _spec(new)
    fields: list[tuple[str, Any, Any]] = [
        ("spec.group", old_spec.get("group"), new_spec.get("group")),
        ("spec.scope", old_spec.get("scope") or "Namespaced", new_spec.get("scope") or "Namespaced"),
    ]
    old_names, new_names = _mapping(old_spec.get("names")), _mapping(new_spec.get("names"))
    fields += [(f"spec.names.{key}", old_names.get(key), new_names.get(key)) for key in ("plural", "kind")]
    for field, old, now in fields:
        if old != now:
            problems.append(f"CRD {name}: {field} cannot change from {old!r} to {now!r}")
    return problems


def _resource_name(obj: Mapping[str, Any]) -> str:
    meta = _mapping(obj.get("metadata"))
    namespace, name = meta.get("namespace"), str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


def _invalid_resources(
    name: str,
    existing: Mapping[str, Any],
    new: Mapping[str, Any],
    list_resources: Callable[[str], Iterable[Mapping[str, Any]]],
    by: str,
) -> list[str]:
    """One problem per existing custom resource the new schema of its version rejects."""
    problems = []
    kind = str(_mapping(_spec(new).get("names")).get("kind") or "object")
    still_served = set(served_versions(new))
    for version in served_versions(existing):
        if version not in still_served:
            continue
        schema = schema_for(new, version)
        if schema is None or schema == schema_for(existing, version):
            continue
        for obj in list_resources(version):
            errors = validate(obj, schema)
            if errors:
                problems.append(
                    f"CRD {name} version {version}: existing {kind} {_resource_name(obj)} is invalid "
                    f"under the new schema{by}: " + "; ".join(map(str, errors))
                )
    return problems


def _merge(existing: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(new))
    metadata = copy.deepcopy(dict(_mapping(existing.get("metadata"))))
    new_meta = _mapping(new.get("metadata"))
    for key in ("labels", "annotations"):
        laid = _mapping(new_meta.get(key))
        if laid:
            metadata[key] = {**_mapping(metadata.get(key)), **copy.deepcopy(dict(laid))}
    merged["metadata"] = metadata
    status = copy.deepcopy(dict(_mapping(existing.get("status"))))
    status["storedVersions"] = _clean_stored_versions(existing, new)
    merged["status"] = status
    return merged


def _clean_stored_versions(existing: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The cluster's stored versions the new CRD still lists, then its storage version."""
    stored = list(stored_versions(existing))
    if not stored:
        old_storage = storage_version(existing)
        stored = [old_storage] if old_storage else []
    kept = set(versions(new))
    cleaned = [v for v in dict.fromkeys(stored) if v in kept]
    storage = storage_version(new)
    if storage and storage not in cleaned:
        cleaned.append(storage)
    return cleaned
