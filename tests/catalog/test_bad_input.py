"""The issue's "bad input" list through ``olmkit catalog validate``: a clear message, exit 0/1/2, no traceback."""

import os

import orjson
import pytest

from olmkit.cli import main


def pkg(name="a"):
    return {"schema": "olm.package", "name": name, "defaultChannel": "stable"}


def chan(entries, package="a"):
    return {"schema": "olm.channel", "package": package, "name": "stable", "entries": entries}


def bundle(version, props=(), name=None, package="a"):
    return {
        "schema": "olm.bundle",
        "package": package,
        "name": name or f"{package}.v{version}",
        "image": f"example.invalid/{package}:{version}",
        "properties": [{"type": "olm.package", "value": {"packageName": package, "version": version}}, *props],
    }


def constraint(value):
    return {"type": "olm.constraint", "value": value}


GOOD = [pkg(), chan([{"name": "a.v1.0.0"}]), bundle("1.0.0")]


def ndjson(blobs):
    return b"".join(orjson.dumps(b) + b"\n" for b in blobs)


CASES = {
    "malformed JSON": (
        {"c.json": ndjson([pkg()]) + b'{"schema": "olm.bundle", "name": \n'},
        2,
        ["c.json", "line 2", "malformed JSON"],
    ),
    "malformed YAML": (
        {"c.yaml": b"schema: olm.package\nname: a\n---\nschema: [\n"},
        2,
        ["c.yaml", "line 5", "malformed YAML"],
    ),
    "blob with no schema": (
        {"c.json": ndjson([*GOOD, {"name": "x"}])},
        1,
        ["c.json:4", "blob x", "field schema", "blob has no schema"],
    ),
    "duplicate bundle": (
        {"c.json": ndjson([*GOOD, bundle("1.0.0")])},
        1,
        ["c.json:4", "olm.bundle a.v1.0.0", "duplicate bundle 'a.v1.0.0' (first defined at", "c.json:3)"],
    ),
    "unknown olm schema": (
        {"c.json": ndjson([*GOOD, {"schema": "olm.thing", "name": "x"}])},
        1,
        ["c.json:4", "olm.thing x", "unknown schema 'olm.thing'"],
    ),
    "version v1.2": (
        {"c.json": ndjson([pkg(), chan([{"name": "a.v1.2"}]), bundle("v1.2", name="a.v1.2")])},
        1,
        ["c.json:3", "olm.bundle a.v1.2", "properties[0].value", "invalid semantic version 'v1.2'"],
    ),
    "channel with two heads": (
        {
            "c.json": ndjson(
                [pkg(), chan([{"name": "a.v1.0.0"}, {"name": "a.v2.0.0"}]), bundle("1.0.0"), bundle("2.0.0")]
            )
        },
        1,
        ["c.json:2", "olm.channel stable", "2 replacement chains were found", "a.v1.0.0, a.v2.0.0"],
    ),
    "replaces cycle": (
        {
            "c.json": ndjson(
                [
                    pkg(),
                    chan(
                        [
                            {"name": "a.v3.0.0", "replaces": "a.v2.0.0"},
                            {"name": "a.v2.0.0", "replaces": "a.v1.0.0"},
                            {"name": "a.v1.0.0", "replaces": "a.v2.0.0"},
                        ]
                    ),
                    *(bundle(v) for v in ("1.0.0", "2.0.0", "3.0.0")),
                ]
            )
        },
        1,
        ["c.json:2", "olm.channel stable", 'a cycle exists in the chain of replacement beginning with "a.v3.0.0"'],
    ),
    # OLM ignores a skipRange it cannot parse (the real community catalog carries 31),
    # so it is a warning naming the entry, and the catalog stays valid
    "skipRange <v1.13.0": (
        {"c.json": ndjson([pkg(), chan([{"name": "a.v1.0.0", "skipRange": "<v1.13.0"}]), bundle("1.0.0")])},
        0,
        ["warning", "c.json:2", "olm.channel stable", "entries[0].skipRange", "invalid range '<v1.13.0'"],
    ),
    "200 KB constraint": (
        {
            "c.json": ndjson(
                [*GOOD[:2], bundle("1.0.0", [constraint({"failureMessage": "x" * 200_000, "cel": {"rule": "true"}})])]
            )
        },
        1,
        ["c.json:3", "olm.bundle a.v1.0.0", "properties[1].value", "greater than max constraint size 131072 bytes"],
    ),
    "CEL that does not compile": (
        {
            "c.json": ndjson(
                [*GOOD[:2], bundle("1.0.0", [constraint({"cel": {"rule": "properties.exists(p, p.type == "}})])]
            )
        },
        1,
        [
            "c.json:3",
            "olm.bundle a.v1.0.0",
            "properties[1].value",
            "invalid olm.constraint value: convert olm.constraint to resolver predicate: ERROR: <input>:1:",
        ],
    ),
    "CEL not of type bool": (
        {"c.json": ndjson([*GOOD[:2], bundle("1.0.0", [constraint({"cel": {"rule": "properties.size()"}})])])},
        1,
        [
            "c.json:3",
            "olm.bundle a.v1.0.0",
            "properties[1].value",
            "convert olm.constraint to resolver predicate: cel expressions must have type Bool",
        ],
    ),
    "unreadable file": ({"c.json": ndjson(GOOD), "d.json": None}, 2, ["d.json", "cannot read file"]),
    "empty directory": ({}, 2, ["no catalog files found"]),
    "nested too deeply": ({"c.json": b"[" * 100_000 + b"]" * 100_000 + b"\n"}, 2, ["c.json", "nested too deeply"]),
    "not UTF-8": ({"c.json": ndjson(GOOD) + b'{"schema": "\xff"}\n'}, 2, ["c.json", "not UTF-8"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gives_a_clear_message_and_exit_code(case, tmp_path, capsys):
    """Each kind of bad input names the file (and line and object where there is one); no traceback."""
    files, code, needles = CASES[case]
    root = tmp_path / "catalog"
    root.mkdir()
    for name, content in files.items():
        if content is None:  # a file that cannot be read: a dangling symbolic link
            os.symlink(tmp_path / "nowhere" / name, root / name)
        else:
            (root / name).write_bytes(content)

    result = main(["catalog", "validate", "--no-cache", str(root)])
    out = capsys.readouterr()
    text = out.out + out.err

    assert code == result, text
    for needle in needles:
        assert needle in text
    assert "Traceback" not in text
    assert "internal error" not in text
