"""The C scan of catalog files (``olmkit._solver.line_scanner``) fills the columns exactly as decoding them does.

The loader's fast path reads each JSON file either by scanning its bytes in C (plain bundle
blobs become rows without being decoded, the distinct properties' texts made orjson's in C)
or, without the C part, by decoding it whole with orjson. Both must give the same catalog:
columns (distinct properties numbered alike), bundles with origins, index, parsed values and
load problems, and both the object loader's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmkit._solver import _encode
from olmkit.catalog import Catalog
from olmkit.errors import InputError
from olmkit.types import PackageIdentity
from tests.shared import COMMUNITY

from .test_catalog import EXAMPLES, bundle, chan, pkg
from .test_columns import BLOBS, assert_fast_load_is_the_object_load, fast_taken, generated, snapshot  # noqa: F401

NATIVE = _encode.current() == "native"
needs_native = pytest.mark.skipif(
    not NATIVE, reason="the C part is not built or not in use (OLMKIT_PURE_PYTHON): files are decoded, not scanned"
)


def _state(cat: Catalog) -> dict[str, Any]:
    """What the fast path holds beyond what readers see: columns as filled, rows' files and lines, index lists."""
    from olmkit.catalog._fast import LazyBundles

    bundles = cat.bundles
    if not isinstance(bundles, LazyBundles):
        return {"lazy": False}
    columns = cat.columns(build=False)
    assert columns is not None
    identities = {}  # read from the columns, before any PackageIdentity is made for them
    for name in ("olm.package",):
        ds = [d for d, t in enumerate(columns.dist_type) if t == name]
        identities[name] = (ds, bundles.identities(ds))
    parsed = bundles.parsed_view()
    for name, (ds, found) in identities.items():
        values = [parsed.get(d) for d in ds]
        if all(type(v) is PackageIdentity for v in values):
            # as the PackageIdentity objects say (checked by the caller: not an exception here)
            identities[name] = (found, ([v.package for v in values], [v.version for v in values]))  # type: ignore[union-attr]
        else:
            identities[name] = (found, None)
    return {
        "columns": cat.columns(build=False),
        "paths": bundles._paths,
        "files": list(bundles._files),
        "lines": list(bundles._lines),
        "extra": dict(bundles.extra),
        "parsed": dict(parsed),
        "identities": identities,
        "index": {n: dict(keys.lists) for n, keys in (cat._refs or {}).items()},
    }


