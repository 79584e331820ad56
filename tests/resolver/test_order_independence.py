"""The answer does not depend on input order or on Python's hash seed.

Upstream builds its solver input from a Go map, so which subscription is decided first
varies between runs; olmkit decides in a fixed order (see docs/resolver-behaviour-notes.md).
Every scenario case is resolved through ``olmkit resolve`` with its manifests in one order
and reversed (one file per object, and all in one file), its catalogs split into files
whose names and blob order are shuffled, and in subprocesses with different
``PYTHONHASHSEED`` values: the JSON printed is byte for byte the same.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from olmkit.cli import main
from resolver.casefile import case_manifests

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


def _write(case: dict[str, Any], root: Path, seed: int) -> list[Path]:
    """The case's manifests, one file each; every catalog split into shuffled, oddly named files."""
    rng = random.Random(seed)
    manifests = case_manifests(case, root)
    for single in root.glob("*/catalog.json"):
        blobs = single.read_bytes().splitlines()
        single.unlink()
        rng.shuffle(blobs)
        parts = rng.randint(1, 4)
        for i in range(parts):
            name = f"{rng.randrange(10**6):06d}-{i}.json"
            (single.parent / name).write_bytes(b"\n".join(blobs[i::parts]) + b"\n")
    files = []
    for i, manifest in enumerate(manifests):
        path = root / f"m{i:03d}.yaml"
        path.write_text(yaml.safe_dump(dict(manifest.obj)))
        files.append(path)
    return files


def _resolve(files: list[Path], namespace: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    argv = ["resolve", "-n", namespace, "-o", "json", "--explain", "--no-cache"]
    for f in files:
        argv += ["-f", str(f)]
    code = main(argv)
    out = capsys.readouterr().out
    return code, orjson.loads(out) if out.strip() else None


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_manifest_and_catalog_file_order_do_not_change_the_answer(path, tmp_path, capsys):
    """Reversed manifests, one multi-document file, and shuffled catalog files: the same output."""
    case = yaml.safe_load(path.read_text())
    namespace = case.get("namespace", "operators")
    answers = []
    for seed in range(3):
        root = tmp_path / f"run{seed}"
        files = _write(case, root, seed)
        if seed == 1:
            files.reverse()
        elif seed == 2:
            combined = root / "all.yaml"
            combined.write_text("---\n".join(f.read_text() for f in reversed(files)))
            files = [combined]
        answers.append(_resolve(files, namespace, capsys))

    assert answers[0] == answers[1] == answers[2]


def test_hash_seed_does_not_change_the_answer(tmp_path):
    """The same resolutions in processes with different PYTHONHASHSEED print the same bytes."""
    chosen = [p for p in CASES if p.stem in ("subscriptions-in-name-order", "preference-beats-minimality")]
    chosen += [p for p in CASES if p.stem.startswith(("dependency-", "conflict-"))][:4]
    argvs = []
    for path in chosen:
        case = yaml.safe_load(path.read_text())
        files = _write(case, tmp_path / path.stem, 0)
        argv = ["resolve", "-n", case.get("namespace", "operators"), "-o", "json", "--no-cache"]
        argvs.append([a for f in files for a in ("-f", str(f))] + argv)
    script = (
        "import sys, json\nfrom olmkit.cli import main\n"
        "for argv in json.loads(sys.argv[1]):\n    main(argv[-6:] + argv[:-6])\n"
    )
    outputs = []
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "OLMKIT_CACHE_DIR": str(tmp_path / f"cache{seed}")}
        done = subprocess.run(
            [sys.executable, "-c", script, orjson.dumps(argvs).decode()],
            env=env,
            capture_output=True,
            check=False,
            timeout=120,
        )
        assert b"" == done.stderr
        outputs.append(done.stdout)

    assert 6 == len(chosen)
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count(b'"status"') == len(chosen)
