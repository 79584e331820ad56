"""apply refuses what kubectl's strict validation refuses: unknown kinds and versions, unknown
fields, custom resources that break their CRD's schema. The checks live in lifecycle.apply."""

from __future__ import annotations

import pytest

from olmkit.lifecycle.apply import KnownKinds, object_problems
from olmkit.store import MemoryStore

WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {"replicas": {"type": "integer", "minimum": 1}, "size": {"type": "string"}},
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def widget_crd(*, subresources: bool = True, preserve: bool = False) -> dict:
    version = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": WIDGET_SCHEMA}}
    if subresources:
        version["subresources"] = {"status": {}}
    spec = {
        "group": "example.io",
        "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets"},
        "versions": [version, {"name": "v0", "served": False, "storage": False}],
    }
    if preserve:
        spec["preserveUnknownFields"] = True
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": spec,
    }


def widget(spec: dict, version: str = "v1", **extra) -> dict:
    return {"apiVersion": f"example.io/{version}", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec, **extra}


def subscription(**spec) -> dict:
    return {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "s", "namespace": "ops"},
        "spec": {"name": "etcd", "source": "c", "sourceNamespace": "olm", **spec},
    }


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}},
            'Foo/f: no matches for kind "Foo" in version "example.com/v1"; ensure CRDs are installed first',
        ),
        (
            {**subscription(), "kind": "Subscriptions"},
            'Subscriptions/s: no matches for kind "Subscriptions" in version "operators.coreos.com/v1alpha1" '
            '(did you mean "Subscription"?); ensure CRDs are installed first',
        ),
        (
            {**subscription(), "apiVersion": "operators.coreos.com/v2"},
            'Subscription/s: no matches for kind "Subscription" in version "operators.coreos.com/v2" '
            "(served versions: operators.coreos.com/v1alpha1)",
        ),
        (
            subscription(chanel="fast"),
            'Subscription/s: strict decoding error: unknown field "spec.chanel" (did you mean "spec.channel"?)',
        ),
        (
            {**subscription(), "sepc": {}},
            'Subscription/s: strict decoding error: unknown field "sepc" (did you mean "spec"?)',
        ),
        (
            subscription(config={"nodeSelectr": {}}),
            'Subscription/s: strict decoding error: unknown field "spec.config.nodeSelectr" '
            '(did you mean "spec.config.nodeSelector"?)',
        ),
        (
            {**subscription(), "metadata": {"name": "s", "namespace": "ops", "lables": {"a": "b"}}},
            'Subscription/s: strict decoding error: unknown field "metadata.lables" (did you mean "metadata.labels"?)',
        ),
    ],
    ids=[
        "unknown kind",
        "plural kind",
        "unserved version",
        "misspelt field",
        "misspelt spec",
        "nested field",
        "metadata",
    ],
)
def test_apply_refuses_what_kubectl_refuses_and_writes_nothing(olmkit, write, store, obj, message):
    """One line naming the file, the object, the field or kind, and the close name; nothing is stored."""
    path = write("bad.yaml", obj)

    result = olmkit("apply", "-f", path)

    assert (2, "", f"olmkit: error: {path}: {message}\n") == (result.code, result.out, result.err)
    assert [] == list(store.list("operators.coreos.com/v1alpha1", "Subscription"))


def test_get_reads_back_every_applied_kind(olmkit, write):
    """A kind served by a CRD applied in the same batch is accepted and readable by get."""
    path = write("m.yaml", widget_crd(), widget({"replicas": 2}))

    assert 0 == olmkit("apply", "-f", path).code
    result = olmkit("get", "widgets", "-o", "name")

    assert "widget.example.io/w\n" == result.out


@pytest.mark.parametrize(
    ("spec", "extra", "message"),
    [
        (
            {"replicas": "three"},
            {},
            'spec.replicas: Invalid value: "three": spec.replicas in body must be of type integer',
        ),
        (
            {"replicas": 0},
            {},
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
        ),
        ({"replicas": 1, "colour": "red"}, {}, 'strict decoding error: unknown field "spec.colour"'),
    ],
)
def test_custom_resources_are_checked_against_their_crd(olmkit, write, spec, extra, message):
    """A custom resource breaking its CRD's schema is refused with Kubernetes' text."""
    assert 0 == olmkit("apply", "-f", write("crd.yaml", widget_crd())).code

    result = olmkit("apply", "-f", write("w.yaml", widget(spec, **extra)))

    assert 2 == result.code
    assert message in result.err


def test_custom_resource_updates_are_checked_too(olmkit, write, store):
    """Applying a changed custom resource (an update) is validated like a create; the stored one stays."""
    olmkit("apply", "-f", write("crd.yaml", widget_crd(), widget({"replicas": 2})))

    result = olmkit("apply", "-f", write("w.yaml", widget({"replicas": "three"})))

    assert 2 == result.code
    assert 2 == store.get("example.io/v1", "Widget", "w", "default")["spec"]["replicas"]


def test_unserved_crd_version_and_preserved_fields(olmkit, write):
    """A CRD version with served: false is refused; preserveUnknownFields lets unknown fields through."""
    olmkit("apply", "-f", write("crd.yaml", widget_crd(preserve=True)))

    unserved = olmkit("apply", "-f", write("w0.yaml", widget({}, version="v0")))
    preserved = olmkit("apply", "-f", write("w1.yaml", widget({"replicas": 1, "colour": "red"})))

    assert 2 == unserved.code
    assert "(served versions: example.io/v1)" in unserved.err
    assert 0 == preserved.code


def test_status_is_checked_only_without_a_status_subresource():
    """Without a status subresource the status is part of the object and checked; with one it is not."""
    bad_status = widget({"replicas": 1}, status={"ready": "yes"})
    with_sub = KnownKinds.of(MemoryStore(), [widget_crd(subresources=True)])
    without = KnownKinds.of(MemoryStore(), [widget_crd(subresources=False)])

    assert [] == object_problems(MemoryStore(), bad_status, kinds=with_sub)
    assert ['status.ready: Invalid value: "yes": status.ready in body must be of type boolean'] == object_problems(
        MemoryStore(), bad_status, kinds=without
    )


def test_builtin_kinds_and_their_other_served_versions_are_accepted():
    """OperatorGroup v1alpha2 and OperatorCondition v1 are served as upstream serves them; ConfigMaps need no CRD."""
    store = MemoryStore()
    objs = [
        {"apiVersion": "operators.coreos.com/v1alpha2", "kind": "OperatorGroup", "metadata": {"name": "og"}},
        {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorCondition", "metadata": {"name": "c"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}, "data": {"k": "v"}},
    ]

    assert [[], [], []] == [object_problems(store, obj) for obj in objs]
