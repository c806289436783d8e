#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine (idempotent; run as root or with sudo).
# System: Qt's runtime libraries, Xvfb for a real window, D-Bus and gnome-keyring for a real
# Secret Service; SoftHSM2 for the HSM tests (docs/hsm.md); lintian and patchelf for the .deb's build
# and check; snmptrapd (net-snmp) receives the alert tests' SNMPv3 notifications; slapd and
# ldap-utils (OpenLDAP) are the directory sign-in tests' directory; OpenSSL's headers
# and pkg-config for the Rust KMIP peer's build (tests/peers/rust-kmip). Python: this project with
# its GUI and dev extras. Rust: the peer's crates, fetched from crates.io at the versions its
# Cargo.lock pins, when cargo is there (rustup's; Debian's is too old for them).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  xvfb xauth dbus dbus-x11 gnome-keyring snmptrapd
  libegl1 libgl1 libopengl0 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libfreetype6 libdbus-1-3
  libglib2.0-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0
  libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xkb1 libxcb-xfixes0 libxrender1
  libxi6 libsm6 libice6 fonts-dejavu-core softhsm2
  lintian patchelf libssl-dev pkg-config slapd ldap-utils
)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c "import kma, app, PySide6, pytestqt, pytest_env, schemathesis, kmip, pkcs11, pysnmp, aiosmtpd, ldap3, pyotp, segno" 2>/dev/null \
   || [ pyproject.toml -nt .setup-done ]; then
  "$PYTHON" -m pip install --quiet --disable-pip-version-check -e ".[gui,dev]"
  touch .setup-done
fi

CARGO="$(command -v cargo || echo "$HOME/.cargo/bin/cargo")"
if [ -x "$CARGO" ]; then
  "$CARGO" fetch --locked --quiet --manifest-path tests/peers/rust-kmip/Cargo.toml
else
  echo "setup: cargo not found (install Rust with rustup); the Rust KMIP peer's tests will skip, and fail under CI" >&2
fi
