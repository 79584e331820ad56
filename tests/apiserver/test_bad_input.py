"""Bad requests get Kubernetes' status code and reason, never a 500, and write nothing."""

from __future__ import annotations

import random
import socket
import ssl
import time

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.apiserver.conftest import InProcessServer

CMS = "/api/v1/namespaces/ns/configmaps"
SUBS = "/apis/operators.coreos.com/v1alpha1/namespaces/ns/subscriptions"


def _cm(name: str = "a") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def _reason(
    in_process: InProcessServer, method: str, path: str, body: object = None, **kwargs: object
) -> tuple[int, str]:
    status, answer = in_process.http.json(method, path, body, **kwargs)
    assert "Status" == answer["kind"], answer
    assert status == answer["code"]
    return status, answer["reason"]


def _nothing_stored(in_process: InProcessServer) -> None:
    assert [] == in_process.store.list("v1", "ConfigMap", "ns").items


def test_malformed_json_body_is_400(in_process: InProcessServer) -> None:
    """A body that is not JSON: 400 BadRequest, nothing written."""
    assert (400, "BadRequest") == _reason(in_process, "POST", CMS, b'{"apiVersion": "v1", "kind": ')
    _nothing_stored(in_process)


def test_malformed_yaml_body_is_400(in_process: InProcessServer) -> None:
    """A YAML body that does not parse: 400 BadRequest."""
    assert (400, "BadRequest") == _reason(
        in_process, "POST", CMS, b"kind: [unclosed\n  - :", content_type="application/yaml"
    )
    _nothing_stored(in_process)


def test_a_body_that_is_not_an_object_is_400(in_process: InProcessServer) -> None:
    """A JSON list or string where an object belongs: 400 BadRequest."""
    assert (400, "BadRequest") == _reason(in_process, "POST", CMS, [1, 2])
    assert (400, "BadRequest") == _reason(in_process, "POST", CMS, "text")


def test_unknown_resource_is_404(in_process: InProcessServer) -> None:
    """A resource nothing serves: 404 NotFound, as the API server answers."""
    assert (404, "NotFound") == _reason(in_process, "POST", "/apis/example.io/v1/namespaces/ns/gizmos", _cm())
    assert (404, "NotFound") == _reason(in_process, "GET", "/apis/no.such.group/v1")


def test_wrong_api_version_or_kind_in_the_body_is_400(in_process: InProcessServer) -> None:
    """A body whose apiVersion or kind is not the URL's: 400 BadRequest naming both."""
    status, answer = in_process.http.json("POST", CMS, {**_cm(), "apiVersion": "v2"})
    wrong_kind = _reason(in_process, "POST", CMS, {**_cm(), "kind": "Secret"})

    assert 400 == status
    assert "does not match the expected API version (v1)" in answer["message"]
    assert (400, "BadRequest") == wrong_kind
    _nothing_stored(in_process)


def test_names_kubernetes_refuses_are_422(in_process: InProcessServer) -> None:
    """Invalid names: 422 Invalid, through the same validation as olmkit apply."""
    for name in ("Bad_Name", "-dash", "x" * 300):
        status, answer = in_process.http.json("POST", CMS, _cm(name))
        assert (422, "Invalid") == (status, answer["reason"]), name
        assert "metadata.name" in answer["message"]
    _nothing_stored(in_process)


def test_admission_refusals_are_422(in_process: InProcessServer) -> None:
    """An object the admission checks refuse (a Subscription without a package) is 422, not written."""
    sub = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "s"},
        "spec": {"channel": "stable"},
    }
    status, answer = in_process.http.json("POST", SUBS, sub)

    assert (422, "Invalid") == (status, answer["reason"])
    assert answer["message"].startswith('Subscription.operators.coreos.com "s" is invalid: ')
    assert [] == in_process.store.list("operators.coreos.com/v1alpha1", "Subscription", "ns").items


def test_the_api_and_olmkit_apply_refuse_with_the_same_words(in_process: InProcessServer) -> None:
    """One code path: the API server's 422 carries exactly the problems olmkit apply reports."""
    from olmkit.errors import InputError
    from olmkit.lifecycle.apply import prepare_manifests
    from olmkit.manager import get_plugin_manager

    sub = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"channel": "stable", "installPlanApproval": "Sometimes"},
    }
    with pytest.raises(InputError) as refused:
        prepare_manifests(in_process.store, get_plugin_manager().registry, [("sub.yaml", sub)])
    _, answer = in_process.http.json("POST", SUBS, sub)

    assert f'Subscription.operators.coreos.com "s" is invalid: {refused.value.message}' == answer["message"]


def test_body_over_3_mib_is_413(in_process: InProcessServer) -> None:
    """A request body over the API server's 3 MiB limit: 413 RequestEntityTooLarge."""
    big = _cm()
    big["data"] = {"k": "x" * (3 * 1024 * 1024 + 10)}

    assert (413, "RequestEntityTooLarge") == _reason(in_process, "POST", CMS, big)
    _nothing_stored(in_process)


