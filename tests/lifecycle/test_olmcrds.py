"""The CRDs of OLM's kinds (`olmkit cluster init`): valid apiextensions.k8s.io/v1, structural, one schema source."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from olmkit.lifecycle.apply import object_problems
from olmkit.lifecycle.clusterinit import covers, init_cluster, init_objects
from olmkit.lifecycle.olmcrds import olm_crds, openapi_schema
from olmkit.lifecycle.openapi import validate
from olmkit.lifecycle.schemas import SCHEMAS
from olmkit.store import MemoryStore, NotFound, Object
from tests.lifecycle.harness import Cluster

# What upstream installs: operator-lifecycle-manager deploy/chart/crds (names and short names).
UPSTREAM = {
    "catalogsources.operators.coreos.com": ("CatalogSource", "Namespaced", ["catsrc"]),
    "clusterserviceversions.operators.coreos.com": ("ClusterServiceVersion", "Namespaced", ["csv", "csvs"]),
    "installplans.operators.coreos.com": ("InstallPlan", "Namespaced", ["ip"]),
    "olmconfigs.operators.coreos.com": ("OLMConfig", "Cluster", None),
    "operatorconditions.operators.coreos.com": ("OperatorCondition", "Namespaced", ["condition"]),
    "operatorgroups.operators.coreos.com": ("OperatorGroup", "Namespaced", ["og"]),
    "operators.operators.coreos.com": ("Operator", "Cluster", None),
    "subscriptions.operators.coreos.com": ("Subscription", "Namespaced", ["sub", "subs"]),
}

# The keywords a CRD's openAPIV3Schema may use (apiextensions.k8s.io/v1 JSONSchemaProps), minus
# the ones a structural schema forbids ($ref, definitions, ...).
KEYWORDS = {
    "type", "description", "properties", "additionalProperties", "items", "required", "enum", "format",
    "default", "nullable", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
    "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "multipleOf", "allOf", "anyOf", "oneOf", "not", "title", "example", "externalDocs",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations",
}  # fmt: skip
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def structural_problems(schema: Mapping[str, Any], path: str = "") -> Iterator[str]:
    """What makes a schema not structural (Kubernetes' rules), or not a schema at all."""
    for key in schema:
        if key not in KEYWORDS:
            yield f"{path or '<root>'}: unknown keyword {key!r}"
    typed = schema.get("type")
    if typed is None and not (
        schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string")
    ):
        yield f"{path or '<root>'}: no type"
    elif typed is not None and typed not in TYPES:
        yield f"{path}: type {typed!r}"
    if "properties" in schema and "additionalProperties" in schema:
        yield f"{path}: properties and additionalProperties together"
    if ("properties" in schema or "additionalProperties" in schema) and typed != "object":
        yield f"{path}: properties on a {typed}"
    if "items" in schema and typed != "array":
        yield f"{path}: items on a {typed}"
    if typed == "array" and not isinstance(schema.get("items"), Mapping):
        yield f"{path}: an array without an items schema"
    for name in schema.get("required", ()):
        if name not in schema.get("properties", {}):
            yield f"{path}: required {name!r} is not a property"
    for name, sub in (schema.get("properties") or {}).items():
        yield from structural_problems(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from structural_problems(schema["additionalProperties"], f"{path}[*]")
    if isinstance(schema.get("items"), Mapping):
        yield from structural_problems(schema["items"], f"{path}[]")


def test_the_crds_are_upstreams_eight_with_its_names_and_scopes() -> None:
    """One CRD per OLM kind upstream installs: names, kinds, scopes, short names, category olm."""
    found = {
        c["metadata"]["name"]: (
            c["spec"]["names"]["kind"],
            c["spec"]["scope"],
            c["spec"]["names"].get("shortNames"),
        )
        for c in olm_crds()
    }

    assert UPSTREAM == found
    assert all(["olm"] == c["spec"]["names"]["categories"] for c in olm_crds())


@pytest.mark.parametrize("crd", olm_crds(), ids=lambda c: c["metadata"]["name"])
def test_each_crd_is_valid_apiextensions_v1_with_a_structural_schema(crd: Object) -> None:
    """apiextensions.k8s.io/v1 shape: one storage version, status subresource, a structural schema per version."""
    spec = crd["spec"]
    names = spec["names"]

    assert "apiextensions.k8s.io/v1" == crd["apiVersion"]
    assert f"{names['plural']}.{spec['group']}" == crd["metadata"]["name"]
    assert f"{names['kind']}List" == names["listKind"]
    assert names["kind"].lower() == names["singular"]
    assert 1 == sum(v["storage"] for v in spec["versions"])
    for version in spec["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        assert {"status": {}} == version["subresources"]
        assert [] == list(structural_problems(schema))
        assert {"type": "object"} == schema["properties"]["metadata"]  # structural: nothing more at the root
        for column in version.get("additionalPrinterColumns", ()):
            assert {"name", "type", "jsonPath"} <= set(column)
            assert column["type"] in {"string", "integer", "number", "boolean", "date"}
            assert column["jsonPath"].startswith(".")


@pytest.mark.parametrize("crd", olm_crds(), ids=lambda c: c["metadata"]["name"])
def test_the_official_clients_typed_model_reads_each_crd_back_unchanged(crd: Object) -> None:
    """Through kubernetes' V1CustomResourceDefinition (every field typed, required ones checked) and back:
    nothing is lost, so every key at every level is a field apiextensions.k8s.io/v1 defines."""
    import orjson
    from kubernetes.client import ApiClient

    api = ApiClient()
    model = api.deserialize(orjson.dumps(crd).decode(), "V1CustomResourceDefinition", "application/json")

    assert crd == api.sanitize_for_serialization(model)


def test_printer_columns_and_versions_follow_upstream() -> None:
    """Upstream's printer columns; OperatorGroup serves v1 and v1alpha2, OperatorCondition v2 and v1."""
    crds = {c["spec"]["names"]["kind"]: c["spec"] for c in olm_crds()}

    def columns(kind: str) -> list[str]:
        return [c["name"] for c in crds[kind]["versions"][0].get("additionalPrinterColumns", ())]

    assert ["Display", "Version", "Replaces", "Phase"] == columns("ClusterServiceVersion")
    assert ["Package", "Source", "Channel"] == columns("Subscription")
    assert ["CSV", "Approval", "Approved"] == columns("InstallPlan")
    assert ["Display", "Type", "Publisher", "Age"] == columns("CatalogSource")
    assert [("v1", True), ("v1alpha2", False)] == [(v["name"], v["storage"]) for v in crds["OperatorGroup"]["versions"]]
    assert [("v2", True), ("v1", False)] == [(v["name"], v["storage"]) for v in crds["OperatorCondition"]["versions"]]


def test_the_crd_schema_is_the_one_strict_validation_uses() -> None:
    """One source: each CRD's spec and status schemas are the lifecycle's (what `olmkit apply` checks)."""
    for crd in olm_crds():
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]

        assert SCHEMAS[(group, kind)]["properties"]["spec"] == schema["properties"]["spec"]
        assert SCHEMAS[(group, kind)]["properties"]["status"] == schema["properties"]["status"]
        assert schema == openapi_schema(group, kind)


SUBSCRIPTION = {
    "apiVersion": "operators.coreos.com/v1alpha1",
    "kind": "Subscription",
    "metadata": {"name": "s", "namespace": "operators"},
    "spec": {"name": "p", "source": "c", "sourceNamespace": "olm", "chanel": "stable"},
}


def _crd_schema(kind: str) -> Mapping[str, Any]:
    crd = next(c for c in olm_crds() if c["spec"]["names"]["kind"] == kind)
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_an_unknown_field_is_refused_by_both_naming_the_same_field() -> None:
    """`spec.chanel`: strict validation in olmkit and the CRD's schema (strict, as the API server) name it."""
    from_crd = validate(SUBSCRIPTION, _crd_schema("Subscription"), report_unknown=True)
    from_apply = object_problems(MemoryStore(), SUBSCRIPTION)

    assert ["spec.chanel"] == [e.path for e in from_crd]
    assert 1 == len(from_apply)
    assert 'unknown field "spec.chanel"' in from_apply[0]
    assert 'did you mean "spec.channel"' in from_apply[0]


def test_a_wrong_type_is_refused_by_both_naming_the_same_field(olmkit_pm: Any) -> None:
    """`spec.priority: high` on a CatalogSource: the admission check and the CRD's schema name spec.priority."""
    from olmkit.errors import InputError
    from olmkit.lifecycle.apply import prepare_manifests

    catalog = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {"name": "c", "namespace": "olm"},
        "spec": {"sourceType": "grpc", "address": "127.0.0.1:1", "priority": "high"},
    }
    from_crd = validate(catalog, _crd_schema("CatalogSource"), report_unknown=True)
    with pytest.raises(InputError) as refused:
        prepare_manifests(MemoryStore(), olmkit_pm.registry, [("c.yaml", catalog)])

    assert ["spec.priority"] == [e.path for e in from_crd]
    assert "spec.priority" in str(refused.value)


def test_what_the_controllers_write_fits_the_crds(cluster: Cluster) -> None:
    """After an install, every OLM object the controllers wrote (status too) is valid under its CRD, nothing pruned."""
    cluster.subscribe("postgres-operator", channel="stable")
    cluster.reconcile()
    checked = 0
    for crd in olm_crds():
        spec = crd["spec"]
        storage = next(v for v in spec["versions"] if v["storage"])
        for obj in cluster.store.list(f"{spec['group']}/{storage['name']}", spec["names"]["kind"]):
            errors = validate(obj, storage["schema"]["openAPIV3Schema"], report_unknown=True)
            assert [] == [str(e) for e in errors], obj["metadata"]["name"]
            checked += 1

    assert checked >= 8  # catalog, group, 2 subscriptions, a plan, 2 CSVs, conditions ...


# --------------------------------------------------------------------------- cluster init on a store


def _writes(store: MemoryStore) -> str | None:
    return store.latest_resource_version()


def test_init_creates_everything_then_changes_nothing() -> None:
    """First run: every object created; second run: every one unchanged and nothing written."""
    store = MemoryStore()
    objects = init_objects()

    first = init_cluster(store, objects)
    written = _writes(store)
    second = init_cluster(store, objects)

    assert {"created"} == {s.action for s in first}
    assert len(objects) == len(first)
    assert {"unchanged"} == {s.action for s in second}
    assert written == _writes(store)
    assert ["olm", "operators"] == sorted(n["metadata"]["name"] for n in store.list("v1", "Namespace"))
    assert {"global-operators": {}, "olm-operators": {"targetNamespaces": ["olm"]}} == {
        g["metadata"]["name"]: g["spec"] for g in store.list("operators.coreos.com/v1", "OperatorGroup")
    }


def test_fields_a_server_fills_in_are_no_difference() -> None:
    """A CRD as an API server returns it (defaults, status, more labels) counts as up to date."""
    store = MemoryStore()
    objects = init_objects()
    init_cluster(store, objects)
    crd = store.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "subscriptions.operators.coreos.com")
    crd["spec"]["conversion"] = {"strategy": "None"}
    crd["spec"]["versions"][0]["additionalPrinterColumns"][0]["priority"] = 0
    crd["metadata"]["labels"]["extra"] = "yes"
    store.update(crd)

    assert {"unchanged"} == {s.action for s in init_cluster(store, objects)}


