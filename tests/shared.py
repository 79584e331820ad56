"""Where ``shared/`` is: beside the repository in a clone (CI's layout), else above a worktree."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` beside the repository; from a git worktree, the first such folder above it
SHARED = next((p / "shared" for p in ROOT.parents if (p / "shared" / "catalogs").is_dir()), ROOT.parent / "shared")
COMMUNITY = SHARED / "catalogs" / "community-operators-prod"
