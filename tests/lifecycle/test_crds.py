"""CRD versions and schemas, and the CRD upgrade rules, on real v1 and v1beta1 CRDs."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from olmkit.errors import OlmkitError
from olmkit.lifecycle.crds import (
    CRDUpgradeError,
    gvks,
    is_established,
    plan_crd_upgrade,
    schema_for,
    served_versions,
    storage_version,
    stored_versions,
    versions,
)
from olmkit.store import MemoryStore

NAME = "crontabs.stable.example.com"
GROUP = "stable.example.com"


def cron_schema(**spec_properties: Any) -> dict[str, Any]:
    """A CronTab schema whose spec declares ``spec_properties``."""
    return {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": spec_properties}},
    }


V1_SCHEMA = cron_schema(cronSpec={"type": "string"}, image={"type": "string"}, replicas={"type": "integer"})
STRICT_SCHEMA = cron_schema(
    cronSpec={"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
    image={"type": "string"},
    replicas={"type": "integer", "minimum": 1, "maximum": 10},
)


def version(name: str, *, served: bool = True, storage: bool = False, schema: Any = V1_SCHEMA) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "served": served, "storage": storage}
    if schema is not None:
        entry["schema"] = {"openAPIV3Schema": schema}
    return entry


def crd_v1(*entries: dict[str, Any], stored: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    """An apiextensions.k8s.io/v1 CronTab CRD with the given versions (and status.storedVersions)."""
    obj: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
            "versions": list(entries),
            **spec,
        },
    }
    if stored is not None:
        obj["status"] = {"storedVersions": stored}
    return obj


def on_cluster(crd: dict[str, Any], stored: list[str]) -> dict[str, Any]:
    """``crd`` as the API server keeps it: system metadata, conditions and storedVersions."""
    crd = copy.deepcopy(crd)
    crd["metadata"].update(uid="8b1d-crd", resourceVersion="41", generation=3, creationTimestamp="2024-01-01T00:00:00Z")
    crd["status"] = {
        "conditions": [
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": "True"},
        ],
        "acceptedNames": crd["spec"]["names"],
        "storedVersions": stored,
    }
    return crd


def crd_v1beta1(**spec: Any) -> dict[str, Any]:
    """A legacy apiextensions.k8s.io/v1beta1 CronTab CRD."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            **spec,
        },
    }


