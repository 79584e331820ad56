"""What catalog validation reports beyond the blob rules: bundles without content, upgrade dead
ends, requirements nothing satisfies (every bundle named), deprecations with file and line; and
``catalog upgrade-path`` on a path that stops short of the head."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from olmkit.catalog import load_catalog_result
from olmkit.catalog.graph import dead_ends, upgrade_walk
from olmkit.catalog.validate import validate_catalog
from olmkit.cli import main
from tests.shared import COMMUNITY

REAL = COMMUNITY  # the shared real catalog: always there, beside the repository


def pkg(name: str = "a") -> dict[str, Any]:
    return {"schema": "olm.package", "name": name, "defaultChannel": "stable"}


def chan(entries: list[dict[str, Any]], package: str = "a") -> dict[str, Any]:
    return {"schema": "olm.channel", "package": package, "name": "stable", "entries": entries}


def bundle(version: str, props: list[Any] | None = None, package: str = "a", image: bool = True) -> dict[str, Any]:
    blob: dict[str, Any] = {
        "schema": "olm.bundle",
        "package": package,
        "name": f"{package}.v{version}",
        "properties": [{"type": "olm.package", "value": {"packageName": package, "version": version}}, *(props or [])],
    }
    if image:
        blob["image"] = f"example.invalid/{package}:{version}"
    return blob


def write(root: Path, blobs: list[dict[str, Any]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "c.json").write_bytes(b"".join(orjson.dumps(b) + b"\n" for b in blobs))
    return root


def problems(root: Path, pm: Any, cache: bool = False) -> list[Any]:
    result = load_catalog_result(root, pm.registry, cache=cache)
    return validate_catalog(result.catalog, pm.registry, result.problems)


# a.v1 is replaced only by a.v2, which the head a.v3 skips: nothing offered upgrades a.v1
STUCK = [
    pkg(),
    chan(
        [
            {"name": "a.v1.0.0"},
            {"name": "a.v2.0.0", "replaces": "a.v1.0.0"},
            {"name": "a.v3.0.0", "replaces": "a.v2.0.0", "skips": ["a.v2.0.0"]},
        ]
    ),
    bundle("1.0.0"),
    bundle("2.0.0"),
    bundle("3.0.0"),
]


def test_bundle_without_image_or_inline_content_is_an_error(tmp_path, olmkit_pm):
    """No image and no olm.bundle.object: opm's "bundle image must be set"; inline content alone is enough."""
    inline = {"type": "olm.bundle.object", "value": {"data": "eyJraW5kIjogIkNvbmZpZ01hcCJ9"}}
    root = write(
        tmp_path / "c",
        [
            pkg(),
            chan([{"name": "a.v1.0.0"}, {"name": "a.v2.0.0", "replaces": "a.v1.0.0"}]),
            bundle("1.0.0", image=False),
            bundle("2.0.0", [inline], image=False),
        ],
    )

    found = [p for p in problems(root, olmkit_pm) if "bundle image must be set" in p.message]

    assert [("error", "olm.bundle a.v1.0.0", "image", 3)] == [(p.severity, p.blob, p.field, p.line) for p in found]
    assert "olm.bundle.object" in found[0].message


def test_stranded_bundles_name_the_channel_head(tmp_path, olmkit_pm):
    """An entry replaced only by one the head skips is stranded; the error names the head itself (the
    entry nothing replaces or skips), not another entry of the chain under it."""
    chain = [{"name": "a.v1.0.0"}] + [{"name": f"a.v{v}.0.0", "replaces": f"a.v{v - 1}.0.0"} for v in range(2, 9)]
    chain[-1]["skips"] = ["a.v0.9.0"]
    blobs = [
        pkg(),
        chan([*chain, {"name": "a.v0.9.0", "replaces": "a.v0.8.0"}, {"name": "a.v0.8.0"}]),
        *(bundle(f"{v}.0.0") for v in range(1, 9)),
        bundle("0.9.0"),
        bundle("0.8.0"),
    ]

    found = [p for p in problems(write(tmp_path / "c", blobs), olmkit_pm) if "stranded" in p.message]

    assert [("error", "olm.channel stable", "entries", 2)] == [(p.severity, p.blob, p.field, p.line) for p in found]
    assert (
        "channel contains stranded bundles (not reachable from the head 'a.v8.0.0' by replaces or skips): a.v0.8.0"
    ) == found[0].message


