#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs what it needs, then runs pytest on a
# private D-Bus session with a real Secret Service and a virtual X display.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec dbus-run-session -- xvfb-run -a -s "-screen 0 1600x1000x24" \
  ./scripts/with-keyring.sh python3 -m pytest "$@"
