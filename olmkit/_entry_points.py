"""An entry-point group as :func:`importlib.metadata.entry_points` gives it, read without it.

Every command finds the third-party plugins through the ``olmkit`` entry-point group.
Asking :mod:`importlib.metadata` costs a command 20-30 ms: importing it (with the email
package it parses metadata with) and reading every distribution. On the ordinary layout
(directories on ``sys.path``, the standard path finder the only one that finds
distributions) the same answer is read here directly: the same distributions in the same
order (per ``sys.path`` entry, ``*.dist-info`` and ``*.egg-info`` directories grouped by
normalised name; the first of a name wins), each one's ``entry_points.txt`` parsed the way
:mod:`importlib.metadata` parses it. Anything else (a zip file or an egg on the path,
another finder of distributions, a name spelt in a way only the metadata can settle, a
file importlib would fail on) answers ``None``: the caller then asks
:mod:`importlib.metadata` itself.

A distribution's name and version are read from its metadata only when asked
(:func:`distribution_of`): ``olmkit plugins list`` and a plugin that fails to load.
"""

from __future__ import annotations

import os
import re
import sys
from functools import reduce
from importlib import import_module
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from importlib.metadata import Distribution

__all__ = ["EntryPoint", "distribution_of", "entry_points", "load"]

_SUFFIXES: Final = (".dist-info", ".egg-info")
_UNREADABLE: Final = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
#: importlib.metadata's pattern of an entry point's value
_VALUE: Final = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPoint(NamedTuple):
    """One entry point: its name and value, and the metadata directory of its distribution."""

    name: str
    value: str
    group: str
    metadata: str


def _normalize(name: str) -> str:
    """importlib.metadata's normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _standard_finders() -> bool:
    """Whether the standard path finder is the only one on ``sys.meta_path`` that finds distributions."""
    from importlib.machinery import PathFinder

    return all(finder is PathFinder or getattr(finder, "find_distributions", None) is None for finder in sys.meta_path)


def entry_points(group: str, paths: list[str] | None = None) -> list[EntryPoint] | None:
    """The group's entry points in :func:`importlib.metadata.entry_points` order, or ``None`` (see the module).

    Args:
        group: the entry-point group.
        paths: where distributions are looked for (default ``sys.path``).
    """
    if not _standard_finders():
        return None
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for root in sys.path if paths is None else paths:
        if not isinstance(root, str):
            return None
        try:
            children = os.listdir(root or ".")
        except NotADirectoryError:
            return None  # a zip file: importlib.metadata reads it
        except OSError:
            continue
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if not low.endswith(_SUFFIXES):
                continue
            if not child.endswith(_SUFFIXES):
                return None  # its name would come from its metadata
            by_name.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
        for name, dists in by_name.items():
            for child in dists:
                if name in seen:
                    continue
                seen.add(name)
                metadata = os.path.join(root, child)
                read = _read(metadata, group)
                if read is None:
                    return None
                found += read
    return found


def _read(metadata: str, group: str) -> list[EntryPoint] | None:
    """The group's entry points in one distribution's ``entry_points.txt`` (``None``: importlib would fail)."""
    try:
        with open(os.path.join(metadata, "entry_points.txt"), encoding="utf-8") as f:
            text = f.read()
    except _UNREADABLE:
        return []
    except (OSError, ValueError):
        return None
    out: list[EntryPoint] = []
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        if "=" not in line:
            return None
        name, value = (part.strip() for part in line.split("=", 1))
        if section == group:
            out.append(EntryPoint(name, value, group, metadata))
    return out


def load(ep: EntryPoint) -> Any:
    """The object the entry point names (as :meth:`importlib.metadata.EntryPoint.load`)."""
    match = _VALUE.match(ep.value)
    if match is None:  # importlib.metadata's own failure, word for word
        from importlib import metadata

        return metadata.EntryPoint(ep.name, ep.value, ep.group).load()
    module = import_module(match.group("module"))
    return reduce(getattr, filter(None, (match.group("attr") or "").split(".")), module)


def distribution_of(directory: str) -> Distribution:
    """The distribution whose metadata directory this is."""
    import pathlib
    from importlib import metadata

    return metadata.PathDistribution(pathlib.Path(directory))
