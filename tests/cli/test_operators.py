"""``olmkit install``, ``uninstall``, ``approve``, ``list`` and ``list-available`` on a SQLite store."""

from __future__ import annotations

import json

import orjson
import pytest

from .conftest import catalog_source

V1A1 = "operators.coreos.com/v1alpha1"
V1 = "operators.coreos.com/v1"


def specs(store, api_version, kind, namespace=None):
    return {o["metadata"]["name"]: o.get("spec") for o in store.list(api_version, kind, namespace)}


# --------------------------------------------------------------------------- install


def test_install_creates_the_subscription_and_an_operator_group(olmkit, examples, store):
    """install subscribes to the default channel of the catalog that has the package, and makes an OperatorGroup."""
    result = olmkit("install", "postgres-operator", "-n", "db")

    assert (0, "") == (result.code, result.err)
    assert [
        "operatorgroup.operators.coreos.com/db created",
        "subscription.operators.coreos.com/postgres-operator created "
        "(channel stable, catalog olm/examples, approval Automatic)",
    ] == result.out.splitlines()
    assert {
        "postgres-operator": {
            "name": "postgres-operator",
            "source": "examples",
            "sourceNamespace": "olm",
            "channel": "stable",
            "installPlanApproval": "Automatic",
        }
    } == specs(store, V1A1, "Subscription", "db")
    assert {"db": {"targetNamespaces": ["db"]}} == specs(store, V1, "OperatorGroup", "db")


def test_install_keeps_an_existing_operator_group(olmkit, examples, write, store):
    """A namespace that has an OperatorGroup gets no second one."""
    group = {"apiVersion": V1, "kind": "OperatorGroup", "metadata": {"name": "mine", "namespace": "db"}}
    olmkit("apply", "-f", write("og.yaml", group))

    result = olmkit("install", "cert-manager-lite", "-n", "db", "--channel", "candidate", "--approval", "Manual")

    assert [
        "subscription.operators.coreos.com/cert-manager-lite created "
        "(channel candidate, catalog olm/examples, approval Manual)"
    ] == result.out.splitlines()
    assert ["mine"] == list(specs(store, V1, "OperatorGroup", "db"))
    assert "Manual" == specs(store, V1A1, "Subscription", "db")["cert-manager-lite"]["installPlanApproval"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [(["--watch", "a,b", "--watch", "c"], {"targetNamespaces": ["a", "b", "c"]}), (["--watch-all"], {})],
    ids=["watch", "watch-all"],
)
def test_install_operator_group_targets(olmkit, examples, store, flags, expected):
    """--watch names the new OperatorGroup's target namespaces; --watch-all targets every namespace."""
    result = olmkit("install", "storage-operator", "-n", "ops", *flags)

    assert 0 == result.code
    assert {"ops": expected} == specs(store, V1, "OperatorGroup", "ops")


@pytest.mark.parametrize(
    ("mini_priority", "expected"),
    [(5, "default/mini"), (0, "olm/examples")],
    ids=["higher-priority-wins", "then-by-name"],
)
def test_install_chooses_the_catalog_by_priority_then_name(
    olmkit, examples, write, mini_catalog, store, mini_priority, expected
):
    """Two visible catalogs have the package: the higher spec.priority wins, then the name."""
    olmkit("apply", "-f", write("mini.yaml", catalog_source("mini", "default", mini_catalog, mini_priority)))

    result = olmkit("install", "cert-manager-lite")
    spec = specs(store, V1A1, "Subscription", "default")["cert-manager-lite"]

    assert 0 == result.code
    assert expected == f"{spec['sourceNamespace']}/{spec['source']}"


