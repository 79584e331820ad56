"""``olmkit completion bash|zsh``: a shell completion script, as ``kubectl completion`` prints.

The script is generated from the command line's own parser (built-in and plugin
commands), so it completes every command, subcommand, option and option value that
argparse knows (``-o`` formats, ``--approval`` modes ...), file names for options that
take a path, the kinds ``get``/``describe``/``delete``/``wait`` accept and, after a kind, the
names of its objects (``olmkit get KIND -o name`` on the store and namespace the command line
names). Load it with::

    source <(olmkit completion bash)          # bash (put it in ~/.bashrc)
    source <(olmkit completion zsh)           # zsh (~/.zshrc; uses bashcompinit)

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["add_commands", "completion_script"]

#: commands whose first positional argument is a kind
_KIND_COMMANDS: Final = ("get", "describe", "delete", "wait")
_ROOT: Final = "_"


def add_commands(subparsers: Any) -> None:
    """Add ``completion``."""
    p = subparsers.add_parser(
        "completion",
        help="print a shell completion script (bash or zsh)",
        description="Print a completion script. bash: source <(olmkit completion bash); "
        "zsh: source <(olmkit completion zsh).",
    )
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete for")
    p.set_defaults(func=run_completion)


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield " ".join(path) or _ROOT, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def _kind_words() -> list[str]:
    from olmkit.lifecycle.kinds import KINDS

    words: set[str] = set()
    for kind in KINDS.values():
        words.update(name.lower() for name in kind.names() if "." not in name)
    return sorted(words)


def _tables(parser: argparse.ArgumentParser) -> dict[str, dict[str, str]]:
    subs: dict[str, str] = {}
    opts: dict[str, str] = {}
    values: dict[str, str] = {}
    words: dict[str, str] = {}
    kinds = " ".join(_kind_words())
    for key, sub in _walk(parser):
        names: list[str] = []
        options: list[str] = []
        positional: list[str] = []
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                names += list(action.choices)
            elif action.option_strings:
                if action.help == argparse.SUPPRESS:
                    continue
                options += action.option_strings
                if action.nargs != 0:
                    choices = action.choices or getattr(action.type, "formats", None)
                    choice = " ".join(map(str, choices)) if choices else "__files__"
                    for option in action.option_strings:
                        values[f"{key}|{option}"] = choice
            elif action.choices:
                positional += [str(c) for c in action.choices]
        if key in _KIND_COMMANDS:
            positional.append(kinds)
        if key != _ROOT:
            options.append("--debug")  # accepted after the command too
        subs[key] = " ".join(names)
        opts[key] = " ".join(options)
        words[key] = " ".join(positional)
    return {"subs": subs, "opts": opts, "values": values, "words": words}


def _assoc(name: str, table: dict[str, str]) -> str:
    lines = [f"    [{shlex.quote(k)}]={shlex.quote(v)}" for k, v in sorted(table.items())]
    return f"_olmkit_{name}=(\n" + "\n".join(lines) + "\n)"


_FUNCTION: Final = r"""
_olmkit_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="_" word i skip="" ns="" store=""
    local -a positional=()
    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"
    for (( i = 1; i < COMP_CWORD; i++ )); do
        word="${COMP_WORDS[i]}"
        if [[ -n "$skip" ]]; then
            case "$skip" in -n|--namespace) ns="$word" ;; --store) store="$word" ;; esac
            skip=""; continue
        fi
        case "$word" in
            --*=*) continue ;;
            -*) [[ -n "${_olmkit_values[$path|$word]+set}" ]] && skip="$word"; continue ;;
        esac
        local key="$word"
        [[ "$path" != "_" ]] && key="$path $word"
        if [[ " ${_olmkit_subs[$path]} " == *" $word "* ]]; then path="$key"; else positional+=("$word"); fi
    done
    local choice="${_olmkit_values[$path|$prev]-}"
    if [[ -n "$choice" ]]; then
        if [[ "$choice" == "__files__" ]]; then
            COMPREPLY=( $(compgen -f -- "$cur") )
        else
            COMPREPLY=( $(compgen -W "$choice" -- "$cur") )
        fi
    elif [[ "$cur" == -* ]]; then
        COMPREPLY=( $(compgen -W "${_olmkit_opts[$path]}" -- "$cur") )
    elif [[ " __KIND_COMMANDS__ " == *" $path "* && ${#positional[@]} -ge 1 && "${positional[0]}" != */* ]]; then
        # names of the objects of the kind given, from the store the command would read
        local -a flags=()
        [[ -n "$ns" ]] && flags+=(-n "$ns")
        [[ -n "$store" ]] && flags+=(--store "$store")
        local names
        names=$("${COMP_WORDS[0]}" get "${positional[0]}" -o name "${flags[@]}" 2>/dev/null | sed 's|^.*/||')
        COMPREPLY=( $(compgen -W "$names" -- "$cur") )
    else
        COMPREPLY=( $(compgen -W "${_olmkit_subs[$path]} ${_olmkit_words[$path]}" -- "$cur") )
    fi
}
"""


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (``bash`` or ``zsh``) of ``parser``'s commands."""
    tables = _tables(parser)
    header = f"# olmkit completion; load with: source <(olmkit completion {shell})\n"
    if shell == "zsh":
        header = "#compdef olmkit\n" + header + "autoload -U +X bashcompinit && bashcompinit\n"
    body = "\n".join(f"typeset -A _olmkit_{name}\n" + _assoc(name, table) for name, table in tables.items())
    function = _FUNCTION.replace("__KIND_COMMANDS__", " ".join(_KIND_COMMANDS))
    return header + body + "\n" + function + "complete -o default -F _olmkit_complete olmkit\n"


def run_completion(args: argparse.Namespace, pm: Any) -> int:
    """Print the script for ``args.shell``."""
    from olmkit.cli import build_parser

    sys.stdout.write(completion_script(build_parser(pm), args.shell))
    return 0
