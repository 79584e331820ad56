"""The cache of attrs' generated code: the code evaluated is what compiling attrs' source gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "catalog"

# Defines attrs classes of the kinds olmkit uses with the cache installed on the file given,
# then reports, per generated method, whether its code equals a fresh compile of the source
# attrs registered in linecache (so hashes, equality and the rest are attrs' own), and how
# many pieces of code were compiled rather than read.
_PROGRAM = """
import __future__, json, linecache, sys
from types import CodeType
from olmkit import _attrs_code

assert _attrs_code.install(sys.argv[1])
import attrs

@attrs.frozen
class Frozen:
    name: str
    items: tuple[int, ...] = ()

@attrs.define
class Mutable:
    size: int = attrs.field(default=0, converter=int)

@attrs.frozen(order=True)
class Ordered:
    rank: int

class Failure(Exception):
    pass

@attrs.frozen
class Error(Failure):
    path: str

def nested(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from nested(const)

same = {}
for cls in (Frozen, Mutable, Ordered, Error):
    for name in ("__init__", "__eq__", "__hash__", "__repr__", "__lt__", "__setattr__"):
        method = cls.__dict__.get(name)
        code = getattr(method, "__code__", None)
        if code is None or not code.co_filename.startswith("<attrs generated"):
            continue
        source = "".join(linecache.cache[code.co_filename][2])
        flags = code.co_flags & sum(getattr(__future__, f).compiler_flag for f in __future__.all_feature_names)
        fresh = compile(source, code.co_filename, "exec", flags=flags, dont_inherit=True)
        fresh = {c.co_name: c for c in nested(fresh)}
        same[f"{cls.__name__}.{name}"] = fresh[code.co_name] == code
values = [hash(Frozen("a", (1, 2))), Frozen("a") == Frozen("a"), repr(Mutable("3")), Ordered(1) < Ordered(2)]
print(json.dumps({"same": same, "compiled": len(_attrs_code._state.get("new", ())), "values": values,
                  "saved": _attrs_code.save(force=True)}))
"""


def _run(cache: Path, seed: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(cache)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_cached_code_is_what_compiling_the_source_gives(tmp_path):
    """A second process (another string-hash salt) reads every method's code from the file: the same
    code as compiling attrs' source in that process (the class hash put back), and the same values."""
    cache = tmp_path / "attrs-code.marshal"

    first = _run(cache, "1")
    second = _run(cache, "1")
    unhooked = subprocess.run(
        [sys.executable, "-c", _PROGRAM.replace("assert _attrs_code.install", "(lambda path: True)"), "x"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="1"),
    )

    assert first["compiled"] > 0
    assert first["saved"] is True
    assert cache.exists()
    assert {"compiled": 0, "saved": False} == {k: second[k] for k in ("compiled", "saved")}
    assert set(second["same"]) >= {
        "Frozen.__init__",
        "Frozen.__hash__",
        "Frozen.__eq__",
        "Mutable.__init__",
        "Error.__init__",
    }
    assert all(second["same"].values()), [k for k, v in second["same"].items() if not v]
    assert json.loads(unhooked.stdout.splitlines()[-1])["values"] == second["values"]
    assert first["values"] == second["values"]
    # another salt: other hashes, maybe of another width (then compiled for that width), the same code
    for seed in ("2", "3", "5"):
        other = _run(cache, seed)
        assert all(other["same"].values()), [k for k, v in other["same"].items() if not v]
        assert first["values"][1:] == other["values"][1:]


def test_a_foreign_or_broken_file_is_ignored_and_replaced(tmp_path):
    """Garbage where the cache should be: classes are compiled as usual and the file is rewritten."""
    cache = tmp_path / "attrs-code.marshal"
    cache.write_bytes(b"not marshal at all")

    report = _run(cache, "3")

    assert report["compiled"] > 0
    assert report["saved"] is True
    assert all(report["same"].values())
    assert _run(cache, "3")["compiled"] == 0


def test_the_program_writes_the_cache_where_byte_code_goes_and_reads_it_back(tmp_path):
    """`olmkit` keeps the code beside olmkit's byte code (here under PYTHONPYCACHEPREFIX), writes it when
    it compiled something new, and does not write it again when nothing is new; the answer is the same."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPYCACHEPREFIX": str(tmp_path / "pycache"), "OLMKIT_CACHE_DIR": str(tmp_path / "cache")}
    env["PYTHONHASHSEED"] = "7"  # the same widths of class hashes in both runs
    olmkit = [sys.executable, "-m", "olmkit", "catalog", "validate", str(EXAMPLES)]

    first = subprocess.run(olmkit, capture_output=True, env=env)
    written = list((tmp_path / "pycache").rglob("attrs-code.*.marshal"))
    assert len(written) == 1, written
    before = written[0].stat().st_mtime_ns, written[0].read_bytes()
    second = subprocess.run(olmkit, capture_output=True, env=env)

    assert (first.returncode, first.stdout, first.stderr) == (second.returncode, second.stdout, second.stderr)
    assert first.returncode == 0, first.stderr
    assert before == (written[0].stat().st_mtime_ns, written[0].read_bytes())
