#!/usr/bin/env bash
# Pack the frozen KMA (dist/kma/, built by installers/build.sh) into a Debian package:
#   /usr/lib/kma/                 the frozen kma and its libraries (no Python needed)
#   /usr/bin/kma                  -> /usr/lib/kma/kma
#   /lib/systemd/system/kma.service
#   /usr/share/doc/kma/           README.Debian, examples/answers.toml
# plus the maintainer scripts (the `kma` user, /var/lib/kma 0700).
#
# Usage: installers/debian/build-deb.sh KMA_DIR OUT_DIR   -> OUT_DIR/kma_<version>_<arch>.deb
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
KMA_DIR="$(cd "${1:?usage: build-deb.sh KMA_DIR OUT_DIR}" && pwd)"
OUT="${2:?usage: build-deb.sh KMA_DIR OUT_DIR}"
[ -x "$KMA_DIR/kma" ] || { echo "build-deb.sh: no frozen kma in $KMA_DIR" >&2; exit 1; }
mkdir -p "$OUT"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
arch="$(dpkg --print-architecture)"
# The frozen kma runs on this machine's C library or a newer one.
glibc="$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)"

stage="$(mktemp -d "${TMPDIR:-/tmp}/kma-deb.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/kma"
install -d "$pkg/DEBIAN" "$pkg/usr/lib" "$pkg/usr/bin" "$pkg/lib/systemd/system" \
  "$pkg/usr/share/doc/kma/examples"
cp -a "$KMA_DIR" "$pkg/usr/lib/kma"
ln -s ../lib/kma/kma "$pkg/usr/bin/kma"
install -m 0644 "$HERE/kma.service" "$pkg/lib/systemd/system/kma.service"
install -m 0644 "$HERE/README.Debian" "$pkg/usr/share/doc/kma/README.Debian"
install -m 0644 "$HERE/answers.toml" "$pkg/usr/share/doc/kma/examples/answers.toml"
install -m 0755 "$HERE/postinst" "$HERE/prerm" "$HERE/postrm" "$pkg/DEBIAN/"
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: kma
Version: $version
Architecture: $arch
Maintainer: KMS project <kms@kms.example>
Depends: libc6 (>= $glibc), passwd
Section: admin
Priority: optional
Installed-Size: $(du -sk "$pkg/usr" "$pkg/lib" | awk '{s += $1} END {print s}')
Description: KMS Key Management Appliance (headless)
 The reference Key Management Appliance: creates, stores and serves AES-256 keys to
 encrypting tape drives and other agents over KMIP, with a hash-chained audit trail.
 Runs as the systemd service kma.service under its own user; frozen, no Python needed.
CONTROL
deb="$OUT/kma_${version}_${arch}.deb"
# gzip: xz would take minutes of CPU for a few MB less.
dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$deb" >/dev/null
echo "$deb"