def assert_scan_is_the_decoding(path: Path, registry: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """Loading with the scan and with decoding gives the same catalog, and the object loader's.

    Returns:
        the scanned catalog and how many bundles the scan took.
    """
    from olmkit._solver import _scan
    from olmkit.catalog import _fast, _load, load_catalog_result

    taken = 0
    scan, scan_files = _scan.LineScanner.scan, _scan.LineScanner.scan_files

    def counting(self: Any, data: bytes) -> Any:
        nonlocal taken
        out = scan(self, data)
        taken += len(out.b_line) if out is not None else 0
        return out

    def counting_files(self: Any, data: Any) -> Any:
        nonlocal taken
        out, files = scan_files(self, data)
        taken += len(out.b_line)
        return out, files

    def load() -> Any:
        try:
            return load_catalog_result(path, registry, cache=False)
        except InputError as exc:  # a malformed file: the same error, file and line
            return str(exc)

    def seen(result: Any) -> Any:
        """What readers see, or the error reading it raises (the same on both paths)."""
        try:
            return (_state(result.catalog), snapshot(result.catalog, result.problems))
        except Exception as exc:  # a plugin's parser failing on a value: compared too
            return repr(exc)

    monkeypatch.setattr(_load, "FAST", True)
    monkeypatch.setattr(_fast, "SCAN", False)
    decoded = load()
    monkeypatch.setattr(_fast, "SCAN", True)
    monkeypatch.setattr(_scan.LineScanner, "scan", counting)
    monkeypatch.setattr(_scan.LineScanner, "scan_files", counting_files)
    scanned = load()
    monkeypatch.setattr(_scan.LineScanner, "scan", scan)
    monkeypatch.setattr(_scan.LineScanner, "scan_files", scan_files)
    if isinstance(decoded, str):
        assert decoded == scanned
        return None, taken

    assert fast_taken(decoded.catalog) == fast_taken(scanned.catalog)
    if not fast_taken(decoded.catalog):  # both read by the object loader: the same catalog and problems
        assert seen(decoded) == seen(scanned)
        assert [p.to_dict() for p in decoded.problems] == [p.to_dict() for p in scanned.problems]
        return scanned.catalog, taken
    expected = seen(decoded)
    got = seen(scanned)
    assert expected == got
    for state in (expected, got):  # read from the columns as their PackageIdentity objects say
        for found, wanted in state[0].get("identities", {}).values() if not isinstance(state, str) else ():
            assert found == wanted
    if not isinstance(expected, str):
        assert_fast_load_is_the_object_load(path, registry, monkeypatch)
    return scanned.catalog, taken


@needs_native
def test_scan_of_the_generated_catalog(generated, olmkit_pm, monkeypatch):  # noqa: F811
    """Every bundle of the benchmark's catalog is taken by the scan, with the decoding's catalog."""
    cat, taken = assert_scan_is_the_decoding(generated, olmkit_pm.registry, monkeypatch)

    assert fast_taken(cat)
    assert taken == len(cat.columns() or ()) > 1900


@needs_native
@pytest.mark.skipif(not COMMUNITY.is_dir(), reason="the community catalog is not beside the repository")
def test_scan_of_the_community_catalog(olmkit_pm, monkeypatch):
    """The real community catalog (compact JSON, non-ASCII text, escapes): the decoding's catalog."""
    cat, taken = assert_scan_is_the_decoding(COMMUNITY, olmkit_pm.registry, monkeypatch)

    assert fast_taken(cat)
    assert taken > 6000


@needs_native
@pytest.mark.parametrize("name", list(BLOBS))
def test_scan_of_odd_and_broken_catalogs(name, olmkit_pm, tmp_path, monkeypatch):
    """Extra fields, interleaved packages, duplicates, bad properties: the decoding's catalog and problems."""
    from olmkit.serde import dump_json_stream

    for rel, blobs in BLOBS[name][1].items():
        (tmp_path / rel).write_bytes(dump_json_stream(blobs))

    cat, _ = assert_scan_is_the_decoding(tmp_path, olmkit_pm.registry, monkeypatch)

    assert BLOBS[name][0] == fast_taken(cat)


@needs_native
def test_scan_of_a_yaml_catalog(olmkit_pm, monkeypatch):
    """A YAML file makes the object loader read the whole catalog, the JSON files scanned before it too."""
    cat, _ = assert_scan_is_the_decoding(EXAMPLES, olmkit_pm.registry, monkeypatch)

    assert not fast_taken(cat)


def _bundle_lines(prefix: str, extra: str, properties: list[list[str]]) -> list[str]:
    """Bundle lines of package "a", named ``prefix`` and a number, with ``extra`` fields, carrying ``properties``."""
    return [
        f'{{"schema": "olm.bundle", "name": "{prefix}{i}", "package": "a", {extra}"properties": [{", ".join(ps)}]}}'
        for i, ps in enumerate(properties)
    ]


T = '{"type": "x.io/t", "value": {"a": 1.0}}'
P = '{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}'
PV = '{"value": {"packageName": "a", "version": "1.0.0"}, "type": "olm.package"}'
PE = '{"type": "olm.package", "value": {"packageName": "\\u0061", "version": "1.0.0"}}'
V = '{"value": {"a": 1.0}, "type": "x.io/t"}'
MIXED = {
    "scanned, then decoded alike": ([T], [T], True),
    "decoded, then scanned alike": ([T], [T], True),
    "scanned value first, decoded type first": ([V], [T], False),
    "scanned type first, then value first": ([T, V], [], False),
    "one value written two ways, both scanned": (['{"type": "x.io/t", "value": {"a": 1.00}}', T], [], True),
    # an identity is its text, whatever the form; an escape is read away
    "an identity in both forms and escaped": ([P, PV, PE], [P], True),
    "an identity decoded, then scanned escaped": ([PE], [P], True),
}


@needs_native
@pytest.mark.parametrize("name", list(MIXED))
def test_a_property_of_scanned_and_decoded_bundles(name, olmkit_pm, tmp_path, monkeypatch):
    """A property carried by bundles the scan takes and by bundles it leaves (an extra field) is one
    distinct property when written alike, and makes the object loader read a catalog where it is not."""
    scanned, decoded, fast = MIXED[name]
    lines = [json.dumps(pkg("a"))]
    plain = _bundle_lines("a.v", "", [[p] for p in scanned])
    extra = _bundle_lines("b", '"x": 1, ', [[p] for p in decoded])
    lines += extra + plain if name.startswith("decoded") else plain + extra
    (tmp_path / "a.json").write_text("\n".join(lines) + "\n")

    cat, taken = assert_scan_is_the_decoding(tmp_path, olmkit_pm.registry, monkeypatch)

    assert taken == len(scanned)
    assert fast == fast_taken(cat)
    if fast:
        columns = cat.columns()
        assert len(set(columns.prop_ref)) == 1


GVK = '{"type": "olm.gvk", "value": {"group": "g", "version": "v1", "kind": "K"}}'
PLAIN_AND_NOT = {
    "plain": [P, GVK],
    "an extra field": [
        '{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0", "x": 1}}',
        '{"type": "olm.gvk", "value": {"group": "g", "version": "v1", "kind": "K", "x": 1}}',
    ],
    "other key orders": [
        '{"type": "olm.package", "value": {"version": "1.0.0", "packageName": "a"}}',
        '{"type": "olm.gvk", "value": {"kind": "K", "version": "v1", "group": "g"}}',
    ],
    "empty and missing fields": [
        '{"type": "olm.package", "value": {"packageName": "a", "version": ""}}',
        '{"type": "olm.package", "value": {"packageName": "a"}}',
        '{"type": "olm.gvk", "value": {"group": "", "version": "v1", "kind": "K"}}',
        '{"type": "olm.gvk", "value": {"version": "v1", "kind": "K"}}',
        '{"type": "olm.gvk", "value": {"group": "g", "version": "", "kind": "K"}}',
    ],
    "not strings": [
        '{"type": "olm.package", "value": {"packageName": "a", "version": 1}}',
        '{"type": "olm.package", "value": {"packageName": "a", "version": null}}',
        '{"type": "olm.gvk", "value": {"group": "g", "version": "v1", "kind": ["K"]}}',
        '{"type": "olm.label", "value": {"label": "x"}}',
        '{"type": "olm.label", "value": "x"}',
    ],
    "escapes and repeated keys": [
        '{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.\\u0030"}}',
        '{"type": "olm.package", "value": {"packageName": "b", "packageName": "a", "version": "1.0.0"}}',
        '{"type": "olm.gvk", "value": {"group": "g", "version": "v1", "k\\u0069nd": "K"}}',
    ],
}


@needs_native
@pytest.mark.parametrize("name", list(PLAIN_AND_NOT))
def test_values_read_through_fields_and_parsed_alike(name, olmkit_pm, tmp_path, monkeypatch):
    """Identity and index values the scan reads as strings, and those it leaves to the plugin's
    parser (not plain), give the decoding's catalog: versions, index, parsed values, problems;
    scanned after decoded bundles, before them, and alone."""
    props = PLAIN_AND_NOT[name]
    head = [json.dumps(pkg("a"))]
    plain = _bundle_lines("a.v", "", [[p, GVK] for p in props])
    extra = _bundle_lines("b.v", '"x": 1, ', [[GVK, p] for p in props])
    for case, lines in {"scanned": plain, "decoded first": extra + plain, "decoded last": plain + extra}.items():
        (tmp_path / "a.json").write_text("\n".join(head + lines) + "\n")
        cat, taken = assert_scan_is_the_decoding(tmp_path, olmkit_pm.registry, monkeypatch)
        assert taken == len(plain), case
        assert fast_taken(cat), case


def test_without_the_c_part_files_are_decoded(olmkit_pm, tmp_path):
    """The pure implementation (OLMKIT_PURE_PYTHON=1) has no scanner: the loader decodes every file."""
    from olmkit._solver import line_scanner

    old = _encode.set_implementation("pure")
    try:
        assert line_scanner() is None
    finally:
        _encode.set_implementation(old)
    assert (line_scanner() is not None) == (_encode.current() == "native")


# --------------------------------------------------------------------------- awkward JSON

SPACE = st.sampled_from(["", "", " ", "  ", "\t", " \r"])


def json_values(integers: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    return st.recursive(
        st.none()
        | st.booleans()
        | integers
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=6)
        | st.sampled_from(["", "é", "\u2028", "a/b", 'q"', "\\", "\x7f", "\U0001f600", "\n"]),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    )


# Integers beyond what orjson reads included (past 20 digits): a file holding one is read by the
# object loader with Python's json, and its properties holding one are not interned.
VALUES = json_values(st.integers(min_value=-(2**70), max_value=2**70))
#: identity-shaped values: plain ones (strings, empty or not, any order) and near misses
IDENTITY_VALUES = st.one_of(
    st.fixed_dictionaries({"packageName": st.sampled_from(["a", "b", "", "é"]), "version": st.text(max_size=4)}),
    st.fixed_dictionaries({"version": st.sampled_from(["1.0.0", ""]), "packageName": st.text(max_size=3)}),
    st.fixed_dictionaries({"packageName": st.just("a")}, optional={"version": VALUES, "x": VALUES}),
)


def write(draw: Any, value: Any) -> str:
    """``value`` as JSON text, written one of the ways a file may hold it.

    Whitespace, escapes, number forms, repeated keys.
    """
    sp = draw(SPACE)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=draw(st.booleans()))
        return text.replace("/", "\\/") if draw(st.booleans()) else text
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return "-0" if value == 0 and draw(st.booleans()) else str(value)
    if isinstance(value, float):
        return draw(st.sampled_from([repr(value), f"{value:.6e}", f"{value:E}"]))
    if isinstance(value, list):
        return "[" + sp + ("," + sp).join(write(draw, v) for v in value) + sp + "]"
    pairs = [(write(draw, k), write(draw, v)) for k, v in value.items()]
    if pairs and draw(st.integers(0, 4)) == 0:  # a repeated key: the last value counts
        pairs.insert(0, (pairs[-1][0], "1"))
    return "{" + sp + ("," + sp).join(f"{k}{sp}:{sp}{v}" for k, v in pairs) + sp + "}"


