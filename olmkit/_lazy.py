"""Names a package gives from its modules, imported on first use (PEP 562).

A package that plugins or commands import at start-up keeps its heavy parts behind a
module ``__getattr__``: ``from olmkit.store import Store`` still works, and a command
that never reads the name never imports the module defining it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, homes: Mapping[str, str], *, keep: bool = True) -> Callable[[str], Any]:
    """The ``__getattr__`` of module ``package``: each name of ``homes`` (name -> the module defining it)
    read from its module, imported on first use; any other name is an ``AttributeError``.

    Args:
        keep: set the value on the package too, so that later reads find it there.
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        if keep:
            setattr(sys.modules[package], name, value)
        return value

    return __getattr__
