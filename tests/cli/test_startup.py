"""Start-up: a command imports only its own module and loads plugins only when it uses them."""

from __future__ import annotations

import json
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
