#!/usr/bin/env bash
# macOS: put "KMS Manager.app" (made by installers/build.sh, the spec's BUNDLE step) on a
# compressed disk image with a link to /Applications: dist/kms-manager-<version>-macos.dmg.
# Unsigned: Gatekeeper asks before the first start (right-click > Open) until it is signed and
# notarised with a Developer ID.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DIST="${KMS_DIST_DIR:-$ROOT/dist}"
app="$DIST/KMS Manager.app"
[ -x "$app/Contents/MacOS/kms-manager" ] && [ -x "$app/Contents/MacOS/kma" ] \
  || { echo "build-dmg.sh: no $app (run installers/build.sh first)" >&2; exit 1; }
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
stage="$(mktemp -d)"; trap 'rm -rf "$stage"' EXIT
cp -R "$app" "$stage/"
cp "$DIST/kms-manager/LICENSE" "$DIST/kms-manager/THIRD_PARTY_NOTICES.txt" "$stage/"
ln -s /Applications "$stage/Applications"
dmg="$DIST/kms-manager-$version-macos.dmg"
hdiutil create -volname "KMS Manager" -srcfolder "$stage" -ov -format UDZO "$dmg"
echo "$dmg"