@st.composite
def awkward_files(draw: Any, package: str = "a", pool: Any = None) -> str:
    """A file of one package: its blobs, bundles with awkward property values, written awkwardly.

    ``pool``: values its properties draw from (shared by several files), else drawn here.
    """
    n = draw(st.integers(1, 6))
    if pool is None:
        pool = draw(st.lists(VALUES | IDENTITY_VALUES, min_size=1, max_size=4))  # shared: distinct properties recur
    types = ["x.io/t", "olm.gvk", "olm.label", "olm.package.required", "olm.constraint", "olm.package"]
    lines = [json.dumps(pkg(package)), json.dumps(chan(package, [{"name": f"{package}.v{i}.0.0"} for i in range(n)]))]
    for i in range(n):
        blob: dict[str, Any] = bundle(package, f"{i}.0.0")
        props = []
        for _ in range(draw(st.integers(0, 4))):
            value = draw(st.sampled_from(pool) if draw(st.booleans()) else VALUES)
            props.append({"type": draw(st.sampled_from(types)), "value": value})
        blob["properties"] = blob["properties"][: draw(st.integers(0, 1))] + props
        image = draw(st.sampled_from(["keep", "none", "null", "empty"]))
        if image == "none":
            del blob["image"]
        elif image != "keep":
            blob["image"] = None if image == "null" else ""
        sp = draw(SPACE)
        fields = []
        for key, value in draw(st.permutations(list(blob.items()))):
            if key == "properties":
                texts = []
                for p in value:
                    items = draw(st.permutations(list(p.items())))
                    texts.append("{" + ",".join(f'"{k}":{sp}{write(draw, v)}' for k, v in items) + "}")
                text = "[" + ("," + sp).join(texts) + "]"
            else:
                text = write(draw, value)
            fields.append(f"{json.dumps(key)}{sp}:{sp}{text}")
        lines.append(sp + "{" + ("," + sp).join(fields) + "}" + sp)
    fault = draw(st.sampled_from(["none"] * 6 + ["truncated", "blank", "two", "deep"]))
    at = draw(st.integers(0, len(lines) - 1))
    if fault == "truncated":
        lines[at] = lines[at][: len(lines[at]) // 2]
    elif fault == "blank":
        lines.insert(at, "")
    elif fault == "two":
        lines[at] = lines[at] + " " + lines[at]
    elif fault == "deep":
        lines.append('{"schema":"x.io/deep","v":' + "[" * 80 + "]" * 80 + "}")
    return "\n".join(lines) + "\n" * draw(st.integers(0, 2))


@needs_native
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=awkward_files())
def test_scan_of_awkward_json(olmkit_pm, text):
    """Escapes, \\u sequences, non-ASCII, floats, exponents, -0, large integers, nested and empty values,
    key orders, repeated keys, whitespace and a broken line: the scan gives the decoding's catalog."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        (Path(tmp) / "index.json").write_text(text, encoding="utf-8")
        assert_scan_is_the_decoding(Path(tmp), olmkit_pm.registry, mp)


@st.composite
def awkward_catalogs(draw: Any) -> list[str]:
    """Files of several packages sharing property values, a file's lines sometimes shuffled (its
    channel after its bundles) and a bundle the scan leaves (an extra field) among them."""
    pool = draw(st.lists(VALUES | IDENTITY_VALUES, min_size=1, max_size=4))
    files = []
    for f in range(draw(st.integers(2, 5))):
        package = draw(st.sampled_from([f"p{f}", "p0"]))  # sometimes a package met before: duplicates
        lines = draw(awkward_files(package, pool)).split("\n")
        if draw(st.booleans()):
            lines = draw(st.permutations(lines))
        if draw(st.integers(0, 3)) == 0:
            extra = bundle(package, f"9.{f}.0")
            extra["x"] = draw(VALUES)
            lines.insert(draw(st.integers(0, len(lines))), json.dumps(extra))
        files.append("\n".join(line for line in lines if line) + "\n")
    return files


@needs_native
@settings(max_examples=60, deadline=None)
@given(texts=awkward_catalogs())
def test_files_scanned_together_are_each_scanned(texts):
    """One scan call over several files gives each file's scan, one after the other (a file not
    taken: nothing of it), with the same distinct properties and tables as file by file."""
    from olmkit._solver import SCAN_FILE_INTS, ScanReading, line_scanner

    readings = [
        ScanReading("olm.package", ("packageName", "version"), 1, (), True),
        ScanReading("olm.gvk", ("group", "version", "kind"), 3, ("group",)),
        ScanReading("olm.constraint", odd=True),
    ]
    data = [t.encode() for t in texts]
    one, together = line_scanner(readings), line_scanner(readings)
    assert one is not None
    assert together is not None
    got, records = together.scan_files(data)

    want: dict[str, list[Any]] = {k: [] for k in ("line_kind", "line_start", "line_end", "b_line", "b_pkg", "occ")}
    for k in ("names", "images", "texts", "new_types", "new_strings", "new_packages", "key_type", "key_strs"):
        want[k] = []
    want_starts = [0]
    n_lines = n_bundles = 0
    for i, d in enumerate(data):
        scan = one.scan(d)
        rc, lines_end, bundles_end, left, prefix, flags = records[SCAN_FILE_INTS * i : SCAN_FILE_INTS * (i + 1)]
        if scan is None:
            assert rc == 2
            assert (lines_end, bundles_end) == (n_lines, n_bundles)
            continue
        kinds = list(scan.line_kind)
        assert rc == 0
        assert left == kinds.count(-1)
        assert prefix == next((j for j, k in enumerate(kinds) if k >= 0), len(kinds))
        assert flags == scan.duplicate | scan.two_ways << 1
        want["line_kind"] += [k + n_bundles if k >= 0 else k for k in kinds]
        want_starts += [at + want_starts[-1] for at in scan.prop_start[1:]]
        for k in ("line_start", "line_end", "b_line", "b_pkg", "occ", "names", "images", "texts"):
            want[k] += list(getattr(scan, k))
        for k in ("new_types", "new_strings", "new_packages", "key_type"):
            want[k] += getattr(scan, k)
        want["key_strs"] += [list(scan.key_strs[a:b]) for a, b in zip(scan.key_start, scan.key_start[1:], strict=False)]
        n_lines += len(kinds)
        n_bundles += len(scan.b_line)
        assert (lines_end, bundles_end) == (n_lines, n_bundles)
    # the tables a last file not taken added: handed with the next file taken
    rest = one.scan(b"")
    assert rest is not None
    after = together.scan(b"")
    assert after is not None
    for k in ("new_types", "new_strings", "new_packages", "key_type"):
        assert list(getattr(after, k)) == []
        want[k] += getattr(rest, k)
    want["key_strs"] += [list(rest.key_strs[a:b]) for a, b in zip(rest.key_start, rest.key_start[1:], strict=False)]
    for k, v in want.items():
        if k == "key_strs":
            assert [list(got.key_strs[a:b]) for a, b in zip(got.key_start, got.key_start[1:], strict=False)] == v
        else:
            assert list(getattr(got, k)) == v, k
    assert list(got.prop_start) == want_starts
    # the same distinct properties, flags, types, keys and versions
    assert one._s.n_dist == together._s.n_dist
    n = together._s.n_dist
    if n == 0:
        return
    assert (got.flags, list(got.types), list(got.keys), list(got.versions)) == (
        bytes(one._ffi.buffer(one._s.d_flags, n)),
        list(one._ffi.unpack(one._s.d_type, n)),
        list(one._ffi.unpack(one._s.d_key, n)),
        list(one._ffi.unpack(one._s.d_version, n)),
    )


@needs_native
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=awkward_catalogs())
def test_scan_of_awkward_catalogs_of_several_files(olmkit_pm, texts):
    """Files scanned together (one call per batch): the decoding's catalog, rows in the order read."""
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp) / "catalog"
        root.mkdir()
        for i, text in enumerate(texts):
            (root / f"f{i}.json").write_text(text, encoding="utf-8")
        assert_scan_is_the_decoding(root, olmkit_pm.registry, mp)
        # and the catalog cache holds what files added one by one give (its bytes: in fresh
        # processes, see test_files_in_batches_give_the_cache_bytes_of_files_one_by_one)
        from olmkit.catalog import _load

        batched = _cache_contents(root, olmkit_pm.registry, Path(tmp), "batched")
        mp.setattr(_load, "_BATCH_FILES", 1)
        assert _cache_contents(root, olmkit_pm.registry, Path(tmp), "one") == batched


