"""`kma serve` stops cleanly without a POSIX signal, and one data directory has one server.

Given a KMA served with ``--stop-on-stdin-close`` (how the manager's local mode starts it, on every
OS), when the other end of its standard input closes (the manager stops it, or the manager died
and the OS closed the pipe), then it stops cleanly: exit code 0, its ready file removed, and the
next start serves the same data. A second ``kma serve`` on a data directory already served is
refused with a clear message (the lock, now through ``filelock``, which also works on Windows).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kma_process import RunningKma, run_kma
from tests.support.waiting import wait_until


def _serve(data_dir: Path, ready: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kma",
            "serve",
            "--data-dir",
            str(data_dir),
            "--management-port",
            "0",
            "--service-port",
            "0",
            "--ready-file",
            str(ready),
            "--stop-on-stdin-close",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_ready(proc: subprocess.Popen[str], ready: Path) -> dict[str, str]:
    wait_until(lambda: ready.exists() or proc.poll() is not None, 60, what="kma serve becoming ready")
    assert proc.poll() is None, f"kma serve exited: {proc.communicate()[0]}"
    return dict(json.loads(ready.read_text()))


@pytest.fixture
def demo_dir(tmp_path: Path) -> Iterator[Path]:
    data_dir = tmp_path / "kma"
    run_kma("demo", "--data-dir", str(data_dir), "--json")
    yield data_dir


def test_closing_standard_input_stops_the_kma_cleanly(demo_dir: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    proc = _serve(demo_dir, ready)
    try:
        _wait_ready(proc, ready)
        assert proc.stdin is not None
        proc.stdin.close()  # what LocalKma.stop() does; the OS does the same when the manager dies
        proc.wait(30)
        assert proc.stdout is not None
        output = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    assert not ready.exists(), "its clean-up did not run"
    # and the data it served is served again
    again = _serve(demo_dir, ready)
    try:
        assert _wait_ready(again, ready)["management_address"]
    finally:
        assert again.stdin is not None
        again.stdin.close()
        again.wait(30)


def test_a_second_server_on_the_same_data_is_refused(tmp_path: Path) -> None:
    kma = RunningKma.demo_in(tmp_path)
    try:
        second = run_kma(
            "serve",
            "--data-dir",
            str(kma.data_dir),
            "--management-port",
            "0",
            "--service-port",
            "0",
            check=False,
        )
        assert second.returncode == 2
        assert "Another `kma serve` is already running" in second.stderr
        assert kma.client("admin").get_me().id == "admin"  # the first one is untouched
    finally:
        kma.stop()
