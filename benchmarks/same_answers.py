"""Two olmkit installs give byte-identical ``resolve`` answers: every output form, cold and warm.

For a change to the resolution command (start-up, the resolution after the graph compile,
output, cache writes): runs ``olmkit resolve -f W/manifests.yaml`` with install A and with
install B in ``-o json`` and ``-o text``, each with and without ``--explain``, each cold (a
fresh ``OLMKIT_CACHE_DIR``) and then warm (the same directory once the cache writer the cold
run left has finished), on every workload given and on an unsatisfiable variant of each (the
workload's manifests plus a subscription to a package no catalog has and one to a channel
its package lacks). Standard output and exit codes must be equal byte for byte; exits 1 with
the differences otherwise.

Usage::

    python benchmarks/same_answers.py --a /work/main/.venv/bin/olmkit --b .venv/bin/olmkit \\
        --workload /tmp/olmkit-compare/P2000-B20-S50-seed1 [--workload ...] [--no-warm]

A workload is a ``gen_catalog.py`` output with ``manifests.yaml`` (``compare.py`` writes both).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from olmkit.catalog import wait_for_writers

FORMS = (["-o", "json"], ["-o", "text"], ["-o", "json", "--explain"], ["-o", "text", "--explain"])


def unsatisfiable(manifests: Path, out: Path) -> Path:
    """The manifests plus two subscriptions that cannot be met: an unknown package, an unknown channel."""
    docs = [d for d in yaml.safe_load_all(manifests.read_text()) if d]
    items = docs[0]["items"] if len(docs) == 1 and docs[0].get("kind") == "List" else docs
    sub = next(i for i in items if i.get("kind") == "Subscription")
    extra = []
    for name, package, channel in (("zz-unknown", "no-such-package", "stable"), ("zz-channel", None, "no-such")):
        new = yaml.safe_load(yaml.safe_dump(sub))
        new["metadata"]["name"] = name
        new["spec"]["name"] = package or sub["spec"]["name"]
        new["spec"]["channel"] = channel
        new.pop("status", None)
        extra.append(new)
    out.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [*items, *extra]}))
    return out


def answers(olmkit: str, manifests: Path, warm: bool) -> dict[str, tuple[int, bytes]]:
    """Every form's (exit code, stdout), cold, and warm too when asked."""
    out: dict[str, tuple[int, bytes]] = {}
    for form in FORMS:
        cache = tempfile.mkdtemp(prefix="olmkit-same-")
        env = dict(os.environ, OLMKIT_CACHE_DIR=cache)
        command = [olmkit, "resolve", "-f", str(manifests), *form]
        for when in ("cold", "warm") if warm else ("cold",):
            done = subprocess.run(command, env=env, capture_output=True, check=False)
            wait_for_writers(Path(cache))
            out[f"{' '.join(form)} {when}"] = (done.returncode, done.stdout)
        shutil.rmtree(cache, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the reference olmkit executable")
    ap.add_argument("--b", required=True, help="the olmkit executable checked")
    ap.add_argument("--workload", type=Path, action="append", required=True, help="gen_catalog output (repeatable)")
    ap.add_argument("--no-warm", action="store_true", help="cold runs only")
    args = ap.parse_args()
    differ = 0
    checked = 0
    with tempfile.TemporaryDirectory(prefix="olmkit-same-") as tmp:
        for w in args.workload:
            variants = {w.name: w / "manifests.yaml"}
            unsat = unsatisfiable(w / "manifests.yaml", Path(tmp) / f"{w.name}-unsat.yaml")
            variants[f"{w.name} unsatisfiable"] = unsat
            for label, manifests in variants.items():
                a = answers(args.a, manifests, not args.no_warm)
                b = answers(args.b, manifests, not args.no_warm)
                for key in a:
                    checked += 1
                    same = a[key] == b[key]
                    differ += not same
                    code, text = a[key]
                    print(f"{'same' if same else 'DIFFERENT'}  {label}  {key}  exit {code}, {len(text):,} bytes")
    print(f"{checked - differ} of {checked} identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
