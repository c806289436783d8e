#!/usr/bin/env bash
# Build the onedir bundle (kms-manager + kma sharing one _internal/) with PyInstaller, smoke-test
# the frozen executables, and pack dist/kms-manager-<version>-<os>-<arch>.tar.gz; on Linux with
# dpkg-deb also the headless KMA's Debian package, dist/kma_<version>_<arch>.deb (from dist/kma/).
#
# Usage: installers/build.sh [--clean] [--skip-build] [--no-smoke] [--no-archive] [--no-deb]
#   --clean        empty PyInstaller's cache and work folder first (release builds)
#   --skip-build   smoke-test (and pack) an existing bundle
#   --no-smoke     build and pack without running the bundle
#   --no-archive   do not make the .tar.gz
#   --no-deb       do not make the .deb
# Environment:
#   KMS_DIST_DIR   where the bundle and the archive go (default: <repo>/dist)
#   KMS_BUILD_DIR  PyInstaller's work folder (default: <repo>/build)
#   KMS_SMOKE_DIR  keep the smoke tests' outputs (demo.json, screenshots/, logs) here
#                  (default: a temporary folder, removed afterwards)
#   PYTHON         interpreter with PyInstaller and this project's dependencies (default: python3)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIST="${KMS_DIST_DIR:-$ROOT/dist}"
WORK="${KMS_BUILD_DIR:-$ROOT/build}"
PYTHON="${PYTHON:-python3}"
clean=() build=1 smoke=1 archive=1 deb=1
for arg in "$@"; do
  case "$arg" in
    --clean) clean=(--clean) ;;
    --skip-build) build=0 ;;
    --no-smoke) smoke=0 ;;
    --no-archive) archive=0 ;;
    --no-deb) deb=0 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$DIST" "$WORK"
DIST="$(cd "$DIST" && pwd)"
BUNDLE="$DIST/kms-manager"

step() { printf '\n== %s\n' "$*"; }
die() { printf 'build.sh: FAILED: %s\n' "$*" >&2; exit 1; }
# `timeout` is GNU coreutils; stock macOS has none, so run without a limit there.
limit() { local s="$1"; shift; if command -v timeout >/dev/null; then timeout "$s" "$@"; else "$@"; fi; }

if [ "$build" = 1 ]; then
  step "PyInstaller: $ROOT/installers/kms-manager.spec -> $BUNDLE"
  started=$(date +%s)
  (cd "$ROOT" && "$PYTHON" -m PyInstaller --noconfirm ${clean[@]+"${clean[@]}"} --log-level WARN \
      --distpath "$DIST" --workpath "$WORK" installers/kms-manager.spec)
  echo "built in $(( $(date +%s) - started )) s; $(du -sh "$BUNDLE" | cut -f1) in $BUNDLE"
fi
[ -x "$BUNDLE/kma" ] && [ -x "$BUNDLE/kms-manager" ] || die "no bundle at $BUNDLE (build it first)"
# The licence and every shipped component's (the LGPL's Qt with how to replace it), read from the
# environment the bundle was frozen from; the archive and the Windows and macOS installers carry both.
cp "$ROOT/LICENSE" "$BUNDLE/LICENSE"
"$PYTHON" "$ROOT/installers/licences.py" gui > "$BUNDLE/THIRD_PARTY_NOTICES.txt"

if [ "$smoke" = 1 ]; then
  if [ -n "${KMS_SMOKE_DIR:-}" ]; then
    SMOKE="$KMS_SMOKE_DIR"; rm -rf "$SMOKE"; mkdir -p "$SMOKE"; keep_smoke=1
  else
    SMOKE="$(mktemp -d "${TMPDIR:-/tmp}/kms-bundle-smoke.XXXXXX")"; keep_smoke=0
  fi
  SMOKE="$(cd "$SMOKE" && pwd)"
  serve_pid=""
  cleanup() {
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then kill -TERM "$serve_pid"; fi
    if [ "$keep_smoke" = 0 ]; then rm -rf "$SMOKE"; fi
  }
  trap cleanup EXIT

  step "smoke: kma --help, kms-manager --help, both --version"
  "$BUNDLE/kma" --help > "$SMOKE/kma-help.txt" || die "kma --help exited $?"
  grep -q "usage: kma" "$SMOKE/kma-help.txt" || die "kma --help printed no usage"
  "$BUNDLE/kms-manager" --help > "$SMOKE/kms-manager-help.txt" || die "kms-manager --help exited $?"
  version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/pyproject.toml" | head -1)"
  [ "$("$BUNDLE/kma" --version)" = "kma $version" ] || die "kma --version is not $version"
  [ "$("$BUNDLE/kms-manager" --version)" = "kms-manager $version" ] || die "kms-manager --version is not $version"
  echo ok

  step "smoke: kma demo --json (migrations read through importlib.resources, Argon2, Shamir)"
  limit 300 "$BUNDLE/kma" demo --data-dir "$SMOKE/demo" --json > "$SMOKE/demo.out" \
    || die "kma demo exited $? (see $SMOKE/demo.out)"
  # kma demo may print progress before its JSON; the JSON is the last line (as app/local/local_kma.py reads it).
  "$PYTHON" - "$SMOKE/demo.out" "$SMOKE/demo.json" <<'EOF' || die "kma demo printed no JSON"
