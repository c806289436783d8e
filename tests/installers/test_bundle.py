"""The PyInstaller bundle builds, and its frozen executables do what the source tree does.

Runs ``installers/build.sh`` into a temporary folder (nothing lands in the tree's ``dist/`` or
``build/``): a PyInstaller build (about 1 minute with PyInstaller's cache warm, 2 cold, on 2 cores)
and the script's own smoke run of the frozen ``kma`` and ``kms-manager`` (about 30 s). The
assertions read what the smoke run left behind, so a broken frozen import, a missing data file or
plugin, or a local mode that cannot find the bundled ``kma`` fails here, not on a user's machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.installers.conftest import Built

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform not in ("linux", "darwin"), reason="build.sh is for Linux and macOS"),
    pytest.mark.skipif(importlib.util.find_spec("PyInstaller") is None, reason="PyInstaller not installed"),
]


def test_bundle_has_both_executables_sharing_one_internal_folder(built: Built) -> None:
    assert (built.bundle / "kms-manager").is_file()
    assert (built.bundle / "kma").is_file()
    internal = built.bundle / "_internal"
    assert sorted(p.name for p in (internal / "kma" / "store" / "migrations").glob("*.sql"))
    assert (internal / "resources" / "icons" / "app.svg").is_file()


def test_frozen_kma_help_exits_zero(built: Built) -> None:
    # Given the frozen kma, run from outside the source tree with a minimal environment
    done = subprocess.run(
        [str(built.bundle / "kma"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=built.dist,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: kma" in done.stdout
    assert "serve" in done.stdout and "demo" in done.stdout


def test_frozen_kma_plans_from_the_bundled_measurements(built: Built) -> None:
    done = subprocess.run(
        [
            str(built.bundle / "kma"),
            "plan",
            "--drive",
            "LTO4",
            "--data",
            "2TB",
            "--window",
            "4h",
            "--compressibility",
            "1:1",
            "--file-size",
            "1GB",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=built.dist,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cartridges"]["native_gb"] == 800


def test_frozen_kma_demo_prints_json(built: Built) -> None:
    demo = json.loads((built.smoke / "demo.json").read_text())
    assert demo["ca_fingerprint"].startswith("SHA256:")
    assert demo["users"]


def test_frozen_kma_serves_the_management_api(built: Built) -> None:
    status = json.loads((built.smoke / "status.json").read_text())
    assert status["cluster_name"]
    assert status["locked"] is False


def test_frozen_manager_renders_every_page_against_the_bundled_kma(built: Built) -> None:
    shots = sorted((built.smoke / "screenshots").glob("*.png"))
    names = {shot.name for shot in shots}
    assert {"sign_in.png", "dashboard.png", "keys.png"} <= names, names
    for shot in shots:
        data = shot.read_bytes()
        assert data[:8] == PNG_MAGIC, shot
        assert len(data) > 10_000, f"{shot.name} is suspiciously small ({len(data)} bytes)"
    # Frozen, sys.executable is kms-manager itself, so only the bundled kma can have served this
    assert "management" in (built.smoke / "gui" / "local-kma.log").read_text()


def test_gui_executable_holds_no_server_or_test_code(built: Built) -> None:
    from PyInstaller.archive.readers import CArchiveReader

    def modules(exe: str) -> set[str]:
        return set(CArchiveReader(str(built.bundle / exe)).open_embedded_archive("PYZ.pyz").toc)

    def tops(names: set[str]) -> set[str]:
        return {name.split(".")[0] for name in names}

    gui, server = tops(modules("kms-manager")), tops(modules("kma"))
    # the GUI talks to a KMA over HTTPS only (docs/conventions: manager -> ui -> app -> kms_client -> kma)
    assert not gui & {"kma", "uvicorn", "fastapi"}
    assert not server & {"PySide6", "app", "ui", "manager"}
    dev_only = {"pytest", "_pytest", "pytestqt", "hypothesis", "schemathesis", "kmip", "tests"}
    assert not (gui | server) & dev_only


def test_archive_holds_the_bundle(built: Built) -> None:
    (tarball,) = built.dist.glob("kms-manager-*.tar.gz")
    platform = "linux" if sys.platform == "linux" else "macos"
    assert tarball.name.endswith(f"-{platform}-{os.uname().machine}.tar.gz")
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert {"kms-manager/kma", "kms-manager/kms-manager"} <= names


def test_bundle_carries_the_licence_and_every_components_notice(built: Built) -> None:
    """A user of the desktop bundle learns under what licence it runs, and how to replace its LGPL Qt."""
    assert "Apache License" in (built.bundle / "LICENSE").read_text()
    notices = (built.bundle / "THIRD_PARTY_NOTICES.txt").read_text()
    for component in ("PySide6", "shiboken6", "cryptography", "fastapi", "keyring"):
        assert f"\n  {component} " in notices, component
    assert "LGPL-3.0" in notices and "in place of that folder" in notices
    assert (built.bundle / "_internal" / "PySide6").is_dir()  # where the notice says Qt can be replaced
