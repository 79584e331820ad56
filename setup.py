"""Build olmkit, with its C accelerator when a compiler is available.

The SAT layer's hot path (``olmkit/_solver/encode.c``) is compiled by cffi. A failed
build must not make olmkit uninstallable: the pure-Python twin takes over, and this
script says so loudly.
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

BUILD_SCRIPT = "olmkit/_solver/_speedups_build.py"


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure-Python solver when compiling fails."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # any compiler or toolchain failure
            self._warn(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._warn(exc)

    @staticmethod
    def _warn(exc):
        bar = "*" * 76
        sys.stderr.write(
            f"\n{bar}\nolmkit: the C accelerator could not be built ({exc}).\n"
            "olmkit will use its pure-Python solver twin: same answers, slower.\n"
            f"{bar}\n\n"
        )


native = os.path.exists(BUILD_SCRIPT) and not os.environ.get("OLMKIT_NO_NATIVE")
setup(
    cffi_modules=[f"{BUILD_SCRIPT}:ffibuilder"] if native else [],
    cmdclass={"build_ext": OptionalBuildExt},
)
