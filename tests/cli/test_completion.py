"""``olmkit completion bash|zsh``: the script completes commands, options and values in a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from olmkit.cli import main

BASH = shutil.which("bash")


def _script(capsys, shell: str) -> str:
    assert 0 == main(["completion", shell])
    return capsys.readouterr().out


def _complete(script: Path, *words: str) -> list[str]:
    """What the completion function offers for ``words`` (the last one is being typed)."""
    assert BASH is not None
    quoted = " ".join(f"'{w}'" for w in words)
    program = f"source {script}; COMP_WORDS=({quoted}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); "
    program += '_olmkit_complete; printf "%s\\n" "${COMPREPLY[@]}"'
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    done = subprocess.run([BASH, "-c", program], capture_output=True, text=True, check=True, timeout=60, env=env)
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def bash_script(tmp_path, capsys):
    if BASH is None:
        pytest.skip("bash is not installed")
    path = tmp_path / "olmkit.bash"
    path.write_text(_script(capsys, "bash"))
    return path


def test_bash_completes_commands_and_subcommands(bash_script):
    """Command words, then a group's subcommands, past options that take a value."""
    assert ["get"] == _complete(bash_script, "olmkit", "ge")
    assert ["validate"] == _complete(bash_script, "olmkit", "catalog", "v")
    assert ["validate"] == _complete(bash_script, "olmkit", "--debug", "catalog", "va")
    assert ["completion"] == _complete(bash_script, "olmkit", "compl")


def test_bash_completes_options_and_their_values(bash_script):
    """A command's own options, the choices of an option, and kinds for get."""
    assert ["--no-cache"] == _complete(bash_script, "olmkit", "catalog", "validate", "--n")
    assert ["table", "wide", "yaml", "json", "name", "jsonpath=", "custom-columns="] == _complete(
        bash_script, "olmkit", "get", "csv", "-o", ""
    )
    assert ["Automatic", "Manual"] == _complete(bash_script, "olmkit", "install", "x", "--approval", "")
    assert {"csv", "csvs"} <= set(_complete(bash_script, "olmkit", "get", "cs"))
    assert "subscription" in _complete(bash_script, "olmkit", "describe", "sub")


def test_bash_completes_files_for_path_options(bash_script, tmp_path):
    """An option that takes a path completes file names."""
    (tmp_path / "manifest-one.yaml").write_text("{}")

    assert [str(tmp_path / "manifest-one.yaml")] == _complete(
        bash_script, "olmkit", "apply", "-f", str(tmp_path / "manifest-")
    )


def test_zsh_script_reuses_the_function_through_bashcompinit(capsys):
    """The zsh script is a #compdef file that loads bashcompinit and registers the same function."""
    script = _script(capsys, "zsh")

    assert script.startswith("#compdef olmkit\n")
    assert "bashcompinit" in script.splitlines()[2]
    assert script.rstrip().endswith("complete -o default -F _olmkit_complete olmkit")


def test_unknown_shell_is_a_usage_error(capsys):
    """Only bash and zsh: anything else is exit 2 naming the choices."""
    assert 2 == main(["completion", "fish"])
    assert "invalid choice: 'fish'" in capsys.readouterr().err


def test_bash_completes_object_names_from_the_store(bash_script, tmp_path):
    """After a kind, the names of its objects in the store and namespace the line names."""
    from olmkit.store import SqliteStore

    db = tmp_path / "cluster.db"
    with SqliteStore(str(db)) as s:
        for name, ns in [("alpha", "ops"), ("alps", "ops"), ("beta", "ops"), ("other", "default")]:
            s.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}})

    names = _complete(bash_script, "olmkit", "get", "cm", "-n", "ops", "--store", str(db), "al")
    described = _complete(bash_script, "olmkit", "describe", "--store", str(db), "configmap", "")

    assert ["alpha", "alps"] == names
    assert ["other"] == described