@needs_native
@settings(max_examples=300, deadline=None)
@given(value=VALUES, data=st.data())
def test_scanned_text_is_orjsons(value, data):
    """A taken property's text is orjson's text of what orjson reads, unless flagged for canonicalising."""
    from olmkit._solver import line_scanner

    text = write(data.draw, value)
    line = '{"schema": "olm.bundle", "name": "a", "package": "a", "properties": [{"type": "t", "value": ' + text + "}]}"
    scan = line_scanner()
    assert scan is not None
    out = scan.scan(line.encode())
    assert out is not None
    assert list(out.line_kind) == [0]
    (flags,) = out.flags
    (raw,) = out.texts
    assert out.new_types == ["t"]
    assert list(out.types) == [0]
    try:
        canonical = orjson.dumps(orjson.loads(text.encode()))
    except orjson.JSONDecodeError:
        assert flags & 2  # orjson refuses it (a number beyond a double): flagged
        return
    assert flags & 2 or raw == canonical
    assert orjson.dumps(orjson.loads(raw)) == canonical


@needs_native
def test_identities_are_interned_by_their_text_and_read_through_their_fields():
    """An identity type's properties are one distinct property per text (whatever the form), its
    plain values read as strings: a key and a version; the others are odd (the caller reads them)."""
    from olmkit._solver import SCAN_ODD, ScanReading, line_scanner

    readings = [ScanReading("olm.package", ("packageName", "version"), 1, ("version",), identity=True)]
    scan = line_scanner(readings)
    assert scan is not None
    lines = (
        b'{"schema": "olm.bundle", "name": "a", "package": "a", "properties": '
        b'[{"type": "olm.package", "value": {"packageName": "a", "version": "1.0.0"}}, {"type": "t", "value": 1}]}\n'
        b'{"schema": "olm.bundle", "name": "b", "package": "a", "properties": '
        b'[{"value": {"packageName": "a", "version": "1.0.0"}, "type": "olm.package"}]}\n'
        b'{"schema": "olm.bundle", "name": "c", "package": "a", "properties": '
        b'[{"type": "olm.package", "value": {"version": "", "packageName": "a"}}]}\n'
        b'{"schema": "olm.bundle", "name": "d", "package": "a", "properties": '
        b'[{"type": "olm.package", "value": {"packageName": "a", "version": 2}}]}\n'
    )

    first = scan.scan(lines)
    second = scan.scan(lines[: lines.index(b"\n") + 1])

    assert first is not None
    assert second is not None
    assert list(first.occ) == [0, 1, 0, 2, 3]
    assert first.texts == [
        b'{"packageName":"a","version":"1.0.0"}',
        b"1",
        b'{"version":"","packageName":"a"}',
        b'{"packageName":"a","version":2}',
    ]
    assert first.new_types == ["olm.package", "t"]
    assert list(first.types) == [0, 1, 0, 0]
    assert first.new_strings == ["a", "1.0.0", ""]
    assert list(first.keys) == [0, -1, 0, -1]  # one key: the package "a"
    assert list(first.key_type) == [0]
    assert list(first.key_strs) == [0]
    assert list(first.versions) == [1, -1, 2, -1]
    assert list(first.odd) == [3]  # a version that is not a string
    assert [bool(f & SCAN_ODD) for f in first.flags] == [False, False, False, True]
    assert not first.two_ways
    # the next file: the same distinct properties, nothing new to hand over
    assert list(second.occ) == [0, 1]
    assert second.texts == []
    assert second.new_strings == []
    assert len(second.key_type) == 0
    assert scan.find("olm.package", b'{"packageName":"a","version":"1.0.0"}', True) == 0
    assert scan.find("t", b"1", False) == 1
    assert scan.find("t", b"1", True) == -1


