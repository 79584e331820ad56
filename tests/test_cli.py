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
    """`olmkit --version` prints the version, the solver's implementation and its backends."""
    result = run("--version")

    from olmkit._solver import _encode

    impl = "native C" if _encode.IMPLEMENTATION == "native" else "pure Python"
    assert 0 == result.returncode
    assert f"olmkit {__version__}" == result.stdout.splitlines()[0]
    assert result.stdout.splitlines()[1].startswith(f"solver: {impl}")
    assert "backends: cryptominisat, " in result.stdout
    assert 2 == len(result.stdout.splitlines())


def test_version_names_the_pure_twin_when_asked(monkeypatch):
    """With OLMKIT_PURE_PYTHON=1, --version says the pure-Python twin runs."""
    monkeypatch.setenv("OLMKIT_PURE_PYTHON", "1")

    result = run("--version")

    assert "solver: pure Python (OLMKIT_PURE_PYTHON); " in result.stdout
    assert "(default pure)" in result.stdout


# The C part made unimportable, as when it could not be built.
_NO_C = "import sys; sys.modules['olmkit._solver._speedups'] = None; from olmkit.cli import main; sys.exit(main())"


def _without_c(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-c", _NO_C, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_resolving_without_the_c_part_says_so_once(tmp_path):
    """A resolving command on an install without the C part prints one line on stderr
    saying so (and still resolves); OLMKIT_QUIET_PURE=1 silences it; --version says it."""
    import pathlib

    catalog = pathlib.Path(__file__).resolve().parent.parent / "examples" / "catalog"
    argv = ("resolve", "--catalog", str(catalog), "--subscribe", "cert-manager-lite", "--no-cache")

    loud = _without_c(*argv, env={"OLMKIT_QUIET_PURE": ""})
    quiet = _without_c(*argv, env={"OLMKIT_QUIET_PURE": "1"})
    version = _without_c("--version")

    assert 0 == loud.returncode, loud.stderr
    lines = loud.stderr.strip().splitlines()
    assert 1 == len(lines)
    assert lines[0].startswith("olmkit: warning: the solver's C part is not built")
    assert "OLMKIT_QUIET_PURE=1" in lines[0]
    assert loud.stdout == quiet.stdout
    assert "" == quiet.stderr
    assert "solver: pure Python (the C part is not built); backends: cryptominisat, pure" in version.stdout


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
    solver = by_name["olmkit._solver"]
    assert "kernel" == solver["origin"]
    assert solver["registers"]["solver implementation"][0] in ("native C", "pure Python")
    assert {"cryptominisat", "pure"} <= {n.split()[0] for n in solver["registers"]["solver backends"]}


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


def test_usage_errors_point_at_the_subcommands_help(capsys):
    """An unknown option after a subcommand is reported with that subcommand's help, exit 2."""
    codes = [main(["get", "csv", "--bogus"]), main(["catalog", "validate", "--bogus", "x"]), main(["--bogus"])]

    err = capsys.readouterr().err.splitlines()
    assert [2, 2, 2] == codes
    assert [
        "olmkit: error: unrecognized arguments: --bogus (see 'olmkit get --help')",
        "olmkit: error: unrecognized arguments: --bogus (see 'olmkit catalog validate --help')",
        "olmkit: error: unrecognized arguments: --bogus (see 'olmkit --help')",
    ] == err


def test_debug_is_accepted_after_the_subcommand(tmp_path):
    """--debug after the subcommand turns a user error into its traceback."""
    result = run("catalog", "validate", str(tmp_path / "missing"), "--debug")
    plain = run("catalog", "validate", str(tmp_path / "missing"))

    assert "Traceback (most recent call last)" in result.stderr
    assert "Traceback" not in plain.stderr
    assert plain.stderr.startswith("olmkit: error: ")


def test_a_group_without_its_subcommand_shows_every_command(capsys):
    """'olmkit bench' (parsed with the short parser) still prints the help of every command; exit 2."""
    code = main(["bench"])

    err = capsys.readouterr().err
    assert 2 == code
    assert "run-bundle" in err
    assert "list-available" in err
