"""A KMA is built in a staging folder and moved into place whole (`kma init`, a join, a restore)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from kma.datadir import DataDir


def test_a_data_dir_whose_parent_only_root_may_write_is_staged_inside_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A packaged KMA's /var/lib/kma: its user owns it, not /var/lib (the tests run as root, whom
    no mode stops, so the parent's refusal is played by mkdtemp)."""
    root = tmp_path / "kma"
    root.mkdir(mode=0o700)
    real = tempfile.mkdtemp

    def parent_refuses(prefix: str, dir: Path) -> str:
        if Path(dir) == tmp_path:
            raise PermissionError(13, "Permission denied", str(dir))
        return real(prefix=prefix, dir=dir)

    monkeypatch.setattr(tempfile, "mkdtemp", parent_refuses)
    data_dir = DataDir(root)
    staging = data_dir.staging("setting-up")
    assert staging.parent == root
    (staging / "kma.toml").write_text("id = 'kma-1'\n")
    data_dir.take_from(staging)
    assert sorted(p.name for p in root.iterdir()) == ["kma.toml"]


def test_a_data_dir_is_staged_beside_itself_where_its_parent_may_be_written(tmp_path: Path) -> None:
    data_dir = DataDir(tmp_path / "kma")
    staging = data_dir.staging("restore")
    assert staging.parent == tmp_path and not data_dir.root.exists()
    (staging / "kma.toml").write_text("id = 'kma-1'\n")
    data_dir.take_from(staging)
    assert sorted(p.name for p in (tmp_path / "kma").iterdir()) == ["kma.toml"]