@needs_native
def test_a_property_written_both_ways_is_flagged():
    from olmkit._solver import line_scanner

    scan = line_scanner()
    assert scan is not None
    out = scan.scan(
        b'{"schema": "olm.bundle", "name": "a", "package": "a", "properties": [{"type": "t", "value": 1}]}\n'
        b'{"schema": "olm.bundle", "name": "b", "package": "a", "properties": [{"value": 1, "type": "t"}]}\n'
    )
    assert out is not None
    assert out.two_ways
    assert list(out.occ) == [0, 1]


def test_rows_index_files_rows_once_per_list_and_finds_first_values():
    """The C part and its pure twin give the same rows' values and lists."""
    from array import array

    from olmkit._solver import _encode, rows_index

    row_start = array("i", [0, 3, 3, 6, 8])
    refs = array("i", [0, 1, 1, 2, 3, 0, 4, 2])
    value = array("i", [-1, 7, -1, -2, 5])
    d_list = array("i", [0, 1, -2, -1, 0])
    ex_start = array("i", [0, 3])
    ex_lists = array("i", [1, 2, 1])
    expected = (
        array("i", [7, -1, -2, 5]),
        array("i", [0, 3, 6, 8]),
        array("i", [0, 2, 3, 0, 2, 3, 2, 3]),
    )
    assert rows_index(row_start, refs, value, d_list, ex_start, ex_lists, 3) == expected
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_encode, "current", lambda: "pure")
        assert rows_index(row_start, refs, value, d_list, ex_start, ex_lists, 3) == expected
        with pytest.raises(ValueError, match="out of range"):
            rows_index(row_start, refs, value, d_list, ex_start, ex_lists, 2)
    with pytest.raises(ValueError, match="out of range"):
        rows_index(row_start, refs, value, d_list, ex_start, ex_lists, 2)
    for bad in (5, -1):  # a distinct property out of range: C and pure alike
        wrong = array("i", [*refs[:-1], bad])
        with pytest.raises(ValueError, match="distinct property out of range"):
            rows_index(row_start, wrong, value, d_list, ex_start, ex_lists, 3)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_encode, "current", lambda: "pure")
            with pytest.raises(ValueError, match="distinct property out of range"):
                rows_index(row_start, wrong, value, d_list, ex_start, ex_lists, 3)


