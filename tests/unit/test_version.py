"""`kma --version` and `kms-manager --version` print the version in pyproject.toml, its one source."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


@pytest.mark.parametrize(
    ("command", "code"),
    [("kma", "from kma.cli import main; main()"), ("kms-manager", "from manager.main import main; main()")],
)
def test_version_is_the_one_in_pyproject(command: str, code: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{command} {VERSION}"
