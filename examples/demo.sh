#!/usr/bin/env bash
# The main job on the embedded default, as `make demo` runs it.
# Every step is a real olmkit command; each one is echoed before it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
OLMKIT=${OLMKIT:-.venv/bin/olmkit}
step() { printf '\n\033[1m$ olmkit %s\033[0m\n' "$*"; "$OLMKIT" "$@"; }

step --version
step plugins list
