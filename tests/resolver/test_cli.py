"""The ``olmkit resolve`` / ``olmkit explain`` command-line contract."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from olmkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "catalog"

MANIFESTS = f"""\
apiVersion: v1
kind: List
items:
- apiVersion: operators.coreos.com/v1alpha1
  kind: CatalogSource
  metadata: {{name: examples, namespace: olm}}
  spec: {{sourceType: file, path: {EXAMPLES}}}
- apiVersion: operators.coreos.com/v1
  kind: OperatorGroup
  metadata: {{name: og, namespace: ops}}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {{name: backup, namespace: ops}}
spec: {{name: backup-operator, channel: stable, source: examples, sourceNamespace: olm}}
"""


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_resolve_json_shape_and_dependencies(tmp_path, capsys):
    """-f with a List and several documents: JSON with the exact keys, dependencies as steps, exit 0."""
    path = tmp_path / "m.yaml"
    path.write_text(MANIFESTS)

    code, out, _ = run(capsys, "resolve", "-f", str(path), "-o", "json")

    data = json.loads(out)
    assert 0 == code
    assert ["namespace", "status", "steps", "message"] == list(data)
    assert ("ops", "ok", None) == (data["namespace"], data["status"], data["message"])
    assert ["bundle", "package", "version", "channel", "catalog", "catalogNamespace", "replaces"] == list(
        data["steps"][0]
    )
    assert ["backup-operator.v1.0.0", "postgres-operator.v2.3.0", "cert-manager-lite.v1.2.0"] == [
        s["bundle"] for s in data["steps"]
    ]
    assert {("examples", "olm")} == {(s["catalog"], s["catalogNamespace"]) for s in data["steps"]}


def test_global_namespace_option(tmp_path, capsys):
    """With --global-namespace set elsewhere, a catalog in 'olm' is invisible: unsatisfiable, exit 1."""
    path = tmp_path / "m.yaml"
    path.write_text(MANIFESTS)

    code, out, _ = run(capsys, "resolve", "-f", str(path), "--global-namespace", "other", "-o", "json")

    data = json.loads(out)
    assert (1, "unsatisfiable") == (code, data["status"])
    assert data["message"].startswith("constraints not satisfiable: no operators found from catalog examples")


def test_short_form_upgrade_free_install(capsys):
    """--catalog DIR --subscribe PKG/CHANNEL installs the channel head."""
    code, out, _ = run(
        capsys, "resolve", "--catalog", str(EXAMPLES), "--subscribe", "postgres-operator/fast", "-o", "json"
    )

    data = json.loads(out)
    assert 0 == code
    assert ("postgres-operator.v2.4.0", "fast") == (data["steps"][0]["bundle"], data["steps"][0]["channel"])


def test_unsatisfiable_exit_1_and_explain_tree(capsys):
    """An unknown package: exit 1, upstream's message, and `explain` prints a tree naming the subscription."""
    code, out, _ = run(capsys, "explain", "--catalog", str(EXAMPLES), "--subscribe", "nope")

    assert 1 == code
    assert (
        "unsatisfiable: constraints not satisfiable: no operators found in package nope in the catalog "
        "referenced by subscription nope, subscription nope exists"
    ) == out.splitlines()[0]
    assert "  subscription nope" in out.splitlines()
    assert "would satisfy it" in out


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("kind: [\n", "invalid YAML"),
        ("kind: Subscription\nmetadata: {name: s}\nspec: {channel: x}\n", "Subscription/s: spec.name"),
        ("- just\n- a list\n", "a manifest must be an object"),
        (
            "kind: ClusterServiceVersion\nmetadata:\n  name: c\n"
            "  annotations: {operatorframework.io/properties: '{x'}\n",
            "ClusterServiceVersion/c: annotation",
        ),
    ],
)
def test_invalid_manifests_exit_2_naming_file(tmp_path, capsys, content, needle):
    """An invalid manifest is exit 2 with one line naming the file and the object, no traceback."""
    path = tmp_path / "bad.yaml"
    path.write_text(content)

    code, out, err = run(capsys, "resolve", "-f", str(path))

    assert (2, "") == (code, out)
    assert str(path) in err
    assert needle in err
    assert "Traceback" not in err


