"""Start-up: a command imports only its own module and loads plugins only when it uses them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from olmkit.cli import COMMAND_HOMES, COMMAND_MODULES, build_parser


def _top_level(parser):
    return set(parser._subparsers._group_actions[0].choices)


def test_command_homes_match_what_the_modules_define():
    """COMMAND_HOMES names, for every built-in command, exactly the modules that add it."""
    defined: dict[str, set[str]] = {}
    for module in COMMAND_MODULES:
        for command in _top_level(build_parser(None, modules=(module,))):
            defined.setdefault(command, set()).add(module)

    assert defined == {command: set(modules) for command, modules in COMMAND_HOMES.items()}


def _imports_after(*argv: str, tmp_path) -> dict[str, bool]:
    """Run the command line in a fresh interpreter; which heavy modules it imported."""
    program = (
        "import sys, json\n"
        "from olmkit.cli import main\n"
        f"code = main({list(argv)!r})\n"
        "watch = ['olmkit.manager', 'pluggy', 'olmkit.resolver', 'olmkit.catalog', 'yaml', 'olmkit.cli.operators', "
        "'attrs', 'kubernetes', 'olmkit.kube', 'importlib.metadata', 'email', 'subprocess']\n"
        "print(json.dumps({m: m in sys.modules for m in watch} | {'code': code}))\n"
    )
    env = {"OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_version_imports_nothing_heavy(tmp_path):
    """--version loads neither the plugin manager nor pluggy, nor attrs (the solver line needs neither)."""
    seen = _imports_after("--version", tmp_path=tmp_path)

    assert {"code": 0, "olmkit.manager": False, "pluggy": False, "yaml": False, "attrs": False} == {
        k: seen[k] for k in ("code", "olmkit.manager", "pluggy", "yaml", "attrs")
    }


def test_get_loads_no_plugins_and_no_resolver(tmp_path):
    """get on a store needs neither the plugins, nor the resolver, catalogs, YAML, other command modules
    or the kube backend and its client."""
    store = tmp_path / "cluster.db"
    from olmkit.store import SqliteStore

    with SqliteStore(str(store)) as s:
        s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}})

    seen = _imports_after("get", "configmap", "--store", str(store), tmp_path=tmp_path)

    assert {
        "code": 0,
        "olmkit.manager": False,
        "pluggy": False,
        "olmkit.resolver": False,
        "olmkit.catalog": False,
        "yaml": False,
        "olmkit.cli.operators": False,
        "kubernetes": False,
        "olmkit.kube": False,
    } == {k: v for k, v in seen.items() if k not in ("attrs", "importlib.metadata", "email", "subprocess")}


def test_resolve_reads_the_plugins_entry_points_without_importlib_metadata(tmp_path):
    """A resolution finds the third-party plugins (the contrib ones are installed where the tests run) without
    importing importlib.metadata and the email package it parses metadata with, and starts no process."""
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples" / "catalog"

    seen = _imports_after(
        "resolve", "--catalog", str(examples), "--subscribe", "cert-manager-lite", "-o", "json", tmp_path=tmp_path
    )

    assert {"code": 0, "importlib.metadata": False, "email": False, "subprocess": False} == {
        k: seen[k] for k in ("code", "importlib.metadata", "email", "subprocess")
    }


#: what a resolution or a validation of a plain catalog must not import (each is paid for by every such
#: command otherwise): the store, the lifecycle, the Kubernetes client and API server, SQLite (the
#: sqlite-catalog plugin reads no index here), CEL, gitignore patterns, the semver and metrics libraries
_NEVER_ON_CATALOG_PATHS = (
    "olmkit.store._api",
    "olmkit.store.errors",
    "olmkit.store.selectors",
    "olmkit.lifecycle.runtime",
    "olmkit.lifecycle.kinds",
    "olmkit.lifecycle.strategy",
    "olmkit.lifecycle.status",
    "olmkit.plugins.deployment._installer",
    "olmkit.plugins.simulated._controllers",
    "olmkit.kube",
    "kubernetes",
    "olmkit.apiserver",
    "sqlite3",
    "celpy",
    "pathspec",
    "semver",
    "prometheus_client",
    "difflib",
)
#: ... and what only a resolution needs: a validation imports neither the resolver nor YAML
_NOT_ON_VALIDATE = (
    "yaml",
    "olmkit.resolver._resolve",
    "olmkit.resolver._build",
    "olmkit.resolver.request",
    "olmkit._solver.constraints",
)


def _plain_workload(tmp_path):
    """A one-package file-based catalog and manifests subscribing to it."""
    catalog = tmp_path / "catalog" / "alpha"
    catalog.mkdir(parents=True)
    blobs = [
        {"schema": "olm.package", "name": "alpha", "defaultChannel": "stable"},
        {
            "schema": "olm.channel",
            "package": "alpha",
            "name": "stable",
            "entries": [{"name": "alpha.v1.0.0"}, {"name": "alpha.v1.1.0", "replaces": "alpha.v1.0.0"}],
        },
    ] + [
        {
            "schema": "olm.bundle",
            "package": "alpha",
            "name": f"alpha.v{v}",
            "image": f"example.io/alpha:{v}",
            "properties": [{"type": "olm.package", "value": {"packageName": "alpha", "version": v}}],
        }
        for v in ("1.0.0", "1.1.0")
    ]
    (catalog / "index.json").write_text("\n".join(json.dumps(b) for b in blobs) + "\n")
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\n"
        f"metadata: {{name: bench, namespace: operators}}\nspec: {{sourceType: file, path: {tmp_path / 'catalog'}}}\n"
        "---\napiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata: {name: og, namespace: operators}\n"
        "---\napiVersion: operators.coreos.com/v1alpha1\nkind: Subscription\n"
        "metadata: {name: alpha, namespace: operators}\n"
        "spec: {name: alpha, channel: stable, source: bench, sourceNamespace: operators}\n"
    )
    return tmp_path / "catalog", manifests


def _modules_after(*argv: str, tmp_path) -> tuple[int, set[str], str]:
    """Run the olmkit program (as the console script does) in a fresh interpreter: exit code, the
    modules it imported, its standard output."""
    read, write = os.pipe()
    program = (
        "import atexit, json, os, sys\n"
        f"atexit.register(lambda: os.write({write}, json.dumps(sorted(sys.modules)).encode()))\n"
        f"sys.argv = ['olmkit', *{list(argv)!r}]\n"
        "from olmkit.cli import entry\n"
        "entry()\n"
    )
    env = {"OLMKIT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    with subprocess.Popen(
        [sys.executable, "-c", program], stdout=subprocess.PIPE, env=env, pass_fds=(write,), text=True
    ) as child:
        os.close(write)
        out = child.stdout.read() if child.stdout else ""  # the module list (~10 kB) waits in its pipe
        with os.fdopen(read) as modules:
            imported = set(json.loads(modules.read() or "[]"))
    return child.returncode, imported, out


def test_a_resolution_imports_no_store_lifecycle_or_other_heavy_module(tmp_path):
    """`olmkit resolve` of a plain catalog: the answer, without importing any of the modules named above."""
    _, manifests = _plain_workload(tmp_path)

    code, imported, out = _modules_after("resolve", "-f", str(manifests), "-o", "json", tmp_path=tmp_path)

    assert (code, json.loads(out)["steps"][0]["bundle"]) == (0, "alpha.v1.1.0")
    assert "olmkit.resolver._resolve" in imported  # the check sees what a resolution imports
    assert sorted(imported.intersection(_NEVER_ON_CATALOG_PATHS)) == []


def test_a_validation_imports_neither_the_resolver_nor_yaml(tmp_path):
    """`olmkit catalog validate`: no resolver, solver constraints or YAML either (the kernel's resolve hook
    and the plugins are registered without importing them)."""
    catalog, _ = _plain_workload(tmp_path)

    code, imported, out = _modules_after("catalog", "validate", str(catalog), tmp_path=tmp_path)

    assert (code, out) == (0, f"{catalog}: valid: 0 errors, 0 warnings\n")
    assert {"olmkit.catalog.validate", "olmkit.resolver", "olmkit.manager"} <= imported
    assert sorted(imported.intersection(_NEVER_ON_CATALOG_PATHS + _NOT_ON_VALIDATE)) == []


def test_read_only_commands_do_not_create_a_store(tmp_path, capsys):
    """Commands that only read or remove, on a path with no store: exit 1, say so, create nothing."""
    from olmkit.cli import main

    where = tmp_path / "not" / "there" / "cluster.db"
    commands = [
        ["get", "csv"],
        ["describe", "sub", "x"],
        ["list"],
        ["list-available"],
        ["approve", "install-x"],
        ["uninstall", "x"],
        ["delete", "sub", "x"],
        ["wait", "sub", "x", "--for=delete"],
    ]

    codes = [main([*argv, "--store", str(where)]) for argv in commands]

    err = capsys.readouterr().err.splitlines()
    assert [1] * len(commands) == codes
    expected = f"olmkit: error: no store at {where}: nothing has been applied or installed there (give --store PATH)"
    assert [expected] * len(commands) == err
    assert not (tmp_path / "not").exists()
