"""The code attrs generates for each class, kept across processes as the byte code of modules is.

attrs writes a class's methods (``__init__``, ``__eq__``, ``__hash__``, ``__repr__`` ...) as
Python source and compiles it when the class is created: about a quarter of a millisecond
per class, 25-35 ms of every command's start-up (over a hundred classes on the way to a
resolution or a validation). What ``compile`` makes of the source depends only on the source,
its file name, the ``__future__`` features of the compiling module and the interpreter, so the
command line keeps it (:func:`install`, :func:`save`): the code objects compiled in one command
are written, with :mod:`marshal`, to a file beside olmkit's own byte code
(``olmkit/__pycache__``, or under ``sys.pycache_prefix``), and the next command evaluates them
instead of compiling the same source again.

A class's ``__hash__`` source holds the hash of the class's name, which differs from process to
process (string hashing is salted). It is taken out of the key; the code is compiled with a
placeholder number written with as many characters (so that the code's line and column table
is the same) and the real number is put back into the code's constants: the code evaluated is
exactly what ``compile`` makes of attrs' source. One piece of code is kept per width of that
number (:func:`fill` makes the widths a 64-bit hash nearly always has).

The file is read once per process. It is written at the end of a command that compiled
something it did not hold, atomically, unless writing byte code is off
(``PYTHONDONTWRITEBYTECODE``, ``-B``: then only ``python -m olmkit._attrs_code``, run by the
install, writes it) or the directory cannot be written. An unreadable, foreign or stale file
is ignored (and replaced when written); an attrs whose internals differ from what this
expects is left as it is.
"""

from __future__ import annotations
import __future__

import contextlib
import functools
import marshal
import mmap
import operator
import os
import sys
from types import CodeType
from typing import Any, Final

__all__ = ["fill", "install", "save"]

#: the file's first item: what the byte code in it is valid for
_HEADER: Final = ("olmkit attrs code", 4, sys.hexversion, sys.implementation.cache_tag, marshal.version)
#: a file holding more sources than this is rewritten with only the last command's
_MAX_ENTRIES: Final = 2000
#: the widths :func:`fill` compiles a ``__hash__`` for: a 64-bit hash's, but for 1 in 2000
_WIDTHS: Final = (17, 18, 19, 20)
_METHODS: Final = "<attrs generated methods "
_HASH: Final = "<attrs generated hash "
#: where the class's hash was, in a key (no Python source holds it)
_MARK: Final = "\x00"
#: every ``__future__`` feature's compiler flag
_FUTURE_FLAGS: Final = functools.reduce(
    operator.or_, (getattr(__future__, name).compiler_flag for name in __future__.all_feature_names)
)

#: (file name, source with the class's hash marked) -> {width of the hash, or 0 for none: the
#: code, marshalled (unmarshalled when used: a command uses a fraction of the classes)}
_Entries = dict[tuple[str, str], dict[int, bytes]]
#: the same, with where each piece of code is in the file's code area (offset, length); the
#: file holds the length of the marshalled (header, index) in 8 bytes, that, then the code
_Index = dict[tuple[str, str], dict[int, tuple[int, int]]]

_state: dict[str, Any] = {}


def _path() -> str | None:
    """The cache file: in ``__pycache__`` beside this module, as the interpreter puts byte code."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    name = f"attrs-code.{tag}.marshal"
    if sys.pycache_prefix:
        return os.path.join(sys.pycache_prefix, here.lstrip(os.sep), name)
    return os.path.join(here, "__pycache__", name)


def _read(path: str) -> tuple[_Index, Any]:
    """The file's index and its code area (mapped: only the code a command uses is read)."""
    try:
        with open(path, "rb") as f:
            area = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        size = int.from_bytes(area[:8], "little")
        header, index = marshal.loads(area[8 : 8 + size])
    except Exception:  # missing, empty, unreadable, truncated or foreign: start afresh
        return {}, b""
    if header != _HEADER or not isinstance(index, dict):
        return {}, b""
    return index, memoryview(area)[8 + size :]


def _placeholder(width: int) -> str:
    return "9" * width


