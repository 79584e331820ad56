"""``olmkit apply``, ``get``, ``describe`` and ``delete`` on a SQLite store."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import yaml

from olmkit import hookimpl
from olmkit.cli import build_parser
from olmkit.cli.fields import age
from olmkit.errors import InputError, PluginError
from olmkit.lifecycle.apply import load_manifest_files
from olmkit.lifecycle.catalogs import MANIFEST_DIR_ANNOTATION
from olmkit.types import AdmissionCheck

from .conftest import catalog_source

V1A1 = "operators.coreos.com/v1alpha1"


def subscription(name="etcd", namespace=None, **spec):
    meta = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": V1A1, "kind": "Subscription", "metadata": meta, "spec": {"name": name, "source": "c"} | spec}


def everything(store):
    """Every object of the kinds these tests write, as (kind, namespace, name)."""
    kinds = [
        (V1A1, "Subscription"),
        (V1A1, "CatalogSource"),
        (V1A1, "InstallPlan"),
        ("operators.coreos.com/v1", "OperatorGroup"),
        ("v1", "ConfigMap"),
    ]
    return [
        (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for a, k in kinds for o in store.list(a, k)
    ]


# --------------------------------------------------------------------------- apply


def test_apply_creates_then_reports_unchanged_and_configured(olmkit, write, store):
    """apply creates, re-applying the same is unchanged, a changed spec is configured (status kept)."""
    path = write("sub.yaml", subscription(channel="stable"))

    first = olmkit("apply", "-f", path)
    again = olmkit("apply", "-f", path)
    stored = store.get(V1A1, "Subscription", "etcd", "default")
    stored["status"] = {"installedCSV": "etcd.v1"}
    store.update_status(stored)
    changed = subscription(channel="fast")
    changed["metadata"]["labels"] = {"team": "db"}
    write("sub.yaml", changed)
    third = olmkit("apply", "-f", path)
    after = store.get(V1A1, "Subscription", "etcd", "default")

    assert (0, "subscription.operators.coreos.com/etcd created\n") == (first.code, first.out)
    assert (0, "subscription.operators.coreos.com/etcd unchanged\n") == (again.code, again.out)
    assert (0, "subscription.operators.coreos.com/etcd configured\n") == (third.code, third.out)
    assert {"name": "etcd", "source": "c", "channel": "fast"} == after["spec"]
    assert {"installedCSV": "etcd.v1"} == after["status"]
    assert {"team": "db"} == after["metadata"]["labels"]


def test_apply_merges_labels_and_replaces_content(olmkit, write, store):
    """Labels given are merged into the stored ones; the content (data) is replaced whole."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1"}}
    olmkit("apply", "-f", write("cm.yaml", cm))
    cm2 = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"b": "2"}}, "data": {"y": "2"}}

    result = olmkit("apply", "-f", write("cm.yaml", cm2))
    stored = store.get("v1", "ConfigMap", "c", "default")

    assert "configmap/c configured\n" == result.out
    assert {"a": "1", "b": "2"} == stored["metadata"]["labels"]
    assert {"y": "2"} == stored["data"]


def test_apply_reads_directories_multi_document_files_and_lists(olmkit, write, store):
    """A directory's YAML and JSON files, several documents each and kind: List, in file order."""
    write("dir/a.yaml", subscription("one"), subscription("two"))
    write(
        "dir/b.json",
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [subscription("three", namespace="ops")]}),
    )
    notes = write("dir/notes.txt", "not a manifest")

    result = olmkit("apply", "-f", str(Path(notes).parent))

    assert 0 == result.code
    assert [
        "subscription.operators.coreos.com/one created",
        "subscription.operators.coreos.com/two created",
        "subscription.operators.coreos.com/three created",
    ] == result.out.splitlines()
    assert [
        ("Subscription", "default", "one"),
        ("Subscription", "default", "two"),
        ("Subscription", "ops", "three"),
    ] == everything(store)


def test_apply_namespace_flag_sets_and_guards_the_namespace(olmkit, write, store):
    """-n gives objects without a namespace one; an object naming another namespace is refused."""
    other = write("b.yaml", subscription("b", namespace="dev"))

    ok = olmkit("apply", "-n", "ops", "-f", write("a.yaml", subscription("a")))
    bad = olmkit("apply", "-n", "ops", "-f", other)

    assert 0 == ok.code
    assert [("Subscription", "ops", "a")] == everything(store)
    assert (
        2,
        f"olmkit: error: {other}: Subscription/b: "
        "the object's namespace 'dev' does not match the namespace 'ops' given with -n\n",
    ) == (bad.code, bad.err)


