"""A catalog served over gRPC and read back through the ``grpc`` source resolves byte for byte
as the same catalog read from its files: the example catalog, a generated one and (a subset of
the subscriptions of) community-operators-prod. ``benchmarks/bench_grpc.py --resolve-all``
runs every package of community-operators-prod.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from olmkit.catalog import load_catalog
from olmkit.cli.output import dump_json
from olmkit.cli.resolve import problem_objects
from olmkit.plugins.grpc_registry.client import fetch_catalog
from olmkit.resolver import SourceRef
from olmkit.resolver.manifests import Manifest, build_request

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "catalog"
# ../shared beside the repository (a clone); from a git worktree, the first such folder above it
SHARED = next((p / "shared" for p in ROOT.parents if (p / "shared" / "bench").is_dir()), ROOT.parent / "shared")
COMMUNITY = SHARED / "catalogs" / "community-operators-prod"
GENERATOR = SHARED / "bench" / "gen_catalog.py"


class _Fixed:
    """A source that gives one loaded catalog."""

    def __init__(self, name: str, catalog: Any) -> None:
        self.name = name
        self.catalog = catalog

    def load(self) -> Any:
        return self.catalog

    def health(self) -> Any:
        return None


def _resolve(pm: Any, objs: list[dict[str, Any]], ns: str, name: str, catalog: Any) -> bytes:
    request = build_request([Manifest(o, "<test>") for o in objs if o["kind"] != "CatalogSource"], pm=pm, namespace=ns)
    request = attrs.evolve(request, sources=(SourceRef(name, ns, _Fixed(name, catalog), 0),))
    resolution = pm.hook.olmkit_resolve(request=request)
    return dump_json(resolution.to_json(explain=True)).encode()


def _subscriptions(ns: str, name: str, wanted: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [{"kind": "OperatorGroup", "metadata": {"name": "og", "namespace": ns}}]
    for package, channel in wanted:
        spec = {"name": package, "source": name, "sourceNamespace": ns}
        if channel:
            spec["channel"] = channel
        objs.append({"kind": "Subscription", "metadata": {"name": package, "namespace": ns}, "spec": spec})
    return objs


def _both(pm: Any, root: Path, name: str, serve: Callable[..., Any]) -> tuple[Any, Any]:
    server = serve(root, watch_interval=0)
    return (
        load_catalog(root, pm.registry, name=name),
        fetch_catalog(f"127.0.0.1:{server.port}", pm.registry, name=name),
    )


def _assert_same(pm: Any, files: Any, served: Any, cases: list[list[dict[str, Any]]], ns: str, name: str) -> int:
    ok = 0
    for objs in cases:
        expected = _resolve(pm, objs, ns, name, files)
        actual = _resolve(pm, objs, ns, name, served)
        assert expected == actual, [o["spec"] for o in objs if o["kind"] == "Subscription"]
        ok += b'"status": "ok"' in expected
    return ok


def test_example_catalog_resolves_identically(olmkit_pm: Any, serve: Callable[..., Any]) -> None:
    """Every package and channel of the example catalog alone, all default channels together, and failures."""
    files, served = _both(olmkit_pm, EXAMPLES, "examples", serve)
    wanted = [(p, None) for p in sorted(files.packages)]
    wanted += [(p, ch) for p in sorted(files.channels) for ch in files.channels[p]]
    cases = [_subscriptions("ops", "examples", [w]) for w in wanted]
    cases.append(_subscriptions("ops", "examples", [(p, None) for p in sorted(files.packages)]))
    cases.append(_subscriptions("ops", "examples", [("postgres-operator", "nope")]))

    resolved = _assert_same(olmkit_pm, files, served, cases, "ops", "examples")

    assert resolved >= len(wanted) // 2  # most resolve; the rest fail the same way on both


def test_resolve_command_output_is_byte_identical(
    tmp_path: Path, serve: Callable[..., Any], capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """``olmkit resolve -f`` with a grpc CatalogSource prints exactly what the file CatalogSource gives."""
    server = serve(EXAMPLES)
    outputs = []
    for spec in (
        {"sourceType": "file", "path": str(EXAMPLES)},
        {"sourceType": "grpc", "address": f"127.0.0.1:{server.port}"},
    ):
        objs = [
            {
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "CatalogSource",
                "metadata": {"name": "ex", "namespace": "olm"},
                "spec": spec,
            },
            *_subscriptions("ops", "ex", [("postgres-operator", "stable"), ("backup-operator", None)]),
        ]
        for o in objs[1:]:
            o["spec"] = (
                {**o.get("spec", {}), "sourceNamespace": "olm"} if o["kind"] == "Subscription" else o.get("spec", {})
            )
        manifest = tmp_path / f"{spec['sourceType']}.json"
        manifest.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
        code = subprocess.call(
            [sys.executable, "-m", "olmkit", "resolve", "-f", str(manifest), "-o", "json", "--explain"]
        )
        outputs.append((code, capfdbinary.readouterr().out))

    assert outputs[0] == outputs[1]
    assert 0 == outputs[0][0]
    assert b"postgres-operator.v2.3.0" in outputs[0][1]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not GENERATOR.exists():
        pytest.fail(f"{GENERATOR} is missing (the shared benchmark generator)")
    out = tmp_path_factory.mktemp("generated")
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            "--packages",
            "120",
            "--bundles",
            "8",
            "--subscriptions",
            "12",
            "--seed",
            "7",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return out


def test_generated_catalog_resolves_identically(olmkit_pm: Any, serve: Callable[..., Any], generated: Path) -> None:
    """gen_catalog.py's problem (installed CSVs, subscriptions, constraints), and each subscription alone."""
    objs = problem_objects(generated, olmkit_pm)
    ns, name = objs[0]["metadata"]["namespace"], objs[0]["metadata"]["name"]
    files, served = _both(olmkit_pm, generated / "catalog", name, serve)
    subs = [o for o in objs if o["kind"] == "Subscription"]
    rest = [o for o in objs if o["kind"] != "Subscription"]
    cases = [objs] + [[*rest, s] for s in subs]
    cases += [_subscriptions(ns, name, [(p, None)]) for p in sorted(files.packages)[::4]]

    resolved = _assert_same(olmkit_pm, files, served, cases, ns, name)

    assert resolved > 0


def test_community_operators_resolve_identically(olmkit_pm: Any, serve: Callable[..., Any]) -> None:
    """Every 8th package of community-operators-prod, subscribed alone on its default channel."""
    if not COMMUNITY.exists():
        pytest.fail(f"{COMMUNITY} is missing (the shared real catalog)")
    files, served = _both(olmkit_pm, COMMUNITY, "community", serve)
    packages = sorted(files.packages)[::8]
    cases = [_subscriptions("ops", "community", [(p, None)]) for p in packages]

    resolved = _assert_same(olmkit_pm, files, served, cases, "ops", "community")

    assert resolved >= len(packages) // 2
    assert sum(map(len, files.bundles.values())) == sum(map(len, served.bundles.values()))
