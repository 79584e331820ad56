"""Cache writes, and the ones a one-shot command leaves until it is done.

A command that loads a catalog it has not seen, and compiles the catalog's resolution
graph, writes both to the cache for the next command. Done on the way, that writing
is on the command's critical path: in the process (the graph, 0.1 s at 40k bundles),
or by a child forked while the process goes on, which makes the process pay for a copy
of every page of its heap it then touches (0.1-0.4 s of system time). A one-shot
command (``olmkit resolve``) therefore *defers* them (:func:`defer_writes`): they are
queued, and once the command's output is written, :func:`finish_writes` hands them to a
forked child that nobody waits for, and the command exits at once.

The writes are atomic (a temporary file and a rename). While the child writes, it holds
a lock on ``.writing`` in the cache directory: a command loading a catalog meanwhile
(a script running commands back to back) waits for it (:func:`wait_for_writers`, at
most :data:`WAIT_SECONDS`) and finds the caches in place, instead of reading the
catalog itself as if it were the first.

Elsewhere (a long-running controller, a library caller) nothing is deferred: a write is
done at once, a large catalog's by a forked child while the caller goes on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from olmkit.catalog import _fork

__all__ = ["LOCK_NAME", "WAIT_SECONDS", "defer_writes", "deferring", "finish_writes", "wait_for_writers", "write_later"]

#: the lock file a detached writer holds, in the cache directory
LOCK_NAME: Final = ".writing"
#: how long a load waits at most for a detached writer of an earlier command
WAIT_SECONDS: Final = 30.0

#: the deferred writes, ``(write, big)``; ``None``: writes are not deferred
_deferred: list[tuple[Callable[[], object], bool]] | None = None
#: the writes handed to a detached child, kept until the process exits (see :func:`finish_writes`)
_detached: list[Callable[[], object]] = []


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


def finish_writes(*, detach: bool = False, directory: Path | None = None) -> None:
    """Do the deferred writes, and stop deferring.

    Args:
        detach: the process is about to exit: leave the writes to a forked child that
            nobody waits for (done here where forking is not possible or safe). Otherwise
            each is done as :func:`write_later` does when not deferring.
        directory: the cache directory, where the detached child's lock is.
    """
    global _deferred
    writes, _deferred = _deferred or [], None
    if not writes:
        return
    if detach and _fork.can_fork() and _detach([write for write, _ in writes], directory):
        # the process is about to exit: what the writes hold (a large catalog) is not freed
        # here object by object, each page it lies on copied first because the child shares
        # it (0.1-0.25 s at 200,000 bundles); the exit gives it all back at once
        _detached.extend(write for write, _ in writes)
        return
    for write, big in writes:
        write_later(write, big=big)


def wait_for_writers(directory: Path) -> None:
    """Wait (at most :data:`WAIT_SECONDS`) while a detached child writes caches into ``directory``."""
    try:
        import fcntl

        fd = os.open(directory / LOCK_NAME, os.O_RDONLY)
    except (ImportError, OSError):
        return  # no such lock: no command ever left writes to a child here
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)
            except OSError:
                return
    finally:
        os.close(fd)


def _lock(directory: Path | None) -> int | None:
    """An open file holding the exclusive lock on ``directory``'s writer lock, or ``None``.

    Never waits: with another command's child still writing there, this one's writes go
    unannounced (a load then may not wait for them; it reads the catalog itself).
    """
    if directory is None:
        return None
    try:
        import fcntl

        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _detach(writes: list[Callable[[], object]], directory: Path | None) -> bool:
    """Run ``writes`` in a forked child left to finish on its own; ``False`` if it could not start.

    The child holds the writer lock (taken here, before the command can exit: the lock
    belongs to the open file, which the child shares and keeps until it is done).
    """
    lock = _lock(directory)
    try:
        pid = os.fork()
    except OSError:
        if lock is not None:
            os.close(lock)  # releases it
        return False
    if pid:
        if lock is not None:
            os.close(lock)  # the child's copy keeps the lock
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
