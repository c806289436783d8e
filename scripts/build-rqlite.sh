#!/usr/bin/env bash
# Builds rqlited, the Raft-over-SQLite node that multi-KMA clusters store their data in, at the
# pinned version, and caches the binary with rqlite's LICENSE beside it (the .deb ships both).
# Prints the binary's path on its last line.
# The Go module proxy serves v8.43.4 (not v9/v10); `go get` into another module fails, so the
# module directory is downloaded, its hash checked against the pinned one, copied and built.
set -euo pipefail

VERSION="v8.43.4"
MODULE="github.com/rqlite/rqlite/v8"
MODULE_SUM="h1:vTMKQVmR4DAjWRbbIrkCe3Ew8JWaOB3h30yimVAVflU="
CACHE="${KMA_RQLITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kms-manager/rqlite-$VERSION}"
BINARY="$CACHE/rqlited"

built=0
if [ -x "$BINARY" ] && "$BINARY" -version 2>/dev/null | grep -q "$VERSION"; then
  built=1
  if [ -f "$CACHE/LICENSE" ]; then
    echo "$BINARY"
    exit 0
  fi
fi
# Go: the machine's if it is recent enough (>= 1.21 fetches the toolchain rqlite's go.mod asks for
# through the module proxy by itself); otherwise Debian's golang-go, which is older (1.19 on
# Debian 12), used only to download Go 1.24's toolchain module from the proxy.
go_minor() { "$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'; }
GO="$(command -v go || true)"
if [ -z "$GO" ] || [ "$(go_minor "$GO")" -lt 21 ]; then
  if [ -z "$GO" ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "build-rqlite: installing Debian's Go to build rqlited" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go gcc libc6-dev >/dev/null
    GO="$(command -v go)"
  fi
  arch="$("$GO" env GOARCH)"
  toolchain="$(GOFLAGS=-mod=mod "$GO" mod download -json "golang.org/toolchain@v0.0.1-go1.24.0.linux-$arch" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
  GO="$toolchain/bin/go"
  chmod +x "$GO" "$toolchain/pkg/tool/"*/* 2>/dev/null || true
fi
go() { "$GO" "$@"; }

info="$(go mod download -json "$MODULE@$VERSION")"
sum="$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Sum"])')"
dir="$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
if [ "$sum" != "$MODULE_SUM" ]; then
  echo "build-rqlite: $MODULE@$VERSION has hash $sum, expected $MODULE_SUM: refusing to build" >&2
  exit 1
fi

mkdir -p "$CACHE"
install -m 0644 "$dir/LICENSE" "$CACHE/LICENSE"
if [ "$built" = 1 ]; then
  echo "$BINARY"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$dir" "$work/rqlite"
chmod -R u+w "$work/rqlite"
# The version is stamped into the binary the way rqlite's own release build does it.
(cd "$work/rqlite" && CGO_ENABLED=1 go build -trimpath \
  -ldflags "-X github.com/rqlite/rqlite/v8/cmd.Version=$VERSION" -o "$work/rqlited" ./cmd/rqlited)
mv "$work/rqlited" "$BINARY"
echo "$BINARY"
