"""Work done by a forked child process, for large catalogs on a multi-core machine.

A loaded catalog is immutable and frozen out of the garbage collector, so a forked
child sees all of it without copying anything (pages are shared until written). Two
uses: validating half of the packages while the parent validates the other half
(:func:`start`, then :meth:`Child.result`), and writing the cache while the parent goes
on (:func:`background`; :func:`wait_background` finishes such writes, before the next
load and at exit).

Forking is only done where it is safe: the platform has ``fork`` and the process runs
a single thread (a forked child gets only the calling thread, and locks held by
others would stay locked). The child never returns into the caller's code: it leaves
through :func:`os._exit`, so no exit handler runs and no buffered output is written
twice. Callers do the work themselves when forking is not possible or the child fails.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import signal
import tempfile
import threading
from collections.abc import Callable
from typing import IO, Any

__all__ = ["Child", "background", "can_fork", "spare_cpu", "start", "wait_background"]


def can_fork() -> bool:
    """Whether forking a worker is possible and safe here."""
    return hasattr(os, "fork") and threading.active_count() == 1


def spare_cpu() -> bool:
    """Whether a processor is free for a worker: the last minute's load average leaves one.

    Without one, a worker only shares this process's processor, and both pay for copying
    the pages of the heap they write after the fork (0.1-0.15 s of system time for a
    catalog of 40k bundles).
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cpus > 1
    return load < cpus - 1


class Child:
    """A forked process computing a marshal-able value.

    The value goes through an unlinked temporary file both processes hold, and the pipe
    carries only its length: a child writing a large value into the pipe would wait until
    the parent reads it, after its own work, and only then start its ``then``.
    """

    def __init__(self, pid: int, fd: int, data: IO[bytes] | None = None) -> None:
        self.pid = pid
        self.fd: int | None = fd  # the pipe's read end, until closed
        self.data = data  # the value's file (``None``: the value comes through the pipe)

    def close(self) -> None:
        """Close the pipe's read end and the value's file (once)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None
        if self.data is not None:
            with contextlib.suppress(OSError):
                self.data.close()
            self.data = None

    def result(self, *, reap: bool = True) -> Any:
        """The child's value, or ``None`` if it failed.

        Args:
            reap: wait for the child to exit; ``False`` returns as soon as the value is
                read and leaves the child (still busy with its ``then``) to
                :func:`wait_background`.
        """
        data = b""
        status = 0
        assert self.fd is not None, "the value was read already"
        fd, self.fd = self.fd, None
        try:
            with os.fdopen(fd, "rb") as f:
                data = f.read()
            if self.data is not None:
                size = int.from_bytes(data, "little") if len(data) == 8 else -1
                self.data.seek(0)
                data = self.data.read(size) if size >= 0 else b""
                if len(data) != size:
                    data = b""
        finally:
            if self.data is not None:
                with contextlib.suppress(OSError):
                    self.data.close()
                self.data = None
            if reap:
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:  # reaped by someone else (a SIGCHLD handler): judge by the data
                    status = 0
            else:
                _adopt(self)
        if status != 0 or not data:
            return None
        try:
            return marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return None

    def cancel(self) -> None:
        """Stop the child and reap it."""
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        self.close()
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def start(work: Callable[[], Any], then: Callable[[], object] | None = None) -> Child | None:
    """Run ``work`` in a forked child; ``None`` when forking is not possible (do the work yourself).

    ``then`` runs in the child after it has sent ``work``'s value (and only if it could).
    """
    if not can_fork():
        return None
    try:
        value = tempfile.TemporaryFile()  # noqa: SIM115 - handed to the Child, which closes it
    except OSError:
        value = None  # no temporary directory: the value goes through the pipe
    try:
        read, write = os.pipe()
    except OSError:
        if value is not None:
            value.close()
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        if value is not None:
            value.close()
        return None
    if pid == 0:  # the child: compute, send, leave without running any exit handler
        status = 1
        try:
            os.close(read)
            data = marshal.dumps(work())
            if value is not None:
                value.write(data)
                value.flush()
                data = len(data).to_bytes(8, "little")
            with os.fdopen(write, "wb") as out:
                out.write(data)
            status = 0
            if then is not None:
                then()
        except BaseException:  # the parent sees the status and does the work itself
            pass
        finally:
            os._exit(status)
    os.close(write)
    return Child(pid, read, value)


_pending: list[Child] = []
_registered = False


def background(work: Callable[[], object]) -> bool:
    """Start ``work`` in a child that nobody waits for now; ``False`` if it could not start."""

    def run() -> bool:
        work()
        return True

    child = start(run)
    if child is None:
        return False
    _adopt(child)
    return True


def _adopt(child: Child) -> None:
    """Leave ``child`` to :func:`wait_background` (at the next load, and at exit)."""
    global _registered

    _pending.append(child)
    if not _registered:
        atexit.register(wait_background)
        _registered = True


def wait_background() -> None:
    """Wait until every background child has finished."""
    while _pending:
        child = _pending.pop()
        child.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child.pid, 0)