def test_install_from_a_named_catalog(olmkit, examples, write, mini_catalog, store):
    """--catalog picks the CatalogSource; a package it lacks is an error listing what it has."""
    olmkit("apply", "-f", write("mini.yaml", catalog_source("mini", "default", mini_catalog, 100)))

    lacking = olmkit("install", "postgres-operator", "--catalog", "mini")
    chosen = olmkit(
        "install", "cert-manager-lite", "--catalog", "examples", "--starting-csv", "cert-manager-lite.v1.1.0"
    )
    spec = specs(store, V1A1, "Subscription", "default")["cert-manager-lite"]

    assert (
        2,
        'olmkit: error: package "postgres-operator" not found in catalog default/mini (it has: cert-manager-lite)\n',
    ) == (
        lacking.code,
        lacking.err,
    )
    assert 0 == chosen.code
    assert ("olm", "examples", "cert-manager-lite.v1.1.0") == (
        spec["sourceNamespace"],
        spec["source"],
        spec["startingCSV"],
    )


def test_install_an_unknown_package_lists_what_exists(olmkit, examples, store):
    """An unknown package: exit 2, a suggestion and the packages visible; nothing written."""
    result = olmkit("install", "postgres-operatr")

    assert (2, "") == (result.code, result.out)
    assert (
        'olmkit: error: package "postgres-operatr" not found in the catalogs visible from namespace default '
        "(olm/examples); did you mean postgres-operator? (packages: backup-operator, cert-manager-lite, "
        "legacy-monitor, postgres-operator, storage-operator)\n" == result.err
    )
    assert {} == specs(store, V1A1, "Subscription")
    assert {} == specs(store, V1, "OperatorGroup")


def test_install_an_unknown_channel_or_starting_csv_lists_what_exists(olmkit, examples, store):
    """A channel or starting CSV the package does not have: exit 2 naming the ones it has."""
    channel = olmkit("install", "postgres-operator", "--channel", "beta")
    start = olmkit("install", "postgres-operator", "--channel", "fast", "--starting-csv", "postgres-operator.v2.0.0")

    assert (
        2,
        'olmkit: error: channel "beta" not found in package "postgres-operator" (catalog olm/examples); '
        "channels: fast, stable\n",
    ) == (channel.code, channel.err)
    assert (
        2,
        'olmkit: error: --starting-csv "postgres-operator.v2.0.0" is not in channel "fast" of package '
        '"postgres-operator" (entries: postgres-operator.v2.3.0, postgres-operator.v2.4.0)\n',
    ) == (start.code, start.err)
    assert {} == specs(store, V1A1, "Subscription")


def test_install_without_catalogs(olmkit, store):
    """No catalog visible from the namespace: exit 2, saying where it looked; nothing written."""
    none = olmkit("install", "etcd")

    assert (
        2,
        'olmkit: error: package "etcd": no catalog is visible from namespace default '
        "(CatalogSources in default, olm); apply one first\n",
    ) == (none.code, none.err)
    assert {} == specs(store, V1, "OperatorGroup")


def test_install_when_every_visible_catalog_is_unreadable(olmkit, store, write, tmp_path):
    """Catalogs exist but none can be read: the error says so and names them, instead of "no catalog"."""
    olmkit("apply", "-f", write("broken.yaml", catalog_source("broken", "olm", str(tmp_path / "missing"))))

    result = olmkit("install", "etcd")

    assert 2 == result.code
    warning, error = result.err.splitlines()
    assert warning.startswith("warning: catalog olm/broken cannot be read and is skipped: ")
    assert (
        'olmkit: error: package "etcd": no catalog visible from namespace default can be read (olm/broken); '
        "fix the CatalogSource (see the warning above) or apply another"
    ) == error
    assert {} == specs(store, V1A1, "Subscription")


def test_install_twice_is_refused(olmkit, examples):
    """A package already subscribed in the namespace is not subscribed again."""
    olmkit("install", "storage-operator")

    again = olmkit("install", "storage-operator")

    assert (
        2,
        'olmkit: error: package "storage-operator" is already subscribed in namespace default '
        "(subscription storage-operator); uninstall it first, or change it with apply\n",
    ) == (again.code, again.err)


# --------------------------------------------------------------------------- uninstall


