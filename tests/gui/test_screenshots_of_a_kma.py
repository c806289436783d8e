"""`kms-manager --screenshots DIR --kma ...`: sign in to a KMA you name and render its pages.

Given a running KMA, its CA fingerprint and a user's passphrase in a file, the manager signs in
(the CA pinned to that fingerprint), renders every page that user sees and prints the paths. A
wrong passphrase or a fingerprint that is not the KMA's fails with one clear line and no pictures.
This is how the installed-package test signs the built manager in to the installed KMA.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.kma_process import RunningKma

ROOT = Path(__file__).resolve().parents[2]


def _render(
    kma: RunningKma, tmp_path: Path, passphrase: str, fingerprint: str
) -> subprocess.CompletedProcess[str]:
    secret = tmp_path / "passphrase"
    secret.write_text(passphrase + "\n")
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "manager.main",
            "--screenshots",
            str(tmp_path / "shots"),
            "--kma",
            kma.address,
            "--ca-fingerprint",
            fingerprint,
            "--user",
            "auditor",
            "--passphrase-file",
            str(secret),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_signs_in_and_renders_the_pages_the_user_sees(demo_kma: RunningKma, tmp_path: Path) -> None:
    done = _render(demo_kma, tmp_path, demo_kma.passphrases["auditor"], demo_kma.fingerprint)
    assert done.returncode == 0, done.stderr
    shots = {path.name for path in (tmp_path / "shots").glob("*.png")}
    assert {"dashboard.png", "audit.png"} <= shots
    assert str(tmp_path / "shots" / "dashboard.png") in done.stdout.splitlines()


def test_wrong_passphrase_fails_with_one_line_and_no_pictures(demo_kma: RunningKma, tmp_path: Path) -> None:
    done = _render(demo_kma, tmp_path, "not the passphrase", demo_kma.fingerprint)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("kms-manager: ")
    assert not list((tmp_path / "shots").glob("*.png"))


def test_a_fingerprint_that_is_not_the_kmas_is_refused(demo_kma: RunningKma, tmp_path: Path) -> None:
    done = _render(demo_kma, tmp_path, demo_kma.passphrases["auditor"], "SHA256:" + "A" * 43)
    assert done.returncode == 1
    assert not list((tmp_path / "shots").glob("*.png"))


def test_the_options_come_together() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "manager.main", "--kma", "127.0.0.1:8443"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--passphrase-file" in done.stderr