@needs_native
def test_the_scan_numbers_packages_and_finds_duplicate_bundles():
    from olmkit._solver import line_scanner

    scan = line_scanner()
    assert scan is not None
    a1 = b'{"schema": "olm.bundle", "name": "a.v1", "package": "a"}\n'
    b1 = b'{"schema": "olm.bundle", "name": "b.v1", "package": "b"}\n'
    a2 = b'{"schema": "olm.bundle", "name": "a.v2", "package": "a"}\n'

    first = scan.scan(a1 + b1 + a2)
    assert first is not None
    assert (list(first.b_pkg), first.new_packages, first.duplicate) == ([0, 1, 0], ["a", "b"], False)
    assert scan.bundle("a", "a.v3") is False  # a bundle decoded by the caller: registered
    assert scan.bundle("c", "c.v1") is False
    assert scan.bundle("a", "a.v3") is True
    rejected = scan.scan(b'{"schema": "olm.bundle", "name": "d.v1", "package": "d"}\nnot JSON\n')
    assert rejected is None  # its bundle is forgotten: the caller decodes the file and registers it
    assert scan.bundle("d", "d.v1") is False
    second = scan.scan(a2)
    assert second is not None
    assert (list(second.b_pkg), second.new_packages, second.duplicate) == ([0], ["d"], True)


