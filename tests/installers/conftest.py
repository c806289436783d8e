"""One build of the bundles for every installer test: ``installers/build.sh`` into a temporary folder.

PyInstaller (about 1 minute with its cache warm, 2 cold, on 2 cores), the script's smoke run of the
frozen ``kma`` and ``kms-manager`` (about 30 s) and, on Linux, the headless KMA's ``.deb``.
Nothing lands in the tree's ``dist/`` or ``build/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Built:
    dist: Path
    smoke: Path
    log: str

    @property
    def bundle(self) -> Path:
        return self.dist / "kms-manager"


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    # KMS_PREBUILT=DIR: test what `build.sh` already made with KMS_DIST_DIR=DIR/dist and
    # KMS_SMOKE_DIR=DIR/smoke (a developer iterating on the packaging; CI always builds).
    prebuilt = os.environ.get("KMS_PREBUILT")
    if prebuilt and not os.environ.get("CI"):
        return Built(Path(prebuilt) / "dist", Path(prebuilt) / "smoke", "")
    out = tmp_path_factory.mktemp("bundle")
    env = {
        **os.environ,
        "KMS_DIST_DIR": str(out / "dist"),
        "KMS_BUILD_DIR": str(out / "build"),
        "KMS_SMOKE_DIR": str(out / "smoke"),
        "PYTHON": sys.executable,
    }
    done = subprocess.run(
        [str(ROOT / "installers" / "build.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"installers/build.sh failed:\n{log[-6000:]}"
    return Built(out / "dist", out / "smoke", log)