def test_a_crd_that_differs_is_updated_and_a_changed_operator_group_is_kept() -> None:
    """A CRD that lost a short name is configured back; an OperatorGroup someone changed stays as they left it."""
    store = MemoryStore()
    objects = init_objects()
    init_cluster(store, objects)
    name = "clusterserviceversions.operators.coreos.com"
    crd = store.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    crd["spec"]["names"]["shortNames"] = ["csv"]
    store.update(crd)
    og = store.get("operators.coreos.com/v1", "OperatorGroup", "global-operators", "operators")
    og["spec"] = {"targetNamespaces": ["operators"]}
    store.update(og)

    steps = {s.object["metadata"]["name"]: s.action for s in init_cluster(store, objects)}

    assert "configured" == steps[name]
    assert 1 == sum(a == "configured" for a in steps.values())
    assert ["csv", "csvs"] == store.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)["spec"]["names"][
        "shortNames"
    ]
    assert {"targetNamespaces": ["operators"]} == store.get(
        "operators.coreos.com/v1", "OperatorGroup", "global-operators", "operators"
    )["spec"]


def test_dry_run_writes_nothing() -> None:
    """--dry-run reports what would be created and leaves the store as it was."""
    store = MemoryStore()
    before = _writes(store)

    steps = init_cluster(store, init_objects(), dry_run=True)

    assert {"created"} == {s.action for s in steps}
    assert before == _writes(store)
    assert [] == list(store.list("v1", "Namespace"))