def crontab(name: str, namespace: str | None = "prod", api_version: str = "v1", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": f"{GROUP}/{api_version}", "kind": "CronTab", "metadata": metadata, "spec": spec}


class Resources:
    """A ``list_resources`` callable over fixed objects per version, recording what was asked."""

    def __init__(self, by_version: Mapping[str, list[dict[str, Any]]] | None = None) -> None:
        self.by_version = dict(by_version or {})
        self.asked: list[str] = []

    def __call__(self, version: str) -> Iterable[dict[str, Any]]:
        self.asked.append(version)
        return self.by_version.get(version, [])


def plan(
    existing: dict[str, Any] | None,
    new: dict[str, Any],
    resources: Callable[[str], Iterable[Mapping[str, Any]]] | None = None,
    owners: Iterable[str] = ("crontab.v1",),
    installing: str = "crontab.v2",
    replacing: str | None = "crontab.v1",
):
    return plan_crd_upgrade(
        existing,
        new,
        owners=set(owners),
        installing_csv=installing,
        replacing_csv=replacing,
        list_resources=resources or Resources(),
    )


# -- reading CRDs -----------------------------------------------------------------------------


def test_v1_versions_storage_and_schemas():
    """A v1 CRD lists its versions, serves some, stores one, and has a schema per version."""
    other = cron_schema(cron={"type": "string"})
    crd = crd_v1(
        version("v1alpha1", served=False),
        version("v1beta1", schema=other),
        version("v1", storage=True),
        stored=["v1alpha1", "v1"],
    )

    assert ("v1alpha1", "v1beta1", "v1") == versions(crd)
    assert ("v1beta1", "v1") == served_versions(crd)
    assert "v1" == storage_version(crd)
    assert ("v1alpha1", "v1") == stored_versions(crd)
    assert other == schema_for(crd, "v1beta1")
    assert V1_SCHEMA == schema_for(crd, "v1alpha1")
    assert None is schema_for(crd, "v2")
    assert ((GROUP, "v1beta1", "CronTab"), (GROUP, "v1", "CronTab")) == gvks(crd)


def test_v1_version_without_schema_has_none():
    """A version that gives no schema has none (anything goes)."""
    assert None is schema_for(crd_v1(version("v1", storage=True, schema=None)), "v1")


def test_v1beta1_single_version_field():
    """A v1beta1 CRD with only spec.version serves and stores that version, with spec.validation's schema."""
    crd = crd_v1beta1(version="v1", validation={"openAPIV3Schema": V1_SCHEMA})

    assert ("v1",) == served_versions(crd)
    assert "v1" == storage_version(crd)
    assert V1_SCHEMA == schema_for(crd, "v1")
    assert ((GROUP, "v1", "CronTab"),) == gvks(crd)


def test_v1beta1_versions_share_the_top_level_schema():
    """v1beta1 spec.versions carry no schema of their own: every version uses spec.validation."""
    crd = crd_v1beta1(
        version="v1beta1",
        versions=[
            {"name": "v1beta1", "served": True, "storage": True},
            {"name": "v1alpha1", "served": True, "storage": False},
        ],
        validation={"openAPIV3Schema": STRICT_SCHEMA},
    )

    assert ("v1beta1", "v1alpha1") == served_versions(crd)
    assert "v1beta1" == storage_version(crd)
    assert (STRICT_SCHEMA, STRICT_SCHEMA) == (schema_for(crd, "v1beta1"), schema_for(crd, "v1alpha1"))


def test_crd_without_versions_or_status():
    """A CRD with no versions serves nothing and stores nothing."""
    crd = crd_v1()

    assert ((), None, (), ()) == (served_versions(crd), storage_version(crd), stored_versions(crd), gvks(crd))


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ([{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}], True),
        ([{"type": "Established", "status": "True"}], False),
        ([{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "False"}], False),
        ([], False),
        (None, False),
    ],
)
def test_is_established_needs_established_and_names_accepted(conditions, expected):
    """A CRD's API is up when both Established and NamesAccepted are True (what upstream OLM waits for)."""
    crd = crd_v1(version("v1", storage=True))
    if conditions is not None:
        crd["status"] = {"conditions": conditions}

    assert expected == is_established(crd)


# -- creating -----------------------------------------------------------------------------------


def test_fresh_create_is_allowed_without_listing_anything():
    """With no CRD in the cluster the new one is created, its storage version recorded as stored."""
    resources = Resources()
    new = crd_v1(version("v1", storage=True))

    result = plan(None, new, resources)

    assert (True, True, (), ()) == (result.allowed, result.create, result.problems, result.warnings)
    assert {**new, "status": {"storedVersions": ["v1"]}} == result.merged
    assert [] == resources.asked


def test_create_of_a_malformed_crd_is_refused():
    """A CRD with two storage versions, or a version listed twice, is refused even on create."""
    new = crd_v1(version("v1", storage=True), version("v2", storage=True), version("v2"))

    result = plan(None, new)

    assert (
        f"CRD {NAME}: version v2 is listed more than once",
        f"CRD {NAME}: exactly one version must be the storage version, found v1, v2",
    ) == result.problems
    assert not result.allowed


def test_create_of_a_crd_without_versions_is_refused():
    """A CRD that lists no version at all is refused."""
    assert (f"CRD {NAME}: the new CRD lists no versions",) == plan(None, crd_v1()).problems


# -- owners -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owners", "replacing", "expected"),
    [
        ((), None, False),
        (("crontab.v1",), "crontab.v1", False),
        (("crontab.v1", "crontab.v2"), "crontab.v1", False),
        (("crontab.v2",), None, False),
        (("crontab.v1", "cron-backup.v3"), "crontab.v1", True),
        (("crontab.v1",), None, True),
    ],
)
def test_shared_means_another_csv_owns_it(owners, replacing, expected):
    """Owners other than the installing CSV and the one it replaces make the CRD shared."""
    crd = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])

    assert expected == plan(crd, crd_v1(version("v1", storage=True)), owners=owners, replacing=replacing).shared


