"""Issue 30: the Debian package upgraded over itself. Release 0.1.0's .deb (built from its commit
with its own build script) is installed and makes a demo KMA whose drive gets keys; this tree's
.deb installed over it serves the same keys with the same bytes and an audit chain that verifies;
and on a store a later release migrated, this package refuses with the versions, nothing written.

Needs root and dpkg like tests/installers/test_deb.py (whose guard and helpers it uses), and builds
two bundles: about twice that test's build time.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kma.store.schema import EXTRA_FOR_TESTS, latest_schema_version
from tests.installers.conftest import Built
from tests.installers.test_deb import _KMA_ENV as KMA_ENV
from tests.installers.test_deb import STATE, _as_kma, machine_allows_installing
from tests.support.agents import kmip
from tests.support.kma_process import run_kma
from tests.support.releases import release_tree
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow]
__all__ = ["machine_allows_installing"]  # its guard applies here too: root, dpkg, no real KMA

AGENT = "t10k-dal-01"


@pytest.fixture(scope="module")
def old_deb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Release 0.1.0's .deb, built from its tree by its own installers/build.sh."""
    out = tmp_path_factory.mktemp("release-0.1.0")
    tree = release_tree("0.1.0", out / "tree")
    env = {
        **os.environ,
        "KMS_DIST_DIR": str(out / "dist"),
        "KMS_BUILD_DIR": str(out / "build"),
        "PYTHON": sys.executable,
        "PYTHONPATH": str(tree),
    }
    done = subprocess.run(
        [str(tree / "installers" / "build.sh"), "--no-smoke", "--no-archive"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    (deb,) = (out / "dist").glob("kma_0.1.0_*.deb")
    return deb


def _dpkg_install(deb: Path) -> None:
    done = subprocess.run(["dpkg", "-i", str(deb)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def _serve() -> tuple[subprocess.Popen[str], dict[str, str]]:
    ready_file = STATE / "ready.json"
    ready_file.unlink(missing_ok=True)
    serve = subprocess.Popen(
        [
            "/usr/bin/kma",
            "serve",
            "--data-dir",
            str(STATE),
            "--management-port",
            "0",
            "--service-port",
            "0",
            "--ready-file",
            str(ready_file),
        ],
        user="kma",
        group="kma",
        extra_groups=[],
        env=KMA_ENV,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_until(lambda: ready_file.exists() or serve.poll() is not None, 180, what="the installed KMA ready")
    assert serve.poll() is None, f"kma serve exited: {serve.communicate()[0]}"
    return serve, json.loads(ready_file.read_text())


def _stop(serve: subprocess.Popen[str]) -> None:
    serve.send_signal(signal.SIGTERM)
    output, _ = serve.communicate(timeout=120)
    assert serve.returncode == 0, output


def _keys(agent: Path, ready: dict[str, str]) -> dict[str, bytes]:
    with kmip(agent, ready["service_address"]) as client:
        return {uid: client.get(uid) for uid in client.locate()}


@pytest.fixture
def clean_machine() -> Iterator[None]:
    try:
        yield
    finally:  # the package keeps the state directory and the user by design
        subprocess.run(["dpkg", "--purge", "kma"], capture_output=True, check=False)
        shutil.rmtree(STATE, ignore_errors=True)
        subprocess.run(["userdel", "kma"], capture_output=True, check=False)


def test_a_newer_deb_over_an_older_one_serves_the_same_keys_and_refuses_a_later_releases_store(
    old_deb: Path, built: Built, tmp_path: Path, clean_machine: None
) -> None:
    (new_deb,) = built.dist.glob("kma_*.deb")
    # Given release 0.1.0 installed, with a demo KMA whose drive was issued keys
    _dpkg_install(old_deb)
    made = _as_kma("demo", "--data-dir", str(STATE), "--json")
    assert made.returncode == 0, made.stderr
    agents = json.loads(made.stdout)["agents"]
    passphrase = next(a["enrollment_passphrase"] for a in agents if a["id"] == AGENT)
    serve, ready = _serve()
    secret = tmp_path / "enrollment-passphrase"
    secret.write_text(passphrase + "\n")
    agent = tmp_path / AGENT
    run_kma(
        "agent",
        "enroll",
        "--kma",
        ready["service_address"],
        "--agent-id",
        AGENT,
        "--passphrase-file",
        str(secret),
        "--out",
        str(agent),
        "--ca-fingerprint",
        ready["ca_fingerprint"],
    )
    simulated = run_kma(
        "agent",
        "simulate",
        "--agent-dir",
        str(agent),
        "--drives",
        "2",
        "--mounts",
        "6",
        "--write-ratio",
        "1",
        "--json",
    )
    assert json.loads(simulated.stdout)["failures"] == 0, simulated.stdout
    keys = _keys(agent, ready)
    assert keys
    _stop(serve)

    # When this release's package is installed over it
    _dpkg_install(new_deb)
    serve, ready = _serve()
    try:
        # Then the same keys are served with the same bytes, and the audit chain verifies
        assert _keys(agent, ready) == keys
    finally:
        _stop(serve)
    verified = _as_kma("audit", "verify", "--data-dir", str(STATE))
    assert verified.returncode == 0, verified.stdout + verified.stderr

    # And a store a later release migrated (a migration this package does not ship) is refused by
    # this package with the versions, nothing written. (Release 0.1.0 predates the check: the
    # refusal is the newer package's, so the later release is this one plus a test-only migration.)
    _migrate_as_a_later_release()
    store = hashlib.sha256((STATE / "kma.db").read_bytes()).hexdigest()
    said = (
        f"This store was migrated by a newer KMA release (schema 9999; this release knows up to "
        f"{latest_schema_version()}). Install that release or later."
    )
    serving = ("serve", "--data-dir", str(STATE), "--management-port", "0", "--service-port", "0")
    for refused in (_as_kma("status", "--data-dir", str(STATE)), _as_kma(*serving)):
        assert refused.returncode != 0
        assert said in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    assert hashlib.sha256((STATE / "kma.db").read_bytes()).hexdigest() == store


def _migrate_as_a_later_release() -> None:
    """The installed kma with one migration more (the test-only folder): what a later release does."""
    later = Path(tempfile.mkdtemp(prefix="later-release-"))
    try:
        later.chmod(0o755)  # the kma user reads it
        (later / "9999_later_release.sql").write_text("CREATE TABLE later_release (id INTEGER);\n")
        migrated = subprocess.run(
            ["/usr/bin/kma", "status", "--data-dir", str(STATE)],
            user="kma",
            group="kma",
            extra_groups=[],
            env={**KMA_ENV, EXTRA_FOR_TESTS: str(later)},
            cwd="/",
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert migrated.returncode == 0, migrated.stderr
    finally:
        shutil.rmtree(later)
