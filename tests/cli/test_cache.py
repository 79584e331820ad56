"""``olmkit cache info|prune``: the cache's size is bounded on request, least recently used first."""

from __future__ import annotations

import json
import os

import pytest

from olmkit.cli import main
from olmkit.cli.cache import parse_duration, parse_size


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache directory with three entries of 1000 bytes, used 3, 2 and 1 days ago."""
    root = tmp_path / "cache"
    (root / "resolver").mkdir(parents=True)
    now = 1_800_000_000.0
    for name, days in [("old.cache", 3), ("resolver/mid.graph", 2), ("new.cache", 1)]:
        path = root / name
        path.write_bytes(b"x" * 1000)
        os.utime(path, (now - days * 86400, now - days * 86400))
    monkeypatch.setenv("OLMKIT_CACHE_DIR", str(root))
    monkeypatch.setattr("time.time", lambda: now)
    return root


def _names(root):
    return sorted(p.name for p in root.rglob("*") if p.is_file())


def test_prune_max_size_removes_least_recently_used_first(cache, capsys):
    """--max-size 1.5k keeps only the most recently used entry."""
    assert 0 == main(["cache", "prune", "--max-size", "1500"])

    assert ["new.cache"] == _names(cache)
    assert "freed 2.0 KiB in 2 files" in capsys.readouterr().out


def test_prune_max_age_and_dry_run(cache, capsys):
    """--max-age 36h removes what was unused longer; --dry-run only says so."""
    assert 0 == main(["cache", "prune", "--max-age", "36h", "--dry-run"])
    out = capsys.readouterr().out
    assert ["mid.graph", "new.cache", "old.cache"] == _names(cache)
    assert "would remove" in out
    assert "would free 2.0 KiB in 2 files" in out

    assert 0 == main(["cache", "prune", "--max-age", "36h"])
    assert ["new.cache"] == _names(cache)


def test_prune_all_and_info(cache, capsys):
    """info counts entries by kind; --all empties the cache."""
    assert 0 == main(["cache", "info", "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    assert (3, 3000) == (data["files"], data["bytes"])
    assert {"catalogs": 2, "resolver": 1} == {k["kind"]: k["files"] for k in data["kinds"]}

    assert 0 == main(["cache", "prune", "--all"])
    assert [] == _names(cache)


def test_prune_without_a_bound_is_a_usage_error(cache, capsys):
    """prune needs --max-size, --max-age or --all; a bad size is exit 2 naming it."""
    assert 2 == main(["cache", "prune"])
    assert "--max-size SIZE, --max-age AGE or --all" in capsys.readouterr().err
    assert 2 == main(["cache", "prune", "--max-size", "lots"])
    assert "'lots' is not a size" in capsys.readouterr().err
    assert ["mid.graph", "new.cache", "old.cache"] == _names(cache)


def test_size_and_duration_units():
    """Binary size units and s/m/h/d/w durations."""
    assert [500 * 1024**2, 2 * 1024**3, 1536, 7] == [parse_size(t) for t in ("500M", "2G", "1.5k", "7")]
    assert [30 * 86400, 12 * 3600, 1209600.0] == [parse_duration(t) for t in ("30d", "12h", "2w")]


def test_the_cache_writers_lock_is_no_entry(cache, capsys):
    """A detached cache writer leaves its lock (``.writing``) behind: info does not count it,
    prune --all does not remove it."""
    from olmkit.catalog import LOCK_NAME, defer_writes, finish_writes, write_later
    from olmkit.catalog._writes import wait_for_writers

    defer_writes()
    write_later(lambda: (cache / "written.cache").write_bytes(b"y" * 500))
    finish_writes(detach=True, directory=cache)  # a forked child writes, holding the lock
    wait_for_writers(cache)
    assert (cache / LOCK_NAME).is_file()
    assert (cache / "written.cache").is_file()

    assert 0 == main(["cache", "info", "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    assert (4, 3500) == (data["files"], data["bytes"])
    assert {"catalogs": 3, "resolver": 1} == {k["kind"]: k["files"] for k in data["kinds"]}

    assert 0 == main(["cache", "prune", "--all"])
    assert "in 4 files" in capsys.readouterr().out
    assert [LOCK_NAME] == [p.name for p in cache.rglob("*") if p.is_file()]