def test_apply_records_the_manifest_directory_of_a_catalog_source(olmkit, write, store, tmp_path):
    """A CatalogSource remembers the absolute directory of its manifest, for a relative spec.path."""
    olmkit("apply", "-f", write("cat/src.yaml", catalog_source("c", "olm", "catalog")))

    stored = store.get(V1A1, "CatalogSource", "c", "olm")

    assert str((tmp_path / "cat").resolve()) == stored["metadata"]["annotations"][MANIFEST_DIR_ANNOTATION]


@pytest.mark.parametrize(
    "argv",
    [
        ("apply", "-f", "x.yaml", "-n", "BAD NS"),
        ("get", "sub", "-n", "Ops"),
        ("install", "etcd", "-n", "a.b"),
        ("install", "etcd", "--catalog", "c", "--catalog-namespace", "x-"),
        ("resolve", "--catalog", "x", "--subscribe", "p", "-n", "a" * 64),
        ("reconcile", "--global-namespace", "OLM"),
    ],
    ids=["apply", "get", "install", "catalog-namespace", "resolve", "global"],
)
def test_invalid_namespace_options_are_refused(olmkit, store, argv):
    """A namespace given on the command line must be a DNS-1123 label: exit 2 naming the option, nothing written."""
    result = olmkit(*argv)

    assert 2 == result.code
    assert "is not a valid namespace name" in result.err
    assert f"argument {argv[-2]}" in result.err or f"/{argv[-2]}" in result.err
    assert [] == list(store.list(V1A1, "Subscription", None))


def test_apply_refuses_a_dotted_namespace(olmkit, write, store):
    """Object names may hold dots, namespace names may not."""
    result = olmkit("apply", "-f", write("s.yaml", subscription("etcd", namespace="a.b", channel="stable")))

    assert 2 == result.code
    assert "metadata.namespace 'a.b' is not a valid namespace name" in result.err


def test_apply_reads_standard_input(olmkit, store, tmp_path, monkeypatch):
    """-f - reads the objects from standard input; a CatalogSource's relative path is from the working directory."""
    monkeypatch.chdir(tmp_path)
    text = yaml.safe_dump_all([subscription("etcd", channel="stable"), catalog_source("c", "olm", "catalog")])
    monkeypatch.setattr("sys.stdin", io.StringIO(text))

    result = olmkit("apply", "-f", "-")

    assert 0 == result.code
    assert "stable" == store.get(V1A1, "Subscription", "etcd", "default")["spec"]["channel"]
    source = store.get(V1A1, "CatalogSource", "c", "olm")
    assert str(tmp_path) == source["metadata"]["annotations"][MANIFEST_DIR_ANNOTATION]


def test_apply_names_standard_input_in_errors(olmkit, store, monkeypatch):
    """A bad object read from standard input is refused, naming <stdin>; nothing is written."""
    monkeypatch.setattr("sys.stdin", io.StringIO("kind: [Subscription\n"))

    result = olmkit("apply", "-f", "-")

    assert 2 == result.code
    assert result.err.startswith("olmkit: error: <stdin>:2: invalid YAML")
    assert [] == list(store.list(V1A1, "Subscription"))