def test_missing_file_exit_2(tmp_path, capsys):
    """A missing manifest file is exit 2 naming it."""
    code, _, err = run(capsys, "resolve", "-f", str(tmp_path / "none.yaml"))

    assert 2 == code
    assert "none.yaml: cannot read" in err


FAKE_GENERATOR = """\
import json, shutil, sys
out = sys.argv[-1]
shutil.copytree({catalog!r}, out + "/catalog")
problem = {{"namespace": "bench", "catalog": "examples", "installed": [],
           "subscriptions": [{{"package": "backup-operator", "channel": "stable", "source": "examples"}}]}}
open(out + "/problem.json", "w").write(json.dumps(problem))
"""


def test_bench_resolve_runs_a_generated_workload(tmp_path, capsys):
    """bench resolve calls the generator given, resolves its problem and reports first and warm runs."""
    gen = tmp_path / "gen.py"
    gen.write_text(FAKE_GENERATOR.format(catalog=str(EXAMPLES)))
    manifests = tmp_path / "m.yaml"

    argv = ["bench", "resolve", "--generator", str(gen), "--repeat", "2", "--manifests", str(manifests)]
    code, out, _ = run(capsys, *argv, "-o", "json")

    data = json.loads(out)
    assert (0, "ok", 3) == (code, data["status"], data["steps"])
    assert data["first"]["timings"]["total"] >= data["first"]["timings"]["resolution"] > 0
    assert 1 == data["warm"]["counters"]["graphs_memory"]
    code, out, _ = run(capsys, "resolve", "-f", str(manifests), "-o", "json")
    assert (0, 3) == (code, len(json.loads(out)["steps"]))


@pytest.mark.parametrize("script", [None, "import sys; sys.exit('no space left')"])
def test_bench_resolve_generator_problems_are_one_line(tmp_path, capsys, script):
    """A missing or failing generator is a usage error (exit 2) naming it, not a traceback."""
    gen = tmp_path / "gen.py"
    if script is not None:
        gen.write_text(script)

    code, _, err = run(capsys, "bench", "resolve", "--generator", str(gen))

    assert 2 == code
    assert str(gen) in err
    assert "Traceback" not in err
    if script is not None:
        assert "no space left" in err


def test_bench_resolve_workload_must_be_a_generator_output(tmp_path, capsys):
    """--workload naming something else is a usage error naming it."""
    code, _, err = run(capsys, "bench", "resolve", "--workload", str(tmp_path))

    assert 2 == code
    assert f"{tmp_path}: not a gen_catalog output" in err


@pytest.mark.parametrize("text", ["{", '{"namespace": "x"}'])
def test_bench_resolve_malformed_problem_is_a_usage_error(tmp_path, capsys, text):
    """A problem.json that is not JSON, or lacks its fields, is reported naming the file."""
    (tmp_path / "catalog").mkdir()
    (tmp_path / "problem.json").write_text(text)

    code, _, err = run(capsys, "bench", "resolve", "--workload", str(tmp_path))

    assert 2 == code
    assert f"{tmp_path / 'problem.json'}: not a gen_catalog problem" in err


