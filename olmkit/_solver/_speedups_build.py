"""cffi build script of ``olmkit._solver._speedups`` (out-of-line API mode).

setup.py uses it through ``cffi_modules=["olmkit/_solver/_speedups_build.py:ffibuilder"]``.
Run directly, from the project root, to build the extension in place while developing::

    python olmkit/_solver/_speedups_build.py

Paths are relative to the project root, which is where setuptools runs the build.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCE_DIR = "olmkit/_solver"


#: the C sources, each with its header of declarations
SOURCES = ("encode", "classes", "scan", "group", "channels")


def cdef(source_dir: str = SOURCE_DIR) -> str:
    """The declarations cffi needs: the headers without their preprocessor lines (cffi drops comments)."""
    header = "\n".join(Path(source_dir, f"{name}.h").read_text() for name in SOURCES)
    return "\n".join(line for line in header.splitlines() if not line.lstrip().startswith("#"))


_compile_args = ["-O2"] if os.name != "nt" else ["/O2"]


def make_builder(source_dir: str = SOURCE_DIR) -> FFI:
    """Return the FFI builder, reading the C sources from ``source_dir``."""
    builder = FFI()
    builder.cdef(cdef(source_dir))
    builder.set_source(
        "olmkit._solver._speedups",
        "".join(f'#include "{name}.h"\n' for name in SOURCES),
        sources=[f"{source_dir}/{name}.c" for name in SOURCES],
        include_dirs=[source_dir],
        extra_compile_args=_compile_args,
    )
    return builder


ffibuilder = make_builder()


def main() -> int:
    """Compile the extension in ``build/speedups`` and copy it into ``olmkit/_solver/``.

    The build runs outside the project root so that distutils does not read the
    project's ``pyproject.toml``.
    """
    import shutil

    source_dir = ROOT / SOURCE_DIR
    tmpdir = ROOT / "build" / "speedups"
    tmpdir.mkdir(parents=True, exist_ok=True)
    os.chdir(tmpdir)
    built = Path(make_builder(str(source_dir)).compile(tmpdir=str(tmpdir), verbose=False))
    target = source_dir / built.name
    # Replace atomically: overwriting a loaded shared library in place crashes its users.
    partial = target.with_name(target.name + ".tmp")
    shutil.copyfile(built, partial)
    os.replace(partial, target)
    print(f"built {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
