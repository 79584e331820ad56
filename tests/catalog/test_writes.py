"""Cache writes: done at once, or, in a one-shot command, once its answer is out (by a child nobody waits for)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

from olmkit import catalog
from olmkit.catalog import _writes
from olmkit.cli import main

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent.parent / "examples" / "catalog"


@pytest.fixture(autouse=True)
def _not_deferring():
    yield
    catalog.finish_writes()  # a failing test leaves no deferral to the next


def test_a_write_is_done_at_once_unless_deferred():
    done: list[str] = []

    catalog.write_later(lambda: done.append("first"))
    assert ["first"] == done
    assert not catalog.deferring()

    catalog.defer_writes()
    catalog.write_later(lambda: done.append("second"))
    catalog.write_later(lambda: done.append("third"))
    assert catalog.deferring()
    assert ["first"] == done  # queued

    catalog.finish_writes()
    assert ["first", "second", "third"] == done
    assert not catalog.deferring()
    catalog.write_later(lambda: done.append("fourth"))
    assert "fourth" == done[-1]


def _wait_for(predicate, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_detached_write_outlives_the_process_and_keeps_no_pipe_open(tmp_path):
    """The process ends (its output pipe closes) while the forked child still writes; the write then lands."""
    target = tmp_path / "written"
    program = (
        "import pathlib, time\n"
        "from olmkit import catalog\n"
        "catalog.defer_writes()\n"
        f"catalog.write_later(lambda: (time.sleep(1.5), pathlib.Path({str(target)!r}).write_text('done')))\n"
        "catalog.finish_writes(detach=True)\n"
        "print('answer')\n"
    )
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)
    elapsed = time.monotonic() - start

    assert "answer\n" == done.stdout
    assert elapsed < 1.5 or not target.exists()  # the pipe did not wait for the child
    assert _wait_for(target.exists)
    assert "done" == target.read_text()


def test_what_detached_writes_hold_is_not_freed_before_the_exit(tmp_path):
    """Once the child has the writes, the parent does not free what they hold (shared pages, copied if freed)."""
    target = tmp_path / "written"
    program = (
        "import pathlib, weakref\n"
        "from olmkit import catalog\n"
        "class Big:\n"
        "    pass\n"
        "big = Big()\n"
        "held = weakref.ref(big)\n"
        "catalog.defer_writes()\n"
        f"catalog.write_later(lambda big=big: pathlib.Path({str(target)!r}).write_text(type(big).__name__))\n"
        "del big\n"
        "catalog.finish_writes(detach=True)\n"
        "print('kept' if held() is not None else 'freed')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)

    assert "kept\n" == done.stdout
    assert _wait_for(target.exists)
    assert "Big" == target.read_text()


def test_a_load_waits_for_the_detached_writer_of_an_earlier_command(tmp_path):
    """The child holds the cache directory's writer lock until its writes land; waiting for it sees them."""
    target = tmp_path / "written"
    cache = tmp_path / "cache"
    program = (
        "import pathlib, time\n"
        "from olmkit import catalog\n"
        "catalog.defer_writes()\n"
        f"catalog.write_later(lambda: (time.sleep(1.0), pathlib.Path({str(target)!r}).write_text('done')))\n"
        f"catalog.finish_writes(detach=True, directory=pathlib.Path({str(cache)!r}))\n"
    )
    subprocess.run([sys.executable, "-c", program], check=True, timeout=60)

    _writes.wait_for_writers(cache)

    assert "done" == target.read_text()


def test_waiting_for_writers_is_bounded(tmp_path, monkeypatch):
    """No lock file: no wait; a lock nobody releases: given up after WAIT_SECONDS."""
    import fcntl

    start = time.monotonic()
    _writes.wait_for_writers(tmp_path)  # never written here
    assert time.monotonic() - start < 0.5
    monkeypatch.setattr(_writes, "WAIT_SECONDS", 0.3)
    held = _writes._lock(tmp_path)
    assert held is not None
    try:
        assert _writes._lock(tmp_path) is None  # one writer announces itself at a time; the next never waits
        start = time.monotonic()
        _writes.wait_for_writers(tmp_path)
        waited = time.monotonic() - start
    finally:
        os.close(held)
    assert 0.3 <= waited < 5
    fd = os.open(tmp_path / _writes.LOCK_NAME, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released with its file
    finally:
        os.close(fd)


def _cached(root: pathlib.Path) -> bool:
    """Whether the catalog's cache and its resolution graph are there (complete: renamed into place)."""
    suffixes = {p.suffix for p in root.rglob("*") if p.is_file() and not p.name.startswith(".tmp-")}
    return {".cache", ".graph"} <= suffixes


def test_resolve_in_process_writes_its_caches_before_main_returns(tmp_path, monkeypatch, capsys):
    """main() (in-process callers, tests) finishes the deferred writes itself: nothing stays deferred."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(catalog.CACHE_ENV, str(cache))

    assert 0 == main(["resolve", "--catalog", str(EXAMPLES), "--subscribe", "cert-manager-lite", "-o", "json"])

    assert not catalog.deferring()
    assert _cached(cache)


def test_resolve_command_answers_the_same_and_leaves_its_caches_behind(tmp_path, monkeypatch, capsys):
    """`python -m olmkit resolve` (the program's exit) prints what main() prints; its caches appear after it."""
    args = ["resolve", "--catalog", str(EXAMPLES), "--subscribe", "cert-manager-lite", "-o", "json"]
    monkeypatch.setenv(catalog.CACHE_ENV, str(tmp_path / "in-process"))
    assert 0 == main(args)
    expected = capsys.readouterr().out
    cache = tmp_path / "program"
    monkeypatch.setenv(catalog.CACHE_ENV, str(cache))

    done = subprocess.run([sys.executable, "-m", "olmkit", *args], capture_output=True, text=True, timeout=120)

    assert 0 == done.returncode, done.stderr
    assert expected == done.stdout
    _writes.wait_for_writers(cache)  # as the next command's load does
    assert _cached(cache)
    # and the next command finds them: the same answer from the caches
    again = subprocess.run([sys.executable, "-m", "olmkit", *args], capture_output=True, text=True, timeout=120)
    assert expected == again.stdout


def _entry(before: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the program's entry point with ``argv`` in a fresh interpreter, after the statement ``before``."""
    program = "\n".join(
        ["import atexit, sys, threading, time", "from olmkit import cli", before, f"sys.argv = {['olmkit', *argv]!r}"]
    )
    program += "\ncli.entry()\n"
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)


def test_the_program_exits_normally_while_other_threads_run():
    """With another thread still running, entry() takes the ordinary exit: the thread finishes its work."""
    done = _entry(
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done', flush=True))).start()",
        ["--version"],
    )

    assert 0 == done.returncode
    assert done.stdout.startswith("olmkit ")
    assert done.stdout.endswith("thread done\n")


def test_the_program_runs_exit_handlers_and_keeps_the_exit_code():
    """The quick exit still runs the exit handlers, flushes the output and exits with the command's code."""
    done = _entry("atexit.register(lambda: print('handler ran'))", ["resolve", "--no-such-option"])

    assert 2 == done.returncode
    assert "handler ran\n" == done.stdout
    assert "--no-such-option" in done.stderr
