#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs what it needs, then runs pytest on a
# private D-Bus session with a real Secret Service and a virtual X display.
#
# In one process by default. KMS_TEST_WORKERS=3 (CI sets it) runs it on 3 pytest-xdist workers, each
# test file whole on one worker (about 30 min instead of about 68 on two cores; docs/testing.md).
# Arguments go to pytest (`./scripts/test.sh tests/unit -x`).
#
# KMS_COVERAGE=1 (CI sets it): the tests of COVERAGE_SAMPLE run first under coverage.py (line and
# branch, the KMA processes they start included), then the rest as usual; the coverage of the
# product is printed at the end with its least-covered modules (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Cluster tests run real rqlite nodes: build rqlited once (cached; needs Go, installed if missing).
KMA_RQLITED="$(./scripts/build-rqlite.sh | tail -n 1)"
export KMA_RQLITED

pytest=(python3 -m pytest -n "${KMS_TEST_WORKERS:-0}" --dist loadfile)
in_session() {
  dbus-run-session -- xvfb-run -a -s "-screen 0 1600x1000x24" ./scripts/with-keyring.sh "$@"
}

if [ "${KMS_COVERAGE:-}" != 1 ]; then
  in_session "${pytest[@]}" "$@"
  exit
fi

# What the coverage run measures: every unit test, every API route through the role matrix, the
# KMIP service, a cluster, backups, quorum and the manager's main windows. Measuring the whole
# suite would cost about 40% more time than CI has (a KMA starts 75% slower under coverage).
COVERAGE_SAMPLE=(
  tests/unit
  tests/integration/test_role_matrix.py
  tests/integration/test_kmip_keys.py
  tests/integration/test_key_lifecycle.py
  tests/integration/test_backups.py
  tests/integration/test_quorum.py
  tests/integration/test_cluster_store.py
  tests/integration/test_audit_browse.py
  tests/gui/test_workflows.py
  tests/gui/test_lists.py
)
rest=()
for path in "${COVERAGE_SAMPLE[@]}"; do rest+=(--ignore="$path"); done

python3 -m coverage erase
status=0
in_session python3 -m coverage run -m "${pytest[@]:2}" "${COVERAGE_SAMPLE[@]}" "$@" \
  || status=$?
in_session "${pytest[@]}" "${rest[@]}" "$@" || status=$?
python3 -m coverage combine --quiet
python3 -m coverage json --quiet -o coverage.json
echo "== coverage of the product by ${COVERAGE_SAMPLE[*]} =="
python3 scripts/coverage-summary.py coverage.json
exit "$status"
