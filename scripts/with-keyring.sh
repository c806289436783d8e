#!/usr/bin/env bash
# Runs a command with a real, unlocked Secret Service (gnome-keyring) on this D-Bus session, so
# `keyring` uses a secure backend in tests exactly as on a desktop, never the user's own keyring.
set -euo pipefail
export XDG_DATA_HOME="${XDG_DATA_HOME:-$(mktemp -d)}"
eval "$(printf 'test-keyring' | gnome-keyring-daemon --unlock --components=secrets 2>/dev/null)" || true
export GNOME_KEYRING_CONTROL SSH_AUTH_SOCK 2>/dev/null || true
exec "$@"
