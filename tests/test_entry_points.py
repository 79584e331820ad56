"""Entry points read without importlib.metadata: the same answer as importlib.metadata, or none."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile
from pathlib import Path

import pytest

from olmkit import _entry_points


def _dist(root: Path, folder: str, entry_points: str | bytes | None) -> None:
    info = root / folder
    info.mkdir(parents=True)
    name = folder.rpartition(".")[0].partition("-")[0]
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if isinstance(entry_points, bytes):
        (info / "entry_points.txt").write_bytes(entry_points)
    elif entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)


def _reference(group: str) -> list[tuple[str, str, str]]:
    return [(ep.name, ep.value, str(ep.dist._path)) for ep in importlib.metadata.entry_points(group=group)]  # type: ignore[union-attr]


def _fast(group: str) -> list[tuple[str, str, str]] | None:
    found = _entry_points.entry_points(group)
    return None if found is None else [(ep.name, ep.value, ep.metadata) for ep in found]


@pytest.fixture
def paths(tmp_path, monkeypatch):
    """Two directories as the whole ``sys.path``."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.setattr(sys, "path", [str(first), str(second), str(tmp_path / "missing")])
    return first, second


def test_the_same_entry_points_in_the_same_order_as_importlib_metadata(paths):
    """Distributions by path order, a name's first distribution only, every group and line form."""
    first, second = paths
    _dist(first, "alpha-1.0.dist-info", "[olmkit]\nA1 = alpha_mod\n a2=alpha_mod:obj.attr [extra] \n[other]\nx = y\n")
    _dist(first, "Beta_Pkg-2.0.dist-info", "# comment\n\n[olmkit]\nb = beta:thing\n; semi = colon\n")
    _dist(first, "gamma-1.0.egg-info", "[olmkit]\ng = gamma\n")
    _dist(first, "no_points-1.0.dist-info", None)
    _dist(first, "before-1.0.dist-info", "stray line\n[olmkit]\nbefore = b\n")
    (first / "legacy-1.0.egg-info").write_text("Metadata-Version: 1.0\nName: legacy\n")  # a file: no entry points
    _dist(second, "beta.pkg-3.0.dist-info", "[olmkit]\nshadowed = by_the_first\n")  # same name: not read
    _dist(second, "delta-1.0.dist-info", "[olmkit]\nd = delta\n[olmkit]\nd = delta_again\n")

    expected = _reference("olmkit")

    assert expected == _fast("olmkit")
    assert 8 == len(expected)  # the case above really has them all (a line starting with ; is no comment)
    assert _reference("other") == _fast("other")
    assert [] == _fast("nothing")


@pytest.mark.parametrize(
    "layout",
    ["zip on the path", "egg on the path", "a line without =", "suffix in capitals", "not UTF-8", "another finder"],
)
def test_layouts_only_importlib_metadata_reads_are_left_to_it(paths, layout, monkeypatch, tmp_path):
    first, _ = paths
    _dist(first, "plain-1.0.dist-info", "[olmkit]\np = plain\n")
    if layout == "zip on the path":
        archive = tmp_path / "dists.zip"
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("zipped-1.0.dist-info/entry_points.txt", "[olmkit]\nz = zipped\n")
        sys.path.append(str(archive))
    elif layout == "egg on the path":
        egg = tmp_path / "old-1.0.egg"
        (egg / "EGG-INFO").mkdir(parents=True)
        sys.path.append(str(egg))
    elif layout == "a line without =":
        _dist(first, "bad-1.0.dist-info", "[olmkit]\nno value here\n")
    elif layout == "suffix in capitals":
        _dist(first, "Shout-1.0.DIST-INFO", "[olmkit]\ns = shout\n")
    elif layout == "not UTF-8":
        _dist(first, "latin-1.0.dist-info", "[olmkit]\nl = caf\xe9\n".encode("latin-1"))
    else:

        class Finder:
            @staticmethod
            def find_distributions(context=None):
                return iter(())

        monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])

    assert _fast("olmkit") is None


def test_an_entry_point_loads_what_importlib_metadata_loads(paths):
    """Module, attribute path, extras; a value importlib cannot read fails the same way."""
    first, _ = paths
    (first / "olmkit_fake_ep_mod.py").write_text("class Obj:\n    attr = 42\n")
    points = "[olmkit]\nm = olmkit_fake_ep_mod\na = olmkit_fake_ep_mod:Obj.attr [x]\nbad = !!\n"
    _dist(first, "fake-1.0.dist-info", points)
    try:
        fast = {ep.name: ep for ep in _entry_points.entry_points("olmkit") or []}
        ref = {ep.name: ep for ep in importlib.metadata.entry_points(group="olmkit")}

        assert ref["m"].load() is _entry_points.load(fast["m"])
        assert 42 == _entry_points.load(fast["a"]) == ref["a"].load()
        with pytest.raises(Exception) as mine:
            _entry_points.load(fast["bad"])
        with pytest.raises(Exception) as theirs:
            ref["bad"].load()
        assert (type(theirs.value), str(theirs.value)) == (type(mine.value), str(mine.value))
        dist = _entry_points.distribution_of(fast["m"].metadata)
        assert ("fake", "1.0") == (dist.metadata["Name"], dist.version)
    finally:
        sys.modules.pop("olmkit_fake_ep_mod", None)


def test_the_installed_environment_reads_the_same(monkeypatch):
    """Where the tests run (the real site-packages and editable installs): the same as importlib.metadata."""
    for group in ("olmkit", "console_scripts", "pytest11"):
        fast = _fast(group)
        if fast is not None:
            assert _reference(group) == fast