def test_uninstall_deletes_the_subscription_and_its_csv(olmkit, examples, store):
    """uninstall removes the Subscription and the CSV it installed, and leaves other CSVs alone."""
    olmkit("install", "storage-operator")
    for name in ("storage-operator.v0.5.0", "other.v1.0.0"):
        store.create(
            {
                "apiVersion": V1A1,
                "kind": "ClusterServiceVersion",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"install": {"strategy": "deployment"}},
            }
        )
    sub = store.get(V1A1, "Subscription", "storage-operator", "default")
    sub["status"] = {"installedCSV": "storage-operator.v0.5.0", "currentCSV": "storage-operator.v0.5.0"}
    store.update_status(sub)

    result = olmkit("uninstall", "storage-operator")

    assert (
        0,
        [
            'subscription.operators.coreos.com "storage-operator" deleted',
            'clusterserviceversion.operators.coreos.com "storage-operator.v0.5.0" deleted',
        ],
    ) == (result.code, result.out.splitlines())
    assert {} == specs(store, V1A1, "Subscription")
    assert ["other.v1.0.0"] == list(specs(store, V1A1, "ClusterServiceVersion"))


def test_uninstall_says_when_the_controllers_still_have_to_clean_up(olmkit, examples, store):
    """A CSV held by the lifecycle's cleanup finalizer goes on the next reconcile; uninstall says so."""
    olmkit("install", "storage-operator")
    store.create(
        {
            "apiVersion": V1A1,
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": "storage-operator.v0.5.0",
                "namespace": "default",
                "finalizers": ["operators.coreos.com/csv-cleanup"],
            },
            "spec": {"install": {"strategy": "deployment"}},
        }
    )
    sub = store.get(V1A1, "Subscription", "storage-operator", "default")
    sub["status"] = {"installedCSV": "storage-operator.v0.5.0"}
    store.update_status(sub)

    result = olmkit("uninstall", "storage-operator")

    assert 0 == result.code
    assert "the operator's workload goes when the controllers next run" in result.out.splitlines()[-1]
    held = store.get(V1A1, "ClusterServiceVersion", "storage-operator.v0.5.0", "default")
    assert held["metadata"]["deletionTimestamp"]


def test_uninstall_a_package_not_installed(olmkit, store):
    """Nothing subscribed to the package: the NotFound line, exit 1."""
    result = olmkit("uninstall", "etcd", "-n", "ops")

    assert (1, 'Error from server (NotFound): package "etcd" has no subscription in namespace ops\n') == (
        result.code,
        result.err,
    )


# --------------------------------------------------------------------------- approve


@pytest.fixture
def plan(store):
    """An InstallPlan waiting for approval."""

    def make(phase="RequiresApproval", approved=False):
        store.create(
            {
                "apiVersion": V1A1,
                "kind": "InstallPlan",
                "metadata": {"name": "install-abc12", "namespace": "default"},
                "spec": {"approval": "Manual", "approved": approved, "clusterServiceVersionNames": ["a.v1"]},
            }
        )
        obj = store.get(V1A1, "InstallPlan", "install-abc12", "default")
        obj["status"] = {"phase": phase}
        store.update_status(obj)

    return make


def test_approve_sets_approved(olmkit, plan, store):
    """approve sets spec.approved; approving again says so and changes nothing."""
    plan()

    first = olmkit("approve", "install-abc12")
    again = olmkit("approve", "install-abc12")
    stored = store.get(V1A1, "InstallPlan", "install-abc12", "default")

    assert (0, "installplan.operators.coreos.com/install-abc12 approved\n") == (first.code, first.out)
    assert (0, "installplan.operators.coreos.com/install-abc12 already approved\n") == (again.code, again.out)
    assert (True, "Manual", {"phase": "RequiresApproval"}) == (
        stored["spec"]["approved"],
        stored["spec"]["approval"],
        stored["status"],
    )


