"""Cache writes, and the ones a one-shot command leaves until it is done.

A command that loads a catalog it has not seen, and compiles the catalog's resolution
graph, writes both to the cache for the next command. Done on the way, that writing
is on the command's critical path: in the process (the graph, 0.1 s at 40k bundles),
or by a child forked while the process goes on, which makes the process pay for a copy
of every page of its heap it then touches (0.1-0.4 s of system time). A one-shot
command (``olmkit resolve``) therefore *defers* them (:func:`defer_writes`): they are
queued, and once the command's output is written, :func:`finish_writes` hands them to a
forked child that nobody waits for, and the command exits at once.

The writes are atomic (a temporary file and a rename): a command started before they
are done finds no cache and reads the catalog itself, as if it were the first.
Elsewhere (a long-running controller, a library caller) nothing is deferred: a write is
done at once, a large catalog's by a forked child while the caller goes on.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from olmkit.catalog import _fork

__all__ = ["defer_writes", "deferring", "finish_writes", "write_later"]

#: the deferred writes, ``(write, big)``; ``None``: writes are not deferred
_deferred: list[tuple[Callable[[], object], bool]] | None = None


def defer_writes() -> None:
    """From now on, queue cache writes until :func:`finish_writes` (for one-shot commands)."""
    global _deferred
    if _deferred is None:
        _deferred = []


def deferring() -> bool:
    """Whether cache writes are being deferred."""
    return _deferred is not None


def write_later(write: Callable[[], object], *, big: bool = False) -> None:
    """Have a cache write done: queued while deferring, else now.

    Args:
        write: does the write; ignores failures (a cache only saves time).
        big: a large catalog's write, done by a forked child while the caller goes on
            where forking is possible.
    """
    if _deferred is not None:
        _deferred.append((write, big))
    elif not (big and _fork.background(write)):
        write()


def finish_writes(*, detach: bool = False) -> None:
    """Do the deferred writes, and stop deferring.

    Args:
        detach: the process is about to exit: leave the writes to a forked child that
            nobody waits for (done here where forking is not possible or safe). Otherwise
            each is done as :func:`write_later` does when not deferring.
    """
    global _deferred
    writes, _deferred = _deferred or [], None
    if not writes:
        return
    if detach and _fork.can_fork() and _detach([write for write, _ in writes]):
        return
    for write, big in writes:
        write_later(write, big=big)


def _detach(writes: list[Callable[[], object]]) -> bool:
    """Run ``writes`` in a forked child left to finish on its own; ``False`` if it could not start."""
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid:
        return True
    # the child: off the command's terminal and pipes (whoever reads the command's output
    # sees it end with the command), in a session of its own (an interrupt of the
    # command's process group does not cut a write short), then write and leave
    status = 1
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.setsid()
        for write in writes:
            write()
        status = 0
    except BaseException:  # nobody to tell: the cache is optional
        pass
    finally:
        os._exit(status)
