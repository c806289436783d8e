#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs what it needs, then runs pytest on a
# private D-Bus session with a real Secret Service and a virtual X display.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Cluster tests run real rqlite nodes: build rqlited once (cached; needs Go, installed if missing).
KMA_RQLITED="$(./scripts/build-rqlite.sh | tail -n 1)"
export KMA_RQLITED
exec dbus-run-session -- xvfb-run -a -s "-screen 0 1600x1000x24" \
  ./scripts/with-keyring.sh python3 -m pytest "$@"