class SlowToServe(MemoryStore):
    """A store whose API server does not serve OperatorGroups until a few creates were refused."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals

    def create(self, obj: Mapping[str, Any]) -> Object:
        if obj["kind"] == "OperatorGroup" and self.refusals:
            self.refusals -= 1
            raise NotFound("the server could not find the requested resource")
        return super().create(obj)


def test_a_kind_not_yet_served_after_its_crd_is_waited_for() -> None:
    """Creating an OperatorGroup right after its CRD is retried while the kind is not served, then gives up."""
    pauses: list[float] = []
    store = SlowToServe(refusals=3)

    init_cluster(store, init_objects(), sleep=pauses.append)

    assert 3 == len(pauses)
    assert 2 == len(store.list("operators.coreos.com/v1", "OperatorGroup"))
    with pytest.raises(NotFound):
        init_cluster(SlowToServe(refusals=10**6), init_objects(), timeout=0.05, sleep=lambda s: None)


def test_covers() -> None:
    """Mappings may say more, lists match item by item, scalars match with their type."""
    wanted = {"a": [{"b": 1}], "c": True}

    assert covers({"a": [{"b": 1, "x": 2}], "c": True, "d": 0}, wanted)
    assert not covers({"a": [{"b": 1}, {"b": 2}], "c": True}, wanted)
    assert not covers({"a": [{"b": 1}], "c": 1}, wanted)
    assert not covers({"a": [{"b": 1}]}, copy.deepcopy(wanted))