def test_upgrade_dead_end_is_a_warning_with_the_entry_and_where_it_stops(tmp_path, olmkit_pm):
    """An entry whose only upgrade is skipped by the head is reported, with the reason; the catalog stays valid."""
    found = problems(write(tmp_path / "c", STUCK), olmkit_pm)

    dead = [p for p in found if "upgrade dead end" in p.message]
    assert [("warning", "olm.channel stable", "entries[0]", 2)] == [(p.severity, p.blob, p.field, p.line) for p in dead]
    assert (
        "upgrade dead end: 'a.v1.0.0' can never reach the channel head 'a.v3.0.0', as the resolver never offers "
        "what upgrades it: 'a.v2.0.0' replaces it but is skipped by 'a.v3.0.0'"
    ) == dead[0].message
    assert [] == [p for p in found if p.severity == "error"]


def test_dead_ends_group_the_entries_behind_one_stop(tmp_path, olmkit_pm):
    """Entries whose paths all stop at one bundle are one warning naming them all, oldest first."""
    blobs = [
        pkg(),
        chan(
            [
                {"name": "a.v0.8.0"},
                {"name": "a.v0.9.0", "replaces": "a.v0.8.0"},
                {"name": "a.v1.0.0", "replaces": "a.v0.9.0"},
                {"name": "a.v2.0.0", "replaces": "a.v1.0.0"},
                {"name": "a.v3.0.0", "replaces": "a.v2.0.0", "skips": ["a.v2.0.0"]},
            ]
        ),
        *[bundle(v) for v in ("0.8.0", "0.9.0", "1.0.0", "2.0.0", "3.0.0")],
    ]
    root = write(tmp_path / "c", blobs)
    catalog = load_catalog_result(root, olmkit_pm.registry, cache=False).catalog

    groups = dead_ends(catalog, "a", "stable")

    assert [("a.v1.0.0", ["a.v0.8.0", "a.v0.9.0", "a.v1.0.0"])] == [(s.bundle, names) for s, names in groups]
    message = next(p.message for p in problems(root, olmkit_pm) if "dead end" in p.message)
    assert "3 entries can never reach the channel head 'a.v3.0.0': their upgrades stop at 'a.v1.0.0'" in message
    assert message.endswith("(entries: a.v0.8.0, a.v0.9.0, a.v1.0.0)")


def test_real_catalog_dead_ends(olmkit_pm):
    """The community catalog: 323 of its 9,819 entries, in 4 channels, never reach their head."""
    catalog = load_catalog_result(REAL, olmkit_pm.registry, cache=False).catalog
    stuck: dict[tuple[str, str], int] = {}
    entries = 0
    for package, channels in catalog.channels.items():
        for name, channel in channels.items():
            entries += len(channel.entries)
            for _, names in dead_ends(catalog, package, name):
                stuck[(package, name)] = stuck.get((package, name), 0) + len(names)

    assert (9819, 323, 4) == (entries, sum(stuck.values()), len(stuck))
    assert 158 == stuck[("gitlab-operator-kubernetes", "stable")] == stuck[("gitlab-operator-kubernetes", "unstable")]


def test_real_catalog_names_every_bundle_with_an_unsatisfied_requirement(olmkit_pm):
    """eclipse-che needs devworkspace-operator (absent) in 79 bundles: the warning says so."""
    found = problems(REAL, olmkit_pm)

    che = [p.message for p in found if p.package == "eclipse-che" and "devworkspace-operator" in p.message]
    assert any("(required by 79 bundles of eclipse-che, versions 7.44.0 to 7.121.0: " in m for m in che)


def test_unsatisfied_requirement_names_every_bundle_carrying_it(tmp_path, olmkit_pm):
    """One warning per package and requirement, with the count, the versions and the bundles."""
    needs = {"type": "olm.package.required", "value": {"packageName": "nowhere", "versionRange": ">=1.0.0"}}
    root = write(
        tmp_path / "c",
        [
            pkg(),
            chan([{"name": "a.v1.0.0"}, {"name": "a.v1.1.0", "replaces": "a.v1.0.0"}]),
            bundle("1.0.0", [needs]),
            bundle("1.1.0", [needs]),
            pkg("b"),
            chan([{"name": "b.v1.0.0"}], package="b"),
            bundle("1.0.0", [needs], package="b"),
        ],
    )

    found = [p for p in problems(root, olmkit_pm) if "nothing in this catalog satisfies" in p.message]

    assert [("a", "olm.bundle a.v1.0.0"), ("b", "olm.bundle b.v1.0.0")] == [(p.package, p.blob) for p in found]
    assert found[0].message.endswith("(required by 2 bundles of a, versions 1.0.0 to 1.1.0: a.v1.0.0, a.v1.1.0)")
    assert "required by" not in found[1].message