def test_stale_resource_version_is_409(in_process: InProcessServer) -> None:
    """An update carrying an old resourceVersion: 409 Conflict, the stored object unchanged."""
    _, created = in_process.http.json("POST", CMS, _cm())
    stale = {**created, "data": {"k": "first"}}
    in_process.http.json("PUT", f"{CMS}/a", stale)
    stale["data"] = {"k": "second"}

    assert (409, "Conflict") == _reason(in_process, "PUT", f"{CMS}/a", stale)
    assert {"k": "first"} == in_process.store.get("v1", "ConfigMap", "a", "ns")["data"]


def test_watch_from_a_compacted_resource_version_is_410(in_process: InProcessServer) -> None:
    """A watch from before the kept history ends with an ERROR event carrying 410 Expired."""
    _, created = in_process.http.json("POST", CMS, _cm())
    for n in range(10):
        in_process.http.json("PATCH", f"{CMS}/a", {"data": {"k": str(n)}}, content_type="application/merge-patch+json")
    response = in_process.http.request(
        "GET", f"{CMS}?watch=true&resourceVersion={created['metadata']['resourceVersion']}"
    )
    events = [orjson.loads(line) for line in response.data.splitlines()]

    assert 1 == len(events)
    assert ("ERROR", 410, "Expired") == (events[0]["type"], events[0]["object"]["code"], events[0]["object"]["reason"])


def test_a_client_that_disconnects_mid_watch_leaves_the_server_serving(in_process: InProcessServer) -> None:
    """A watcher that drops its connection is forgotten; the server goes on serving writes and watches."""
    credentials = in_process.http.credentials
    context = ssl.create_default_context(cafile=str(credentials.ca))
    host, port = in_process.url.removeprefix("https://").split(":")
    for _ in range(3):
        raw = socket.create_connection((host, int(port)))
        conn = context.wrap_socket(raw, server_hostname=host)
        conn.sendall(
            f"GET {CMS}?watch=true HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {credentials.token}\r\n\r\n".encode()
        )
        assert conn.recv(100).startswith(b"HTTP/1.1 200")
        conn.close()
    time.sleep(1.5)  # the server notices the closed connections
    status, _ = in_process.http.json("POST", CMS, _cm("after"))
    watchers = sum(len(state.subscribers) for state in in_process.api.hub._kinds.values())  # type: ignore[union-attr]

    assert 201 == status
    assert 0 == watchers


def test_unsupported_patch_types_and_methods(in_process: InProcessServer) -> None:
    """Strategic merge patch on a custom resource is 415; an unknown method is 405; a missing object 404."""
    sub = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "s"},
        "spec": {"name": "p", "source": "c", "sourceNamespace": "olm"},
    }
    in_process.http.json("POST", SUBS, sub)

    assert (415, "UnsupportedMediaType") == _reason(
        in_process, "PATCH", f"{SUBS}/s", {"spec": {}}, content_type="application/strategic-merge-patch+json"
    )
    assert (405, "MethodNotAllowed") == _reason(in_process, "POST", f"{SUBS}/s", sub)
    assert (404, "NotFound") == _reason(
        in_process, "PATCH", f"{SUBS}/nope", {}, content_type="application/merge-patch+json"
    )


def test_bad_json_patch_is_422_and_changes_nothing(in_process: InProcessServer) -> None:
    """A JSON patch whose test fails or whose path is missing is refused as a whole."""
    in_process.http.json("POST", CMS, _cm())
    ops = [{"op": "replace", "path": "/data/k", "value": "new"}, {"op": "test", "path": "/data/k", "value": "other"}]

    assert (422, "Invalid") == _reason(in_process, "PATCH", f"{CMS}/a", ops, content_type="application/json-patch+json")
    assert (422, "Invalid") == _reason(
        in_process,
        "PATCH",
        f"{CMS}/a",
        [{"op": "remove", "path": "/nope/x"}],
        content_type="application/json-patch+json",
    )
    assert {"k": "v"} == in_process.store.get("v1", "ConfigMap", "a", "ns")["data"]


def test_bad_selectors_are_400(in_process: InProcessServer) -> None:
    """Label and field selectors that do not parse: 400 BadRequest."""
    assert (400, "BadRequest") == _reason(in_process, "GET", f"{CMS}?labelSelector=a%20in%20(")
    assert (400, "BadRequest") == _reason(in_process, "GET", f"{CMS}?fieldSelector=metadata.name")


_PATHS = [
    "/api/v1/namespaces/ns/configmaps",
    "/api/v1/namespaces/ns/configmaps/a",
    "/api/v1/namespaces/ns/configmaps/a/status",
    "/apis/operators.coreos.com/v1alpha1/namespaces/ns/subscriptions",
    "/apis/operators.coreos.com/v1alpha1/namespaces/ns/subscriptions/s/status",
    "/apis/operators.coreos.com/v1alpha1/subscriptions",
    "/api/v1/namespaces/ns",
    "/api/v1/namespaces",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    "/api/v1/namespaces/ns/configmaps/a/status/extra/x",
    "/apis//v1",
    "/apis/operators.coreos.com",
    "/openapi/v3/apis/nope/v1",
    "/api/v1/namespaces/ns/configmaps?limit=x",
    "/api/v1/namespaces/ns/configmaps?watch=true&resourceVersion=abc",
    "/api/v1/namespaces/ns/configmaps?continue=%%%",
]
_TYPES = [
    "application/json",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/yaml",
    "text/plain",
]