import json, sys
out = open(sys.argv[1]).read().strip()
data = json.loads(out if out.startswith("{") else out.splitlines()[-1])
json.dump(data, open(sys.argv[2], "w"), indent=2)
print("demo JSON keys:", ", ".join(sorted(data)))
EOF

  step "smoke: kma serve (uvicorn over TLS), GET /api/v1/status, then SIGTERM"
  "$BUNDLE/kma" serve --data-dir "$SMOKE/demo" --management-port 0 --service-port 0 \
    --ready-file "$SMOKE/ready.json" > "$SMOKE/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 600); do
    [ -s "$SMOKE/ready.json" ] && break
    kill -0 "$serve_pid" 2>/dev/null || die "kma serve exited early (see $SMOKE/serve.log)"
    sleep 0.1
  done
  [ -s "$SMOKE/ready.json" ] || die "kma serve wrote no ready file within 60 s"
  cp "$SMOKE/ready.json" "$SMOKE/ready-seen.json"  # serve removes its ready file when it stops
  "$PYTHON" - "$SMOKE/ready-seen.json" > "$SMOKE/status.json" <<'EOF' || die "GET /api/v1/status failed"
import json, ssl, sys, urllib.request
ready = json.load(open(sys.argv[1]))
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE  # a smoke test of the listener, not of certificate pinning
url = f"https://{ready['management_address']}/api/v1/status"
with urllib.request.urlopen(url, context=context, timeout=10) as response:
    assert response.status == 200, response.status
    print(json.dumps(json.load(response)))
# the API's docs page loads Swagger UI from the bundle itself (package data of fastapi-offline)
docs = f"https://{ready['management_address']}/api/v1/docs/assets/swagger-ui-bundle.js"
with urllib.request.urlopen(docs, context=context, timeout=10) as response:
    assert response.status == 200 and len(response.read()) > 100_000, "Swagger UI is not in the bundle"
EOF
  echo "status: $(head -c 200 "$SMOKE/status.json")"
  kill -TERM "$serve_pid"
  code=0; wait "$serve_pid" || code=$?
  serve_pid=""
  [ "$code" -eq 0 ] || die "kma serve exited $code on SIGTERM, not 0 (see $SMOKE/serve.log)"
  [ ! -e "$SMOKE/ready.json" ] || die "kma serve left its ready file behind: its clean-up did not run"
  echo "stopped cleanly on SIGTERM"

  step "smoke: kms-manager --local --screenshots (offscreen; local mode runs the bundled kma)"
  QT_QPA_PLATFORM=offscreen limit 600 "$BUNDLE/kms-manager" --local --data-dir "$SMOKE/gui/kma" \
    --screenshots "$SMOKE/screenshots" > "$SMOKE/gui.log" 2>&1 \
    || { tail -20 "$SMOKE/gui.log" >&2; die "kms-manager --local exited non-zero (see $SMOKE/gui.log)"; }
  "$PYTHON" - "$SMOKE/screenshots" <<'EOF' || die "screenshots missing or not PNG"
import pathlib, sys
shots = sorted(pathlib.Path(sys.argv[1]).glob("*.png"))
assert shots, "no PNG written"
for shot in shots:
    head = shot.read_bytes()[:8]
    assert head == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 1000, f"{shot} is not a PNG"
print(f"{len(shots)} screenshots:", " ".join(s.name for s in shots))
EOF
  if pgrep -f "serve --data-dir $SMOKE/gui/kma" >/dev/null 2>&1; then
    die "the local KMA outlived kms-manager"
  fi

  step "smoke: the xcb platform plugin (the same, on a virtual X display)"
  if [ "$(uname -s)" = Linux ] && command -v xvfb-run >/dev/null; then
    QT_QPA_PLATFORM=xcb limit 600 xvfb-run -a -s "-screen 0 1600x1000x24" \
      "$BUNDLE/kms-manager" --local --data-dir "$SMOKE/gui/kma" \
      --screenshots "$SMOKE/screenshots-xcb" > "$SMOKE/gui-xcb.log" 2>&1 \
      || { tail -20 "$SMOKE/gui-xcb.log" >&2; die "kms-manager on xcb exited non-zero"; }
    ls "$SMOKE/screenshots-xcb"/*.png > /dev/null 2>&1 || die "no screenshots rendered on xcb"
    echo "ok: $(ls "$SMOKE/screenshots-xcb" | wc -l | tr -d ' ') screenshots"
  else
    echo "skipped (Linux with xvfb-run only)"
  fi
  if [ "$keep_smoke" = 1 ]; then echo "smoke outputs kept in $SMOKE"; fi
fi

if [ "$archive" = 1 ]; then
  version="$(cd "$ROOT" && "$PYTHON" -c \
    'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
  os="$(uname -s | tr '[:upper:]' '[:lower:]')"; [ "$os" = darwin ] && os=macos
  tarball="$DIST/kms-manager-$version-$os-$(uname -m).tar.gz"
  step "archive: $tarball"
  tar -C "$DIST" -czf "$tarball" kms-manager
  echo "$(du -h "$tarball" | cut -f1) $tarball"
fi

if [ "$deb" = 1 ]; then
  step "deb: the headless KMA (dist/kma/) as a Debian package"
  if [ "$(uname -s)" = Linux ] && command -v dpkg-deb >/dev/null; then
    [ -x "$DIST/kma/kma" ] || die "no KMA-only bundle at $DIST/kma (build it first)"
    rm -f "$DIST"/kma_*.deb
    debfile="$("$ROOT/installers/debian/build-deb.sh" "$DIST/kma" "$DIST")"
    echo "$(du -h "$debfile" | cut -f1) $debfile"
  else
    echo "skipped (Linux with dpkg-deb only)"
  fi
fi
