#!/usr/bin/env bash
# The main job on the embedded default, as `make demo` runs it: install an operator with a
# dependency, publish a newer catalog and watch the upgrade step through the chain, then an
# unsatisfiable subscription and its explanation. Every step is a real olmkit command.
set -euo pipefail
cd "$(dirname "$0")/.."
OLMKIT=${OLMKIT:-.venv/bin/olmkit}
DEMO=.olmkit/demo
rm -rf "$DEMO" && mkdir -p "$DEMO"
export OLMKIT_STORE="$DEMO/cluster.db"        # a fresh embedded cluster for the demo
export OLMKIT_CACHE_DIR="$DEMO/cache"

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then B=$'\033[1m' BLUE=$'\033[1;34m' R=$'\033[0m'; else B= BLUE= R=; fi
say()  { printf '\n%s# %s%s\n' "$BLUE" "$*" "$R"; }
step() { printf '%s$ olmkit %s%s\n' "$B" "$*" "$R"; "$OLMKIT" "$@"; }
# a step that is meant to fail: show its exit code instead of stopping the demo
fails() { printf '%s$ olmkit %s%s\n' "$B" "$*" "$R"; if "$OLMKIT" "$@"; then exit 1; else echo "(exit $?, as expected)"; fi; }

say "olmkit $("$OLMKIT" --version | cut -d' ' -f2): an embedded cluster at $OLMKIT_STORE"
step plugins list

say "1. Publish a catalog and install postgres-operator (it needs the Certificate API)"
step apply -f examples/demo/catalogsource-v1.yaml
step list-available -n demo
step install postgres-operator -n demo --channel stable
step reconcile --until-stable
step get installplans -n demo -o wide
step get csv -n demo
step get subscriptions -n demo

say "2. Publish a newer catalog: the subscriptions upgrade one version at a time to the heads"
step apply -f examples/demo/catalogsource-v2.yaml
step reconcile --until-stable
step get installplans -n demo -o wide
step get csv -n demo
step list -n demo
step get events -n demo --for subscription/cert-manager-lite-stable-examples-olm

say "3. A subscription that cannot be satisfied, and why"
step install legacy-monitor -n demo --channel stable --starting-csv legacy-monitor.v0.1.0
fails reconcile --until-stable
step describe subscription legacy-monitor -n demo