def _mutate(rng: random.Random) -> object:
    base: dict[str, object] = {
        "apiVersion": rng.choice(["v1", "operators.coreos.com/v1alpha1", "", None, 3]),
        "kind": rng.choice(["ConfigMap", "Subscription", "CustomResourceDefinition", "", None, []]),
        "metadata": rng.choice(
            [
                {"name": "a"},
                {"name": 7},
                None,
                [],
                {"name": "s", "labels": {"a": 1}},
                {"generateName": "g-"},
                {"name": "a", "resourceVersion": "x"},
                {"name": "a", "ownerReferences": [{}]},
                {"name": "a", "finalizers": "x"},
            ]
        ),
        "spec": rng.choice([{}, [], "x", None, {"names": 1, "group": []}, {"versions": [None]}]),
        "data": rng.choice([{"k": "v"}, {"k": 1}, [], None]),
    }
    return rng.choice([base, [base], [{"op": "add", "path": "/x", "value": 1}], [{"op": 1}], "x", 12, None, {}])


def test_request_fuzz_finds_no_500(in_process: InProcessServer) -> None:
    """Random malformed bodies, paths, methods and content types: never a 500, always a Status on failure."""
    rng = random.Random(14)
    in_process.http.json("POST", CMS, _cm())
    seen = set()
    for _ in range(400):
        method = rng.choice(["GET", "POST", "PUT", "PATCH", "DELETE"])
        path = rng.choice(_PATHS)
        body = _mutate(rng)
        raw = rng.choice([orjson.dumps(body), orjson.dumps(body)[: rng.randint(0, 20)], b"\xff\xfe", b"null"])
        response = in_process.http.request(method, path, raw, content_type=rng.choice(_TYPES), timeout=10)
        assert response.status < 500, (method, path, raw, response.data[:300])
        seen.add(response.status)
        if response.status >= 400 and "watch=true" not in path:
            assert b'"kind":"Status"' in response.data, (method, path, response.data[:300])
    print(sorted(seen))
    assert {200, 400, 404, 405, 415, 422} <= seen  # the fuzz reaches past the parsers


@pytest.mark.parametrize("path", ["/api", "/apis", "/api/v1", "/version", "/openapi/v3", "/openapi/v2"])
def test_discovery_answers(in_process: InProcessServer, path: str) -> None:
    """Discovery and OpenAPI documents answer with 200 and JSON."""
    status, _ = in_process.http.json("GET", path)

    assert 200 == status


_KEYS = st.sampled_from(
    ["apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "spec", "status", "data",
     "op", "path", "value", "from", "generateName", "resourceVersion", "finalizers", "ownerReferences", "$patch",
     "$retainKeys", "containers", "uid", "managedFields"]
)  # fmt: skip
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["v1", "ConfigMap", "Subscription", "operators.coreos.com/v1alpha1", "a", "", "/data/k", "add"])
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(_KEYS | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=15,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    method=st.sampled_from(["POST", "PUT", "PATCH", "DELETE"]),
    path=st.sampled_from(_PATHS[:9]),
    content_type=st.sampled_from(_TYPES),
    body=_JSON,
)
def test_generated_bodies_find_no_500(
    in_process: InProcessServer, method: str, path: str, content_type: str, body: object
) -> None:
    """Hypothesis-generated JSON bodies on every write path and patch type: never a 5xx."""
    in_process.http.json("POST", CMS, _cm())  # something to update, patch and delete (409 after the first)
    response = in_process.http.request(method, path, orjson.dumps(body), content_type=content_type, timeout=10)

    assert response.status < 500, (method, path, content_type, body, response.data[:300])


def test_a_custom_resource_is_validated_against_its_crd_as_it_is_now(in_process: InProcessServer) -> None:
    """Admission validates against the CRD written a moment ago, and against its new schema once it changes."""
    http = in_process.http

    def crd(size_type: str) -> dict[str, object]:
        schema = {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"size": {"type": size_type}}}},
        }
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.io"},
            "spec": {
                "group": "example.io",
                "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
            },
        }

    def widget(name: str, size: object) -> dict[str, object]:
        return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}}

    widgets = "/apis/example.io/v1/namespaces/ns/widgets"
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert 201 == http.json("POST", crds, crd("integer"))[0]
    assert 201 == http.json("POST", widgets, widget("a", 3))[0]
    assert (422, "Invalid") == _reason(in_process, "POST", widgets, widget("b", "large"))

    _, current = http.json("GET", crds + "/widgets.example.io")
    assert 200 == http.json("PUT", crds + "/widgets.example.io", {**crd("string"), "metadata": current["metadata"]})[0]

    assert 201 == http.json("POST", widgets, widget("b", "large"))[0]
    assert (422, "Invalid") == _reason(in_process, "POST", widgets, widget("c", 3))