def test_approve_a_finished_plan_or_a_missing_one(olmkit, plan, store):
    """A Complete or Failed plan cannot be approved (exit 2); a missing one is NotFound (exit 1)."""
    plan(phase="Failed")

    finished = olmkit("approve", "install-abc12")
    missing = olmkit("approve", "install-zzz")

    assert (
        2,
        "olmkit: error: install plan default/install-abc12 has finished (phase Failed); nothing to approve\n",
    ) == (
        finished.code,
        finished.err,
    )
    assert False is store.get(V1A1, "InstallPlan", "install-abc12", "default")["spec"]["approved"]
    assert (1, 'Error from server (NotFound): installplans.operators.coreos.com "install-zzz" not found\n') == (
        missing.code,
        missing.err,
    )


# --------------------------------------------------------------------------- list


def test_list_installed_operators(olmkit, examples, store):
    """list joins Subscriptions with their CSVs' phases; a CSV no Subscription claims is listed too."""
    olmkit("install", "storage-operator")
    olmkit("install", "cert-manager-lite", "-n", "certs")
    for name, ns, phase in (
        ("storage-operator.v0.5.0", "default", "Succeeded"),
        ("manual.v1.0.0", "default", "Failed"),
    ):
        store.create(
            {
                "apiVersion": V1A1,
                "kind": "ClusterServiceVersion",
                "metadata": {"name": name, "namespace": ns},
                "spec": {"install": {"strategy": "deployment"}},
            }
        )
        csv = store.get(V1A1, "ClusterServiceVersion", name, ns)
        csv["status"] = {"phase": phase}
        store.update_status(csv)
    sub = store.get(V1A1, "Subscription", "storage-operator", "default")
    sub["status"] = {"installedCSV": "storage-operator.v0.5.0", "currentCSV": "storage-operator.v0.5.0"}
    store.update_status(sub)

    table = olmkit("list")
    everywhere = orjson.loads(olmkit("list", "-A", "-o", "json").out)

    assert [
        "PACKAGE            SUBSCRIPTION       INSTALLED-CSV             PHASE",
        "storage-operator   storage-operator   storage-operator.v0.5.0   Succeeded",
        "                                      manual.v1.0.0             Failed",
    ] == table.out.splitlines()
    assert [
        ("certs", "cert-manager-lite", "cert-manager-lite", "", ""),
        ("default", "storage-operator", "storage-operator", "storage-operator.v0.5.0", "Succeeded"),
        ("default", "", "", "manual.v1.0.0", "Failed"),
    ] == [(r["namespace"], r["package"], r["subscription"], r["installedCSV"], r["phase"]) for r in everywhere]


def test_list_nothing_installed(olmkit, store):
    """No operators: a note on stderr, exit 0."""
    result = olmkit("list", "-n", "ops")

    assert (0, "", "No operators installed in ops namespace.\n") == (result.code, result.out, result.err)


# --------------------------------------------------------------------------- list-available


def test_list_available_packages_of_the_visible_catalogs(olmkit, examples, write, mini_catalog):
    """Every package of the catalogs a namespace sees (its own and olm), with channels and default head."""
    olmkit("apply", "-f", write("mini.yaml", catalog_source("mini", "team", mini_catalog)))

    default = olmkit("list-available")
    team = orjson.loads(olmkit("list-available", "cert-manager-lite", "-n", "team", "-o", "json").out)

    assert ["PACKAGE", "CATALOG", "DEFAULT-CHANNEL", "CHANNELS", "HEAD"] == default.out.splitlines()[0].split()
    assert [
        "backup-operator",
        "cert-manager-lite",
        "legacy-monitor",
        "postgres-operator",
        "storage-operator",
    ] == [line.split()[0] for line in default.out.splitlines()[1:]]
    assert ["postgres-operator", "olm/examples", "stable", "stable,fast", "postgres-operator.v2.3.0"] == next(
        line.split() for line in default.out.splitlines() if line.startswith("postgres-operator")
    )
    assert [
        {
            "package": "cert-manager-lite",
            "catalog": "olm/examples",
            "catalogDisplayName": "examples operators",
            "defaultChannel": "stable",
            "channels": ["stable", "candidate"],
            "head": "cert-manager-lite.v1.2.0",
        },
        {
            "package": "cert-manager-lite",
            "catalog": "team/mini",
            "catalogDisplayName": "mini operators",
            "defaultChannel": "stable",
            "channels": ["stable", "candidate"],
            "head": "cert-manager-lite.v1.2.0",
        },
    ] == team