BAD = [
    ("malformed YAML", "kind: [Subscription\n", "{path}:2: invalid YAML: expected ',' or ']', but got '<stream end>'"),
    ("no kind", "metadata: {name: x}\n", "{path}: object has no kind"),
    ("null kind", "kind:\nmetadata: {name: x}\n", "{path}: an object's kind must be a non-empty string"),
    ("no apiVersion", "kind: ConfigMap\nmetadata: {name: x}\n", "{path}: ConfigMap/x: apiVersion is required"),
    ("no name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "{path}: ConfigMap: metadata.name is required"),
    (
        "bad name",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: My_Map}\n",
        "{path}: ConfigMap/My_Map: metadata.name 'My_Map' is not a valid name: lower-case letters, digits, '-' "
        "and '.', starting and ending with a letter or digit",
    ),
    (
        "subscription types",
        f"apiVersion: {V1A1}\nkind: Subscription\nmetadata: {{name: s}}\nspec: {{name: p, channel: [a]}}\n",
        "{path}: Subscription/s: spec.source is required; spec.channel must be a string, not a list",
    ),
    (
        "catalog source interval",
        f"apiVersion: {V1A1}\nkind: CatalogSource\nmetadata: {{name: c}}\n"
        "spec: {sourceType: file, priority: 1.5, updateStrategy: {registryPoll: {interval: 10 min}}}\n",
        "{path}: CatalogSource/c: spec.priority must be an integer, not a number; "
        "spec.updateStrategy.registryPoll.interval must be a duration such as 30m0s, 10s or 1h, not '10 min'",
    ),
    (
        "operator group",
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata: {name: g}\n"
        "spec: {targetNamespaces: [a], staticProvidedAPIs: 'yes'}\n",
        "{path}: OperatorGroup/g: spec.staticProvidedAPIs must be true or false, not a string",
    ),
]


@pytest.mark.parametrize(("case", "text", "message"), BAD, ids=[b[0] for b in BAD])
def test_apply_refuses_a_bad_manifest_and_writes_nothing(olmkit, write, store, case, text, message):
    """Every object is checked before any is written: a good file given first is not applied either."""
    good = write(
        "good.yaml", subscription("fine"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}}
    )
    bad = write("bad.yaml", text)

    result = olmkit("apply", "-f", good, "-f", bad)

    assert (2, "", f"olmkit: error: {message.format(path=bad)}\n") == (result.code, result.out, result.err)
    assert [] == everything(store)


def test_apply_reports_how_many_objects_were_refused(olmkit, write, store):
    """Several bad objects: the first is named, the others counted, on one line."""
    path = write("bad.yaml", subscription("a", source=""), subscription("b", source=""))

    result = olmkit("apply", "-f", path)

    assert f"olmkit: error: {path}: Subscription/a: spec.source is required (and 1 more object(s) refused)\n" == (
        result.err
    )
    assert [] == everything(store)


def test_apply_without_files_is_a_usage_error(olmkit):
    """apply with no -f: exit 2, one line."""
    result = olmkit("apply")

    assert (2, "olmkit: error: apply needs manifests: -f FILE (a file or a directory, repeatable)\n") == (
        result.code,
        result.err,
    )


def test_apply_dry_run_writes_nothing(olmkit, write, store):
    """--dry-run validates and reports what would happen."""
    result = olmkit("apply", "--dry-run", "-f", write("s.yaml", subscription()))

    assert "subscription.operators.coreos.com/etcd created (dry run)\n" == result.out
    assert [] == everything(store)


def test_hook_olmkit_admission_checks(olmkit_pm, olmkit_register, write, db, store):
    """A plugin's admission check refuses objects in apply before any write; one that raises is a PluginError."""

    class NoLatest:
        @hookimpl
        def olmkit_admission_checks(self):
            def check(obj, context):
                if (obj.get("data") or {}).get("tag") == "latest":
                    yield f"data.tag must pin a version (old: {context.old is not None})"

            yield AdmissionCheck(name="no-latest", check=check, kinds={"ConfigMap"})

    olmkit_register(NoLatest(), "no-latest-plugin")
    good = write("ok.yaml", subscription("fine"))
    path = write(
        "cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"tag": "latest"}}
    )
    args = build_parser(olmkit_pm).parse_args(["apply", "-f", good, "-f", path, "--store", db])

    with pytest.raises(InputError) as refused:
        args.func(args, olmkit_pm)

    assert f"{path}: ConfigMap/c: data.tag must pin a version (old: False)" == str(refused.value)
    assert [] == everything(store)

    class Broken:
        @hookimpl
        def olmkit_admission_checks(self):
            yield AdmissionCheck(name="broken", check=lambda obj, ctx: [][1], kinds={"Subscription"})

    olmkit_register(Broken(), "broken-plugin")
    args = build_parser(olmkit_pm).parse_args(["apply", "-f", good, "--store", db])

    with pytest.raises(PluginError) as failed:
        args.func(args, olmkit_pm)

    assert "plugin 'broken-plugin': admission check 'broken' failed on Subscription/fine: IndexError(" in str(
        failed.value
    )
    assert [] == everything(store)