# -- upgrading: schemas and existing objects ------------------------------------------------------


def test_single_owner_upgrade_that_breaks_objects_is_refused():
    """As recent upstream OLM, existing objects are validated on every update, even with one owner."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA))
    resources = Resources({"v1": [crontab("nightly", replicas=0), crontab("ok", cronSpec="*/5 * * * *", replicas=2)]})

    result = plan(existing, new, resources)

    assert not result.shared
    assert (
        f"CRD {NAME} version v1: existing CronTab prod/nightly is invalid under the new schema: "
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
    ) == result.problems
    assert not result.allowed


def test_shared_upgrade_that_breaks_an_object_names_it_and_the_field():
    """A shared CRD whose new schema rejects an existing object is refused, naming object, field and owners."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA))
    resources = Resources({"v1": [crontab("nightly", cronSpec="every night", replicas="3")]})

    result = plan(existing, new, resources, owners=("crontab.v1", "cron-backup.v3"))

    assert result.shared
    assert (
        f"CRD {NAME} version v1: existing CronTab prod/nightly is invalid under the new schema "
        "(also owned by cron-backup.v3): "
        'spec.cronSpec: Invalid value: "every night": spec.cronSpec in body should match '
        r"'^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'; "
        'spec.replicas: Invalid value: "3": spec.replicas in body must be of type integer',
    ) == result.problems


def test_compatible_shared_upgrade_is_allowed():
    """A shared CRD is upgraded when every existing object still validates."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA))
    resources = Resources({"v1": [crontab("ok", cronSpec="0 3 * * *", replicas=1, image="cron:1")]})

    result = plan(existing, new, resources, owners=("crontab.v1", "cron-backup.v3"))

    assert (True, True, ()) == (result.allowed, result.shared, result.problems)
    assert ["v1"] == resources.asked


def test_cluster_scoped_objects_are_named_without_namespace():
    """An invalid cluster-scoped object is named by its name alone."""
    existing = on_cluster(crd_v1(version("v1", storage=True), scope="Cluster"), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA), scope="Cluster")

    result = plan(existing, new, Resources({"v1": [crontab("global", namespace=None, replicas=99)]}))

    assert [f"CRD {NAME} version v1: existing CronTab global is invalid"] == [
        p.split(" under")[0] for p in result.problems
    ]


def test_unchanged_schema_is_not_revalidated():
    """Versions whose schema does not change are not listed: the upgrade cannot make their objects worse."""
    existing = on_cluster(crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA)), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA), version("v2", schema=V1_SCHEMA))
    resources = Resources({"v1": [crontab("already-invalid", replicas=0)]})

    result = plan(existing, new, resources)

    assert (True, []) == (result.allowed, resources.asked)


def test_each_changed_served_version_is_validated_against_its_own_new_schema():
    """Each version served before and after is listed once and checked against that version's new schema."""
    v2_strict = cron_schema(replicas={"type": "integer", "minimum": 5})
    existing = on_cluster(crd_v1(version("v1", storage=True), version("v2")), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA), version("v2", schema=v2_strict))
    resources = Resources({"v1": [crontab("a", replicas=3)], "v2": [crontab("a", api_version="v2", replicas=3)]})

    result = plan(existing, new, resources)

    assert ["v1", "v2"] == resources.asked
    assert [f"CRD {NAME} version v2: existing CronTab prod/a is invalid"] == [
        p.split(" under")[0] for p in result.problems
    ]


