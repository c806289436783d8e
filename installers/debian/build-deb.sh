#!/usr/bin/env bash
# Pack the frozen KMA (dist/kma/, built by installers/build.sh) into a Debian package:
#   /usr/lib/kma/                 the frozen kma and its libraries (no Python needed)
#   /usr/lib/kma/rqlited          rqlite's node, built by scripts/build-rqlite.sh: a KMA can join a cluster
#   /usr/bin/kma                  -> /usr/lib/kma/kma
#   /lib/systemd/system/kma.service
#   /usr/share/man/man1/kma.1.gz
#   /usr/share/doc/kma/           copyright, changelog.gz, README.Debian, examples/ (answers.toml,
#                                 backup-folder.conf)
#   /usr/share/lintian/overrides/kma   the tags that do not apply to a frozen application, and why
# plus the maintainer scripts (the `kma` user, /var/lib/kma 0700, deb-systemd-helper).
#
# Libraries Debian ships (zlib, bzip2, xz, OpenSSL, SQLite, libffi, libuuid, libgcc) are taken out
# of the frozen copy and depended on instead, so Debian's security updates reach them; the frozen
# interpreter and its RUNPATHs no longer point at the build machine's Python (README.Debian,
# "Libraries").
#
# Usage: installers/debian/build-deb.sh KMA_DIR OUT_DIR   -> OUT_DIR/kma_<version>_<arch>.deb
# Needs dpkg-deb, patchelf, Go (for rqlited; scripts/build-rqlite.sh caches it) and python3.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
KMA_DIR="$(cd "${1:?usage: build-deb.sh KMA_DIR OUT_DIR}" && pwd)"
OUT="${2:?usage: build-deb.sh KMA_DIR OUT_DIR}"
PYTHON="${PYTHON:-python3}"
[ -x "$KMA_DIR/kma" ] || { echo "build-deb.sh: no frozen kma in $KMA_DIR" >&2; exit 1; }
command -v patchelf >/dev/null || { echo "build-deb.sh: needs patchelf (apt install patchelf)" >&2; exit 1; }
mkdir -p "$OUT"

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
arch="$(dpkg --print-architecture)"
multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)"
# The frozen kma runs on this machine's C library or a newer one.
glibc="$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)"
rqlited="$("$ROOT/scripts/build-rqlite.sh" | tail -n1)"

stage="$(mktemp -d "${TMPDIR:-/tmp}/kma-deb.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
pkg="$stage/kma"
doc="$pkg/usr/share/doc/kma"
install -d "$pkg/DEBIAN" "$pkg/usr/lib" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$doc/examples" \
  "$pkg/usr/share/man/man1" "$pkg/usr/share/lintian/overrides"
cp -a "$KMA_DIR" "$pkg/usr/lib/kma"
internal="$pkg/usr/lib/kma/_internal"

# Debian's own copy of each library it ships, instead of the build machine's: the library goes,
# its package (at least the version built against) becomes a dependency.
depends=("libc6 (>= $glibc)" "passwd" "init-system-helpers (>= 1.54~)")
for lib in libz.so.1 libbz2.so.1.0 liblzma.so.5 libssl.so.3 libcrypto.so.3 libsqlite3.so.0 \
           libffi.so.8 libuuid.so.1 libgcc_s.so.1; do
  [ -e "$internal/$lib" ] || continue
  owner="$( (dpkg -S "/usr/lib/$multiarch/$lib" "/lib/$multiarch/$lib" 2>/dev/null || true) | head -1 | cut -d: -f1)"
  [ -n "$owner" ] || { echo "build-deb.sh: no Debian package ships $lib here" >&2; exit 1; }
  rm "$internal/$lib"
  dependency="$owner (>= $(dpkg-query -W -f='${Version}' "$owner"))"
  [[ " ${depends[*]} " == *" $dependency"* ]] || depends+=("$dependency")  # libssl3: libssl and libcrypto
done
# PyInstaller keeps the RUNPATH the build machine's Python was linked with (~/.pyenv/...): on a
# server where that path exists it would come before the system's libraries. The bootloader finds
# its own libraries without it.
while IFS= read -r -d '' file; do
  if [ "$(head -c 4 "$file")" = $'\x7fELF' ] && patchelf --print-rpath "$file" 2>/dev/null | grep -q .; then
    patchelf --remove-rpath "$file"
  fi
done < <(find "$pkg/usr/lib/kma" -type f -print0)
# Shared libraries are not programs (policy 8.1).
find "$internal" -type f -name '*.so*' -exec chmod 0644 {} +

install -m 0755 "$rqlited" "$pkg/usr/lib/kma/rqlited"
strip --strip-unneeded "$pkg/usr/lib/kma/rqlited"
ln -s ../lib/kma/kma "$pkg/usr/bin/kma"
install -m 0644 "$HERE/kma.service" "$pkg/lib/systemd/system/kma.service"
gzip -9n < "$HERE/kma.1" > "$pkg/usr/share/man/man1/kma.1.gz"
install -m 0644 "$HERE/README.Debian" "$doc/README.Debian"
install -m 0644 "$HERE/answers.toml" "$HERE/backup-folder.conf" "$doc/examples/"
install -m 0644 "$HERE/lintian-overrides" "$pkg/usr/share/lintian/overrides/kma"
"$PYTHON" "$HERE/copyright.py" "$(dirname "$rqlited")/LICENSE" "$rqlited" > "$doc/copyright"
# A native package's changelog: this version, dated by the commit it was built from.
when="$(git -C "$ROOT" log -1 --format=%cD 2>/dev/null || date -R)"
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cat > "$stage/changelog" <<CHANGELOG
kma ($version) unstable; urgency=medium

  * Version $version of the KMS Key Management Appliance.
    Built from commit $commit of the KMS project's repository;
    its history says what changed.

 -- KMS project <kms@kms.example>  $when
CHANGELOG
gzip -9n < "$stage/changelog" > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz" "$pkg/usr/share/man/man1/kma.1.gz" "$doc/copyright"
install -m 0755 "$HERE/postinst" "$HERE/prerm" "$HERE/postrm" "$pkg/DEBIAN/"
(cd "$pkg" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum > DEBIAN/md5sums)

deps="$(IFS=,; echo "${depends[*]}" | sed 's/,/, /g')"
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: kma
Version: $version
Architecture: $arch
Maintainer: KMS project <kms@kms.example>
Depends: $deps
Section: admin
Priority: optional
Installed-Size: $(du -sk "$pkg/usr" "$pkg/lib" | awk '{s += $1} END {print s}')
Description: KMS Key Management Appliance (headless)
 The reference Key Management Appliance: creates, stores and serves AES-256
 keys to encrypting tape drives and other agents over KMIP, with a
 hash-chained audit trail. Runs as the systemd service kma.service under its
 own user; frozen, no Python needed. Includes rqlited, so that KMAs form a
 cluster.
CONTROL
deb="$OUT/kma_${version}_${arch}.deb"
# gzip: xz would take minutes of CPU for a few MB less.
dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$deb" >/dev/null
echo "$deb"
