"""The import contracts (``[tool.importlinter]`` in pyproject.toml) hold, and catch what they are for.

``make test`` and ``make lint`` run ``lint-imports`` on the code. These tests run it on a copy
of the package with one forbidden import added, so that a contract that could not fail (a
misspelt module, a wildcard that matches nothing) does not pass unnoticed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint(root: Path, contract: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = [str(LINT_IMPORTS), "--no-cache", "--no-logo"]
    if contract:
        argv += ["--contract", contract]
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package and its contracts in a directory of their own (lint-imports reads the cwd first)."""
    root = tmp_path_factory.mktemp("contracts")
    shutil.copytree(ROOT / "olmkit", root / "olmkit", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_code_keeps_every_contract():
    """lint-imports on the package itself: every contract kept."""
    done = lint(ROOT)

    assert 0 == done.returncode, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("contract", "module", "line"),
    [
        ("layers", "olmkit/catalog/zz_up.py", "import olmkit.resolver"),
        ("layers", "olmkit/resolver/zz_up.py", "from olmkit.lifecycle import kinds"),
        ("kernel", "olmkit/model.py", "import olmkit.store"),
        ("kernel", "olmkit/hookspecs.py", "import olmkit.plugins.sources"),
        ("solver", "olmkit/_solver/zz_out.py", "import olmkit.registry"),
        ("public-api", "olmkit/plugins/zz_private.py", "import olmkit.resolver._build"),
        (
            "public-api",
            "olmkit/plugins/zz_private.py",
            "from olmkit.lifecycle import kinds, runtime\nimport olmkit.catalog._load",
        ),
        ("store", "olmkit/store/zz_up.py", "import olmkit.lifecycle.kinds"),
        ("kubernetes", "olmkit/cli/zz_kube.py", "import kubernetes"),
        ("kubernetes", "olmkit/store/zz_kube.py", "from kubernetes import client"),
        ("cycles", "olmkit/resolver/_views.py", "from olmkit.resolver import _graph"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(copy, contract, module, line):
    """One forbidden import added to the copy: its contract is broken, naming the importer."""
    path = copy / module
    before = path.read_text() if path.exists() else None
    path.write_text((before or "") + "\n" + line + "\n")
    try:
        done = lint(copy, contract)
    finally:
        if before is None:
            path.unlink()
        else:
            path.write_text(before)

    assert 1 == done.returncode, done.stdout + done.stderr
    assert "BROKEN" in done.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    assert importer.rpartition(".")[2] in done.stdout


def test_only_olmkit_kube_may_import_kubernetes(copy):
    """olmkit.kube may import kubernetes, at module level too."""
    kube = copy / "olmkit" / "kube"
    saved = {path: path.read_text() for path in (kube / "__init__.py", kube / "store.py")}
    (kube / "__init__.py").write_text(saved[kube / "__init__.py"] + "\nimport kubernetes\n")
    (kube / "store.py").write_text(saved[kube / "store.py"] + "\nfrom kubernetes import client, watch\n")
    try:
        done = lint(copy, "kubernetes")
    finally:
        for path, text in saved.items():
            path.write_text(text)

    assert 0 == done.returncode, done.stdout + done.stderr


def test_the_store_cannot_import_the_kube_backend(copy):
    """olmkit.kube builds on olmkit.store: the store importing it (to choose it) is a cycle."""
    path = copy / "olmkit" / "store" / "zz_kube.py"
    path.write_text("import olmkit.kube\n")
    try:
        done = lint(copy, "cycles")
    finally:
        path.unlink()

    assert 1 == done.returncode, done.stdout + done.stderr
    assert "BROKEN" in done.stdout
    assert ".store -> .kube" in done.stdout