@needs_native
@pytest.mark.parametrize("order", ["scanned first", "decoded first"])
def test_a_bundle_scanned_and_decoded_twice_is_the_object_loaders_problem(order, olmkit_pm, tmp_path, monkeypatch):
    plain = '{"schema": "olm.bundle", "name": "a.v1", "package": "a", "properties": []}'
    extra = '{"schema": "olm.bundle", "name": "a.v1", "package": "a", "x": 1, "properties": []}'
    lines = [json.dumps(pkg("a")), *([plain, extra] if order == "scanned first" else [extra, plain])]
    (tmp_path / "a.json").write_text("\n".join(lines) + "\n")
    cat, _ = assert_scan_is_the_decoding(tmp_path, olmkit_pm.registry, monkeypatch)

    assert not fast_taken(cat)


def test_value_fields_are_checked_when_declared():
    from olmkit.types import ValueFields

    assert ValueFields(["a", "b"], key_fields=2).fields == ("a", "b")
    for bad in (
        {"fields": ()},
        {"fields": ("a", "a")},
        {"fields": ("a",), "key_fields": 2},
        {"fields": ("a",), "may_be_empty": ("b",)},
        {"fields": tuple("abcdefghi")},
        {"fields": ("a",), "validated_by": ("b",)},
    ):
        with pytest.raises(ValueError, match="ValueFields"):
            ValueFields(**bad)


@needs_native
def test_a_plugins_type_read_through_its_fields(olmkit_pm, olmkit_register, tmp_path, monkeypatch):
    """A third-party indexed type declaring ValueFields (a two-field key) is indexed as its parser would."""
    from olmkit import hookimpl
    from olmkit.types import PropertyType, ValueFields

    def parse(value: Any) -> tuple[str, str]:
        if not isinstance(value, dict) or not isinstance(value.get("zone"), str):
            raise ValueError("zone is required")
        return (value["zone"], str(value.get("rack", "")))

    class Plugin:
        @hookimpl
        def olmkit_property_types(self) -> Any:
            yield PropertyType(
                name="example.io/place",
                parse=parse,
                index_keys=lambda v: (v,),
                fields=ValueFields(("zone", "rack"), key_fields=2, may_be_empty=("rack",)),
            )

    olmkit_register(Plugin())
    values = ['{"zone": "z1", "rack": "r1"}', '{"rack": "", "zone": "z1"}', '{"zone": "z1", "rack": 7}']
    values.append('{"zone": "z2"}')
    lines = [json.dumps(pkg("a"))] + [
        f'{{"schema": "olm.bundle", "name": "a.v{i}", "package": "a", '
        f'"properties": [{{"type": "example.io/place", "value": {v}}}]}}'
        for i, v in enumerate(values)
    ]
    (tmp_path / "a.json").write_text("\n".join(lines) + "\n")

    cat, taken = assert_scan_is_the_decoding(tmp_path, olmkit_pm.registry, monkeypatch)

    assert taken == 4
    assert fast_taken(cat)
    assert [b.name for b in cat.lookup("example.io/place", ("z1", "r1"))] == ["a.v0"]
    assert [b.name for b in cat.lookup("example.io/place", ("z1", ""))] == ["a.v1"]
    assert [b.name for b in cat.lookup("example.io/place", ("z1", "7"))] == ["a.v2"]


@needs_native
@pytest.mark.parametrize(
    "odd", [b"\x01", b"\x1f", b"\\n", b'\\"', b"\\u00e9", "\u00e9".encode(), "\u4e2d".encode(), b"\xff", b"\x7f"]
)
def test_strings_are_read_alike_wherever_an_odd_byte_falls(odd):
    """The string reader goes eight bytes at a time: an odd byte at each offset of a word (and across two)."""
    from olmkit._solver import line_scanner

    scan = line_scanner()
    assert scan is not None
    for at in range(20):
        name = b"a" * at + odd + b"b" * (19 - at)
        value = b'{"k": "' + name + b'"}'
        line = (
            b'{"schema": "olm.bundle", "name": "'
            + name
            + b'", "package": "p", "properties": [{"type": "t", "value": '
            + value
            + b"}]}"
        )
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            assert scan.scan(line) is None, (odd, at)  # not JSON: the file is not taken
            continue
        out = scan.scan(line)
        assert out is not None, (odd, at)
        if b"\\" in odd:  # an escape in the name: the line is left to the caller
            assert list(out.line_kind) == [-1]
            continue
        assert list(out.line_kind) == [0], (odd, at)
        assert out.names == [name.decode()]
        texts = dict(zip(range(out.first, out.first + len(out.texts)), out.texts, strict=True))
        assert texts[out.occ[0]] == orjson.dumps(orjson.loads(value))


def _cache_contents(path: Path, registry: Any, tmp: Path, name: str) -> Any:
    """What the catalog cache file of a load of ``path`` (no cache read) holds, each value with its
    exact type; the load's error for a malformed file, ``None`` when there is no cache file (a
    value marshal cannot store).

    Not its bytes: which equal objects marshal writes once and refers back to depends on their
    reference counts, and so on what this process decoded before (orjson's process-wide cache
    of object keys), not only on the catalog.
    """
    import marshal

    from olmkit.catalog import _cache, load_catalog_result

    try:
        result = load_catalog_result(path, registry, cache=False)
    except InputError as exc:
        return str(exc)
    out = tmp / f"{name}.cache"
    _cache.write_cache(out, result.catalog, result.problems)
    if not out.exists():
        return None
    data = out.read_bytes()
    length = int.from_bytes(data[len(_cache._MAGIC) : _cache._HEAD], "little")
    header = marshal.loads(data[_cache._HEAD : _cache._HEAD + length])
    body = data[_cache._HEAD + length :]
    for key in ("bundles", "channels", "index"):  # each part: (offset, length) in the body
        header[key] = {k: marshal.loads(body[at : at + n]) for k, (at, n) in header[key].items()}
    del header["body_size"]
    return _typed(header)