@pytest.mark.parametrize("cache", [False, True])
def test_deprecation_problems_carry_file_line_and_entry(tmp_path, olmkit_pm, cache):
    """A deprecation naming a missing bundle or channel points at its blob's line and entry (also from the cache)."""
    deprecations = {
        "schema": "olm.deprecations",
        "package": "a",
        "entries": [
            {"reference": {"schema": "olm.package"}, "message": "gone"},
            {"reference": {"schema": "olm.bundle", "name": "a.v9.0.0"}, "message": "old"},
            {"reference": {"schema": "olm.channel", "name": "beta"}, "message": "old"},
        ],
    }
    root = write(tmp_path / "c", [pkg(), chan([{"name": "a.v1.0.0"}]), bundle("1.0.0"), deprecations])
    if cache:
        problems(root, olmkit_pm, cache=True)  # the second load reads the cache

    found = [p for p in problems(root, olmkit_pm, cache=cache) if "deprecation names" in p.message]

    assert [
        (str(root / "c.json"), 4, "entries[1].reference.name", "deprecation names bundle 'a.v9.0.0'"),
        (str(root / "c.json"), 4, "entries[2].reference.name", "deprecation names channel 'beta'"),
    ] == [(p.path, p.line, p.field, p.message.split(",")[0]) for p in found]


def test_summary_line_counts_in_the_singular_and_plural(tmp_path, capsys):
    """ "1 error, 1 warning" and "2 errors, 1 warning": the nouns agree with the counts."""
    one = write(tmp_path / "one", [*STUCK[:-1], bundle("3.0.0", image=False)])
    empty = [{"schema": "olm.channel", "package": "a", "name": n, "entries": []} for n in ("beta", "gamma")]
    two = write(tmp_path / "two", [*STUCK, *empty])

    main(["catalog", "validate", "--no-cache", str(one)])
    first = capsys.readouterr().out.splitlines()[-1]
    main(["catalog", "validate", "--no-cache", str(two)])
    second = capsys.readouterr().out.splitlines()[-1]

    assert (f"{one}: invalid: 1 error, 1 warning", f"{two}: invalid: 2 errors, 1 warning") == (first, second)


def test_upgrade_path_that_stops_shows_the_steps_and_why(tmp_path, capsys):
    """Stuck: the path as far as it goes on stdout, the stop and its reason on stderr, exit 1 (not 2)."""
    blobs = [
        pkg(),
        chan(
            [
                {"name": "a.v0.9.0"},
                {"name": "a.v1.0.0", "replaces": "a.v0.9.0"},
                {"name": "a.v2.0.0", "replaces": "a.v1.0.0"},
                {"name": "a.v3.0.0", "replaces": "a.v2.0.0", "skips": ["a.v2.0.0"]},
            ]
        ),
        *[bundle(v) for v in ("0.9.0", "1.0.0", "2.0.0", "3.0.0")],
    ]
    root = write(tmp_path / "c", blobs)

    code = main(["catalog", "upgrade-path", str(root), "--package", "a", "--from", "a.v0.9.0"])
    out = capsys.readouterr()
    head_code = main(["catalog", "upgrade-path", str(root), "--package", "a", "--from", "a.v2.0.0"])
    head_out = capsys.readouterr()
    unknown = main(["catalog", "upgrade-path", str(root), "--package", "a", "--from", "a.v7.0.0"])
    unknown_err = capsys.readouterr().err

    assert 1 == code
    assert ["1", "a.v0.9.0", "a.v1.0.0", "replaces"] == out.out.splitlines()[1].split()
    assert (
        "olmkit: the upgrade path from 'a.v0.9.0' in channel 'stable' of package 'a' stops after 1 step at "
        "'a.v1.0.0', short of the head 'a.v3.0.0': the resolver never offers what upgrades it: 'a.v2.0.0' "
        "replaces it but is skipped by 'a.v3.0.0'\n"
    ) == out.err
    assert (0, "a.v3.0.0") == (head_code, head_out.out.splitlines()[1].split()[2])
    assert (2, 'olmkit: error: bundle "a.v7.0.0" not found in package "a"\n') == (unknown, unknown_err)


def test_upgrade_walk_with_nothing_upgrading_says_so(tmp_path, olmkit_pm):
    """A bundle of another channel that nothing here upgrades: the reason says nothing in the channel does."""
    root = write(
        tmp_path / "c",
        [
            pkg(),
            chan([{"name": "a.v1.0.0"}, {"name": "a.v2.0.0", "skips": ["a.v1.0.0"]}]),
            {"schema": "olm.channel", "package": "a", "name": "beta", "entries": [{"name": "a.v0.5.0"}]},
            *[bundle(v) for v in ("0.5.0", "1.0.0", "2.0.0")],
        ],
    )
    catalog = load_catalog_result(root, olmkit_pm.registry, cache=False).catalog

    steps, stop = upgrade_walk(catalog, "a", "stable", "a.v1.0.0")
    _, stuck = upgrade_walk(catalog, "a", "stable", "a.v0.5.0")

    assert ([("a.v2.0.0", "skips")], None) == (steps, stop)
    assert stuck is not None
    assert "nothing in the channel replaces it, skips it or has a skipRange including it" == stuck.reason