def test_resolve_reads_standard_input(monkeypatch, capsys):
    """-f - reads the manifests from standard input (relative catalog paths from the working directory)."""
    monkeypatch.chdir(EXAMPLES.parent)
    monkeypatch.setattr("sys.stdin", io.StringIO(MANIFESTS.replace(str(EXAMPLES), "catalog")))

    code, out, _ = run(capsys, "resolve", "-f", "-", "-o", "json")

    assert 0 == code
    assert "backup-operator.v1.0.0" == json.loads(out)["steps"][0]["bundle"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--catalog", "/no/such/catalog", "--subscribe", "x"],
            "--catalog /no/such/catalog: no such file or directory",
        ),
        (
            ["--catalog", str(EXAMPLES), "--subscribe", "backup-operator", "--solver", "cryptominisay"],
            "(did you mean 'cryptominisat'?)",
        ),
    ],
)
def test_resolve_input_errors_go_to_stderr_with_exit_2(capsys, argv, message):
    """A missing catalog, an unknown solver, a misspelt package or channel: stderr, exit 2, nothing on stdout."""
    code, out, err = run(capsys, "resolve", *argv)

    assert (2, "") == (code, out)
    assert message in err
    assert 1 == len(err.splitlines())


@pytest.mark.parametrize(
    ("subscribe", "hint"),
    [
        ("backup-operatr", "package 'backup-operatr' is not in {catalog} (did you mean 'backup-operator'?)"),
        (
            "postgres-operator/stabel",
            "package 'postgres-operator' has no channel 'stabel' (did you mean 'stable'?) (channels: fast, stable)",
        ),
    ],
)
def test_resolve_short_form_suggests_the_close_package_or_channel(capsys, subscribe, hint):
    """A misspelt package or channel stays unsatisfiable (exit 1) and stderr names the close one."""
    code, out, err = run(capsys, "resolve", "--catalog", str(EXAMPLES), "--subscribe", subscribe)

    assert 1 == code
    assert out.startswith("unsatisfiable:")
    assert [f"olmkit: hint: --subscribe {subscribe}: " + hint.format(catalog=EXAMPLES)] == err.splitlines()


def test_resolve_error_from_an_unreadable_catalog_source_is_an_answer(tmp_path, capsys):
    """A CatalogSource (in a manifest) whose path is missing: the resolution's error, on stdout, exit 1."""
    path = tmp_path / "m.yaml"
    path.write_text(MANIFESTS.replace(str(EXAMPLES), str(tmp_path / "gone")))

    code, out, err = run(capsys, "resolve", "-f", str(path))

    assert (1, "") == (code, err)
    assert out.startswith("error: ")
    assert "gone" in out


def test_bench_resolve_refuses_huge_sizes_without_yes(tmp_path, capsys):
    """Sizes beyond the bound are refused before anything is generated, naming --yes."""
    gen = tmp_path / "gen.py"
    gen.write_text("raise SystemExit('must not run')")

    code, _, err = run(capsys, "bench", "resolve", "--generator", str(gen), "-P", "30000", "-B", "10")

    assert 2 == code
    assert "300,000 bundles" in err
    assert "--yes" in err


def test_bench_resolve_text_is_a_table_and_the_workload_is_removed(tmp_path, capsys, monkeypatch):
    """Text output is a table of phases (no Python dicts); the generated workload's directory is removed."""
    gen = tmp_path / "gen.py"
    gen.write_text(FAKE_GENERATOR.format(catalog=str(EXAMPLES)))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    code, out, err = run(capsys, "bench", "resolve", "--generator", str(gen), "--repeat", "2")

    assert 0 == code
    assert "{" not in out
    assert out.splitlines()[1] == "status        ok (3 steps)"
    assert any(line.split()[:1] == ["total"] for line in out.splitlines())
    assert "generating 500 packages x 10 bundles, 20 subscriptions ... done in" in err
    assert [] == list(tmp_path.glob("olmkit-bench-*"))


def test_bench_resolve_keep_workload_keeps_it(tmp_path, capsys, monkeypatch):
    """--keep-workload keeps the generated directory and says where it is."""
    gen = tmp_path / "gen.py"
    gen.write_text(FAKE_GENERATOR.format(catalog=str(EXAMPLES)))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    code, _, err = run(capsys, "bench", "resolve", "--generator", str(gen), "--repeat", "1", "--keep-workload")

    kept = list(tmp_path.glob("olmkit-bench-*"))
    assert (0, 1) == (code, len(kept))
    assert f"workload kept in {kept[0]}" in err
    assert (kept[0] / "problem.json").is_file()


