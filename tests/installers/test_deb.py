"""The headless KMA's Debian package, installed for real on this machine and removed again.

Given the ``.deb`` that ``installers/build.sh`` made from the frozen ``kma``: lintian finds no error
in it; installing it creates the ``kma`` user and /var/lib/kma (0700); the installed ``kma`` is set
up with ``kma init`` from an answers file, serves as that user, reports its status, the built
manager signs in to it offscreen and renders its pages; it becomes a cluster's first node and a
second installed copy (a second data directory) joins it, both running the package's rqlited; it
stops cleanly on SIGTERM, and purging the package leaves nothing behind but the state directory.

Installing needs root and dpkg, and must not clobber a real KMA: elsewhere the test is skipped
with the reason, but under CI (``CI`` set, as ``.ci/run`` does) a skip would hide a broken package,
so it fails instead. There is no systemd running here (a container), so ``kma serve`` runs as the
unit's user without the unit's sandbox; the unit itself is checked with ``systemd-analyze verify``
and scored offline with ``systemd-analyze security``.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.installers.conftest import Built
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow]

STATE = Path("/var/lib/kma")
UNIT = Path("/lib/systemd/system/kma.service")
WATCHED = ["/usr", "/etc", "/opt", "/var/lib"]  # /lib, /bin and /sbin are /usr's on Debian 12
PASSPHRASE = "officer passphrase 1"


def _cannot_run_here() -> str | None:
    if sys.platform != "linux" or shutil.which("dpkg") is None:
        return "needs Debian's dpkg"
    if os.geteuid() != 0:
        return "installing a .deb needs root"
    if subprocess.run(["dpkg", "-s", "kma"], capture_output=True, check=False).returncode == 0:
        return "a kma package is already installed on this machine; the test will not touch it"
    if STATE.exists():
        return f"{STATE} already exists (a real KMA's keys?); the test will not touch it"
    return None


@pytest.fixture(scope="module", autouse=True)
def machine_allows_installing() -> None:
    reason = _cannot_run_here()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must install the .deb, but cannot: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _files() -> set[str]:
    """Every path under the watched trees, but dpkg's own records and the state directory."""
    found: set[str] = set()
    for top in WATCHED:
        for here, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if os.path.join(here, d) not in ("/var/lib/dpkg", str(STATE))]
            found.update(os.path.join(here, name) for name in dirs + files)
    # useradd's backups of the account files (/etc/passwd- ...) are the system's, not ours
    return {path for path in found if not (path.startswith("/etc/") and path.endswith("-"))}


def _owned_by_packages(paths: set[str]) -> set[str]:
    if not paths:
        return set()
    found = subprocess.run(["dpkg", "-S", *sorted(paths)], capture_output=True, text=True, check=False)
    return {line.split(": ", 1)[1] for line in found.stdout.splitlines() if ": " in line} & paths


def _as_kma(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/usr/bin/kma", *args],
        user="kma",
        group="kma",
        extra_groups=[],
        env=_KMA_ENV,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        **kwargs,
    )


