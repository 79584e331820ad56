"""kubectl habits on get: -o jsonpath / custom-columns, --sort-by, --no-headers, --show-labels,
--field-selector, -w, and get with no kind."""

from __future__ import annotations

import pytest

from .conftest import set_channel

V1A1 = "operators.coreos.com/v1alpha1"


def sub(name: str, channel: str, *, labels: dict | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": V1A1,
        "kind": "Subscription",
        "metadata": meta,
        "spec": {"name": name, "channel": channel, "source": "c", "sourceNamespace": "olm"},
    }


@pytest.fixture
def subs(olmkit, write):
    """Three subscriptions: zeta (stable), alpha (beta, labelled), mid (stable)."""
    result = olmkit(
        "apply",
        "-f",
        write("s.yaml", sub("zeta", "stable"), sub("alpha", "beta", labels={"tier": "gold"}), sub("mid", "stable")),
    )
    assert 0 == result.code, result.err


def test_jsonpath_output(olmkit, subs):
    """-o jsonpath applies to the List, or to the object when one is named."""
    listed = olmkit("get", "sub", "-o", "jsonpath={.items[*].metadata.name}")
    named = olmkit("get", "sub", "alpha", "-o", "jsonpath={.spec.channel}")
    ranged = olmkit("get", "sub", "-o", 'jsonpath={range .items[*]}{.metadata.name}={.spec.channel}{"\\n"}{end}')

    assert "alpha mid zeta" == listed.out
    assert "beta" == named.out
    assert "alpha=beta\nmid=stable\nzeta=stable\n" == ranged.out


def test_custom_columns_sort_by_and_no_headers(olmkit, subs):
    """-o custom-columns with --sort-by on a field and --no-headers."""
    result = olmkit(
        "get", "sub", "-o", "custom-columns=NAME:.metadata.name,CHANNEL:.spec.channel", "--sort-by", ".spec.channel"
    )
    bare = olmkit("get", "sub", "--no-headers", "--sort-by", "{.metadata.name}")

    assert ["NAME    CHANNEL", "alpha   beta", "mid     stable", "zeta    stable"] == result.out.splitlines()
    assert ["alpha", "mid", "zeta"] == [line.split()[0] for line in bare.out.splitlines()]


def test_show_labels_and_field_selector(olmkit, subs):
    """--show-labels adds LABELS; --field-selector keeps matching objects (=, !=)."""
    labelled = olmkit("get", "sub", "--show-labels", "--field-selector", "metadata.name=alpha")
    others = olmkit("get", "sub", "-o", "name", "--field-selector", "spec.channel!=beta")

    assert labelled.out.splitlines()[0].split()[-1] == "LABELS"
    assert labelled.out.splitlines()[1].split()[-1] == "tier=gold"
    assert 2 == len(labelled.out.splitlines())
    assert ["subscription.operators.coreos.com/mid", "subscription.operators.coreos.com/zeta"] == others.out.split()


def test_bad_templates_and_selectors_are_usage_errors(olmkit, subs):
    """A broken jsonpath, a custom-columns spec without paths, a field selector without '=': exit 2."""
    assert 2 == olmkit("get", "sub", "-o", "jsonpath={.a").code
    assert 2 == olmkit("get", "sub", "-o", "custom-columns=NAME").code
    bad = olmkit("get", "sub", "--field-selector", "metadata.name")
    assert 2 == bad.code
    assert "is not PATH=VALUE" in bad.err


def test_get_without_a_kind_lists_the_kinds(olmkit):
    """get alone says a kind is needed and names some, pointing at get's help; exit 2."""
    result = olmkit("get")

    assert 2 == result.code
    assert "get needs the kind of resource: one of " in result.err
    assert "csv" in result.err
    assert "(see 'olmkit get --help')" in result.err


def test_watch_prints_the_list_then_each_change(olmkit, subs, meanwhile):
    """get -w lists, then prints a row for each change until the watch ends."""
    with meanwhile(set_channel("mid", "fast")):
        result = olmkit(
            "get", "sub", "-w", "--watch-timeout", "2", "-o", "custom-columns=NAME:.metadata.name,CH:.spec.channel"
        )

    lines = result.out.splitlines()
    assert ["NAME    CH", "alpha   beta", "mid     stable", "zeta    stable"] == lines[:4]
    assert ["mid", "fast"] == lines[4].split()
    assert 5 == len(lines)


def test_jsonpath_over_several_kinds_is_one_list(olmkit, subs, write):
    """get sub,cm -o jsonpath: one List of every kind, as kubectl renders it."""
    olmkit("apply", "-f", write("cm.yaml", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}))

    result = olmkit("get", "sub,cm", "-o", "jsonpath={.items[*].metadata.name}")

    assert "alpha mid zeta cfg" == result.out


def test_watch_only_prints_only_changes(olmkit, subs, meanwhile):
    """--watch-only skips the current list and prints a header with the first change."""
    with meanwhile(lambda s: s.delete(V1A1, "Subscription", "zeta", "default")):
        result = olmkit(
            "get", "sub", "--watch-only", "--watch-timeout", "2", "-o", "custom-columns=NAME:.metadata.name"
        )

    assert ["NAME", "zeta"] == result.out.splitlines()


def test_watch_json_prints_each_changed_object(olmkit, subs, meanwhile):
    """get -w -o json: after the List, each change is the object itself, as kubectl prints it."""
    import json

    with meanwhile(set_channel("alpha", "fast")):
        result = olmkit("get", "sub", "--watch-only", "--watch-timeout", "2", "-o", "json")

    changed = json.loads(result.out)
    assert ("Subscription", "alpha", "fast") == (
        changed["kind"],
        changed["metadata"]["name"],
        changed["spec"]["channel"],
    )
