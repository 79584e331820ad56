import orjson

from olmkit.cli import main


def test_validate_exit_codes(tmp_path, capsys):
    """validate exits 0 on a valid catalog, 1 on an invalid one and 2 on unreadable input."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "c.json").write_text('{"schema": "olm.package", "name": "a", "defaultChannel": "x"}\n')
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "c.json").write_text("{nope\n")

    assert 0 == main(["catalog", "validate", "examples/catalog"])
    assert 1 == main(["catalog", "validate", str(bad)])
    assert 2 == main(["catalog", "validate", str(broken)])
    assert 2 == main(["catalog", "validate", str(tmp_path / "missing")])
    assert "no such file" in capsys.readouterr().err


def test_validate_json_output_is_structured(tmp_path, capsys):
    """-o json gives each problem with its fields."""
    (tmp_path / "c.json").write_text('{"schema": "olm.package", "name": "a", "defaultChannel": "x"}\n')

    assert 1 == main(["catalog", "validate", str(tmp_path), "-o", "json"])
    report = orjson.loads(capsys.readouterr().out)
    assert {
        "severity": "error",
        "message": "default channel 'x' does not exist (the package has no channels)",
        "path": str(tmp_path / "c.json"),
        "line": 1,
        "package": "a",
        "blob": "olm.package a",
        "field": "defaultChannel",
    } == report[0]["problems"][0]


def test_render_round_trips_the_example(capsys, tmp_path):
    """render prints every blob; rendering the rendered stream again gives the same stream."""
    assert 0 == main(["catalog", "render", "examples/catalog"])
    first = capsys.readouterr().out
    (tmp_path / "all.json").write_text(first)
    assert 0 == main(["catalog", "render", str(tmp_path)])
    second = capsys.readouterr().out

    assert first == second
    assert 17 == sum(1 for line in first.splitlines() if line.startswith('{"schema":"olm.bundle"'))


def test_list_upgrade_path_and_graph(capsys):
    """list, upgrade-path and graph print what the catalog holds."""
    assert 0 == main(
        ["catalog", "list", "channels", "examples/catalog", "--package", "postgres-operator", "-o", "json"]
    )
    channels = orjson.loads(capsys.readouterr().out)
    assert 0 == main(["catalog", "graph", "examples/catalog", "cert-manager-lite", "-o", "dot"])
    dot = capsys.readouterr().out

    assert ["stable", "fast"] == [c["name"] for c in channels]
    assert '"stable/cert-manager-lite.v1.0.0" -> "stable/cert-manager-lite.v1.1.0"' in dot