_KMA_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def _serve(data_dir: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """The installed `kma serve` on `data_dir` as the user kma, once its ready file is written."""
    ready_file = data_dir / "ready.json"
    serve = subprocess.Popen(
        ["/usr/bin/kma", "serve", "--data-dir", str(data_dir), "--ready-file", str(ready_file)],
        user="kma",
        group="kma",
        extra_groups=[],
        env=_KMA_ENV,
        cwd="/",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )

    def ready() -> bool:
        assert serve.poll() is None, f"kma serve exited: {serve.communicate()[0]}"
        return ready_file.exists()

    wait_until(ready, 180, "kma serve's ready file")
    return serve, json.loads(ready_file.read_text())


def _stop(serve: subprocess.Popen[str]) -> str:
    serve.send_signal(signal.SIGTERM)
    output, _ = serve.communicate(timeout=120)
    assert serve.returncode == 0, output
    return output


class Installed:
    def __init__(self, deb: Path, before: set[str]) -> None:
        self.deb = deb
        self.before = before
        self.install = subprocess.CompletedProcess[str]([], 0)
        self.init = subprocess.CompletedProcess[str]([], 0)
        self.serve: subprocess.Popen[str] | None = None
        self.ready: dict[str, str] = {}


@pytest.fixture(scope="module")
def installed(built: Built) -> Iterator[Installed]:
    (deb,) = built.dist.glob("kma_*.deb")
    state = Installed(deb, _files())
    try:
        state.install = subprocess.run(
            ["dpkg", "-i", str(deb)], capture_output=True, text=True, timeout=300, check=False
        )
        assert state.install.returncode == 0, state.install.stdout + state.install.stderr
        management, service = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
        answers = (Path(__file__).resolve().parents[2] / "installers" / "debian" / "answers.toml").read_text()
        answers = answers.replace("10.0.1.10:8443", management).replace("10.0.2.10:5696", service)
        answers = answers.replace("at least eight characters", PASSPHRASE)
        # The package is under test here, signing in from the CLI and the bundle with a passphrase;
        # two-step sign-in, which the example requires of officers, has tests of its own.
        answers = answers.replace('second_factor_roles = ["security_officer"]', "second_factor_roles = []")
        # the answers hold passphrases: root reads them and pipes them to kma, as README.Debian says
        state.init = _as_kma("init", "--data-dir", str(STATE), "--answers", "-", input=answers)
        assert state.init.returncode == 0, state.init.stderr
        state.serve, state.ready = _serve(STATE)
        yield state
    finally:
        if state.serve is not None and state.serve.poll() is None:
            state.serve.kill()
            state.serve.wait(30)
        # The package keeps the state directory and the user by design; the test's machine gets
        # back to how it was found.
        subprocess.run(["dpkg", "--purge", "kma"], capture_output=True, check=False)
        shutil.rmtree(STATE, ignore_errors=True)
        subprocess.run(["userdel", "kma"], capture_output=True, check=False)


def test_installing_creates_the_unprivileged_user_and_a_private_state_directory(installed: Installed) -> None:
    user = pwd.getpwnam("kma")
    assert user.pw_uid != 0 and user.pw_shell == "/usr/sbin/nologin"
    info = STATE.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == user.pw_uid
    # the set-up writes only what its owner can read
    assert stat.S_IMODE((STATE / "tls" / "server.key").stat().st_mode) == 0o600
    assert "kma init" in installed.install.stderr  # the next step, told at install time


def test_lintian_finds_no_error_and_every_warning_is_overridden_with_a_reason(installed: Installed) -> None:
    if shutil.which("lintian") is None:
        pytest.fail("lintian is not installed (scripts/setup.sh installs it)")
    done = subprocess.run(
        ["lintian", "--tag-display-limit", "0", str(installed.deb)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    found = [line for line in done.stdout.splitlines() if line[:2] in ("E:", "W:")]
    assert found == [], done.stdout


def test_the_package_brings_its_own_rqlited_and_uses_debians_libraries(installed: Installed) -> None:
    rqlited = subprocess.run(["/usr/lib/kma/rqlited", "-version"], capture_output=True, text=True, check=True)
    assert "v8.43.4" in rqlited.stdout + rqlited.stderr
    copyright_file = Path("/usr/share/doc/kma/copyright").read_text()
    assert "rqlite" in copyright_file
    assert "Apache License, Version 2.0" in copyright_file and "common-licenses/Apache-2.0" in copyright_file
    internal = Path("/usr/lib/kma/_internal")
    for library in ("libssl.so.3", "libcrypto.so.3", "libz.so.1", "libsqlite3.so.0"):
        assert not (internal / library).exists(), f"{library} is embedded, not Debian's"
    for elf in [p for p in internal.rglob("*.so*") if p.is_file()]:
        dynamic = subprocess.run(["readelf", "-d", str(elf)], capture_output=True, text=True, check=False)
        assert ".pyenv" not in dynamic.stdout and "RUNPATH" not in dynamic.stdout, elf
    version = subprocess.run(["/usr/bin/kma", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"kma {installed.deb.name.split('_')[1]}"


def test_installed_unit_passes_systemd_analyze_verify(installed: Installed) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    done = subprocess.run(
        ["systemd-analyze", "verify", str(UNIT)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    unit = UNIT.read_text()
    expected = [
        "User=kma",
        "StateDirectory=kma",
        "StateDirectoryMode=0700",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "ExecStart=/usr/bin/kma serve --data-dir /var/lib/kma",
    ]
    for line in expected:
        assert line in unit.splitlines(), line
    assert "Type=notify" in unit.splitlines()  # units after it start once both listeners serve
    scored = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(UNIT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    exposure = float(scored.stdout.split("Overall exposure level for kma.service:")[1].split()[0])
    assert exposure <= 1.4, scored.stdout


def test_installed_kma_was_set_up_from_the_answers_file(installed: Installed) -> None:
    assert "Created cluster 'Acme Tape Vault'" in installed.init.stdout
    assert f"CA fingerprint {installed.ready['ca_fingerprint']}" in installed.init.stdout


def test_installed_kma_reports_its_status(installed: Installed) -> None:
    done = _as_kma("status", "--data-dir", str(STATE), "--json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["cluster_name"] == "Acme Tape Vault"
    assert info["kma_id"] == "kma-dal-1"


def test_built_manager_signs_in_to_the_installed_kma_offscreen(
    installed: Installed, built: Built, tmp_path: Path
) -> None:
    passphrase_file = tmp_path / "passphrase"
    passphrase_file.write_text(PASSPHRASE)
    shots = tmp_path / "shots"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [
            str(built.bundle / "kms-manager"),
            "--screenshots",
            str(shots),
            "--kma",
            installed.ready["management_address"],
            "--ca-fingerprint",
            installed.ready["ca_fingerprint"],
            "--user",
            "so",
            "--passphrase-file",
            str(passphrase_file),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (shots / "dashboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(shots / "dashboard.png") in done.stdout


def test_the_installed_kma_becomes_a_cluster_that_a_second_installed_copy_joins(
    installed: Installed, tmp_path: Path
) -> None:
    # Given the installed KMA made the first node of a cluster (its store moves into the package's
    # rqlited when it starts again)
    assert installed.serve is not None
    _stop(installed.serve)
    convert = _as_kma(
        "convert-to-cluster",
        "--data-dir",
        str(STATE),
        "--raft-address",
        f"127.0.0.1:{_free_port()}",
        "--http-address",
        f"127.0.0.1:{_free_port()}",
    )
    assert convert.returncode == 0, convert.stderr
    installed.serve, installed.ready = _serve(STATE)
    first = installed.ready["management_address"]
    fingerprint = installed.ready["ca_fingerprint"]

    # When the Security Officer adds a second KMA's entry with the key split's credentials
    (tmp_path / "so.pass").write_text(PASSPHRASE + "\n")
    members = "\n".join(f"{name} {name}'s own passphrase" for name in ("alice", "bob"))
    (tmp_path / "credentials").write_text(members + "\n")
    management, service = f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    added = subprocess.run(
        [
            "/usr/bin/kma",
            "cluster",
            "add-kma",
            "kma-dal-2",
            "--site",
            "dallas",
            "--management-address",
            management,
            "--service-address",
            service,
            "--raft-address",
            f"127.0.0.1:{_free_port()}",
            "--kma",
            first,
            "--ca-fingerprint",
            fingerprint,
            "--user",
            "so",
            "--passphrase-file",
            str(tmp_path / "so.pass"),
            "--credentials-file",
            str(tmp_path / "credentials"),
        ],
        env=_KMA_ENV,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    kma_passphrase = added.stdout.split("One-time KMA passphrase", 1)[1].split(": ", 1)[1].split()[0]

    # and a second copy, in its own data directory, joins with it and serves
    peer = Path(tempfile.mkdtemp(prefix="kma-peer-"))
    user = pwd.getpwnam("kma")
    os.chown(peer, user.pw_uid, user.pw_gid)
    second: subprocess.Popen[str] | None = None
    try:
        answers = (
            f'mode = "join"\n[join]\nkma = "{first}"\nca_fingerprint = "{fingerprint}"\n'
            f'kma_id = "kma-dal-2"\npassphrase = "{kma_passphrase}"\n'
            f'rqlite_http_address = "127.0.0.1:{_free_port()}"\n'
        )
        joined = _as_kma("init", "--data-dir", str(peer / "kma"), "--answers", "-", input=answers)
        assert joined.returncode == 0, joined.stdout + joined.stderr
        second, ready = _serve(peer / "kma")
        assert ready["management_address"] == management

        # Then the first KMA's topology shows both, responding, as voters
        trust = ssl.create_default_context(cadata=(STATE / "tls" / "ca.pem").read_text())
        with httpx.Client(base_url=f"https://{first}", verify=trust, timeout=60) as http:
            token = http.post("/api/v1/auth/sign-in", json={"user_id": "so", "passphrase": PASSPHRASE})
            headers = {"Authorization": f"Bearer {token.json()['token']}"}

            def both_respond() -> bool:
                topology = http.get("/api/v1/cluster/topology", headers=headers).json()
                kmas = {k["id"]: k for site in topology["sites"] for k in site["kmas"]}
                return set(kmas) == {"kma-dal-1", "kma-dal-2"} and all(
                    k["responding"] and k["voter"] for k in kmas.values()
                )

            wait_until(both_respond, timeout=180, what="both installed KMAs responding in the topology")
        _stop(second)
        second = None
    finally:
        if second is not None:
            second.kill()
            second.wait(30)
        shutil.rmtree(peer, ignore_errors=True)


def test_installed_kma_stops_cleanly_and_purging_leaves_only_its_state(installed: Installed) -> None:
    assert installed.serve is not None
    _stop(installed.serve)
    assert not (STATE / "ready.json").exists()

    done = subprocess.run(
        ["dpkg", "--purge", "kma"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    after = _files()
    assert installed.before - after == set()  # nothing that was there before went
    # nothing of the package's left in /usr, /etc, /opt, /var/lib (what another package installed
    # meanwhile on a shared machine is that package's)
    assert after - installed.before - _owned_by_packages(after - installed.before) == set()
    # the keys and the audit trail (in the cluster's store now) are never deleted by a removal
    assert (STATE / "cluster").is_dir() and (STATE / "kma.db.before-cluster").is_file()
