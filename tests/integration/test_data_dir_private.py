"""A KMA's data directory is its owner's only, from creation on (issue 10, finding 1).

Given a shell with the usual umask (022, which makes files 0644), when `kma init`, `kma demo` and
`kma serve` create their files (SQLite's -wal and -shm included), then no other account can
read any of them; and `kma serve` and `kma status` refuse a data directory others can read,
saying the exact command that fixes it. The manager's local mode still starts a KMA it made
before this rule.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.local.local_kma import LocalKma
from tests.support.first_setup import init_one_kma
from tests.support.kma_process import RunningKma, run_kma


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The KMA processes inherit the umask most shells have: files 0644, folders 0755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def open_to_others(root: Path) -> list[str]:
    found = []
    for folder, _, files in os.walk(root):
        for path in [Path(folder), *(Path(folder, name) for name in files)]:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode & 0o077:
                found.append(f"{path.relative_to(root)} {mode:04o}")
    return found


def test_kma_init_creates_nothing_others_can_read(tmp_path: Path) -> None:
    data_dir = tmp_path / "kma"
    init_one_kma(data_dir)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert {"kma.db", "kma.toml", "unlock.key"} <= {p.name for p in data_dir.iterdir()}
    assert open_to_others(data_dir) == []


def test_demo_and_serve_create_nothing_others_can_read(fresh_kma: RunningKma) -> None:
    fresh_kma.client("admin").list_keys()  # a served, written-to KMA: WAL and shared memory exist
    names = {p.name for p in fresh_kma.data_dir.rglob("*")}
    assert {"kma.db", "kma.db-wal", "kma.db-shm", "kma.log", "server.key"} <= names
    assert stat.S_IMODE(fresh_kma.data_dir.stat().st_mode) == 0o700
    assert open_to_others(fresh_kma.data_dir) == []


def test_serve_and_status_refuse_a_data_dir_others_can_read(tmp_path: Path) -> None:
    data_dir = tmp_path / "kma"
    run_kma("demo", "--data-dir", str(data_dir), "--json")
    (data_dir / "kma.db").chmod(0o644)
    for command in ("serve", "status"):
        done = run_kma(command, "--data-dir", str(data_dir), check=False)
        assert done.returncode != 0
        assert "kma.db (0644)" in done.stderr and "other accounts" in done.stderr
        assert f"chmod -R go-rwx {data_dir}" in done.stderr
    fix = run_kma("status", "--data-dir", str(data_dir), check=False).stderr.rsplit(": ", 1)[1].strip()
    subprocess.run(fix, shell=True, check=True)
    assert "Cluster Demo Tape Vault" in run_kma("status", "--data-dir", str(data_dir)).stdout


def test_local_mode_starts_a_kma_it_made_before_the_rule(tmp_path: Path) -> None:
    """Given a local KMA folder with the old modes (0755 and 0644), the manager still starts it."""
    data_dir = tmp_path / "local-kma"
    run_kma("demo", "--data-dir", str(data_dir), "--json")
    subprocess.run(["chmod", "-R", "go+rX", str(data_dir)], check=True)
    local = LocalKma(data_dir)
    try:
        ready = local.start()
        assert ready.management_address
        assert open_to_others(data_dir) == []
    finally:
        local.stop()