def test_list_available_skips_a_broken_catalog_with_a_warning(olmkit, examples, write, tmp_path):
    """A catalog that cannot be read is named on stderr; the others are still listed."""
    olmkit("apply", "-f", write("broken.yaml", catalog_source("broken", "default", str(tmp_path / "missing"))))

    result = olmkit("list-available", "-o", "json")

    assert 0 == result.code
    assert result.err.startswith("warning: catalog default/broken cannot be read and is skipped: ")
    assert {"olm/examples"} == {r["catalog"] for r in orjson.loads(result.out)}


@pytest.mark.parametrize(
    "ref", ["installplan/install-abc12", "ip/install-abc12", "installplans.operators.coreos.com/install-abc12"]
)
def test_approve_takes_the_form_get_prints(olmkit, plan, store, ref):
    """approve installplan/NAME (what get -o name prints) approves the plan."""
    plan()

    result = olmkit("approve", ref)

    assert (0, "installplan.operators.coreos.com/install-abc12 approved\n") == (result.code, result.out)
    assert store.get(V1A1, "InstallPlan", "install-abc12", "default")["spec"]["approved"] is True


def test_approve_refuses_another_kind(olmkit, plan):
    """approve subscription/x is a usage error naming what approve takes."""
    plan()

    result = olmkit("approve", "subscription/install-abc12")

    assert 2 == result.code
    assert "approve takes an InstallPlan: NAME or installplan/NAME" in result.err


def test_install_suggests_the_close_channel(olmkit, examples):
    """A misspelt --channel names the close one."""
    result = olmkit("install", "postgres-operator", "-n", "demo", "--channel", "stabel")

    assert 2 == result.code
    assert 'channel "stabel" not found in package "postgres-operator"' in result.err
    assert "did you mean stable?" in result.err


def test_list_available_keeps_a_package_with_many_channels_readable(olmkit, write, tmp_path):
    """A package with 39 channels: the CHANNELS cell shows what fits and counts the rest; JSON has them all."""
    catalog = tmp_path / "many"
    catalog.mkdir()
    channels = [f"release-4.{n}" for n in range(39)]
    blobs = [{"schema": "olm.package", "name": "wide", "defaultChannel": "release-4.38"}]
    blobs += [
        {"schema": "olm.channel", "package": "wide", "name": c, "entries": [{"name": "wide.v1.0.0"}]} for c in channels
    ]
    blobs.append(
        {
            "schema": "olm.bundle",
            "name": "wide.v1.0.0",
            "package": "wide",
            "image": "example.invalid/wide:v1",
            "properties": [{"type": "olm.package", "value": {"packageName": "wide", "version": "1.0.0"}}],
        }
    )
    (catalog / "catalog.json").write_text("\n".join(json.dumps(b) for b in blobs))
    olmkit("apply", "-f", write("cs.yaml", catalog_source("many", "olm", str(catalog))))

    table = olmkit("list-available")
    data = olmkit("list-available", "-o", "json")

    row = table.out.splitlines()[1]
    assert len(row) < 140
    assert "release-4.38," in row
    assert row.rstrip().endswith("wide.v1.0.0")
    assert "more)" in row
    assert 39 == len(json.loads(data.out)[0]["channels"])


def test_uninstall_suggests_the_close_package(olmkit, examples):
    """uninstall of a misspelt package: NotFound (exit 1) naming the subscribed one it is close to."""
    olmkit("install", "postgres-operator", "-n", "demo")

    result = olmkit("uninstall", "postgres-operatr", "-n", "demo")

    assert 1 == result.code
    assert result.err.endswith("; did you mean postgres-operator?\n")
