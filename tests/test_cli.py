"""The command line frame: version, plugin listing, error handling."""

from __future__ import annotations

import subprocess
import sys

import orjson

from olmkit import __version__
from olmkit.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "olmkit", *args], capture_output=True, text=True, check=False)


def test_version():
    """`olmkit --version` prints the version."""
    result = run("--version")

    assert 0 == result.returncode
    assert f"olmkit {__version__}" == result.stdout.strip()


def test_plugins_list_json_lists_builtins(capsys):
    """`plugins list -o json` lists each plugin with origin, hooks and registered names."""
    code = main(["plugins", "list", "-o", "json"])
    data = orjson.loads(capsys.readouterr().out)

    assert 0 == code
    by_name = {p["name"]: p for p in data}
    for plugin in by_name.values():
        assert {"name", "origin", "hooks", "registers"} <= set(plugin)
    builtins = [p for p in data if p["origin"] == "built-in"]
    assert all(p["hooks"] for p in builtins)


def test_plugins_list_yaml_and_table(capsys):
    """The same data is available as YAML and as a table."""
    assert 0 == main(["plugins", "list", "-o", "yaml"])
    assert "- name: olmkit.plugins." in capsys.readouterr().out
    assert 0 == main(["plugins", "list"])
    header = capsys.readouterr().out.splitlines()[0].split()
    assert ["NAME", "ORIGIN", "HOOKS", "REGISTERS"] == header


def test_usage_error_is_one_line_exit_2():
    """An unknown command is one line on stderr and exit code 2, no traceback."""
    result = run("no-such-command")

    assert 2 == result.returncode
    assert "Traceback" not in result.stderr
    assert 1 == len(result.stderr.strip().splitlines())
