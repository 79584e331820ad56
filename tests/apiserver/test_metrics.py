"""``apiserver_request_total`` and ``apiserver_longrunning_requests`` on the API server's ``/metrics``."""

from __future__ import annotations

import subprocess
import time
import urllib.parse
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from olmkit.apiserver.metrics import RequestInfo, RequestMetrics, request_info
from tests.apiserver.conftest import Http, InProcessServer, kubectl_path

CM = "/api/v1/namespaces/ns/configmaps"


def _cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}


def scrape(http: Http) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """``/metrics`` as {sample name: {sorted labels: value}}."""
    response = http.request("GET", "/metrics")
    assert 200 == response.status, response.data
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    found: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.data.decode()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def requests(http: Http, **match: str) -> float:
    """The sum of ``apiserver_request_total`` over the samples whose labels include ``match``."""
    samples = scrape(http).get("apiserver_request_total", {})
    return sum(v for labels, v in samples.items() if match.items() <= dict(labels).items())


CSV_STATUS = "/apis/operators.coreos.com/v1alpha1/namespaces/ns/clusterserviceversions/x/status"
APPLY = "application/apply-patch+yaml"


@pytest.mark.parametrize(
    ("request_line", "expected"),
    [
        # "METHOD PATH[?QUERY] [CONTENT-TYPE]" -> "verb|group|version|resource|subresource|scope|dry_run"
        (f"GET {CM}", "LIST||v1|configmaps||namespace|"),
        (f"GET {CM}/a", "GET||v1|configmaps||resource|"),
        (f"GET {CM}?watch=true", "WATCH||v1|configmaps||namespace|"),
        (f"GET {CM}?watch=false", "LIST||v1|configmaps||namespace|"),
        ("GET /api/v1/watch/namespaces/ns/configmaps", "WATCH||v1|configmaps||namespace|"),
        (f"POST {CM}", "POST||v1|configmaps||resource|"),
        (f"POST {CM}?dryRun=All", "POST||v1|configmaps||resource|All"),
        (f"PUT {CM}/a", "PUT||v1|configmaps||resource|"),
        (f"PATCH {CM}/a application/merge-patch+json", "PATCH||v1|configmaps||resource|"),
        (f"PATCH {CM}/a {APPLY}", "APPLY||v1|configmaps||resource|"),
        (f"DELETE {CM}/a", "DELETE||v1|configmaps||resource|"),
        (f"DELETE {CM}", "DELETE||v1|configmaps||namespace|"),
        (f"PUT {CSV_STATUS}", "PUT|operators.coreos.com|v1alpha1|clusterserviceversions|status|resource|"),
        (
            "GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "LIST|apiextensions.k8s.io|v1|customresourcedefinitions||cluster|",
        ),
        ("GET /api/v1/namespaces/ns", "GET||v1|namespaces||resource|"),
        ("PUT /api/v1/namespaces/ns/status", "PUT||v1|namespaces|status|resource|"),
        ("GET /api/v1/namespaces", "LIST||v1|namespaces||cluster|"),
        ("GET /apis/operators.coreos.com/v1alpha1", "GET||||/apis/operators.coreos.com/v1alpha1||"),
        ("GET /api", "GET||||/api||"),
        ("HEAD /version", "GET||||/version||"),
    ],
)
def test_request_info_labels_as_the_api_server_does(request_line: str, expected: str) -> None:
    """Verb (GET/LIST/WATCH/APPLY), group, version, resource, subresource and scope come from the request alone."""
    method, target, *content_type = request_line.split()
    path, _, query = target.partition("?")

    info = request_info(method, path, dict(urllib.parse.parse_qsl(query)), "".join(content_type))

    assert RequestInfo(*expected.split("|")) == info


def test_a_watch_is_in_the_gauge_while_open_and_in_the_counter_once_ended() -> None:
    """``started``/``ended`` keep the long-running gauge; the counter counts a request when it ends, with its code."""
    metrics = RequestMetrics()
    watch = RequestInfo("WATCH", "", "v1", "configmaps", "", "cluster")
    labels = (
        'component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="WATCH",version="v1"'
    )
    counted = 'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",'

    metrics.started(watch)
    assert f"apiserver_longrunning_requests{{{labels}}} 1.0" in metrics.render().decode()
    assert "apiserver_request_total{" not in metrics.render().decode()

    metrics.ended(watch, 200)
    metrics.ended(RequestInfo("GET", "", "v1", "configmaps", "", "resource"), None)  # the client went away
    text = metrics.render().decode()
    assert f"apiserver_longrunning_requests{{{labels}}} 0.0" in text
    assert counted + 'scope="cluster",subresource="",verb="WATCH",version="v1"} 1.0' in text
    assert 1 == text.count("apiserver_request_total{")