def test_load_manifest_files_returns_file_and_object_pairs(write):
    """The reader `apply` and `delete` share: (file, object) in order, List items flattened."""
    path = write("m.yaml", subscription("a"), {"apiVersion": "v1", "kind": "List", "items": [subscription("b")]})

    assert [(path, subscription("a")), (path, subscription("b"))] == load_manifest_files([path])


# --------------------------------------------------------------------------- get


@pytest.fixture
def seeded(olmkit, write, store):
    """Two subscriptions in default, one in ops, a CSV with a status, an InstallPlan."""
    olmkit(
        "apply",
        "-f",
        write(
            "seed.yaml",
            subscription("etcd", channel="stable"),
            subscription("prometheus", channel="beta", source="community"),
            subscription("vault", namespace="ops", channel="v1"),
            {
                "apiVersion": V1A1,
                "kind": "ClusterServiceVersion",
                "metadata": {"name": "etcd.v0.9.4"},
                "spec": {
                    "displayName": "etcd",
                    "version": "0.9.4",
                    "replaces": "etcd.v0.9.2",
                    "install": {"strategy": "deployment"},
                },
            },
            {
                "apiVersion": V1A1,
                "kind": "InstallPlan",
                "metadata": {"name": "install-x7k2p"},
                "spec": {"approval": "Manual", "approved": False, "clusterServiceVersionNames": ["etcd.v0.9.4"]},
            },
        ),
    )
    csv = store.get(V1A1, "ClusterServiceVersion", "etcd.v0.9.4", "default")
    csv["status"] = {"phase": "Succeeded", "reason": "InstallSucceeded"}
    store.update_status(csv)
    return store


def test_get_subscriptions_table(olmkit, seeded):
    """Subscription columns: NAME PACKAGE SOURCE CHANNEL, in the default namespace."""
    result = olmkit("get", "subscriptions")

    assert [
        "NAME         PACKAGE      SOURCE      CHANNEL",
        "etcd         etcd         c           stable",
        "prometheus   prometheus   community   beta",
    ] == result.out.splitlines()


@pytest.mark.parametrize("name", ["sub", "subs", "subscription", "Subscription", "subscriptions.operators.coreos.com"])
def test_get_short_and_long_names(olmkit, seeded, name):
    """Every spelling of a kind names the same objects."""
    assert ["etcd", "prometheus"] == olmkit("get", name, "-o", "name").out.replace(
        "subscription.operators.coreos.com/", ""
    ).split()


def test_get_all_namespaces_adds_the_namespace_column(olmkit, seeded):
    """-A lists every namespace, NAMESPACE first."""
    result = olmkit("get", "sub", "-A")

    assert [
        "NAMESPACE   NAME         PACKAGE      SOURCE      CHANNEL",
        "default     etcd         etcd         c           stable",
        "default     prometheus   prometheus   community   beta",
        "ops         vault        vault        c           v1",
    ] == result.out.splitlines()


def test_get_csv_and_install_plan_tables(olmkit, seeded):
    """CSV: NAME DISPLAY VERSION REPLACES PHASE; InstallPlan: NAME CSV APPROVAL APPROVED (wide adds PHASE)."""
    csvs = olmkit("get", "csv")
    plans = olmkit("get", "ip")

    assert [
        "NAME          DISPLAY   VERSION   REPLACES      PHASE",
        "etcd.v0.9.4   etcd      0.9.4     etcd.v0.9.2   Succeeded",
    ] == csvs.out.splitlines()
    assert [
        "NAME            CSV           APPROVAL   APPROVED",
        "install-x7k2p   etcd.v0.9.4   Manual     false",
    ] == plans.out.splitlines()


def test_get_wide_adds_columns(olmkit, seeded):
    """-o wide adds the columns kubectl keeps for wide output (here: the CSV's reason and age)."""
    header = olmkit("get", "csv", "-o", "wide").out.splitlines()[0].split()

    assert ["NAME", "DISPLAY", "VERSION", "REPLACES", "PHASE", "REASON", "AGE"] == header


def test_get_catalog_source_table_has_an_age(olmkit, examples):
    """CatalogSource: NAME DISPLAY TYPE PUBLISHER AGE (a fresh object is seconds old)."""
    lines = olmkit("get", "catsrc", "-n", "olm").out.splitlines()

    assert ["NAME", "DISPLAY", "TYPE", "PUBLISHER", "AGE"] == lines[0].split()
    assert ["examples", "examples", "operators", "file"] == lines[1].split()[:4]
    assert lines[1].split()[-1] in {"0s", "1s", "2s", "3s"}


