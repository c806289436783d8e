#!/usr/bin/env bash
# Builds rqlited, the Raft-over-SQLite node that multi-KMA clusters store their data in, at the
# pinned version, and caches the binary. Prints the binary's path on its last line.
# The Go module proxy serves v8.43.4 (not v9/v10); `go get` into another module fails, so the
# module directory is downloaded, its hash checked against the pinned one, copied and built.
set -euo pipefail

VERSION="v8.43.4"
MODULE="github.com/rqlite/rqlite/v8"
MODULE_SUM="h1:vTMKQVmR4DAjWRbbIrkCe3Ew8JWaOB3h30yimVAVflU="
CACHE="${KMA_RQLITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kms-manager/rqlite-$VERSION}"
BINARY="$CACHE/rqlited"

if [ -x "$BINARY" ] && "$BINARY" -version 2>/dev/null | grep -q "$VERSION"; then
  echo "$BINARY"
  exit 0
fi
command -v go >/dev/null || { echo "build-rqlite: Go is needed to build rqlited (apt-get install golang-go, or Go >= 1.22)" >&2; exit 1; }

info="$(go mod download -json "$MODULE@$VERSION")"
sum="$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Sum"])')"
dir="$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
if [ "$sum" != "$MODULE_SUM" ]; then
  echo "build-rqlite: $MODULE@$VERSION has hash $sum, expected $MODULE_SUM: refusing to build" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$dir" "$work/rqlite"
chmod -R u+w "$work/rqlite"
# The version is stamped into the binary the way rqlite's own release build does it.
(cd "$work/rqlite" && CGO_ENABLED=1 go build -trimpath \
  -ldflags "-X github.com/rqlite/rqlite/v8/cmd.Version=$VERSION" -o "$work/rqlited" ./cmd/rqlited)
mkdir -p "$CACHE"
mv "$work/rqlited" "$BINARY"
echo "$BINARY"