def test_every_verb_is_counted_with_its_code(in_process: InProcessServer) -> None:
    """Create, get, list, update, patch, apply, delete, a 404 and a 409 each count once, under their verb and code."""
    http = in_process.http
    http.json("POST", CM, _cm("a"))
    http.json("POST", CM, _cm("a"))  # 409 AlreadyExists
    http.json("POST", CM + "?dryRun=All", _cm("b"))
    status, obj = http.json("GET", CM + "/a")
    assert 200 == status
    http.json("GET", CM + "/missing")  # 404
    http.json("GET", CM)
    http.json("PUT", CM + "/a", {**obj, "data": {"k": "2"}})
    http.json("PATCH", CM + "/a", {"data": {"k": "3"}}, content_type="application/merge-patch+json")
    http.request(
        "PATCH",
        CM + "/a?fieldManager=test&force=true",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: '4'}\n",
        content_type="application/apply-patch+yaml",
    )
    http.json("DELETE", CM + "/a")
    http.request("GET", CM, token="wrong")  # 401: not authenticated, not counted

    counted = {
        (verb, code, scope, dry_run): requests(
            http, verb=verb, code=code, resource="configmaps", scope=scope, dry_run=dry_run
        )
        for verb, code, scope, dry_run in [
            ("POST", "201", "resource", ""),
            ("POST", "409", "resource", ""),
            ("POST", "201", "resource", "All"),
            ("GET", "200", "resource", ""),
            ("GET", "404", "resource", ""),
            ("LIST", "200", "namespace", ""),
            ("PUT", "200", "resource", ""),
            ("PATCH", "200", "resource", ""),
            ("APPLY", "200", "resource", ""),
            ("DELETE", "200", "resource", ""),
        ]
    }

    assert dict.fromkeys(counted, 1.0) == counted
    assert 10 == requests(http, resource="configmaps")
    # the eleven scrapes above: a scrape counts once answered, so not in its own figures
    assert 11 == requests(http, verb="GET", subresource="/metrics", scope="", code="200")


def test_open_watches_are_in_the_gauge_and_counted_when_they_end(in_process: InProcessServer) -> None:
    """A watch shows in ``apiserver_longrunning_requests`` while open; it counts as one WATCH when it ends."""
    http = in_process.http
    stream = http.request("GET", CM + "?watch=true&timeoutSeconds=2", preload=False)
    assert 200 == stream.status

    gauge = scrape(http)["apiserver_longrunning_requests"]
    assert [1.0] == [v for labels, v in gauge.items() if dict(labels)["resource"] == "configmaps"]
    assert 0 == requests(http, verb="WATCH")

    stream.read()  # the server ends the watch after timeoutSeconds
    stream.release_conn()
    deadline = time.monotonic() + 10
    while requests(http, verb="WATCH") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 1 == requests(http, verb="WATCH", resource="configmaps", scope="namespace", code="200")
    gauge = scrape(http)["apiserver_longrunning_requests"]
    assert [0.0] == [v for labels, v in gauge.items() if dict(labels)["resource"] == "configmaps"]


def test_kubectl_reads_the_metrics_and_its_list_is_counted(in_process: InProcessServer) -> None:
    """The real kubectl: ``get --raw /metrics`` works, and ``kubectl get configmaps`` is one namespaced LIST."""
    kubectl = kubectl_path()
    before = requests(in_process.http, verb="LIST", resource="configmaps", scope="namespace")

    def run(*args: str) -> str:
        done = subprocess.run(
            [kubectl, "--kubeconfig", str(in_process.kubeconfig), *args], capture_output=True, text=True, timeout=60
        )
        assert 0 == done.returncode, done.stderr
        return done.stdout

    run("get", "configmaps", "-n", "ns")
    raw = run("get", "--raw", "/metrics")

    assert "# TYPE apiserver_request_total counter" in raw
    assert before + 1 == requests(in_process.http, verb="LIST", resource="configmaps", scope="namespace")
