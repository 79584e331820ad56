"""``olmkit cache info|prune``: what the on-disk cache holds, and bounding its size.

The cache (``$OLMKIT_CACHE_DIR``, else ``~/.cache/olmkit/catalogs``) keeps parsed
catalogs, file digests, validation reports, compiled resolver graphs and the CEL parser.
Every entry can be rebuilt, so pruning only costs time on the next use. ``prune`` removes
the least recently used entries until the cache fits ``--max-size`` and entries unused
for ``--max-age``; ``--all`` empties it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any, Final

import attrs

from olmkit.cli.options import parse_duration
from olmkit.cli.output import add_output_option, emit
from olmkit.errors import UsageError

__all__ = ["CacheEntry", "add_commands", "cache_entries", "parse_duration", "parse_size", "prune"]

_SIZE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?\s*$")
_UNITS: Final = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``1.5GiB``, ``100k``, ``123`` -> bytes (binary units).

    Raises:
        argparse.ArgumentTypeError: not a size.
    """
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 500M, 2G)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop always returns


@attrs.frozen
class CacheEntry:
    """One file of the cache: its path, size, and when it was last used (read or written)."""

    path: Path
    size: int
    used: float

    @property
    def kind(self) -> str:
        """What it is: the sub-directory (``resolver``, ``files``, ``cel``) or ``catalogs``."""
        return self.path.parent.name if self.path.parent.name in ("resolver", "files", "cel") else "catalogs"


def cache_entries(root: Path) -> list[CacheEntry]:
    """Every file under ``root``, least recently used first.

    Not the lock a detached cache writer holds (``.writing``): it is no entry, and
    removing it while held would let the next writer take a lock of its own.
    """
    from olmkit.catalog import LOCK_NAME

    entries = []
    if root.is_dir():
        for path in root.rglob("*"):
            if path.name == LOCK_NAME and path.parent == root:
                continue
            try:
                stat = path.stat()
            except OSError:  # removed by another process meanwhile
                continue
            if path.is_file():
                entries.append(CacheEntry(path, stat.st_size, max(stat.st_atime, stat.st_mtime)))
    return sorted(entries, key=lambda e: e.used)


def prune(
    root: Path, *, max_size: int | None = None, max_age: float | None = None, now: float | None = None
) -> list[CacheEntry]:
    """Which entries to remove: unused for ``max_age`` seconds, then least recently used ones
    until the rest fits ``max_size`` bytes (both ``None``: everything)."""
    entries = cache_entries(root)
    if max_size is None and max_age is None:
        return entries
    now = time.time() if now is None else now
    doomed = [e for e in entries if max_age is not None and now - e.used > max_age]
    kept = [e for e in entries if e not in doomed]
    if max_size is not None:
        total = sum(e.size for e in kept)
        for entry in list(kept):  # least recently used first
            if total <= max_size:
                break
            doomed.append(entry)
            kept.remove(entry)
            total -= entry.size
    return doomed


def add_commands(subparsers: Any) -> None:
    """Add the ``cache`` command group."""
    group = subparsers.add_parser("cache", help="show or prune the on-disk cache")
    sub = group.add_subparsers(title="cache commands", metavar="COMMAND")
    info = sub.add_parser("info", help="where the cache is and what it holds")
    add_output_option(info)
    info.set_defaults(func=run_info)
    pr = sub.add_parser(
        "prune",
        help="remove least recently used cache entries",
        description="Remove cache entries unused for --max-age, then the least recently used ones until the "
        "cache fits --max-size. Everything in the cache is rebuilt when needed.",
    )
    pr.add_argument("--max-size", type=parse_size, default=None, metavar="SIZE", help="keep at most SIZE (500M, 2G)")
    pr.add_argument(
        "--max-age", type=parse_duration, default=None, metavar="AGE", help="remove entries unused for AGE (30d, 12h)"
    )
    pr.add_argument("--all", action="store_true", help="remove everything")
    pr.add_argument("--dry-run", action="store_true", help="only say what would be removed")
    pr.set_defaults(func=run_prune)
    group.set_defaults(func=lambda args, pm: (group.print_help(sys.stderr), 2)[1])


def _root() -> Path:
    from olmkit.catalog import cache_dir

    return cache_dir()


def run_info(args: argparse.Namespace, pm: Any) -> int:
    """Print the cache's path, and count and size by kind."""
    root = _root()
    entries = cache_entries(root)
    kinds: dict[str, list[CacheEntry]] = {}
    for entry in entries:
        kinds.setdefault(entry.kind, []).append(entry)
    rows = [
        {
            "kind": kind,
            "files": len(items),
            "bytes": sum(e.size for e in items),
            "size": _human(sum(e.size for e in items)),
        }
        for kind, items in sorted(kinds.items())
    ]
    total = sum(e.size for e in entries)
    if args.output == "table":
        sys.stdout.write(f"cache: {root} ({len(entries)} files, {_human(total)})\n")
        if rows:
            emit(rows, "table", columns=[("kind", "kind"), ("files", "files"), ("size", "size")])
    else:
        emit({"path": str(root), "files": len(entries), "bytes": total, "kinds": rows}, args.output)
    return 0


def run_prune(args: argparse.Namespace, pm: Any) -> int:
    """Remove what :func:`prune` chooses; say how much was freed."""
    if not args.all and args.max_size is None and args.max_age is None:
        raise UsageError("say what to prune: --max-size SIZE, --max-age AGE or --all")
    root = _root()
    doomed = prune(root, max_size=args.max_size, max_age=args.max_age)
    freed = 0
    for entry in doomed:
        if args.dry_run:
            sys.stdout.write(f"would remove {entry.path} ({_human(entry.size)})\n")
        else:
            entry.path.unlink(missing_ok=True)
        freed += entry.size
    left = sum(e.size for e in cache_entries(root)) if not args.dry_run else None
    verb = "would free" if args.dry_run else "freed"
    tail = f"; {_human(left)} left" if left is not None else ""
    sys.stdout.write(f"{verb} {_human(freed)} in {len(doomed)} files from {root}{tail}\n")
    return 0
