"""kubectl's JSONPath templates, as -o jsonpath and wait --for=jsonpath use them."""

from __future__ import annotations

import pytest

from olmkit.cli.jsonpath import JSONPath
from olmkit.errors import UsageError

LIST = {
    "kind": "List",
    "items": [
        {
            "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "alpha"}},
            "spec": {"replicas": 1, "containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]},
        },
        {
            "metadata": {"name": "b"},
            "spec": {"replicas": 3, "containers": [{"name": "c3", "image": "i3"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}]},
        },
    ],
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{.items[*].metadata.name}", "a b"),
        (".items[0].metadata.name", "a"),
        ("{.items[-1].spec.replicas}", "3"),
        ('{range .items[*]}{.metadata.name}{"\\t"}{.spec.replicas}{"\\n"}{end}', "a\t1\nb\t3\n"),
        ("{.items[?(@.spec.replicas>2)].metadata.name}", "b"),
        ('{.items[0].status.conditions[?(@.type=="Ready")].status}', "True"),
        ("{.items[0].spec.containers[0:1].name}", "c1"),
        ("{..image}", "i1 i2 i3"),
        ("{.items[0].metadata.labels['app\\.kubernetes\\.io/name']}", "alpha"),
        ("{.items[0].spec.containers[0]}", '{"name":"c1","image":"i1"}'),
        ("name: {.items[1].metadata.name}!", "name: b!"),
        ("{.items[0].metadata.missing}", ""),
        ("{range .items[*]}{range .spec.containers[*]}{.name},{end}{end}", "c1,c2,c3,"),
        ("{.items[?(@.metadata.labels)].metadata.name}", "a"),
    ],
)
def test_templates_render_as_kubectl_renders_them(template, expected):
    """Fields, wildcards, negative indexes, range/end, filters, slices, recursion, quoted keys, literals."""
    assert expected == JSONPath(template).render(LIST)


@pytest.mark.parametrize("template", ["{.a", "{range .items[*]}{.x}", "{end}", "{.items[?(@.x ~ 1)]}", "{a.b}"])
def test_broken_templates_are_usage_errors_quoting_the_template(template):
    """A template that does not parse is a usage error naming it."""
    with pytest.raises(UsageError, match="jsonpath"):
        JSONPath(template)