def test_get_json_one_object_or_a_list(olmkit, seeded):
    """By one name -o json prints the object; otherwise a v1 List."""
    one = orjson.loads(olmkit("get", "sub", "etcd", "-o", "json").out)
    many = orjson.loads(olmkit("get", "sub", "-o", "json").out)

    assert ("Subscription", "etcd") == (one["kind"], one["metadata"]["name"])
    assert ("List", ["etcd", "prometheus"]) == (many["kind"], [i["metadata"]["name"] for i in many["items"]])


def test_get_several_kinds_at_once(olmkit, seeded):
    """csv,ip: one table per kind that has objects, names as kind/name, a blank line between (kubectl's way)."""
    result = olmkit("get", "csv,ip,og")

    assert 0 == result.code
    assert [
        ["NAME", "DISPLAY", "VERSION", "REPLACES", "PHASE"],
        ["clusterserviceversion.operators.coreos.com/etcd.v0.9.4", "etcd", "0.9.4", "etcd.v0.9.2", "Succeeded"],
        [],
        ["NAME", "CSV", "APPROVAL", "APPROVED"],
        ["installplan.operators.coreos.com/install-x7k2p", "etcd.v0.9.4", "Manual", "false"],
    ] == [line.split() for line in result.out.splitlines()]


def test_get_several_kinds_as_one_list_or_names(olmkit, seeded):
    """-o json gives one List over the kinds in the order asked; -o name one line per object; a name is looked
    up in each kind and reported missing where it is not."""
    data = orjson.loads(olmkit("get", "ip,csv", "-o", "json").out)
    names = olmkit("get", "sub,csv", "-o", "name").out.splitlines()
    one = olmkit("get", "sub,csv", "etcd", "-o", "name")

    assert ["InstallPlan", "ClusterServiceVersion"] == [item["kind"] for item in data["items"]]
    assert [
        "subscription.operators.coreos.com/etcd",
        "subscription.operators.coreos.com/prometheus",
        "clusterserviceversion.operators.coreos.com/etcd.v0.9.4",
    ] == names
    assert (1, "subscription.operators.coreos.com/etcd\n") == (one.code, one.out)
    assert 'clusterserviceversions.operators.coreos.com "etcd" not found' in one.err


@pytest.mark.parametrize("kinds", ["csv,", "csv,widgets"])
def test_get_several_kinds_bad_spelling_is_a_usage_error(olmkit, seeded, kinds):
    """An empty or unknown kind in a list: exit 2, one line, nothing printed."""
    result = olmkit("get", kinds)

    assert (2, "") == (result.code, result.out)
    assert 1 == len(result.err.splitlines())


def test_get_by_label_selector(olmkit, write, seeded):
    """-l selects by labels."""
    labelled = subscription("labelled")
    labelled["metadata"]["labels"] = {"tier": "gold"}
    olmkit("apply", "-f", write("l.yaml", labelled))

    assert "subscription.operators.coreos.com/labelled\n" == olmkit("get", "sub", "-l", "tier=gold", "-o", "name").out


def test_get_not_found_is_one_line_exit_1(olmkit, seeded):
    """A missing name: kubectl's NotFound line on stderr, exit 1; the found ones are still printed."""
    result = olmkit("get", "sub", "etcd", "nope", "-o", "name")

    assert (1, "subscription.operators.coreos.com/etcd\n") == (result.code, result.out)
    assert 'Error from server (NotFound): subscriptions.operators.coreos.com "nope" not found\n' == result.err


def test_get_nothing_found(olmkit, seeded):
    """An empty list is not an error: a note on stderr, exit 0."""
    result = olmkit("get", "og")

    assert (0, "", "No resources found in default namespace.\n") == (result.code, result.out, result.err)


def test_get_unknown_kind_is_a_usage_error(olmkit, seeded):
    """An unknown kind: exit 2, one line."""
    result = olmkit("get", "widgets")

    assert 2 == result.code
    assert "olmkit: error: unknown resource type 'widgets' (try csv, sub, ip, catsrc, og, crd, deploy)\n" == result.err


