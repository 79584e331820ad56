"""Shared test set-up: olmkit's pytest plugin and the hypothesis profiles.

``make test`` (and so CI) runs with the ``ci`` profile: derandomized, so every run tries
the same examples and a failure reproduces. Running pytest by hand uses ``dev``, which
draws new examples each run (and keeps failing ones in ``.hypothesis/`` to try first).
``HYPOTHESIS_PROFILE`` chooses.
"""

import os
import sys

from hypothesis import settings

pytest_plugins = ["olmkit.testing"]

# cel-python's Environment sets the recursion limit to 2500 each time one is made; a
# hypothesis test whose example makes the first one (a CEL constraint) would then fail with
# "the recursion limit will not be reset". Setting it here first makes that a no-op.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 2500))

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
