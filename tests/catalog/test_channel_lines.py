"""The C reader of plain channel and package lines (``olmkit._solver.channel_reader``) gives the decoding's.

With the C part, the loader's fast path hands the lines its scan of bundles left to the
channel reader, every file's at once: plain ``olm.channel`` blobs become channels without
being decoded, plain ``olm.package`` blobs too, every other line is decoded and read the
general way. Both ways must give the same catalog: channels (entries, origins, extra
fields) and packages, equal entries shared alike (as the cache file, which marshal writes,
shows), problems in the same order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit._solver import _encode
from olmkit.catalog import Catalog, LoadResult
from olmkit.catalog._catalog import _sort_channel
from olmkit.errors import CatalogError

from .test_catalog import bundle, chan, pkg

needs_native = pytest.mark.skipif(
    _encode.current() != "native", reason="the C part is not built or not in use (OLMKIT_PURE_PYTHON)"
)


def _lines(blobs: list[Any]) -> bytes:
    return b"".join((b if isinstance(b, bytes) else orjson.dumps(b)) + b"\n" for b in blobs)


#: channel lines the reader takes, and lines it leaves (each with what decoding makes of it)
PLAIN = [
    pkg("ap"),
    chan("ap", [{"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}]),
    chan("ap", [{"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}], name="fast"),  # equal entries: shared
    chan("ap", [{"name": "a.v2", "replaces": "a.v1", "skips": ["a.v0", ""], "skipRange": "<2.0.0"}], name="skips"),
    chan("ap", [{"name": "a.v3", "replaces": None, "skips": None, "skipRange": None}], name="nulls"),
    chan("ap", [{"name": "a.v3", "replaces": "", "skips": [], "skipRange": ""}], name="empties"),  # = nulls'
    chan("ap", [], name="none"),
    chan("ap", None, name="null-entries"),
    {"schema": "olm.channel", "package": "ap", "name": "missing-entries"},
    b' { "name" : "spaced" ,\t"package":"ap","schema":"olm.channel","entries":[ {"name":"a.v1"} ] } ',
    {"schema": "olm.package", "name": "bp", "defaultChannel": None, "description": ""},
    {"schema": "olm.package", "name": "cp", "description": "a package"},
]
LEFT = [
    chan("ap", [{"name": "a.v1"}], name="caf\u00e9"),  # not ASCII
    b'{"schema":"olm.channel","package":"ap","name":"esc\\u0061ped","entries":[]}',  # an escape
    {**chan("ap", [{"name": "a.v1"}], name="extra"), "x-note": 1},  # an extra field
    chan("ap", [{"name": "a.v1", "x": 1}], name="entry-extra"),  # an unknown entry field: a problem
    chan("ap", [{"name": "a.v1", "replaces": 3}], name="bad-replaces"),  # a problem
    chan("ap", [{"name": ""}], name="empty-name"),  # a problem
    chan("ap", [{"replaces": "a.v1"}], name="no-name"),  # a problem
    chan("ap", "a.v1", name="entries-text"),  # a problem
    chan("ap", [{"name": "a.v4", "skips": "a.v3"}], name="skips-text"),  # a problem
    b'{"schema":"olm.channel","package":"ap","name":"twice","name":"twice2","entries":[]}',  # a key twice
    chan("", [], name="no-package"),  # a problem
    chan("ap", [{"name": "a.v1"}]),  # a duplicate channel: a problem
    b'{"schema":"olm.channel","package":"ap","name":"num","entries":[{"name":"a.v5"}],"n":1e2}',
    chan("ap", [{"name": "a.v1"}, {"name": "a.v2", "replaces": "a.v1"}], name="after"),  # shares with the C ones
    chan("ap", [{"name": "a.v1", "replaces": "z"}], name="one-character"),  # a string of one character
    pkg("ap"),  # a package twice: a problem
    {**pkg("dp"), "icon": {"base64data": "", "mediatype": "image/png"}},
    {**pkg("ep"), "x-note": "extra"},
    {"schema": "olm.package", "name": "fp", "description": 3},  # a problem
    {"schema": "olm.package", "name": "gp", "package": "ap"},  # an extra field
    {"schema": "olm.package", "defaultChannel": "stable"},  # no name: a problem
    {"schema": "olm.deprecations", "package": "ap", "entries": [{"reference": {"schema": "olm.package"}}]},
    {"schema": "x.custom", "name": "zz"},  # another schema: kept as it is
]


def _load(path: Path, registry: Any, monkeypatch: pytest.MonkeyPatch, *, scan: bool) -> LoadResult:
    from olmkit.catalog import _fast, load_catalog_result

    monkeypatch.setattr(_fast, "SCAN", scan)
    return load_catalog_result(path, registry, cache=False)


def _channels(cat: Catalog) -> list[Any]:
    """Every channel as what it holds, and which entries are one object (numbered as first met)."""
    same: dict[int, int] = {}
    out = []
    for package, channels in cat.channels.items():
        for name, c in channels.items():
            out.append(
                (package, name, c, str(c.origin), c.extra, [same.setdefault(id(e), len(same)) for e in c.entries])
            )
    return out


def _packages(cat: Catalog) -> list[Any]:
    return [(name, p, str(p.origin), p.icon, p.extra) for name, p in cat.packages.items()]


def _cache_bytes(result: LoadResult) -> bytes:
    """The cache file's channel and package parts as marshal writes them (equal entries written
    once, then referred to): the sharing shows. (The rest of the file holds other blobs' dicts,
    whose keys orjson caches process-wide: two loads in one process may write them apart.)"""
    import marshal

    from olmkit.catalog._cache import _channel_part, _Files

    files = _Files()
    cat = result.catalog
    packages = [
        (p.name, p.default_channel, p.description, p.icon, p.extra, *files.where(p.origin))
        for p in cat.packages.values()
    ]
    return marshal.dumps(([_channel_part(per, files) for per in cat.channels.values()], packages))


def assert_read_is_the_decoding(path: Path, registry: Any, monkeypatch: pytest.MonkeyPatch) -> LoadResult:
    decoded = _load(path, registry, monkeypatch, scan=False)
    read = _load(path, registry, monkeypatch, scan=True)
    assert _channels(read.catalog) == _channels(decoded.catalog)
    assert [p.to_dict() for p in read.problems] == [p.to_dict() for p in decoded.problems]
    assert _packages(read.catalog) == _packages(decoded.catalog)
    assert _cache_bytes(read) == _cache_bytes(decoded)
    return read


@needs_native
def test_the_reader_takes_plain_channel_lines_only():
    from olmkit._solver import channel_reader

    reader = channel_reader()
    assert reader is not None
    got = reader.read(b"\n".join(_lines([b]).rstrip(b"\n") for b in [*PLAIN, *LEFT]))

    taken = [c != -1 for c in got.counts]
    assert taken == [True] * len(PLAIN) + [False] * (len(LEFT) - 12) + [True, False, True, False, True] + [False] * 7
    assert [c for c in got.counts if c < -1] == [-2, -2, -2, -2]
    assert got.texts[-5:] == ["ap", "after", "ap", "stable", ""]  # a channel, then a package
    cp = got.texts.index("cp")
    assert got.texts[cp - 3 : cp + 3] == ["bp", "", "", "cp", "", "a package"]
    assert got.texts[:5] == ["ap", "stable", "", "ap", "stable"]
    # the distinct entries in the order first met; empty replaces, skips and skipRange are none
    assert list(zip(got.names, got.replaces, got.skips, got.ranges, strict=True)) == [
        ("a.v1", None, (), None),
        ("a.v2", "a.v1", (), None),
        ("a.v2", "a.v1", ("a.v0", ""), "<2.0.0"),
        ("a.v3", None, (), None),
    ]
    assert list(got.ids[:4]) == [0, 1, 0, 1]
    again = reader.read(_lines([chan("bp", [{"name": "a.v3"}, {"name": "b.v1"}])]).rstrip(b"\n"))
    assert list(again.ids) == [3, 4]  # numbered across calls
    assert again.first_new == 4
    assert again.names == ["b.v1"]


@needs_native
@pytest.mark.parametrize("order", ["plain-first", "left-first", "one-file-each", "no-escapes"])
def test_channels_read_in_c_are_the_decoded_ones(order, olmkit_pm, tmp_path, monkeypatch):
    root = tmp_path / "catalog"
    (root / "a").mkdir(parents=True)
    bundles = [bundle("ap", v) for v in ("1", "2", "3")]
    if order == "plain-first":
        (root / "a" / "index.json").write_bytes(_lines([*PLAIN, *LEFT, *bundles]))
    elif order == "left-first":
        (root / "a" / "index.json").write_bytes(_lines([*LEFT[::-1], *bundles, *PLAIN]))
    elif order == "no-escapes":  # lines read in one piece, the ones left among them decoded
        unescaped = [b for b in LEFT if b"\\" not in _lines([b])]
        assert len(unescaped) == len(LEFT) - 1
        (root / "a" / "index.json").write_bytes(_lines([*PLAIN[:3], *unescaped, *PLAIN[3:], *bundles]))
    else:
        for i, blob in enumerate([*PLAIN, *LEFT, *bundles]):
            (root / "a" / f"{i:02}.json").write_bytes(_lines([blob]))

    read = assert_read_is_the_decoding(root, olmkit_pm.registry, monkeypatch)

    assert len(read.problems) >= 8
    assert read.catalog.channels["ap"]["fast"].entries[1].replaces == "a.v1"


@needs_native
def test_a_bundle_line_the_scan_leaves_that_names_olm_channel(olmkit_pm, tmp_path, monkeypatch):
    """A bundle blob among the lines kept for the channel reader: the catalog is read the usual way."""
    root = tmp_path / "catalog"
    root.mkdir()
    odd = bundle("ap", "1", props=[{"type": "x.note", "value": "olm.channel"}])
    odd["properties"][0]["value"]["packageName"] = "ap"
    text = json.dumps(odd, indent=None, separators=(",", ":")).replace('"olm.bundle"', '"olm.\\u0062undle"')
    (root / "index.json").write_bytes(_lines([pkg("ap"), chan("ap", [{"name": "a.v1"}]), text.encode()]))

    read = assert_read_is_the_decoding(root, olmkit_pm.registry, monkeypatch)

    assert [b.name for b in read.catalog.bundles["ap"].values()] == ["ap.v1"]
    assert not read.problems


@needs_native
def test_a_malformed_line_after_the_channels_names_its_file_and_line(olmkit_pm, tmp_path, monkeypatch):
    from olmkit.errors import InputError

    root = tmp_path / "catalog"
    root.mkdir()
    (root / "index.json").write_bytes(_lines([pkg("ap"), chan("ap", [{"name": "a.v1"}]), b'{"schema": "olm.p']))

    with pytest.raises(InputError, match=r"index.json.*line 3"):
        _load(root, olmkit_pm.registry, monkeypatch, scan=True)


def _order(cat: Catalog, package: str, channel: str) -> Any:
    try:
        order = cat.channel_order(package, channel)
    except CatalogError as exc:
        return str(exc)
    return [id(e) for e in order], [e.name for e in order]


_NAMES = st.sampled_from(["e0", "e1", "e2", "e3", "e4"])
_ENTRY = st.fixed_dictionaries(
    {"name": _NAMES},
    optional={"replaces": st.one_of(st.none(), _NAMES), "skips": st.lists(_NAMES, max_size=3)},
)


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(_ENTRY, max_size=7))
def test_channel_orders_read_in_c_are_the_catalogs(entries, olmkit_pm, tmp_path_factory, monkeypatch):
    """The order of a channel read in C (head first, following replaces, skipped entries left
    out) is the catalog's own, entry for entry, and its errors stay the catalog's."""
    root = tmp_path_factory.mktemp("catalog")
    (root / "index.json").write_bytes(_lines([pkg("ap"), chan("ap", entries)]))

    decoded = _load(root, olmkit_pm.registry, monkeypatch, scan=False).catalog
    read = _load(root, olmkit_pm.registry, monkeypatch, scan=True).catalog
    found = read._chains.get(("ap", "stable"))

    want, got = _order(decoded, "ap", "stable"), _order(read, "ap", "stable")
    assert (got if isinstance(got, str) else got[1]) == (want if isinstance(want, str) else want[1])
    if found is not None:  # read in C: the very entries the catalog's sorting picks
        assert isinstance(got, tuple)
        assert got[0] == [id(e) for e in _sort_channel(read.channels["ap"]["stable"])]
    else:  # left to the catalog: an error
        assert isinstance(want, str)


_TEXTS = st.sampled_from(["", "x", "ap", "a.v1", "a.v2", "stable", "caf\u00e9", "tab\there", "<1.0.0"])
_VALUES = st.one_of(st.none(), _TEXTS, st.integers(-1, 1), st.lists(_TEXTS, max_size=2), st.just({}))
_GONE = object()  # a mutation that drops the field


@st.composite
def _blob_texts(draw: st.DrawFn) -> bytes:
    """A plain channel or package blob, maybe with a field changed, added or dropped (in the blob or
    an entry), its keys in random order, spaced or not, escaped or not."""
    names = st.sampled_from(["a.v1", "a.v2", "a.v3"])
    if draw(st.booleans()):
        entries = [
            {
                "name": draw(names),
                **draw(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "replaces": names,
                            "skips": st.lists(names, max_size=2),
                            "skipRange": st.just("<1.0.0"),
                        },
                    )
                ),
            }
            for _ in range(draw(st.integers(0, 3)))
        ]
        blob: dict[str, Any] = {
            "schema": "olm.channel",
            "package": "ap",
            "name": draw(st.sampled_from(["stable", "fast"])),
            "entries": entries,
        }
        fields = ["schema", "package", "name", "entries", "defaultChannel", "x-extra"]
    else:
        blob = {"schema": "olm.package", "name": draw(st.sampled_from(["ap", "bp"])), "defaultChannel": "stable"}
        fields = ["schema", "package", "name", "defaultChannel", "description", "icon", "entries"]
    for _ in range(draw(st.integers(0, 2))):
        value = draw(st.one_of(_VALUES, st.just(_GONE)))
        entries = blob.get("entries")
        objects = [entry for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []
        if objects and draw(st.booleans()):
            target = objects[draw(st.integers(0, len(objects) - 1))]
            field = draw(st.sampled_from(["name", "replaces", "skips", "skipRange", "other"]))
        else:
            target, field = blob, draw(st.sampled_from(fields))
        if value is _GONE:
            target.pop(field, None)
        else:
            target[field] = value
    items = draw(st.permutations(list(blob.items())))
    separators = (", ", ": ") if draw(st.booleans()) else (",", ":")
    return json.dumps(dict(items), separators=separators, ensure_ascii=draw(st.booleans())).encode()


@needs_native
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_blob_texts(), min_size=1, max_size=4))
def test_random_channel_and_package_blobs_read_as_decoded(lines, olmkit_pm, tmp_path_factory, monkeypatch):
    """Whatever a channel or package blob holds, reading it in C gives what decoding gives (or leaves it)."""
    root = tmp_path_factory.mktemp("catalog")
    (root / "index.json").write_bytes(_lines([*lines, bundle("ap", "1")]))

    assert_read_is_the_decoding(root, olmkit_pm.registry, monkeypatch)