def test_get_a_custom_kind_by_its_crd_names(olmkit, write, store):
    """Kinds declared by stored CRDs are found by their plural and short names."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    widget = {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
    applied = olmkit("apply", "-f", write("crd.yaml", crd, widget))

    result = olmkit("get", "wd", "-o", "name")

    assert [
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.io created",
        "widget.example.io/w1 created",
    ] == applied.out.splitlines()
    assert "widget.example.io/w1\n" == result.out


# --------------------------------------------------------------------------- describe


RESOLUTION_MESSAGE = (
    "constraints not satisfiable:\n"
    "  subscription etcd requires c/default/stable/etcd.v0.9.4\n"
    "    etcd.v0.9.4 requires an operator providing an API with group: certs.example.io\n"
    "      no operators found providing that API"
)


def test_describe_a_subscription_keeps_a_multi_line_condition_message_intact(olmkit, seeded):
    """Conditions show type, status, reason, and the full message indented, line by line."""
    sub = seeded.get(V1A1, "Subscription", "etcd", "default")
    sub["status"] = {
        "state": "UpgradePending",
        "currentCSV": "etcd.v0.9.4",
        "conditions": [
            {
                "type": "ResolutionFailed",
                "status": "True",
                "reason": "ConstraintsNotSatisfiable",
                "message": RESOLUTION_MESSAGE,
                "lastTransitionTime": "2020-01-01T00:00:00Z",
            }
        ],
    }
    seeded.update_status(sub)

    lines = olmkit("describe", "sub", "etcd").out.splitlines()
    at = lines.index("Conditions:")

    assert ["Name:         etcd", "Namespace:    default"] == lines[:2]
    assert ["Spec:", "  Name:     etcd", "  Source:   c", "  Channel:  stable"] == lines[
        lines.index("Spec:") : lines.index("Spec:") + 4
    ]
    assert ["Status:", "  State:        UpgradePending", "  Current CSV:  etcd.v0.9.4"] == lines[
        lines.index("Status:") : lines.index("Status:") + 3
    ]
    assert ["TYPE", "STATUS", "REASON", "AGE"] == lines[at + 1].split()
    assert ["ResolutionFailed", "True", "ConstraintsNotSatisfiable"] == lines[at + 2].split()[:3]
    assert ["    " + line for line in RESOLUTION_MESSAGE.splitlines()] == lines[at + 3 : at + 7]
    assert "Events:       <none>" == lines[-1]


def test_describe_install_plan_steps_and_csv_requirements(olmkit, seeded):
    """An InstallPlan's steps (resolving, kind, name, status) and a CSV's requirement status are tables."""
    plan = seeded.get(V1A1, "InstallPlan", "install-x7k2p", "default")
    plan["status"] = {
        "phase": "Complete",
        "plan": [
            {
                "resolving": "etcd.v0.9.4",
                "resource": {"kind": "ClusterServiceVersion", "name": "etcd.v0.9.4"},
                "status": "Created",
            },
            {
                "resolving": "etcd.v0.9.4",
                "resource": {"kind": "CustomResourceDefinition", "name": "etcdclusters.etcd.database.coreos.com"},
                "status": "Created",
            },
        ],
    }
    seeded.update_status(plan)
    csv = seeded.get(V1A1, "ClusterServiceVersion", "etcd.v0.9.4", "default")
    csv["status"]["requirementStatus"] = [
        {
            "group": "apiextensions.k8s.io",
            "version": "v1",
            "kind": "CustomResourceDefinition",
            "name": "etcdclusters.etcd.database.coreos.com",
            "status": "Present",
            "message": "CRD is present and Established condition is true",
        },
    ]
    seeded.update_status(csv)

    plan_lines = olmkit("describe", "ip", "install-x7k2p").out.splitlines()
    csv_lines = olmkit("describe", "csv", "etcd.v0.9.4").out.splitlines()
    steps = plan_lines.index("Steps:")
    reqs = csv_lines.index("Requirements:")

    assert [
        "Steps:",
        "  RESOLVING     KIND                       NAME                                    STATUS",
        "  etcd.v0.9.4   ClusterServiceVersion      etcd.v0.9.4                             Created",
        "  etcd.v0.9.4   CustomResourceDefinition   etcdclusters.etcd.database.coreos.com   Created",
    ] == plan_lines[steps : steps + 4]
    assert [
        "Requirements:",
        "  KIND                       NAME                                    API                       STATUS    "
        "MESSAGE",
        "  CustomResourceDefinition   etcdclusters.etcd.database.coreos.com   apiextensions.k8s.io/v1   Present   "
        "CRD is present and Established condition is true",
    ] == csv_lines[reqs : reqs + 3]
    assert [
        "Spec:",
        "  Display Name:      etcd",
        "  Version:           0.9.4",
        "  Replaces:          etcd.v0.9.2",
        "  Install Strategy:  deployment",
    ] == csv_lines[csv_lines.index("Spec:") : csv_lines.index("Spec:") + 5]


def test_describe_not_found(olmkit, seeded):
    """describe of a missing object: the NotFound line, exit 1."""
    result = olmkit("describe", "csv", "nope")

    assert (1, 'Error from server (NotFound): clusterserviceversions.operators.coreos.com "nope" not found\n') == (
        result.code,
        result.err,
    )


# --------------------------------------------------------------------------- delete


def test_delete_by_name_and_not_found(olmkit, seeded):
    """delete removes named objects; a missing one is reported and exits 1."""
    result = olmkit("delete", "sub", "etcd", "nope")

    assert 1 == result.code
    assert 'subscription.operators.coreos.com "etcd" deleted\n' == result.out
    assert 'Error from server (NotFound): subscriptions.operators.coreos.com "nope" not found\n' == result.err
    assert ["prometheus"] == [o["metadata"]["name"] for o in seeded.list(V1A1, "Subscription", "default")]


def test_delete_from_manifest_files(olmkit, write, store):
    """delete -f removes the objects a manifest describes."""
    path = write("s.yaml", subscription("a"), subscription("b", namespace="ops"))
    olmkit("apply", "-f", path)

    result = olmkit("delete", "-f", path)

    assert (0, ['subscription.operators.coreos.com "a" deleted', 'subscription.operators.coreos.com "b" deleted']) == (
        result.code,
        result.out.splitlines(),
    )
    assert [] == everything(store)


def test_delete_needs_a_name(olmkit, seeded):
    """delete KIND alone is a usage error."""
    result = olmkit("delete", "sub")

    assert (2, "olmkit: error: delete sub needs a name (or -l SELECTOR, or --all)\n") == (result.code, result.err)


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (0, "0s"),
        (59, "59s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 120, "3h2m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (20 * 86400, "20d"),
        (800 * 86400, "2y70d"),
    ],
)
def test_age_is_kubectl_human_duration(seconds, expected):
    """age() follows kubectl's HumanDuration."""
    now = datetime(2030, 1, 1, tzinfo=UTC)
    then = datetime.fromtimestamp(now.timestamp() - seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    assert expected == age(then, now)


def test_store_defaults_to_the_environment(tmp_path, monkeypatch, write, capsys):
    """Without --store the store is $OLMKIT_STORE."""
    from olmkit.cli import main
    from olmkit.store import SqliteStore

    path = tmp_path / "env.db"
    monkeypatch.setenv("OLMKIT_STORE", str(path))

    code = main(["apply", "-f", write("s.yaml", subscription())])

    assert 0 == code
    with SqliteStore(path) as s:
        assert ["etcd"] == [o["metadata"]["name"] for o in s.list(V1A1, "Subscription")]


def test_get_suggests_the_close_kind(olmkit, seeded):
    """A misspelt kind names the close one."""
    result = olmkit("get", "subscriptons")

    assert (2, "olmkit: error: unknown resource type 'subscriptons'; did you mean 'subscriptions'?\n") == (
        result.code,
        result.err,
    )


def test_describe_a_kind_without_a_name_describes_each_object(olmkit, seeded):
    """describe KIND: every object of the kind in the namespace, one after the other."""
    result = olmkit("describe", "sub")

    names = [line.split()[1] for line in result.out.splitlines() if line.startswith("Name:")]
    assert (0, ["etcd", "prometheus"]) == (result.code, names)


def test_describe_a_kind_with_nothing_in_the_namespace(olmkit, seeded):
    """describe KIND in a namespace without such objects says so, as kubectl does."""
    result = olmkit("describe", "sub", "-n", "empty")

    assert (0, "", "No resources found in empty namespace.\n") == (result.code, result.out, result.err)
