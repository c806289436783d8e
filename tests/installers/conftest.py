"""One build of the bundles for every installer test: ``installers/build.sh`` into a temporary folder.

PyInstaller (about 1 minute with its cache warm, 2 cold, on 2 cores), the script's smoke run of the
frozen ``kma`` and ``kms-manager`` (about 30 s) and, on Linux, the headless KMA's ``.deb``.
Nothing lands in the tree's ``dist/`` or ``build/``.

On pytest-xdist workers (``KMS_TEST_WORKERS``, ``--dist loadfile``: each file on one worker) the
installer files may land on different workers. The first to need the bundle builds it into the
run's shared folder while the others wait for it; and the files take turns, one at a time, since
two of them install the same ``kma`` package on this machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Built:
    dist: Path
    smoke: Path
    log: str

    @property
    def bundle(self) -> Path:
        return self.dist / "kms-manager"


def _shared(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The folder every xdist worker of this run shares (None in one process)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return None
    return tmp_path_factory.getbasetemp().parent


@pytest.fixture(scope="module", autouse=True)
def one_installer_file_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    shared = _shared(tmp_path_factory)
    if shared is None:
        yield
        return
    with FileLock(shared / "installers.lock"):
        yield


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    # KMS_PREBUILT=DIR: test what `build.sh` already made with KMS_DIST_DIR=DIR/dist and
    # KMS_SMOKE_DIR=DIR/smoke (a developer iterating on the packaging; CI always builds).
    prebuilt = os.environ.get("KMS_PREBUILT")
    if prebuilt and not os.environ.get("CI"):
        return Built(Path(prebuilt) / "dist", Path(prebuilt) / "smoke", "")
    shared = _shared(tmp_path_factory)
    if shared is None:
        return _build(tmp_path_factory.mktemp("bundle"))
    with FileLock(shared / "bundle.lock"):  # one build for the run; a failed one fails every user
        out, failed = shared / "bundle", shared / "bundle.failed"
        assert not failed.exists(), failed.read_text()
        if (out / "build.log").exists():
            return Built(out / "dist", out / "smoke", (out / "build.log").read_text())
        try:
            made = _build(out)
        except AssertionError as exc:
            failed.write_text(str(exc))
            raise
        (out / "build.log").write_text(made.log)  # written last: the bundle is whole
        return made


def _build(out: Path) -> Built:
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
