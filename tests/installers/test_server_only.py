"""A headless KMA installed with `pip install .` (no extras) into a fresh virtual environment: no Qt
comes with it, and the installed `kma` sets up a demo KMA and serves it over TLS.

The environment is the venv's own (no system site packages), so nothing of the machine's
PySide6 can leak in: what is importable is exactly what pyproject.toml's dependencies brought.
pip installs them from PyPI (its cache makes a second run quick).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import httpx
import pytest

from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROJECT = [
    "pyproject.toml",
    "README.md",
    "kma",
    "kms_client",
    "tape_planning",
    "app",
    "ui",
    "manager",
    "resources",
]


@pytest.fixture(scope="module")
def server_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("server-only")
    where = top / "venv"
    venv.create(where, with_pip=True)
    # pip builds in the source tree (build/, *.egg-info): it gets a copy of the project's files
    source = top / "source"
    source.mkdir()
    for part in PROJECT:
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / part, source / part)
    done = subprocess.run(
        [
            str(where / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        cwd=top,
        env=_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return where


def _env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}


def test_the_server_install_brings_no_qt(server_only: Path) -> None:
    listed = subprocess.run(
        [str(server_only / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    names = {item["name"].lower() for item in json.loads(listed.stdout)}
    assert "kms-manager" in names
    assert not {"pyside6", "pyside6-essentials", "shiboken6", "keyring"} & names
    blocked = subprocess.run(
        [str(server_only / "bin" / "python"), "-c", "import PySide6"],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    assert "No module named 'PySide6'" in blocked.stderr


def test_the_installed_kma_knows_its_version_and_the_manager_says_what_it_needs(server_only: Path) -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run(
        [str(server_only / "bin" / "kma"), "--version"],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    assert done.stdout.strip() == f"kma {version}"
    manager = subprocess.run(
        [str(server_only / "bin" / "kms-manager")], capture_output=True, text=True, env=_env(), check=False
    )
    assert manager.returncode == 2
    assert "pip install 'kms-manager[gui]'" in manager.stderr


def test_the_installed_kma_serves_without_qt(server_only: Path, tmp_path: Path) -> None:
    kma = str(server_only / "bin" / "kma")
    data = tmp_path / "kma"
    subprocess.run(
        [kma, "demo", "--data-dir", str(data), "--json"],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
        timeout=600,
        cwd=tmp_path,
    )
    ready = tmp_path / "ready.json"
    serve = subprocess.Popen(
        [
            kma,
            "serve",
            "--data-dir",
            str(data),
            "--management-port",
            "0",
            "--service-port",
            "0",
            "--ready-file",
            str(ready),
        ],
        env=_env(),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(lambda: ready.exists() or serve.poll() is not None, timeout=120, what="kma serve ready")
        assert serve.poll() is None, serve.communicate()[0]
        info = json.loads(ready.read_text())
        trust = ssl.create_default_context(cadata=(data / "tls" / "ca.pem").read_text())
        with httpx.Client(base_url=f"https://{info['management_address']}", verify=trust, timeout=60) as http:
            assert http.get("/api/v1/status").json()["cluster_name"]
            docs = http.get("/api/v1/docs/assets/swagger-ui-bundle.js")  # from the installed package
            assert docs.status_code == 200
    finally:
        serve.send_signal(signal.SIGTERM)
        output, _ = serve.communicate(timeout=60)
    assert serve.returncode == 0, output
    assert "PySide6" not in output


def test_this_test_really_ran_outside_the_shared_environment(server_only: Path) -> None:
    where = subprocess.run(
        [str(server_only / "bin" / "python"), "-c", "import kma; print(kma.__file__)"],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
        cwd="/",
    )
    assert where.stdout.strip().startswith(str(server_only))
    assert sys.prefix != str(server_only)
