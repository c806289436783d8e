"""The manager's local mode never leaves its KMA running behind it.

Given `kms-manager --local` running with its bundled KMA, when the manager is stopped
(SIGTERM) or killed (SIGKILL), then the KMA process stops too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _kma_serving(data_dir: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"serve" in cmd and str(data_dir).encode() in cmd:
                pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_local_kma_stops_with_the_manager(tmp_path: Path, stop: signal.Signals) -> None:
    data_dir = tmp_path / "local-kma"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    manager = subprocess.Popen(
        [sys.executable, "-m", "manager.main", "--local", "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _kma_serving(data_dir), 60, interval=0.2, what="the local KMA starting")
        manager.send_signal(stop)
        manager.wait(timeout=30)
        wait_until(lambda: not _kma_serving(data_dir), 30, interval=0.2, what="the local KMA stopping too")
    finally:
        if manager.poll() is None:
            manager.kill()
        for pid in _kma_serving(data_dir):
            os.kill(pid, signal.SIGKILL)


def _manager(data_dir: Path, home: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "manager.main", "--local", "--data-dir", str(data_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_signed_in(manager: subprocess.Popen[str], seen: list[str]) -> bool:
    """Read the manager's log until it says it signed in (or it ends)."""
    assert manager.stderr is not None
    for line in manager.stderr:
        seen.append(line)
        if "signed in as admin" in line:
            return True
    return False


def test_quitting_is_prompt_and_quiet_and_a_quick_restart_signs_in(tmp_path: Path) -> None:
    data_dir = tmp_path / "local-kma"
    first = _manager(data_dir, tmp_path)
    second = None
    try:
        seen: list[str] = []
        assert _wait_signed_in(first, seen), "".join(seen)

        # When the user quits (the same path as closing the window) and starts again at once,
        # while the local KMA may still be stopping
        started = time.monotonic()
        first.send_signal(signal.SIGTERM)
        _, rest = first.communicate(timeout=60)
        quit_took = time.monotonic() - started
        second = _manager(data_dir, tmp_path)

        # Then the first quits promptly, without a traceback, and the second signs in by itself
        assert first.returncode == 0
        assert "Traceback" not in "".join(seen) + rest
        assert quit_took < 5, f"quitting took {quit_took:.1f} s"
        again: list[str] = []
        assert _wait_signed_in(second, again), "".join(again)
        assert not any("exited with code" in line for line in again)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
        for pid in _kma_serving(data_dir):
            os.kill(pid, signal.SIGKILL)