def test_versions_no_longer_served_are_not_validated():
    """Objects are checked only for versions served before and after: a version being retired is not."""
    existing = on_cluster(crd_v1(version("v1alpha1"), version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1alpha1", served=False, schema=STRICT_SCHEMA), version("v1", storage=True))
    resources = Resources({"v1alpha1": [crontab("old", api_version="v1alpha1", replicas=0)]})

    result = plan(existing, new, resources)

    assert (True, []) == (result.allowed, resources.asked)


def test_fields_dropped_from_the_schema_do_not_block():
    """An existing object carrying a field the new schema no longer declares stays valid (it would be pruned)."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1", storage=True, schema=cron_schema(cronSpec={"type": "string"})))
    resources = Resources({"v1": [crontab("a", cronSpec="* * * * *", image="cron:1", replicas=2)]})

    assert plan(existing, new, resources, owners=("crontab.v1", "other.v1")).allowed


def test_webhook_conversion_turns_invalid_objects_into_warnings():
    """With a webhook conversion in the new CRD, objects failing the new schema warn but do not block."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    conversion = {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}
    new = crd_v1(version("v1", storage=True, schema=STRICT_SCHEMA), conversion=conversion)

    result = plan(existing, new, Resources({"v1": [crontab("nightly", replicas=0)]}))

    assert (True, ()) == (result.allowed, result.problems)
    assert [f"CRD {NAME} version v1: existing CronTab prod/nightly is invalid"] == [
        w.split(" under")[0] for w in result.warnings
    ]


def test_webhook_conversion_does_not_excuse_removing_a_served_version():
    """The webhook exception covers object validation only, not version removal."""
    existing = on_cluster(crd_v1(version("v1beta1"), version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1", storage=True), conversion={"strategy": "Webhook"})

    assert not plan(existing, new).allowed


# -- upgrading: versions ------------------------------------------------------------------------


def test_shared_crd_removing_a_served_version_is_refused():
    """A shared CRD cannot drop a version it serves; the problem names the version and the other owners."""
    existing = on_cluster(crd_v1(version("v1beta1"), version("v1", storage=True)), ["v1beta1", "v1"])
    new = crd_v1(version("v1", storage=True))

    result = plan(existing, new, owners=("crontab.v1", "cron-backup.v3"))

    assert (
        f"CRD {NAME}: served version v1beta1 cannot be removed (also owned by cron-backup.v3); "
        "mark it served: false in an earlier upgrade first",
    ) == result.problems


def test_deprecation_sequence_served_then_unserved_then_removed():
    """Removing a version takes two upgrades: served -> not served (allowed) -> removed (allowed).
    Removing it directly is refused."""
    step0 = on_cluster(crd_v1(version("v1alpha1", storage=True)), ["v1alpha1"])
    step1 = crd_v1(version("v1alpha1"), version("v1beta1", storage=True))
    step2 = crd_v1(version("v1alpha1", served=False), version("v1beta1", storage=True))
    step3 = crd_v1(version("v1beta1", storage=True))

    first = plan(step0, step1)
    second = plan(on_cluster(first.merged, list(first.stored_versions)), step2)
    third = plan(on_cluster(second.merged, list(second.stored_versions)), step3)
    direct = plan(on_cluster(first.merged, list(first.stored_versions)), step3)

    assert [(), (), ()] == [first.problems, second.problems, third.problems]
    assert [("v1alpha1", "v1beta1"), ("v1alpha1", "v1beta1"), ("v1beta1",)] == [
        first.stored_versions,
        second.stored_versions,
        third.stored_versions,
    ]
    assert (
        f"CRD {NAME}: served version v1alpha1 cannot be removed; mark it served: false in an earlier upgrade first",
    ) == direct.problems


def test_single_owner_cannot_remove_a_served_version_at_once_either():
    """The served-version rule holds for a single owner too (OLM 4.3 §2.2.2.2)."""
    existing = on_cluster(crd_v1(version("v1beta1"), version("v1", storage=True)), ["v1"])

    result = plan(existing, crd_v1(version("v1", storage=True)))

    assert (False, False) == (result.allowed, result.shared)


def test_stale_stored_versions_are_cleaned_up():
    """A version no longer in the CRD leaves status.storedVersions; versions still listed stay."""
    existing = on_cluster(
        crd_v1(version("v1alpha1", served=False), version("v1beta1", served=False), version("v1", storage=True)),
        ["v1alpha1", "v1beta1", "v1"],
    )
    new = crd_v1(version("v1beta1", served=False), version("v1", storage=True))

    result = plan(existing, new)

    assert (True, ("v1beta1", "v1")) == (result.allowed, result.stored_versions)


def test_new_storage_version_is_recorded():
    """A new storage version joins status.storedVersions after the versions still stored."""
    existing = on_cluster(crd_v1(version("v1alpha1", storage=True)), ["v1alpha1"])
    new = crd_v1(version("v1alpha1"), version("v1beta1", storage=True))

    result = plan(existing, new)

    assert ["v1alpha1", "v1beta1"] == result.merged["status"]["storedVersions"]


def test_missing_stored_versions_fall_back_to_the_old_storage_version():
    """A cluster CRD without status.storedVersions is taken to store its storage version."""
    existing = crd_v1(version("v1alpha1", storage=True))
    new = crd_v1(version("v1alpha1"), version("v1", storage=True))

    assert ("v1alpha1", "v1") == plan(existing, new).stored_versions


def test_adding_a_version_is_allowed_and_served():
    """Adding a version (Adding a new CRD version) is allowed, for shared CRDs too, and it is served."""
    existing = on_cluster(crd_v1(version("v1alpha1", storage=True)), ["v1alpha1"])
    new = crd_v1(version("v1alpha1"), version("v1beta1", storage=True, schema=STRICT_SCHEMA))
    resources = Resources({"v1alpha1": [crontab("a", api_version="v1alpha1", replicas=0)]})

    result = plan(existing, new, resources, owners=("crontab.v1", "cron-backup.v3"))

    assert (True, []) == (result.allowed, resources.asked)
    assert ((GROUP, "v1alpha1", "CronTab"), (GROUP, "v1beta1", "CronTab")) == gvks(result.merged)


@pytest.mark.parametrize(
    ("change", "field", "old", "new"),
    [
        ({"group": "other.example.com"}, "spec.group", GROUP, "other.example.com"),
        ({"scope": "Cluster"}, "spec.scope", "Namespaced", "Cluster"),
        (
            {"names": {"plural": "crontabs", "kind": "CronJob"}},
            "spec.names.kind",
            "CronTab",
            "CronJob",
        ),
    ],
)
def test_immutable_fields_cannot_change(change, field, old, new):
    """group, scope, names.plural and names.kind stay as they are, as the API server requires."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])

    result = plan(existing, crd_v1(version("v1", storage=True), **change))

    assert (f"CRD {NAME}: {field} cannot change from {old!r} to {new!r}",) == result.problems


# -- the object to write -------------------------------------------------------------------------


def test_merged_keeps_cluster_metadata_and_status_and_takes_the_new_spec():
    """merged: new apiVersion and spec, cluster metadata with new labels laid over, cluster status cleaned."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    existing["metadata"]["labels"] = {"keep": "me", "olm.managed": "false"}
    new = crd_v1(version("v1", storage=True), version("v2"))
    new["metadata"]["labels"] = {"olm.managed": "true"}
    new["metadata"]["annotations"] = {"note": "from bundle"}

    merged = plan(existing, new).merged

    assert {
        "name": NAME,
        "uid": "8b1d-crd",
        "resourceVersion": "41",
        "generation": 3,
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "labels": {"keep": "me", "olm.managed": "true"},
        "annotations": {"note": "from bundle"},
    } == merged["metadata"]
    assert new["spec"] == merged["spec"]
    assert {**existing["status"], "storedVersions": ["v1"]} == merged["status"]


def test_merged_is_a_copy():
    """Changing merged changes neither input."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])
    new = crd_v1(version("v1", storage=True))
    before = copy.deepcopy((existing, new))

    merged = plan(existing, new).merged
    merged["spec"]["versions"][0]["name"] = "changed"
    merged["metadata"]["name"] = "changed"
    merged["status"]["conditions"].clear()

    assert before == (existing, new)


# -- v1beta1 --------------------------------------------------------------------------------------


def test_v1beta1_top_level_schema_change_breaking_objects_is_refused():
    """A v1beta1 CRD's spec.validation is the schema of every version; objects of each are checked."""
    existing = on_cluster(crd_v1beta1(version="v1", validation={"openAPIV3Schema": V1_SCHEMA}), ["v1"])
    new = crd_v1beta1(version="v1", validation={"openAPIV3Schema": STRICT_SCHEMA})
    resources = Resources({"v1": [crontab("ok", replicas=1), crontab("bad", replicas=11)]})

    result = plan(existing, new, resources, owners=("crontab.v1", "cron-backup.v3"))

    assert (
        f"CRD {NAME} version v1: existing CronTab prod/bad is invalid under the new schema "
        "(also owned by cron-backup.v3): "
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
    ) == result.problems


def test_v1beta1_moving_from_spec_version_to_versions():
    """A v1beta1 CRD may move from spec.version to spec.versions, keeping the version and adding one."""
    existing = on_cluster(crd_v1beta1(version="v1alpha1"), ["v1alpha1"])
    new = crd_v1beta1(
        versions=[
            {"name": "v1alpha1", "served": True, "storage": False},
            {"name": "v1", "served": True, "storage": True},
        ]
    )

    result = plan(existing, new)

    assert (True, ("v1alpha1", "v1")) == (result.allowed, result.stored_versions)


def test_v1beta1_dropping_the_served_spec_version_is_refused():
    """The version of spec.version is served, so it cannot be removed at once."""
    existing = on_cluster(crd_v1beta1(version="v1alpha1"), ["v1alpha1"])
    new = crd_v1beta1(version="v1", versions=[{"name": "v1", "served": True, "storage": True}])

    assert [f"CRD {NAME}: served version v1alpha1 cannot be removed"] == [
        p.split(";")[0] for p in plan(existing, new).problems
    ]


# -- the error ------------------------------------------------------------------------------------


def test_raise_for_problems_raises_a_structured_error():
    """raise_for_problems raises CRDUpgradeError carrying the CRD and every problem."""
    existing = on_cluster(crd_v1(version("v1beta1"), version("v1", storage=True)), ["v1"])
    result = plan(existing, crd_v1(version("v1", storage=True), scope="Cluster"))

    with pytest.raises(CRDUpgradeError) as info:
        result.raise_for_problems()

    assert isinstance(info.value, OlmkitError)
    assert (NAME, result.problems) == (info.value.crd, info.value.problems)
    assert f"CRD {NAME} cannot be upgraded:\n  " + "\n  ".join(result.problems) == str(info.value)


def test_error_with_one_problem_is_that_problem():
    """With a single problem the error's text is the problem itself, which names the CRD."""
    assert "CRD x: the new CRD lists no versions" == str(
        CRDUpgradeError(crd="x", problems=["CRD x: the new CRD lists no versions"])
    )


def test_allowed_plan_does_not_raise():
    """raise_for_problems does nothing when the upgrade is allowed."""
    existing = on_cluster(crd_v1(version("v1", storage=True)), ["v1"])

    assert None is plan(existing, crd_v1(version("v1", storage=True))).raise_for_problems()


# -- with the store -------------------------------------------------------------------------------


def test_plans_written_to_the_store_as_documented():
    """create/update, then update_status on what they return, leaves the CRD as planned in the store;
    custom resources listed from the store feed the check."""
    store = MemoryStore()
    crd_api = "apiextensions.k8s.io/v1"

    created = plan(None, crd_v1(version("v1alpha1", storage=True)))
    written = store.create(created.merged)
    store.update_status({**written, "status": created.merged["status"]})
    store.create(crontab("a", api_version="v1alpha1", replicas=0))

    def list_resources(v: str) -> list[dict[str, Any]]:
        return store.list(f"{GROUP}/{v}", "CronTab").items

    refused = plan(
        store.get(crd_api, "CustomResourceDefinition", NAME),
        crd_v1(version("v1alpha1", schema=STRICT_SCHEMA), version("v1", storage=True)),
        list_resources,
    )
    upgrade = plan(
        store.get(crd_api, "CustomResourceDefinition", NAME),
        crd_v1(version("v1alpha1"), version("v1", storage=True)),
        list_resources,
    )
    written = store.update(upgrade.merged)
    store.update_status({**written, "status": upgrade.merged["status"]})
    stored = store.get(crd_api, "CustomResourceDefinition", NAME)

    assert [f"CRD {NAME} version v1alpha1: existing CronTab prod/a is invalid"] == [
        p.split(" under")[0] for p in refused.problems
    ]
    assert (("v1alpha1", "v1"), "v1", ["v1alpha1", "v1"]) == (
        served_versions(stored),
        storage_version(stored),
        stored["status"]["storedVersions"],
    )