def test_bench_resolve_documents_every_flag(capsys):
    """Every option of bench resolve has a help text (-B is bundles per package)."""
    from olmkit.cli import build_parser

    parser = build_parser(None)
    bench = parser._subparsers._group_actions[0].choices["bench"]
    sub = bench._subparsers._group_actions[0].choices["resolve"]

    undocumented = [a.option_strings for a in sub._actions if a.option_strings and not a.help]
    assert [] == undocumented
    assert "bundles per package" in next(a.help for a in sub._actions if "-B" in a.option_strings)


@pytest.mark.parametrize(
    ("form", "subscribe"),
    [
        (["-o", "json"], ["cert-manager-lite", "backup-operator"]),
        (["-o", "json", "--explain"], ["cert-manager-lite", "nope", "backup-operator/no-such-channel"]),
        (["-o", "text", "--explain"], ["cert-manager-lite", "nope", "backup-operator/no-such-channel"]),
    ],
)
def test_the_program_answers_as_main_does_cold_and_warm(tmp_path, monkeypatch, capsys, form, subscribe):
    """`python -m olmkit resolve` (start-up, plugins from entry points, the quick exit, the cache left to a
    detached writer) prints what main() prints, byte for byte, on a fresh cache and on the cache it left."""
    import subprocess
    import sys

    from olmkit.catalog import CACHE_ENV
    from olmkit.catalog._writes import wait_for_writers

    args = ["resolve", "--catalog", str(EXAMPLES), *(a for s in subscribe for a in ("--subscribe", s)), *form]
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "in-process"))
    expected = run(capsys, *args)[:2]
    cache = tmp_path / "program"
    monkeypatch.setenv(CACHE_ENV, str(cache))

    answers = []
    for _ in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-m", "olmkit", *args], capture_output=True, text=True, timeout=120)
        answers.append((done.returncode, done.stdout))
        wait_for_writers(cache)

    assert [expected, expected] == answers
    assert (1 if "nope" in subscribe else 0) == expected[0]


TRICKY_YAML = """\
apiVersion: v1
kind: List
items:
- kind: Subscription
  metadata: {name: s1, namespace: ops, labels: {a: "yes", b: on, c: ~, d: 0x1F, e: 0o17, f: 1_000}}
  spec: {name: pkg, channel: "1.10", startingCSV: pkg.v1.0.0, config: {env: [{name: X, value: 1e3}]}}
  status: {installedCSV: &csv pkg.v1.0.0, when: 2024-01-02T03:04:05Z, day: 2024-01-02, inf: .inf, nan: .NaN}
- kind: ClusterServiceVersion
  metadata:
    name: *csv
    namespace: ops
    annotations:
      operatorframework.io/properties: '{"properties":[{"type":"olm.package","value":{"packageName":"pkg"}}]}'
      note: |
        two lines,
        üñïçødé and a tab\there
      folded: >-
        folded
        text
  spec: {version: 1.0.0, replaces: null, flags: [yes, no, true, False, 012, 0b11, "08"]}
---
kind: OperatorGroup
metadata: {name: og, namespace: ops}
...
---
"""


def test_manifests_read_by_libyaml_equal_the_pure_python_loader(tmp_path):
    """The C loader reads manifests (it is the one used where PyYAML has it) exactly as the pure-Python one."""
    import yaml

    from olmkit.resolver.manifests import _LOADER, load_manifests

    path = tmp_path / "m.yaml"
    path.write_text(TRICKY_YAML)
    pure = []
    for doc in yaml.load_all(TRICKY_YAML, Loader=yaml.SafeLoader):
        if doc is not None:
            pure += doc["items"] if doc.get("kind") == "List" else [doc]

    read = [m.obj for m in load_manifests([path])]

    assert getattr(yaml, "CSafeLoader", yaml.SafeLoader) is _LOADER
    assert pure == read
    assert [repr(o) for o in pure] == [repr(o) for o in read]  # types too (ints, floats, dates, bools)