def _typed(value: Any) -> Any:
    """``value`` with the exact type of each object in it (``==`` alone takes 1 for True, a tuple for a list)."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple | set | frozenset):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


def _cache_bytes_in_a_fresh_process(path: Path, tmp: Path, name: str, batch: int) -> bytes:
    """The catalog cache file's bytes of a load of ``path`` in a new process, ``batch`` files a batch."""
    out = tmp / f"{name}.cache"
    code = (
        "import sys; from pathlib import Path; from olmkit.catalog import _cache, _load, load_catalog_result; "
        "from olmkit.manager import get_plugin_manager; _load._BATCH_FILES = int(sys.argv[3]); "
        "r = load_catalog_result(Path(sys.argv[1]), get_plugin_manager(entrypoints=False).registry, cache=False); "
        "_cache.write_cache(Path(sys.argv[2]), r.catalog, r.problems)"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str(out), str(batch)], check=True)
    return out.read_bytes()


def _package_file(name: str, properties: bool = True, more: str = "") -> str:
    """A package, its channel and one bundle (with its olm.package property or none), then ``more``."""
    one = bundle(name, "1.0.0")
    if not properties:
        one["properties"] = []
    blobs = [pkg(name), chan(name, [{"name": one["name"]}]), one]
    return "".join(json.dumps(b) + "\n" for b in blobs) + more


@needs_native
@pytest.mark.parametrize("batch", [1, 2, 64])
def test_keys_a_scan_met_but_did_not_need_do_not_shift_the_next_scans(olmkit_pm, tmp_path, monkeypatch, batch):
    """A file the scan gives up on (a line nested deeper than it reads) leaves the keys it met
    numbered; the next scan, whose bundle has no properties, hands them on without needing
    them; the third's keys come after them. Read in that numbering, loads in batches of any
    size are the decoding's, with the same cache contents."""
    from olmkit.catalog import _load

    root = tmp_path / "catalog"
    root.mkdir()
    deep = '{"schema": "x.io/deep", "v": ' + "[" * 80 + "]" * 80 + "}\n"
    files = [_package_file("a", more=deep), _package_file("b", properties=False), _package_file("c")]
    for i, text in enumerate(files):
        (root / f"f{i}.json").write_text(text, encoding="utf-8")
    monkeypatch.setattr(_load, "_BATCH_FILES", batch)
    catalog, taken = assert_scan_is_the_decoding(root, olmkit_pm.registry, monkeypatch)
    assert taken == 2  # b and c scanned, a's file decoded
    assert {p: dict(catalog.versions(p)) for p in "abc"} == {
        "a": {"a.v1.0.0": "1.0.0"},
        "b": {"b.v1.0.0": None},  # no olm.package property: no version
        "c": {"c.v1.0.0": "1.0.0"},
    }
    got = _cache_contents(root, olmkit_pm.registry, tmp_path, "got")
    monkeypatch.setattr(_load, "_BATCH_FILES", 64)
    assert got == _cache_contents(root, olmkit_pm.registry, tmp_path, "all")


@needs_native
def test_files_in_batches_give_the_cache_bytes_of_files_one_by_one(generated, tmp_path):  # noqa: F811
    """The same objects where marshal would show a difference (a type's name decoded or scanned):
    files with bundles the scan leaves (an extra field, an escape) and lines after bundles, among
    plain ones. Each load in a process of its own (see _cache_contents), and twice: the bytes
    depend on the catalog and the batches only."""
    odd = tmp_path / "catalog"
    shutil.copytree(generated, odd)
    for k, f in enumerate(sorted(odd.glob("*/index.json"))[:30]):
        lines = f.read_text().splitlines()
        if k % 3 == 0:  # the channel after the bundles
            lines = [lines[0], *lines[2:], lines[1]]
        at = next(i for i, line in enumerate(lines) if '"olm.bundle"' in line)
        if k % 3 == 1:  # a bundle with an extra field
            blob = json.loads(lines[at])
            blob["x"] = {"k": 1}
            lines[at] = json.dumps(blob)
        if k % 3 == 2:  # an escape in a bundle's image
            lines[at] = lines[at].replace('"image": "example', '"image": "ex\\u0061mple', 1)
        f.write_text("\n".join(lines) + "\n")

    batched = _cache_bytes_in_a_fresh_process(odd, tmp_path, "batched", 64)
    assert _cache_bytes_in_a_fresh_process(odd, tmp_path, "again", 64) == batched
    one_by_one = _cache_bytes_in_a_fresh_process(odd, tmp_path, "one", 1)

    assert batched == one_by_one
