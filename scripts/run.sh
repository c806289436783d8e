#!/usr/bin/env bash
# The main job: the KMS manager against a bundled local KMA on embedded SQLite (demo data on
# first use, kept in your data folder). With no display it renders screenshots instead.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec kms-manager --local "$@"