def install(path: str | None = None) -> bool:
    """Make attrs evaluate cached code for source it compiled before (once per process).

    Args:
        path: the cache file (default: beside olmkit's byte code).

    Returns:
        Whether attrs is hooked (``False``: an attrs this does not know, or nowhere to cache).
    """
    if _state:
        return True
    path = path or _path()
    try:
        from attr import _make
    except ImportError:
        return False
    original = getattr(_make, "_compile_and_eval", None)
    code = getattr(original, "__code__", None)
    if path is None or code is None or code.co_varnames[:4] != ("script", "globs", "locs", "filename"):
        return False
    # compile() as attrs' own call does: with the __future__ features of attrs' module
    flags = code.co_flags & _FUTURE_FLAGS
    cache, area = _read(path)
    new: _Entries = {}
    used: set[tuple[str, str]] = set()

    def compile_and_eval(script: str, globs: dict[str, Any] | None, locs: Any = None, filename: str = "") -> None:
        """attrs' ``_compile_and_eval``: the same code, compiled once for all processes."""
        seed = None
        key = (filename, script)
        if filename.startswith(_METHODS):
            number = hash(_HASH + filename[len(_METHODS) :])
            text = f" {number},\n"
            if script.count(text) == 1:
                seed, key = number, (filename, script.replace(text, f" {_MARK},\n"))
        width = len(str(seed)) if seed is not None else 0
        where = cache.get(key, {}).get(width)
        if where is not None:
            code = marshal.loads(area[where[0] : where[0] + where[1]])
        else:
            source = script if seed is None else key[1].replace(_MARK, _placeholder(width))
            code = compile(source, filename, "exec", flags=flags, dont_inherit=True)
            new.setdefault(key, {})[width] = marshal.dumps(code)
        used.add(key)
        if seed is not None:
            code = _with_constant(code, int(_placeholder(width)), seed)
        eval(code, globs, locs)

    _state.update(path=path, cache=cache, area=area, new=new, used=used, flags=flags)
    setattr(_make, "_compile_and_eval", compile_and_eval)  # noqa: B010 - a private name mypy does not know
    return True


def _with_constant(code: CodeType, old: int, new: int) -> CodeType:
    """``code`` (and the code nested in it) with the integer constant ``old`` replaced by ``new``."""
    changed = False
    consts = []
    for const in code.co_consts:
        if isinstance(const, CodeType):
            replaced = _with_constant(const, old, new)
            changed = changed or replaced is not const
            const = replaced
        elif type(const) is int and const == old:
            const, changed = new, True
        consts.append(const)
    return code.replace(co_consts=tuple(consts)) if changed else code


def save(*, force: bool = False) -> bool:
    """Write the code compiled since :func:`install` to the cache file; whether anything was written.

    Args:
        force: write even when writing byte code is off (as ``compileall`` does).
    """
    if not _state or not _state["new"] or (sys.dont_write_bytecode and not force):
        return False
    path: str = _state["path"]
    cache: _Index = _state["cache"]
    area = _state["area"]
    new: _Entries = _state["new"]
    keys = set(cache) | set(new)
    if len(keys) > _MAX_ENTRIES:
        keys = _state["used"]
    index: _Index = {}
    blobs: list[bytes] = []
    offset = 0
    for key in sorted(keys):
        codes = {width: bytes(area[at : at + size]) for width, (at, size) in cache.get(key, {}).items()}
        for width, data in sorted((codes | new.get(key, {})).items()):
            index.setdefault(key, {})[width] = (offset, len(data))
            blobs.append(data)
            offset += len(data)
    head = marshal.dumps((_HEADER, index))
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(len(head).to_bytes(8, "little"))
            f.write(head)
            f.writelines(blobs)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    _state["cache"], _state["area"] = _read(path)
    new.clear()
    return True


def fill() -> int:
    """Import every olmkit module and the installed plugins, then write their classes' code.

    For an install step (``python -m olmkit._attrs_code``, beside ``compileall``): commands
    find the cache filled even where they never write it (``PYTHONDONTWRITEBYTECODE``).
    Every class's ``__hash__`` is compiled for each of :data:`_WIDTHS`. Returns how many
    classes' code the file holds.
    """
    import pkgutil
    from importlib import import_module

    import olmkit
    from olmkit import _entry_points

    if not install():
        return 0
    for module in pkgutil.walk_packages(olmkit.__path__, "olmkit."):
        if module.name.rpartition(".")[2] in ("__main__", "_speedups_build"):
            continue
        try:
            import_module(module.name)
        except Exception:
            continue
    for point in _entry_points.entry_points("olmkit") or ():
        try:
            _entry_points.load(point)
        except Exception:
            continue
    new: _Entries = _state["new"]
    for (filename, script), codes in list(new.items()) + list(_state["cache"].items()):
        if _MARK not in script:
            continue
        for width in _WIDTHS:
            if width not in codes:
                source = script.replace(_MARK, _placeholder(width))
                code = compile(source, filename, "exec", flags=_state["flags"], dont_inherit=True)
                new.setdefault((filename, script), {})[width] = marshal.dumps(code)
    save(force=True)
    return len(_state["cache"])


if __name__ == "__main__":
    sys.stdout.write(f"olmkit: the attrs-generated code of {fill()} classes cached in {_path()}\n")
